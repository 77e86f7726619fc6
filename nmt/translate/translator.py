"""The Translator: sentences in, translations out, with one checkpoint's model or several as
an ensemble. It is what `nmt translate`, `nmt eval`, `nmt serve` and the Python API
(`nmt.Translator`) all translate with.

Sources are cut at decode.max_src_len subwords, translated in length-sorted batches, and
answered in input order; a blank line gives a blank translation.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import torch

from nmt.checkpoint import load_checkpoint, restore_model
from nmt.config import ConfigError, DecodeConfig, Experiment
from nmt.data.batching import pad
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.model.device import resolve_device
from nmt.search import Ensemble, Hypothesis, beam_search, greedy_search, max_lengths, sample_search
from nmt.search.constraints import Constraints, satisfies
from nmt.search.forced import forced_log_probs
from nmt.translate.alignment import hypothesis_alignment, step_labels
from nmt.translate.constraints import (
    ConstraintError,
    TextConstraints,
    encode_constraints,
    parse_constraints,
)
from nmt.cores import available_cores
from nmt.translate.parallel import parallel_map
from nmt.translate.quantize import quantize as quantize_model

log = logging.getLogger(__name__)

PathLike = str | os.PathLike
_PRIME = 1_000_003  # mixes decode.seed and a batch's numbers into its sampling seed


@dataclass(frozen=True)
class AttentionMap:
    """The attention of one translation over its source, as a plot draws it."""

    src_tokens: list[str]  # source subwords, one per column
    tgt_tokens: list[str]  # target subwords, one per row; '</s>' for the eos step
    weights: torch.Tensor  # [T, H, S]: rows as tgt_tokens, one map per head, columns as src

    @classmethod
    def of(
        cls, hypothesis: Hypothesis, src_tokens: list[str], tokenizer: Tokenizer
    ) -> AttentionMap:
        labels = step_labels(hypothesis, tokenizer.tgt, src_tokens)
        return cls(src_tokens, labels, hypothesis.attention)


@dataclass(frozen=True)
class Candidate:
    """One translation of a sentence."""

    text: str  # detokenized
    score: float  # log-probability / ((5 + steps) / 6) ** alpha (+ coverage penalty): its rank
    hypothesis: Hypothesis  # the search's own: target ids, log-probability, attention
    alignment: str | None = None  # Pharaoh word alignment 'i-j ...', when asked
    attention: AttentionMap | None = None  # when asked
    constraints_met: bool | None = None  # holds every included phrase and no excluded one


@dataclass(frozen=True)
class Translation:
    """A sentence and its translations, best first (decode.nbest of them; none when blank)."""

    source: str
    src_ids: list[int]
    nbest: list[Candidate]
    truncated: bool = False  # the source was cut at decode.max_src_len subwords

    @property
    def text(self) -> str:
        return self.nbest[0].text if self.nbest else ""

    @property
    def constraints_met(self) -> bool | None:
        """Whether the best translation meets its constraints (None: it had none)."""
        return self.nbest[0].constraints_met if self.nbest else None

    @property
    def score(self) -> float:
        return self.nbest[0].score if self.nbest else 0.0

    @property
    def alignment(self) -> str | None:
        return self.nbest[0].alignment if self.nbest else None

    @property
    def attention(self) -> AttentionMap | None:
        return self.nbest[0].attention if self.nbest else None

    @property
    def hypotheses(self) -> list[Hypothesis]:
        return [candidate.hypothesis for candidate in self.nbest]


@dataclass(frozen=True)
class PairScore:
    """How likely the model finds a given translation of a source (forced decoding)."""

    total: float | None  # the sum of the token log-probabilities, eos included; None: blank source
    tokens: list[str]  # the target's subwords, then '</s>'
    log_probs: list[float]  # one per token
    p_gen: list[float] | None = None  # a copy model's, one per token: the share not copied

    @property
    def mean(self) -> float | None:
        """The log-probability per token: comparable across lengths, e.g. to filter data."""
        return None if self.total is None else self.total / len(self.tokens)


# source ids, decode settings, the batch's number in its call, each source's constraints ->
# each source's hypotheses
Search = Callable[
    [list[list[int]], DecodeConfig, int, list[Constraints | None]], list[list[Hypothesis]]
]
Constraining = TextConstraints | Mapping[str, Any] | None


class Translator:
    """A model (a Seq2Seq, or an Ensemble of them), its tokenizer and its decode settings.

    `Translator.load(path)` reads checkpoints; `translate` takes one sentence or a list.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Tokenizer,
        config: Experiment,
        decode: DecodeConfig | None = None,
        device: torch.device | None = None,
        workers: int = 1,
        tgt_lang: str | None = None,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.config = config
        self.decode = decode or config.decode
        self.device = device or next(model.parameters()).device
        self.workers = workers  # batches decoded side by side, each on one torch thread
        self._calls = itertools.count()  # numbers translate's calls, for the sampling seeds
        self.tgt_lang = tgt_lang
        if tgt_lang is not None:
            self.towards(tgt_lang)  # an unknown language fails here, not at the first call

    @classmethod
    def load(
        cls,
        checkpoints: PathLike | Sequence[PathLike],
        device: str | torch.device = "auto",
        quantize: str | None = None,
        attention_layer: int | None = None,
        workers: int | None = None,
        tgt_lang: str | None = None,
        **decode: Any,
    ) -> Translator:
        """One checkpoint, or several as an ensemble (every step averages their predictions).

        `device`: "auto" (CUDA when torch sees one, unless quantized), "cpu", "cuda" or a
        torch.device. `workers`: batches decoded side by side on the CPU, each on one torch
        thread (default: one per core; on a GPU one). `quantize` "int8": int8 Linear and
        recurrent layers, CPU only (nmt/translate/quantize.py). `attention_layer` (1 to its
        layers): whose attention over the source a Transformer reports, for alignments and
        plots (default: the last). `tgt_lang`: the language to write, for a model that writes
        several (`target_languages`); translate's own tgt_lang overrides it.
        `decode` replaces the first checkpoint's decode settings (beam=5, nbest=2, ...).
        Ensemble members must share both vocabularies and their languages.
        """
        paths = _checkpoint_paths(checkpoints)
        if isinstance(device, str):
            device = resolve_device("cpu" if quantize and device == "auto" else device, 0, "device")
        restored = [restore_model(load_checkpoint(path), path) for path in paths]
        models = [model for model, _, _ in restored]
        tokenizer, config = restored[0][1], restored[0][2]
        for path, (_, other, other_config) in zip(paths[1:], restored[1:], strict=True):
            _check_same_vocabularies(paths[0], path, tokenizer, other)
            _check_same_languages(paths[0], path, config, other_config)
        if attention_layer is not None:
            _choose_attention_layer(models, paths, attention_layer)
        settings = _decode_settings(config.decode, decode)
        model = models[0] if len(models) == 1 else Ensemble(models)
        model = model.to(device)
        if quantize is not None:
            model = quantize_model(model, quantize)
        if workers is None:
            workers = available_cores() if device.type == "cpu" else 1
        elif workers < 1:
            raise UserError(f"workers must be at least 1, got {workers}.")
        return cls(model, tokenizer, config, settings, device, workers, tgt_lang)

    @property
    def source_languages(self) -> list[str]:
        return sorted({source for source, _ in self.config.data.pairs})

    @property
    def target_languages(self) -> list[str]:
        """The languages this model writes; with several, each call names one (tgt_lang)."""
        return self.config.data.target_languages

    def towards(self, tgt_lang: str | None) -> Tokenizer:
        """The tokenizer for translating into `tgt_lang` (None: the translator's, or the
        model's only language)."""
        return tokenizer_towards(self.tokenizer, self.target_languages, tgt_lang or self.tgt_lang)

    @overload
    def translate(self, sentences: str, **options: Any) -> Translation: ...

    @overload
    def translate(self, sentences: Sequence[str], **options: Any) -> list[Translation]: ...

    def translate(
        self,
        sentences: str | Sequence[str],
        *,
        beam: int | None = None,
        alpha: float | None = None,
        nbest: int | None = None,
        sample: bool | None = None,
        max_src_len: int | None = None,
        no_repeat_ngram: int | None = None,
        coverage_penalty: float | None = None,
        alignments: bool = False,
        attention: bool = False,
        batch_size: int | None = None,
        constraints: Constraining | Sequence[Constraining] = None,
        prefix: str | Sequence[str | None] | None = None,
        tgt_lang: str | None = None,
    ) -> Translation | list[Translation]:
        """Translates one sentence (a str: one Translation) or a list of them (one each, in
        order). Options not given are the translator's decode settings; `alignments` and
        `attention` add each candidate's word alignment and attention map. `constraints`
        (a dict {"include": [phrases], "exclude": [phrases]}, or one per sentence) and
        `prefix` (the text the translation starts with, or one per sentence) control the
        output (nmt/search/constraints.py). `tgt_lang`: the language to write (see
        `target_languages`)."""
        single = isinstance(sentences, str)
        options = dict(
            beam=beam,
            alpha=alpha,
            nbest=nbest,
            sample=sample,
            max_src_len=max_src_len,
            no_repeat_ngram=no_repeat_ngram,
            coverage_penalty=coverage_penalty,
        )
        tokenizer = self.towards(tgt_lang)
        call = next(self._calls)
        lines = [sentences] if single else _sentences(sentences)
        decode = _decode_settings(self.decode, options)
        guides = _per_sentence(constraints, lines, single, "constraints", parse_constraints)
        starts = _per_sentence(prefix, lines, single, "prefix", _prefix_text)
        if decode.sample and any(guide and guide.include for guide in guides):
            raise UserError(
                "included phrases need beam search (any beam size, 1 included), not sampling; "
                "drop sample, or the include constraints."
            )
        translations = translate_lines(
            lines,
            tokenizer,
            decode,
            lambda src_ids, decode, batch, found: self._search(
                src_ids, decode, (call, batch), found
            ),
            batch_size,
            alignments,
            attention,
            self.workers,
            guides,
            starts,
        )
        return translations[0] if single else translations

    def check_constraints(
        self,
        source: str,
        constraints: Constraining,
        prefix: str | None,
        decode: DecodeConfig,
        tgt_lang: str | None = None,
    ) -> None:
        """A ConstraintError, naming the field, unless `constraints` and `prefix` can be
        decoded for `source` with `decode` (the server checks each request's this way)."""
        wanted = parse_constraints(constraints)
        prefix = _prefix_text(prefix)
        if decode.sample and wanted is not None and wanted.include:
            raise ConstraintError(
                "constraints.include", "included phrases need beam search, not sampling"
            )
        ids = self.towards(tgt_lang).src.encode([source.strip()])[0][: decode.max_src_len]
        limit = max_lengths(torch.tensor([len(ids)]), decode.max_len_ratio, decode.max_len_extra)
        encode_constraints(self.tokenizer.tgt, wanted, prefix, int(limit), decode.max_constraints)

    def score(
        self,
        sources: Sequence[str],
        targets: Sequence[str],
        batch_size: int | None = None,
        tgt_lang: str | None = None,
    ) -> list[PairScore]:
        """The model's log-probability of each target given its source, token by token, as
        search computes it (an ensemble's combination included). Sources are cut at
        decode.max_src_len subwords as for translation; a blank source gets no score."""
        sources, targets = _sentences(sources), _sentences(targets)
        if len(sources) != len(targets):
            raise UserError(
                f"score needs one target per source, got {len(sources)} sources and "
                f"{len(targets)} targets."
            )
        src_ids = self.towards(tgt_lang).src.encode(sources)
        src_ids = _truncated(src_ids, self.decode.max_src_len)
        tgt = self.tokenizer.tgt
        tgt_ids = [ids + [tgt.eos_id] for ids in tgt.encode(targets)]
        results = [PairScore(None, tgt.pieces(ids), []) for ids in tgt_ids]
        order = sorted((i for i, ids in enumerate(src_ids) if ids), key=lambda i: len(src_ids[i]))
        size = batch_size or self.decode.batch_size
        chunks = [order[start : start + size] for start in range(0, len(order), size)]

        copies = getattr(self.model, "copy", None) is not None  # an ensemble has no one p_gen

        def forced(chunk: list[int]) -> list[tuple[list[float], list[float] | None]]:
            src = pad([src_ids[i] for i in chunk], self.tokenizer.src.pad_id).to(self.device)
            lengths = torch.tensor([len(src_ids[i]) for i in chunk])
            targets = pad([tgt_ids[i] for i in chunk], tgt.pad_id).to(self.device)
            found = forced_log_probs(self.model, src, lengths, targets, tgt.bos_id).tolist()
            gates = [None] * len(chunk)
            if copies:
                tgt_in = torch.cat(
                    [torch.full_like(targets[:, :1], tgt.bos_id), targets[:, :-1]], 1
                )
                with torch.no_grad():
                    gates = self.model.copy_gates(src, lengths, tgt_in).tolist()
            return [
                (row[: len(tgt_ids[i])], None if gate is None else gate[: len(tgt_ids[i])])
                for row, gate, i in zip(found, gates, chunk, strict=True)
            ]

        for chunk, found in zip(chunks, parallel_map(forced, chunks, self.workers), strict=True):
            for index, (log_probs, gates) in zip(chunk, found, strict=True):
                tokens = results[index].tokens
                results[index] = PairScore(sum(log_probs), tokens, log_probs, gates)
        return results

    def _search(
        self,
        src_ids: list[list[int]],
        decode: DecodeConfig,
        draw: tuple[int, int],
        constraints: list[Constraints | None],
    ) -> list[list[Hypothesis]]:
        """The hypotheses of a batch. Sampling draws from a generator of its own, seeded by
        decode.seed and `draw` (the call's and the batch's number), so batches decoded side
        by side draw as they would one after another. Included phrases take beam search,
        which at beam 1 is greedy search that makes room for them."""
        tgt = self.tokenizer.tgt
        src = pad(src_ids, self.tokenizer.src.pad_id).to(self.device)
        lengths = torch.tensor([len(ids) for ids in src_ids])
        limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra)
        common = (self.model, src, lengths, tgt.bos_id, tgt.eos_id, limits)
        blocking = {"no_repeat_ngram": decode.no_repeat_ngram, "constraints": constraints}
        if decode.sample:
            call, batch = draw
            seed = (decode.seed * _PRIME + call) * _PRIME + batch
            generator = torch.Generator(self.device).manual_seed(seed % 2**63)
            return sample_search(
                *common,
                decode.nbest,
                decode.temperature,
                decode.top_k,
                decode.top_p,
                generator,
                **blocking,
            )
        if decode.beam == 1 and not any(c and c.include for c in constraints):
            return [[hypothesis] for hypothesis in greedy_search(*common, **blocking)]
        return beam_search(
            *common,
            decode.beam,
            decode.alpha,
            decode.nbest,
            coverage_penalty=decode.coverage_penalty,
            **blocking,
        )


