"""Constraints and prefixes as a user writes them, text, and as search reads them, target ids.

`nmt translate --constraints FILE` holds one JSON object per input line,
`{"include": ["fence", "Boston Terrier"], "exclude": ["dog"]}` (either field may be left
out; a blank line: none); the server takes the same object per item and the Python API a
dict. A phrase is encoded with the target tokenizer as it reads a word inside a sentence,
so "fence" becomes the word-initial piece "▁fence" that a translation would hold.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.config import DecodeConfig
from nmt.data.tokenizer import Tokenizer, Vocab
from nmt.errors import UserError
from nmt.search import max_lengths
from nmt.search.constraints import Constraints

FIELDS = ("include", "exclude")
EXAMPLE = '{"include": ["fence"], "exclude": ["dog"]}'


@dataclass(frozen=True)
class TextConstraints:
    """Phrases one translation must hold (`include`, in any order) and must not (`exclude`)."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


class ConstraintError(UserError):
    """A sentence's constraints or prefix cannot be used: `field` says which, `index` (from
    0) which sentence of a call, where known."""

    def __init__(self, field: str, detail: str, index: int | None = None):
        where = "" if index is None else f"sentence {index + 1}, "
        super().__init__(f"{where}{field}: {detail}.")
        self.field = field
        self.detail = detail
        self.index = index

    def at(self, index: int) -> ConstraintError:
        return ConstraintError(self.field, self.detail, index)


def parse_constraints(value: object) -> TextConstraints | None:
    """A dict with `include` and/or `exclude` lists of phrases (or None) -> TextConstraints;
    a ConstraintError saying what is wrong otherwise."""
    if value is None:
        return None
    if isinstance(value, TextConstraints):
        return value
    if not isinstance(value, Mapping):
        raise ConstraintError(
            "constraints", f"expected an object like {EXAMPLE}, got {type(value).__name__}"
        )
    unknown = sorted(str(key) for key in value if key not in FIELDS)
    if unknown:
        raise ConstraintError(
            "constraints",
            f"unknown field(s) {', '.join(unknown)}; the fields are include and exclude, "
            f"e.g. {EXAMPLE}",
        )
    phrases = {}
    for field in FIELDS:
        given = value.get(field, [])
        if not isinstance(given, list) or not all(isinstance(p, str) for p in given):
            raise ConstraintError(
                f"constraints.{field}", f"expected a list of phrases (strings), got {given!r}"
            )
        stripped = [phrase.strip() for phrase in given]
        if "" in stripped:
            raise ConstraintError(f"constraints.{field}", "a phrase is empty")
        phrases[field] = tuple(dict.fromkeys(stripped))
    both = sorted(set(phrases["include"]) & set(phrases["exclude"]))
    if both:
        raise ConstraintError(
            "constraints",
            f"{', '.join(repr(_short(phrase)) for phrase in both)} is both included and excluded",
        )
    return TextConstraints(**phrases)


def _short(phrase: str, width: int = 40) -> str:
    """A phrase as an error message quotes it: cut, so a huge one is not echoed whole."""
    return phrase if len(phrase) <= width else f"{phrase[:width]}…"


def constraints_line(path: Path) -> Callable[[str, int], TextConstraints | None]:
    """A parser of the lines of a --constraints file: a JSON object per line, a blank line
    for none; a UserError names the file and the line."""

    def parse(line: str, number: int) -> TextConstraints | None:
        if not line.strip():
            return None
        try:
            return parse_constraints(json.loads(line))
        except json.JSONDecodeError as error:
            raise UserError(
                f"{path}, line {number}: not JSON ({error.msg}, column {error.colno}). Each "
                f"line holds one object like {EXAMPLE}, or is blank for no constraints."
            ) from None
        except ConstraintError as error:
            raise UserError(f"{path}, line {number}: {error.detail}.") from None

    return parse


def prefix_text(value: object) -> str | None:
    """A prefix as the Python API and the server take it: text, or None; a ConstraintError
    otherwise."""
    if value is not None and not isinstance(value, str):
        raise ConstraintError("prefix", f"expected text, got {type(value).__name__}")
    return value


