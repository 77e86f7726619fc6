"""Inline markup through translation: a line of HTML or XML cut into the plain sentences a
model reads and the tags around their words; after translation each tag is put back around
the target words that the model's word alignments tie to the source words it wrapped, as
bergamot-translator does for Firefox's translations.

How each tag is treated (in XML every element is inline but those marked not to translate):
  inline    a, b, em, span, strong, ...: inside a sentence; around the target words aligned
            to the source words it wrapped
  void      br, img, wbr, ... (or any <x/>): no words; before the target word aligned to the
            source word after it (after the one aligned to the word before, at the end)
  verbatim  code, kbd, samp, var, an element with translate="no" or class "notranslate", a
            comment, or an element around no words: copied untouched, placed like a void tag
  block     p, div, li, h1, td, ...: ends a sentence; copied as it is
  raw       pre, script, style, textarea, a declaration: copied untouched between sentences
A tag whose words have no aligned target word, or whose place would cross a tag placed
before it, wraps everything inside its parent instead (the whole sentence at the top): the
output always holds each tag of the source once, each inside the tags it was inside. A tag
the source never closes (or closes out of order) is copied where it stood, as a block tag.
"""

from nmt.data.markup.elements import (
    INLINE,
    LINE_BREAKS,
    PLACEHOLDERS,
    RAW,
    VERBATIM,
    VOID,
    Element,
    MarkupError,
    MarkupKind,
    Part,
    Sentence,
    kept,
    says_untranslated,
)
from nmt.data.markup.model_tags import ModelTags, model_tags, place_by_model
from nmt.data.markup.placing import project
from nmt.data.markup.reading import parse, plain, render

__all__ = [
    "Element",
    "INLINE",
    "LINE_BREAKS",
    "MarkupError",
    "MarkupKind",
    "ModelTags",
    "PLACEHOLDERS",
    "Part",
    "RAW",
    "Sentence",
    "VERBATIM",
    "VOID",
    "kept",
    "model_tags",
    "parse",
    "place_by_model",
    "plain",
    "project",
    "render",
    "says_untranslated",
]