def translate_lines(
    lines: Sequence[str],
    tokenizer: Tokenizer,
    decode: DecodeConfig,
    search: Search,
    batch_size: int | None = None,
    alignments: bool = False,
    attention: bool = False,
    workers: int = 1,
    constraints: Sequence[TextConstraints | None] | None = None,
    prefixes: Sequence[str | None] | None = None,
) -> list[Translation]:
    """Lines in, translations out, whatever runs the search (our models, or CTranslate2's
    for an exported one): sources cut at decode.max_src_len subwords, length-sorted batches
    (`workers` of them decoded side by side), candidates best first, blank lines blank,
    input order kept. `constraints` and `prefixes`: one per line (or None), encoded here
    and checked against each line's length limit."""
    batch_size = batch_size or decode.batch_size
    encoded = tokenizer.src.encode([line.strip() for line in lines])
    src_ids = _truncated(encoded, decode.max_src_len)
    guides = _encoded_guides(tokenizer, decode, src_ids, constraints, prefixes)
    results = [
        Translation(line, ids, [], len(ids) < len(full))
        for line, ids, full in zip(lines, src_ids, encoded, strict=True)
    ]
    order = sorted((i for i, ids in enumerate(src_ids) if ids), key=lambda i: len(src_ids[i]))
    chunks = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    searched = parallel_map(
        lambda numbered: search(
            [src_ids[i] for i in numbered[1]],
            decode,
            numbered[0],
            [guides[i] for i in numbered[1]],
        ),
        list(enumerate(chunks)),
        workers,
    )
    for chunk, found in zip(chunks, searched, strict=True):
        for index, hypotheses in zip(chunk, found, strict=True):
            copied = any(t >= tokenizer.tgt.size for h in hypotheses for t in h.tokens)
            wanted = alignments or attention or copied  # a copy model's output names them
            src_pieces = tokenizer.src.pieces(src_ids[index]) if wanted else []
            tags = tokenizer.src.prefix
            candidates = [
                Candidate(
                    tokenizer.tgt.decode(hypothesis.tokens, src_pieces),
                    hypothesis.normalised_score(decode.alpha, decode.coverage_penalty),
                    hypothesis,
                    hypothesis_alignment(hypothesis, _words_only(src_pieces, tags), tokenizer.tgt)
                    if alignments
                    else None,
                    AttentionMap.of(hypothesis, src_pieces, tokenizer) if attention else None,
                    None if guides[index] is None else satisfies(hypothesis.tokens, guides[index]),
                )
                for hypothesis in hypotheses
            ]
            # beam search ranks its n-best already; samples come in the order drawn
            candidates.sort(key=lambda candidate: candidate.score, reverse=True)
            results[index] = dataclasses.replace(results[index], nbest=candidates)
    return results


