"""A file a format's library cannot read: where in it (a line, an element), and why."""

from __future__ import annotations


class DocumentError(ValueError):
    """`str(error)` names the place in the file and the problem."""


def decoded(data: bytes) -> str:
    """UTF-8 text (a byte order mark dropped); DocumentError naming the line of a byte that
    is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DocumentError(f"line {line} is not UTF-8 (byte {error.start})") from None
