"""Reports as people read them: the text summaries the command lines
print (:mod:`~eceb_worker.render.text`). Pure: every function returns
lines, the caller prints them."""