def _words_only(src_pieces: list[str], prefix: list[int]) -> list[str]:
    """The source pieces with the language tag in front (if any) as a piece of no word, so
    word alignments count the source's own words from 0."""
    return [""] * len(prefix) + src_pieces[len(prefix) :]


def _encoded_guides(
    tokenizer: Tokenizer,
    decode: DecodeConfig,
    src_ids: list[list[int]],
    constraints: Sequence[TextConstraints | None] | None,
    prefixes: Sequence[str | None] | None,
) -> list[Constraints | None]:
    """Each line's constraints and prefix as target ids, or a ConstraintError naming the
    sentence."""
    if not constraints and not prefixes:
        return [None] * len(src_ids)
    constraints = constraints or [None] * len(src_ids)
    prefixes = prefixes or [None] * len(src_ids)
    lengths = torch.tensor([len(ids) for ids in src_ids])
    limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra).tolist()
    guides = []
    for index, (ids, wanted, prefix, limit) in enumerate(
        zip(src_ids, constraints, prefixes, limits, strict=True)
    ):
        try:
            guide = encode_constraints(tokenizer.tgt, wanted, prefix, limit, decode.max_constraints)
        except ConstraintError as error:
            raise error.at(index) from None
        guides.append(guide if ids else None)
    return guides


