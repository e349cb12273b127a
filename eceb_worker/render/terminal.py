"""Text that is safe to print on a terminal: every character a terminal
would act on instead of showing it escaped, so that a value read from an
input (a task id, an artifact path, a message quoting either) can neither
move the cursor, erase or rewrite a line, set the window title, nor turn
the text right to left.

Every text-output edge passes what it prints through :func:`printable`:
the text renderers (:mod:`eceb_worker.render.text`,
:mod:`eceb_worker.render.comparison`) escape each line they yield, and the
console writer of the command line (``eceb_cli.console.echo`` and its error
reports) each line it prints. JSON outputs are left to JSON's own escaping;
Markdown outputs escape their markup besides (:mod:`eceb_worker.render.markdown`).
"""

from __future__ import annotations

__all__ = ["printable"]

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
"""The escapes written by name."""


def _escaped(character: str) -> str:
    """``character`` as Python writes it in a string literal: ``\\r``, ``\\x1b``, ``\\u202e``, ``\\U000e0041``."""
    point = ord(character)
    if character in _NAMED:
        return _NAMED[character]
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def printable(text: str) -> str:
    """``text`` with every non-printable character escaped as Python escapes
    it in a literal (``ESC`` as ``\\x1b``, ``CR`` as ``\\r``, a line feed as
    ``\\n``, a tab as ``\\t``, ``U+202E`` as ``\\u202e``, a lone surrogate as ``\\udc80``).

    Non-printable is :meth:`str.isprintable`'s meaning: control characters
    (C0, DEL, C1), format characters (bidirectional controls, zero-width
    characters), line and paragraph separators, spaces other than the
    ASCII space, surrogates, private-use and unassigned code points.
    Backslashes are kept as they are (the text is for people; the report's
    JSON holds the exact value), so the function is idempotent. Text that
    is printable already is returned unchanged (the same object).
    """
    if text.isprintable():
        return text
    return "".join(character if character.isprintable() else _escaped(character) for character in text)
