"""Untrusted text made inert in GitHub-flavoured Markdown (the CI comments
``eceb compare --markdown`` and ``eceb-dist nightly`` write).

An id or message from a report is shown as the characters it holds, never
as markup: no image is fetched, no link is made, nobody is mentioned, no
HTML, table, emphasis or math is opened, however the text is written:

* non-printable characters are escaped first, as on a terminal
  (:func:`~eceb_worker.render.terminal.printable`), so that no line break
  or control character reaches the comment;
* the ASCII punctuation that opens markup is escaped with a backslash
  (CommonMark §2.4: a backslash before ASCII punctuation shows it
  literally): ``\\ ` * _ [ ] < ! | & ~ $``, which open images and links
  (``![t](…)``, ``[c](javascript:…)``: no ``]`` is left to close the text
  of one), inline HTML and ``<…>`` autolinks, entities, code spans, table
  cells, emphasis, strikethrough and math; a ``:`` before ``/`` is
  escaped too, as the URL autolinks of GFM start at a ``://`` the parser
  reads (``https\\://…`` is no link), and ``www.`` is written ``www\\.``,
  which the ``www`` autolink does not match. The text is always placed inline (after a list or quote marker,
  or in a cell), where ``#``, ``>``, ``-`` or ``(`` open nothing;
* a zero-width joiner (U+200D) follows every ``@`` and ``#``: GitHub finds
  mentions (``@user``, ``@org/team``), e-mail autolinks and issue
  references (``#12``, ``org/repo#12``, which also leave a note in the
  issue named) in the text *after* it renders the Markdown, where a
  backslash escape is gone, so only a character between the sign and the
  name defuses them. The comment shows the same characters; a copy of the
  text holds the joiner.
"""

from __future__ import annotations

import re
from typing import Final

from eceb_worker.render.terminal import printable

__all__ = ["ZERO_WIDTH_JOINER", "markdown_text"]

MARKDOWN_ESCAPED: Final = frozenset("\\`*_[]<!|&~$")
"""The ASCII punctuation :func:`markdown_text` escapes with a backslash."""

ZERO_WIDTH_JOINER: Final = "\u200d"
"""What :func:`markdown_text` puts after every ``@`` and ``#``."""

_AUTOLINKS: Final = re.compile(r"(?i:(?<=www)\.)|:(?=/)")
"""Where a GFM autolink would start: the dot of ``www.``, a colon before a slash."""


def markdown_text(text: str) -> str:
    """``text`` (one line or more, from an input) as inline Markdown that
    GitHub renders as exactly its characters: non-printable characters
    escaped (:func:`~eceb_worker.render.terminal.printable`, line breaks
    included), markup punctuation (:data:`MARKDOWN_ESCAPED`) escaped with a
    backslash, ``www.`` as ``www\\.`` and ``://`` as ``\\://``, and a zero-width joiner after every
    ``@`` and ``#`` (see the module). For inline places: a table cell, or
    after the marker of a list item or a quote (not at the start of a line,
    where ``-`` or ``1.`` would open a list)."""
    flat = printable(text)
    escaped = "".join("\\" + character if character in MARKDOWN_ESCAPED else character for character in flat)
    joined = escaped.replace("@", "@" + ZERO_WIDTH_JOINER).replace("#", "#" + ZERO_WIDTH_JOINER)
    return _AUTOLINKS.sub(lambda match: "\\" + match.group(), joined)