def _per_sentence(
    given: Any, lines: list[str], single: bool, name: str, parse: Callable[[Any], Any]
) -> list[Any]:
    """One parsed value per sentence: `given` is one value for a single sentence, or a
    sequence with one per sentence (None: none)."""
    if given is None:
        return [None] * len(lines)
    values = [given] if single else given
    if single and isinstance(given, Sequence) and not isinstance(given, str):
        raise UserError(f"{name}: one sentence takes one {name} value, not a list.")
    if isinstance(values, (str, Mapping)) or not isinstance(values, Sequence):
        raise UserError(f"{name}: give one per sentence, a list as long as the sentences.")
    if len(values) != len(lines):
        raise UserError(
            f"{name}: {len(values)} given for {len(lines)} sentences; give one per sentence "
            "(None for none)."
        )
    parsed = []
    for index, value in enumerate(values):
        try:
            parsed.append(parse(value))
        except ConstraintError as error:
            raise error.at(index) from None
    return parsed


def _prefix_text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConstraintError("prefix", f"expected text, got {type(value).__name__}")
    return value


def _truncated(src_ids: list[list[int]], limit: int) -> list[list[int]]:
    """Cuts sources at decode.max_src_len subwords, so one huge line cannot exhaust memory."""
    long = [index for index, ids in enumerate(src_ids) if len(ids) > limit]
    if not long:
        return src_ids
    log.warning(
        "warning: %d source line(s) longer than decode.max_src_len=%d subwords were cut to "
        "that length (first: line %d, %d subwords); to keep more, raise the limit with "
        "--max-src-len N.",
        len(long),
        limit,
        long[0] + 1,
        len(src_ids[long[0]]),
    )
    return [ids[:limit] for ids in src_ids]


