"""The models `nmt serve` offers, and the JSON of their translations.

Each checkpoint named on the command line is loaded once, under an id (its run name, or ID
from `--checkpoint ID=PATH`); each adapter (`--adapter NAME=PATH`) goes on the served model
it was trained on, whose weights it shares. Requests name a model by id and an adapter by
name only, never by path, so no request can make the server read a file. A request's
`beam` and `n_best` replace the checkpoint's decode settings for its sentences, checked
like the config's keys.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmt.config import DecodeConfig
from nmt.data.markup import MarkupKind
from nmt.errors import UserError
from nmt.serve.api import MAX_BEAM, excerpt
from nmt.translate.constraints import TextConstraints
from nmt.translate.markup import Placement
from nmt.translate.memory import remembers, without_memory
from nmt.translate.results import AttentionMap, Translation
from nmt.translate.routing import connecting
from nmt.translate.translator import Translator

MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Item:
    """One sentence of a request, with what its answer should carry besides the text;
    `line`: its place in its request, which numbers it in errors and seeds its samples
    whatever batch it shares."""

    src: str
    line: int = 0
    alignments: bool = False
    attention: bool = False
    constraints: TextConstraints | None = None
    prefix: str | None = None


@dataclass
class ServedModel:
    id: str
    translator: Translator
    quantize: str | None = None  # "int8": int8 Linear and recurrent layers; None: fp32
    adapters: dict[str, ServedModel] = dataclasses.field(default_factory=dict)
    adapter: dict | None = None  # an adapter's own: {"adapter": NAME, "base": ID, "type": ...}

    def settings(
        self, beam: int | None = None, nbest: int | None = None, through: str | None = None
    ) -> DecodeConfig:
        """The checkpoint's decode settings with a request's beam, n_best and pivot (None:
        not given); a ValueError, worded for the request, when n_best exceeds the beam."""
        decode = self.translator.decode
        beam, nbest = beam or decode.beam, nbest or decode.nbest
        if nbest > beam and not decode.sample:  # a sampling model draws n_best, beam aside
            raise ValueError(
                f"n_best must be at most beam ({beam}), got {nbest}: ask for a larger beam "
                f"(at most {MAX_BEAM}) or a smaller n_best"
            )
        return dataclasses.replace(
            decode, beam=beam, nbest=nbest, through=through or decode.through
        )

    def with_adapter(self, name: str | None) -> ServedModel:
        """This model, or its adapter `name` (None: none); a ValueError worded for the
        request where it has no adapter of that name."""
        if name is None:
            return self
        if name not in self.adapters:
            known = ", ".join(map(repr, self.adapters)) or "none"
            raise ValueError(
                f"model {self.id!r} has no adapter {excerpt(name)!r}: set adapter to one of "
                f"its adapters ({known}; GET /translator/models), or leave it out"
            )
        return self.adapters[name]

    def language_error(self, tgt_lang: str | None) -> str | None:
        """Why a request cannot ask this model for `tgt_lang` (None: not given), or None."""
        languages = self.translator.target_languages
        if tgt_lang is None and len(languages) > 1:
            return f"this model writes {', '.join(languages)}: set tgt_lang to the one to write"
        if tgt_lang is not None and tgt_lang not in languages:
            given = f"tgt_lang {excerpt(tgt_lang)!r}"
            if len(languages) == 1:
                only = languages[0]
                return f"{given}: this model writes only {only}; set tgt_lang to {only} or omit it"
            return f"{given}: this model writes {', '.join(languages)} only; set one of them"
        return None

    def describe(self, served: dict[str, ServedModel]) -> dict[str, Any]:
        """What GET /translator/models says about this model (no file paths); `served`:
        every model of the server, for the chains through them."""
        decode, model = self.translator.decode, self.translator.config.model
        pairs = self.translator.config.data.pairs
        return {
            "model_id": self.id,
            "loaded": True,
            "src_lang": pairs[0][0],
            "tgt_lang": pairs[0][1],
            "directions": ["-".join(pair) for pair in pairs],
            "tgt_langs": self.translator.target_languages,
            "decoder": model.decoder.type,
            "attention": model.attention.type,
            "heads": model.attention.heads if model.attention.type == "multihead" else 1,
            "quantize": self.quantize,
            "adapters": [adapter.adapter for adapter in self.adapters.values()],
            "memory": self.translator.memory is not None,
            "pivots": pivots(pairs),
            "chains": chains(self, served),
            "decode": {
                "beam": decode.beam,
                "n_best": decode.nbest,
                "alpha": decode.alpha,
                "sample": decode.sample,
                "max_src_len": decode.max_src_len,
                "no_repeat_ngram": decode.no_repeat_ngram,
                "coverage_penalty": decode.coverage_penalty,
                "max_constraints": decode.max_constraints,
                "shortlist": decode.shortlist,
                "restrict_to_target_language": decode.restrict_to_target_language,
                "precision": decode.precision,
                "zero_shot": decode.zero_shot,
                "pivot_candidates": decode.pivot_candidates,
            },
        }


def chains(first: ServedModel, served: dict[str, ServedModel]) -> dict[str, str]:
    """The languages `first` neither reads nor writes that another served model writes
    from one it writes (a round trip back into a source language is no chain), each with
    the first such model's id."""
    writes = set(first.translator.target_languages)
    known = writes | set(first.translator.source_languages)
    found: dict[str, str] = {}
    for second in served.values():
        reads = set(second.translator.source_languages)
        if second is not first and len(writes & reads) == 1:
            for language in second.translator.target_languages:
                if language not in known:
                    found.setdefault(language, second.id)
    return found


