"""The shapes of `nmt serve`'s HTTP API, as pydantic models: requests are checked against
them (a malformed one gets 422 naming the field), and /docs is generated from them.

Unknown fields are refused rather than ignored, so a misspelt option (`nbest` for `n_best`)
fails loudly instead of silently decoding with the defaults; types are strict, so `"yes"` is
not a boolean and `"5"` not a beam size. A 422 keeps pydantic's shape, `{"detail": [{type,
loc, msg, input}]}`, but says of a long input only what it is (`error_details`): a huge body
does not come back as a huge error.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator

MAX_BEAM = 16  # a request's cost grows with sentences × beam: this bounds what one may ask


def whole_characters(text: str | None) -> str | None:
    """`text` as it is; a ValueError (a 422 naming the field) where it holds a lone
    surrogate, which JSON's \\ud800 escapes can give and no tokenizer can read."""
    try:
        if text is not None:
            text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"not valid Unicode at character {error.start} (a lone surrogate, such as "
            "\\ud800): send whole characters"
        ) from None
    return text


class ConstraintsIn(BaseModel):
    """Phrases a translation must hold and must not (subwords of the target tokenizer)."""

    model_config = ConfigDict(extra="forbid")

    include: list[StrictStr] = Field([], description="Phrases the translation must hold.")
    exclude: list[StrictStr] = Field([], description="Phrases it must not hold.")

    @field_validator("include", "exclude")
    @classmethod
    def _are_text(cls, phrases: list[str]) -> list[str]:
        for phrase in phrases:
            whole_characters(phrase)
        return phrases


class TranslateRequest(BaseModel):
    """One input sentence; a request is a list of them (OpenNMT-py's form plus options)."""

    model_config = ConfigDict(extra="forbid")

    src: StrictStr = Field(description="The source sentence (plain text, not tokenized).")
    id: StrictInt | StrictStr = Field(description="A model id from GET /translator/models.")
    beam: StrictInt | None = Field(None, ge=1, le=MAX_BEAM, description="Beam size; 1 is greedy.")
    n_best: StrictInt | None = Field(
        None, ge=1, le=MAX_BEAM, description="Translations per input (at most beam)."
    )
    alignments: StrictBool = Field(False, description="Add 'align': Pharaoh word alignment 'i-j'.")
    attention: StrictBool = Field(
        False, description="Add 'attention': subwords and weights per head."
    )
    constraints: ConstraintsIn | None = Field(
        None,
        description="Lexical constraints (beam search, any beam size); the answer says "
        "whether they were met ('constraints_met').",
    )
    prefix: StrictStr | None = Field(
        None, description="Text the translation starts with; the search continues from it."
    )
    tgt_lang: StrictStr | None = Field(
        None,
        description="The language to translate into, one of the model's tgt_langs; needed "
        "when it writes several.",
    )
    through: StrictStr | None = Field(
        None,
        description="A language to pivot through: translated into it first, then into the "
        "target; a direction the model never trained pivots by itself (the model's pivots).",
    )
    src_lang: StrictStr | None = Field(
        None,
        description="The source's language, where it decides whether to pivot (default: "
        "read from the text).",
    )
    then: StrictStr | None = Field(
        None,
        description="The id of another served model that translates on from this model's "
        "translations: a chain of two (de-en, then en-cs), tgt_lang the second's; the "
        "model's chains list them.",
    )
    markup: Literal["html", "xml"] | None = Field(
        None,
        description="src is marked up: its sentences are translated one by one and each tag "
        "is put back around the words that translate the words it wrapped (as nmt translate "
        "--markup); not with n_best > 1, alignments, attention, constraints or prefix.",
    )

    markup_placement: Literal["projection", "model", "both"] | None = Field(
        None,
        description="How a marked-up src's tags find their place (as nmt translate "
        "--markup-placement): projection (default: through word alignments), model (the "
        "tags a model trained with data.markup_augment writes), or both (the model's, "
        "projection where it drops one).",
    )
    adapter: StrictStr | None = Field(
        None,
        description="The name of one of the model's adapters (the model's adapters list "
        "them) to translate with; default: the model itself.",
    )

    @field_validator("src", "prefix")
    @classmethod
    def _is_text(cls, text: str | None) -> str | None:
        return whole_characters(text)


class Attention(BaseModel):
    src_tokens: list[str] = Field(description="Source subwords, one per column.")
    tgt_tokens: list[str] = Field(description="Target subwords, one per row ('</s>': eos).")
    weights: list[list[list[float]]] = Field(description="[head][target][source] weights.")


class MemoryMatchOut(BaseModel):
    score: float = Field(description="Fuzzy score: 1 - word edit distance / longer length.")
    exact: bool