def _decode_settings(decode: DecodeConfig, options: dict[str, Any]) -> DecodeConfig:
    """`decode` with the options given (None: not given), checked like the config's keys."""
    given = {key: value for key, value in options.items() if value is not None}
    unknown = sorted(set(given) - {spec.name for spec in dataclasses.fields(DecodeConfig)})
    if unknown:
        raise UserError(
            f"unknown decode option(s) {', '.join(unknown)}; the decode settings are "
            f"{', '.join(spec.name for spec in dataclasses.fields(DecodeConfig))}."
        )
    try:
        return dataclasses.replace(decode, **given)
    except ConfigError as error:
        raise ConfigError(f"decode.{error.path}", error.detail) from None


def _sentences(sentences: Sequence[str]) -> list[str]:
    if isinstance(sentences, (bytes, bytearray)) or not isinstance(sentences, Sequence):
        raise UserError(
            f"translate expects a sentence (str) or a list of them, got {type(sentences).__name__}."
        )
    wrong = next((s for s in sentences if not isinstance(s, str)), None)
    if wrong is not None:
        raise UserError(f"translate expects sentences as str, got a {type(wrong).__name__}.")
    return list(sentences)


def _checkpoint_paths(checkpoints: PathLike | Sequence[PathLike]) -> list[Path]:
    """A path (str or PathLike) or a sequence of them, as Paths; a str is one path."""
    if isinstance(checkpoints, (str, os.PathLike)):
        return [Path(checkpoints)]
    if isinstance(checkpoints, Sequence) and all(
        isinstance(path, (str, os.PathLike)) for path in checkpoints
    ):
        if not checkpoints:
            raise UserError("no checkpoint given: name one .pt file, or several for an ensemble.")
        return [Path(path) for path in checkpoints]
    raise UserError(
        f"expected a checkpoint path (str or PathLike) or a list of them, got "
        f"{type(checkpoints).__name__}."
    )


