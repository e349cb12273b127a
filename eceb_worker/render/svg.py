"""A matplotlib figure as an ``<svg>`` element to inline in an HTML page
(the plots of :mod:`eceb_worker.render.plots` and of the comparison page):
deterministic text, ids prefixed per plot, an accessible name."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, cast

from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

__all__ = ["inline_svg"]

_METADATA: Final[dict[str, Any]] = {"Date": None, "Creator": None, "Format": None, "Type": None}
"""No date, no creator (the library's version) in the SVG."""

_TAG: Final = re.compile(r"<[^<>]*>")
"""An SVG tag (matplotlib escapes ``<`` and ``>`` in text)."""


class _Writer:
    """The text stream matplotlib's SVG canvas writes to (it asks for a
    ``seek`` to tell a stream from a file name, and never calls it)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # matplotlib probes with bytes to choose text or binary
            raise TypeError("a text stream")
        self.parts.append(text)
        return len(text)

    def seek(self, *_args: object) -> int:  # pragma: no cover - never called
        raise NotImplementedError


def inline_svg(figure: Figure, plot_id: str, label: str) -> str:
    """``figure`` (drawn under :data:`SETTINGS`) as an ``<svg>`` element to
    inline in HTML: no XML declaration or DTD, the element's id
    ``plot_id``, every id inside prefixed with it (so are the references to
    them), ``label`` (plain words, no markup) its accessible name."""
    writer = _Writer()
    print_svg = cast("Callable[..., None]", FigureCanvasSVG(figure).print_svg)
    print_svg(writer, metadata=_METADATA)
    text = "".join(writer.parts)
    body = text[text.index("<svg") :]

    def prefixed(tag: re.Match[str]) -> str:  # in tags only: text (a task id) is never rewritten
        return (
            tag.group(0)
            .replace(' id="', f' id="{plot_id}-')
            .replace('href="#', f'href="#{plot_id}-')
            .replace("url(#", f"url(#{plot_id}-")
        )

    body = _TAG.sub(prefixed, body)
    return body.replace("<svg ", f'<svg class="plot" role="img" aria-label="{label}" id="{plot_id}" ', 1)
