"""Reports as people read them: the text summaries the command lines
print (:mod:`~eceb_worker.render.text`, :mod:`~eceb_worker.render.comparison`),
the self-contained HTML pages of a report or a comparison
(:mod:`~eceb_worker.render.html`, :mod:`~eceb_worker.render.comparison_html`)
and their plots as inline SVG (:mod:`~eceb_worker.render.plots`); the
paired task-context benchmark's text (:mod:`~eceb_worker.render.paired`). Pure:
every function returns lines or bytes, the caller prints or writes them."""