class TranslationOut(BaseModel):
    src: str
    tgt: str = Field(description="The translation, detokenized.")
    pred_score: float | None = Field(
        description="Log-probability / ((5 + length) / 6) ** alpha; 0 for a blank src; null "
        "(and tgt empty) for a rank the search found no translation for, when it found "
        "fewer than n_best."
    )
    n_best: int
    truncated: bool = Field(
        description="True when the source was cut at the model's decode.max_src_len subwords, "
        "as `nmt translate` cuts it."
    )
    align: str | None = None
    attention: Attention | None = None
    constraints_met: bool | None = Field(
        None,
        description="With constraints: whether this translation holds every included phrase "
        "and no excluded one (false only when the length limit left no room).",
    )
    pivot: str | None = Field(
        None, description="Through a pivot language: the translation into it, on the way."
    )
    tm_match: MemoryMatchOut | None = Field(
        None,
        description="With a translation memory (nmt serve --tm): the match used; exact: "
        "tgt is the memory's translation as it is, else the model read a fuzzy match.",
    )


class AdapterInfo(BaseModel):
    adapter: str = Field(description="Its name, a request's adapter.")
    base: str = Field(description="The id of the model it adapts, whose weights it shares.")
    type: str = Field(description="lora or bottleneck.")
    src_lang: str = Field(description="The source language (its first direction's).")
    tgt_lang: str = Field(description="The target language (its first direction's).")
    directions: list[str] = Field(description="What it translates: cs-en, ...")
    tgt_langs: list[str] = Field(description="The languages it writes.")


class ModelInfo(BaseModel):
    model_id: str
    loaded: bool
    src_lang: str = Field(description="The source language (the first direction's).")
    tgt_lang: str = Field(description="The target language (the first direction's).")
    directions: list[str] = Field(description="What the model translates: de-en, cs-en, ...")
    tgt_langs: list[str] = Field(
        description="The languages it writes; with several, a request names one (tgt_lang)."
    )
    decoder: str = Field(description="rnnsearch or transformer.")
    attention: str = Field(description="The attention over the source: additive, dot, ...")
    heads: int
    quantize: str | None = Field(description="int8 when served with --quantize int8, else null.")
    adapters: list[AdapterInfo] = Field(
        description="Adapters served on this model (nmt serve --adapter), by name."
    )
    memory: bool = Field(description="Whether a translation memory serves it (--tm).")
    pivots: dict[str, str] = Field(
        description="Directions it never trained that it translates through a pivot language: "
        "{'de-cs': 'en', ...}."
    )
    chains: dict[str, str] = Field(
        description="Languages it reaches only through another served model, each with that "
        "model's id (a request's then): {'cs': 'en-cs', ...}."
    )
    decode: dict[str, float | int | bool | str | None]


class FileFormat(BaseModel):
    name: str
    extensions: list[str]


class LimitsInfo(BaseModel):
    max_sentences: int = Field(description="Sentences one request may hold (--max-sentences).")
    max_body_bytes: int = Field(description="The largest request body (--max-body-kib).")
    max_beam: int = Field(description="The largest beam and n_best a request may ask for.")
    file_formats: list[FileFormat] = Field(
        description="The formats POST /translate_file takes, each with its file extensions."
    )


class Health(BaseModel):
    status: str


MAX_ERRORS = 10  # a 422 lists the first ones: a list of 10,000 bad items is not 10,000 errors
EXCERPT = 80  # characters of an input that an error echoes
LOC_PART = 40  # characters of a name in an error's loc (an unknown field may be a long key)


def error_details(errors: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """pydantic's errors, each input cut to an excerpt (`excerpt`), each unknown field's
    message naming the fields there are; past MAX_ERRORS, one entry says how many more."""
    details = []
    for error in errors[:MAX_ERRORS]:
        loc = tuple(
            _cut(part, LOC_PART) if isinstance(part, str) else part for part in error["loc"]
        )
        detail = {**error, "loc": loc, "input": excerpt(error.get("input"))}
        if error["type"] == "extra_forbidden":
            detail["msg"] = _unknown_field(error["loc"])
        details.append(detail)
    if len(errors) > MAX_ERRORS:
        more = len(errors) - MAX_ERRORS
        summary = f"{_count(more, 'more error')} not shown; fix the ones above first"
        details.append({"type": "more_errors", "loc": ("body",), "msg": summary, "input": None})
    return details


def excerpt(value: object) -> object:
    """`value` as an error echoes it: itself when short; else a string's first EXCERPT
    characters and its length, a list's length, an object's first keys."""
    if isinstance(value, str):
        return _cut(value, EXCERPT)
    if isinstance(value, int) and abs(value) >= 10**EXCERPT:
        return f"a number of {len(str(abs(value)))} digits"
    if not isinstance(value, (list, dict)) or len(json.dumps(value, default=str)) <= EXCERPT:
        return value
    if isinstance(value, list):
        return f"a list of {_count(len(value), 'item')}"
    keys = ", ".join(_cut(str(key), LOC_PART) for key in list(value)[:5])
    return f"an object of {_count(len(value), 'key')}: {keys}{', …' if len(value) > 5 else ''}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _unknown_field(loc: Sequence[Any]) -> str:
    """What to say of an unknown field at `loc` (body, index, [constraints,] name)."""
    within = ConstraintsIn if len(loc) > 3 and loc[-2] == "constraints" else TranslateRequest
    fields = list(within.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown field; {hint}the fields here are {', '.join(fields)}"