def prefix_line(line: str, number: int) -> str | None:
    """A line of a --prefix file: the text a translation starts with; blank for none."""
    return line.strip() or None


def encode_constraints(
    vocab: Vocab,
    constraints: TextConstraints | None,
    prefix: str | None,
    limit: int,
    max_constraints: int,
) -> Constraints | None:
    """The target ids search reads, or a ConstraintError: more phrases than
    `max_constraints`, or a phrase or prefix longer than `limit`, the sentence's output
    length limit in subwords."""
    constraints = constraints or TextConstraints()
    count = len(constraints.include) + len(constraints.exclude)
    if count > max_constraints:
        raise ConstraintError(
            "constraints",
            f"{count} phrases, more than decode.max_constraints={max_constraints}; "
            "give fewer, or raise the limit (--max-constraints of nmt translate and nmt serve, "
            "max_constraints in Python)",
        )
    encoded = {}
    for field in FIELDS:
        phrases = getattr(constraints, field)
        ids = vocab.encode(phrases) if phrases else []
        for phrase, pieces in zip(phrases, ids, strict=True):
            _check_length(f"constraints.{field}", f"the phrase {phrase!r}", pieces, limit)
            if field == "include":
                what = f"the phrase {phrase!r}"
                _check_spelling(vocab, f"constraints.{field}", what, phrase, pieces)
        encoded[field] = tuple(tuple(pieces) for pieces in ids if pieces)
    prefix_ids: tuple[int, ...] = ()
    if prefix and prefix.strip():
        prefix_ids = tuple(vocab.encode([prefix.strip()])[0])
        _check_length("prefix", "the prefix", prefix_ids, limit)
        _check_spelling(vocab, "prefix", "the prefix", prefix, prefix_ids)
    found = Constraints(encoded["include"], encoded["exclude"], prefix_ids)
    return found or None


def _check_length(field: str, what: str, pieces: list[int] | tuple[int, ...], limit: int):
    if len(pieces) > limit:
        raise ConstraintError(
            field,
            f"{what} is {len(pieces)} subwords, but this sentence's translation is limited to "
            f"{limit} (decode.max_len_ratio x its source subwords + decode.max_len_extra); "
            "shorten it, or raise the limit (--max-len-extra of nmt translate and nmt serve, "
            "max_len_extra in Python)",
        )


def _check_spelling(vocab: Vocab, field: str, what: str, text: str, pieces: Sequence[int]):
    """A ConstraintError when text to be forced in holds characters the target vocabulary
    cannot write: the translation would hold <unk> in their place."""
    if vocab.unk_id not in pieces:
        return
    missing = sorted({c for c in text if not c.isspace() and vocab.unk_id in vocab.encode([c])[0]})
    raise ConstraintError(
        field,
        f"{what} holds {', '.join(map(repr, missing)) or 'characters'}, which the model's target "
        "vocabulary cannot write, so the translation would hold <unk> in their place; leave "
        "them out or spell them otherwise",
    )


def check_constraints(
    tokenizer: Tokenizer,
    source: str,
    constraints: object,
    prefix: object,
    decode: DecodeConfig,
) -> None:
    """A ConstraintError, naming the field, unless `constraints` (a dict, as for
    parse_constraints) and `prefix` can be decoded for `source` with `decode` and
    `tokenizer` (the one towards the target language): the server checks each request's
    before it joins a batch."""
    wanted, prefix = parse_constraints(constraints), prefix_text(prefix)
    if decode.sample and wanted is not None and wanted.include:
        raise ConstraintError(
            "constraints.include",
            "included phrases need beam search, and this model's decode settings sample: "
            "leave out the included phrases",
        )
    ids = tokenizer.src.encode([source.strip()])[0][: decode.max_src_len]
    limit = max_lengths(torch.tensor([len(ids)]), decode.max_len_ratio, decode.max_len_extra)
    encode_constraints(tokenizer.tgt, wanted, prefix, int(limit), decode.max_constraints)
