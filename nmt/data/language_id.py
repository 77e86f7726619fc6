"""Which language a text is in, by py3langid (Lui & Baldwin 2012: naive Bayes over byte
n-grams, 97 languages): for cleaning a corpus and for routing a line through a pivot."""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence


@functools.cache
def identifier():
    """py3langid's model over all its languages, loaded once a process (a third of a
    second)."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_modelpath(MODEL_DIR / MODEL_FILE)


@functools.cache
def _among(languages: tuple[str, ...]):
    restricted = copy.copy(identifier())
    restricted.set_languages(list(languages))
    return restricted


def identified(texts: Sequence[str], languages: Sequence[str]) -> list[str | None]:
    """Each text's most likely language of `languages` (those py3langid knows; with one,
    that one); None for a blank text."""
    known = tuple(sorted(set(languages) & set(identifier().nb_classes)))
    if len(known) < 2:
        only = known[0] if known else (languages[0] if len(languages) == 1 else None)
        return [only if text.strip() else None for text in texts]
    model = _among(known)
    return [model.classify(text)[0] if text.strip() else None for text in texts]
