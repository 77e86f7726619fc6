"""What cleaning repairs before its filters judge a pair (nmt/data/cleaning.py), each a key of
the `clean` config section, in this order:

  fix_text  mojibake: text encoded as UTF-8 and read as Latin-1 or Windows-1252 ("MÃ¤nner"
            for "Männer"), decoded again by ftfy (Speer 2019), which changes only text
            that is very likely to be such a mistake (ftfy's encoding fixes alone: quotes,
            widths and ligatures stay as written)
  markup    HTML tags, character references and URLs: `strip` keeps the text between them
            (the pair as a reader of the page saw it), `remove` leaves the pair to the
            `markup` filter; measured in docs/cleaning.md

Both sides are repaired alike; a side that stripping empties is judged empty.
"""

from __future__ import annotations

import html
import re

import ftfy

from nmt.config import CleanConfig
from nmt.data import markup

URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
# a tag: <name ...>, </name>, <name/>, or a comment; not a lone "<" or "a < b > c"
TAG = re.compile(r"<!--.*?-->|</?([A-Za-z][A-Za-z0-9]*)\b[^<>]*>", re.DOTALL)
REFERENCE = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")
# tags inside a line of text, which part no words: "<b>Hund</b>." is "Hund."
INLINE = markup.INLINE | markup.VERBATIM


def repaired(src: str, tgt: str, config: CleanConfig) -> tuple[str, str, tuple[str, ...]]:
    """The pair as the filters judge it, and the names of the repairs that changed it."""
    made = []
    if config.fix_text:
        fixed = ftfy.fix_encoding(src), ftfy.fix_encoding(tgt)
        if fixed != (src, tgt):
            src, tgt = fixed
            made.append("fix_text")
    if config.markup == "strip" and (has_markup(src) or has_markup(tgt)):
        src, tgt = strip_markup(src), strip_markup(tgt)
        made.append("markup")
    return src, tgt, tuple(made)


def has_markup(text: str) -> bool:
    """Whether `text` holds an HTML tag, a character reference or a URL."""
    return bool(TAG.search(text) or REFERENCE.search(text) or URL.search(text))


def strip_markup(text: str) -> str:
    """`text` without its tags (a tag inside a line, such as <b>, parts no words), URLs
    and character references (decoded), its spaces collapsed."""
    text = TAG.sub(lambda tag: "" if (tag.group(1) or "").lower() in INLINE else " ", text)
    text = URL.sub(" ", text)
    return " ".join(html.unescape(text).split())
