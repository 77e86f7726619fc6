"""The shapes of `nmt serve`'s HTTP API, as pydantic models: requests are checked against
them (a malformed one gets 422 naming the field), and /docs is generated from them.

Unknown fields are refused rather than ignored, so a misspelt option (`nbest` for `n_best`)
fails loudly instead of silently decoding with the defaults; types are strict, so `"yes"` is
not a boolean and `"5"` not a beam size.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator

MAX_BEAM = 16  # a request's cost grows with sentences × beam: this bounds what one may ask


class ConstraintsIn(BaseModel):
    """Phrases a translation must hold and must not (subwords of the target tokenizer)."""

    model_config = ConfigDict(extra="forbid")

    include: list[StrictStr] = Field([], description="Phrases the translation must hold.")
    exclude: list[StrictStr] = Field([], description="Phrases it must not hold.")


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

    @field_validator("src", "prefix")
    @classmethod
    def _is_text(cls, src: str | None) -> str | None:
        try:  # JSON's \\ud800 escapes give lone surrogates, which no tokenizer can read
            if src is not None:
                src.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(f"not valid Unicode at character {error.start}") from None
        return src


class Attention(BaseModel):
    src_tokens: list[str] = Field(description="Source subwords, one per column.")
    tgt_tokens: list[str] = Field(description="Target subwords, one per row ('</s>': eos).")
    weights: list[list[list[float]]] = Field(description="[head][target][source] weights.")


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
    decode: dict[str, float | int | bool]


class LimitsInfo(BaseModel):
    max_sentences: int = Field(description="Sentences one request may hold (--max-sentences).")
    max_body_bytes: int = Field(description="The largest request body (--max-body-kib).")
    max_beam: int = Field(description="The largest beam and n_best a request may ask for.")


class Health(BaseModel):
    status: str