def chained(
    served: dict[str, ServedModel],
    route: tuple[str, str | None],
    then: str | None,
    through: str | None,
) -> Translator:
    """The translator of `route` (a model id and an adapter of it, or None), chained to the
    model `then` (meeting in `through`, or the one language they share) where a request
    names one."""
    model_id, adapter = route
    translator = served[model_id].translator
    if adapter is not None:
        translator = served[model_id].adapters[adapter].translator
    if then is None:
        return translator
    return translator.with_decode(through=through).chained(served[then].translator)


def pivots(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """The untrained directions between the model's languages that a pivot connects."""
    languages = sorted({language for pair in pairs for language in pair})
    found = {}
    for source in languages:
        for target in languages:
            untrained = source != target and (source, target) not in pairs
            if untrained and (pivot := connecting(pairs, source, target)):
                found[f"{source}-{target}"] = pivot
    return found


def parse_spec(spec: str, option: str = "--checkpoint") -> tuple[str | None, Path]:
    """'PATH' -> (None, PATH); 'ID=PATH' -> (ID, PATH), unless PATH itself names a file or a
    run directory."""
    if "=" not in spec or Path(spec).exists():
        return None, Path(spec)
    model_id, _, path = spec.partition("=")
    if not MODEL_ID.fullmatch(model_id) or not path:
        raise UserError(
            f"{option} {spec!r}: expected PATH or ID=PATH, where ID is letters, digits, "
            "'.', '_' or '-' and starts with a letter or digit "
            f"(e.g. {option} base=runs/base/best.pt)."
        )
    return model_id, Path(path)


def translate_items(
    translator: Translator,
    decode: DecodeConfig,
    items: Sequence[Item],
    batch_size: int,
    tgt_lang: str | None = None,
    src_lang: str | None = None,
    markup: MarkupKind | None = None,
    placement: Placement | None = None,
) -> list:
    """One list of n-best answers (dicts, best first) per item, in order; `markup`: each
    item's src is marked up (then none asks for what names one sentence's translation),
    its tags placed by `placement` (None: projection)."""
    if not remembers(translator, tgt_lang):  # a direction its memory does not hold
        translator = without_memory(translator)
    asked: dict = {}
    if markup is not None and placement is not None:
        asked["placement"] = placement
    if markup is None:
        asked = dict(
            alignments=any(item.alignments for item in items),
            attention=any(item.attention for item in items),
            constraints=[item.constraints for item in items],
            prefix=[item.prefix for item in items],
        )
    translations = translator.translate(
        [item.src for item in items],
        beam=decode.beam,
        nbest=decode.nbest,
        through=decode.through,
        src_lang=src_lang,
        batch_size=batch_size,
        tgt_lang=tgt_lang,
        first=[item.line for item in items],
        markup=markup,
        **asked,
    )
    return [
        answers(item, translation, decode.nbest)
        for item, translation in zip(items, translations, strict=True)
    ]


def answers(item: Item, translation: Translation, nbest: int) -> list[dict]:
    """`nbest` answers, best first: the OpenNMT-py fields (src, tgt, pred_score, n_best), then
    ours. pred_score is the normalised score that ranked the candidate. A blank line gives
    blank text, score 0. The search may find fewer than `nbest` (a tiny vocabulary, every
    continuation banned): the ranks it left empty get blank text and score None, so that
    the answer, laid out by rank, has every rank for every input."""
    if not translation.src_ids and not translation.nbest:  # blank (a marked-up src has one)
        return [_empty(item, nbest, False, 0.0) for _ in range(nbest)]
    result = []
    for candidate in translation.nbest:
        answer = {
            "src": item.src,
            "tgt": candidate.text,
            "pred_score": candidate.score,
            "n_best": nbest,
            "truncated": translation.truncated,
        }
        if item.alignments:
            answer["align"] = candidate.alignment
        if item.attention:
            answer["attention"] = attention_json(candidate.attention)
        if item.constraints is not None:
            answer["constraints_met"] = candidate.constraints_met
        if candidate.pivot is not None:
            answer["pivot"] = candidate.pivot.text
        if translation.match is not None:
            match = translation.match
            answer["tm_match"] = {"score": match.score, "exact": match.exact}
        result.append(answer)
    missing = nbest - len(result)
    return result + [_empty(item, nbest, translation.truncated, None) for _ in range(missing)]


def _empty(item: Item, nbest: int, truncated: bool, score: float | None) -> dict:
    """An answer without a translation: blank text, empty alignment and attention."""
    answer = {
        "src": item.src,
        "tgt": "",
        "pred_score": score,
        "n_best": nbest,
        "truncated": truncated,
    }
    if item.alignments:
        answer["align"] = ""
    if item.attention:
        answer["attention"] = {"src_tokens": [], "tgt_tokens": [], "weights": []}
    return answer


def attention_json(attention: AttentionMap) -> dict:
    """Subwords of both sides (target: one per step, '</s>' for the eos step) and the
    weights per head, [H][T][S], rounded to 4 decimals to keep answers small."""
    weights = attention.weights.permute(1, 0, 2)  # [T, H, S] -> [H, T, S]
    return {
        "src_tokens": attention.src_tokens,
        "tgt_tokens": attention.tgt_tokens,
        "weights": torch.round(weights.double(), decimals=4).tolist(),  # 0.1141, not 0.11410000175
    }