def _check_same_vocabularies(first: Path, path: Path, tokenizer: Tokenizer, other: Tokenizer):
    for side in ("src", "tgt"):
        if getattr(other, side).model_proto != getattr(tokenizer, side).model_proto:
            name = "source" if side == "src" else "target"
            raise UserError(
                f"checkpoints {first} and {path} have different {name} vocabularies "
                "(their SentencePiece models differ); an ensemble needs models trained "
                "with the same tokenizer."
            )


def tokenizer_towards(
    tokenizer: Tokenizer, languages: Sequence[str], language: str | None
) -> Tokenizer:
    """The tokenizer for translating into `language` (None: the only one of `languages`,
    the languages a model writes): sources tagged with it when the model reads tags."""
    if language is None and len(languages) > 1:
        raise UserError(
            f"this model writes {', '.join(languages)}: name the language to translate "
            "into (--tgt-lang on the command line, tgt_lang in Python and the server)."
        )
    if language is not None and language not in languages:
        raise UserError(
            f"tgt_lang '{language}': this model writes {', '.join(languages)} only; "
            "choose one of them."
        )
    return tokenizer.towards(language or languages[0])


def _check_same_languages(first: Path, path: Path, config: Experiment, other: Experiment):
    if other.data.target_languages != config.data.target_languages:
        raise UserError(
            f"checkpoints {first} and {path} write different languages "
            f"({', '.join(config.data.target_languages)} vs "
            f"{', '.join(other.data.target_languages)}); an ensemble needs models that write "
            "the same ones."
        )


def _choose_attention_layer(models: list[torch.nn.Module], paths: list[Path], number: int):
    """Sets the reporting layer of every Transformer; an RNNsearch has one attention only."""
    layered = [
        (path, model) for path, model in zip(paths, models, strict=True) if model.attention_layers
    ]
    if not layered:
        raise UserError(
            f"--attention-layer {number}: {paths[0]} has an RNNsearch decoder, whose attention "
            "is a single layer; drop the option (it chooses a Transformer decoder's layer)."
        )
    for path, model in layered:
        if not 1 <= number <= model.attention_layers:
            raise UserError(
                f"--attention-layer {number}: the Transformer decoder of {path} has layers 1 "
                f"to {model.attention_layers}; choose one of them (default: the last)."
            )
        model.choose_attention_layer(number)
