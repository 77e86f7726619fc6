"""The Translator: sentences in, translations out, with one checkpoint's model or several as
an ensemble. It is what `nmt translate`, `nmt eval`, `nmt score`, `nmt serve` and the Python
API (`nmt.Translator`) all translate with.

What it answers is in results.py, how checkpoints load in loading.py, the line pipeline
(truncation, chunks, batches, candidates) in pipeline.py and forced scoring in pair_scores.py.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import torch

from nmt.config import DecodeConfig, Experiment
from nmt.cores import available_cores
from nmt.data.markup import MarkupKind
from nmt.data.memory import TranslationMemory
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.translate import pivot as pivoting
from nmt.translate.auto_precision import auto_precision
from nmt.translate.constraints import (
    TextConstraints,
    parse_constraints,
    prefix_text,
)
from nmt.translate.decoding import ModelSearch
from nmt.translate.loading import (
    PathLike,
    checkpoint_paths,
    decode_settings,
    in_precision,
    load_model,
    precision_named,
    tokenizer_towards,
)
from nmt.translate.markup import marked_translations
from nmt.translate.memory import (
    check_memory_call,
    memory_for,
    recalled,
    refused_with_memory,
    remembers,
)
from nmt.translate.pair_scores import Target, check_targets, score_pairs
from nmt.translate.pipeline import CHUNK_LINES, Numbering, Wanted, per_sentence, translate_stream
from nmt.translate.results import PairScore, Translation
from nmt.translate.routing import meeting, source_languages
from nmt.translate.shortlist import Shortlist, translation_shortlist

Constraining = TextConstraints | Mapping[str, Any] | None


class Translator:
    """A model (a Seq2Seq, or an Ensemble of them), its tokenizer and its decode settings.
    `Translator.load(path)` reads checkpoints; `translate` takes one sentence or a list,
    `stream` any number of lines in bounded memory, `score` given translations. `workers`:
    batches decoded side by side, each on one torch thread (default: one)."""

    reports_attention = True  # for alignments, attention maps and their statistics

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Tokenizer,
        config: Experiment,
        decode: DecodeConfig | None = None,
        device: torch.device | None = None,
        workers: int = 1,
        tgt_lang: str | None = None,
        shortlist: Shortlist | None = None,
    ):
        if workers < 1:
            raise UserError(f"workers must be at least 1, got {workers}.")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.config = config
        self.decode = decode or config.decode
        self.device = device or next(model.parameters()).device
        self.workers = workers
        self.tgt_lang = tgt_lang
        self.shortlist, self.then = shortlist, None  # a chain's second model: `load(then=)`
        self.memory: TranslationMemory | None = None  # `load(memory=)`: nmt/translate/memory.py
        _check_settings(config, self.decode, shortlist)
        if tgt_lang is not None:
            self.towards(tgt_lang)  # an unknown language fails here, not at the first call

    @classmethod
    def load(
        cls,
        checkpoints: PathLike | Sequence[PathLike],
        device: str | torch.device = "auto",
        quantize: str | None = None,
        attention_layer: int | None = None,
        workers: int | None = 1,
        tgt_lang: str | None = None,
        then: PathLike | None = None,
        adapter: PathLike | None = None,
        memory: PathLike | None = None,
        **decode: Any,
    ) -> Translator:
        """One checkpoint (a .pt file or a run directory's best.pt), or several as an
        ensemble. `device` "auto": CUDA when torch sees one, unless `quantize` "int8".
        `workers`: batches side by side (None: one per core on a CPU). `attention_layer`:
        what alignments and plots show (of each model, a chain's too); `tgt_lang`: the
        language to write, of several; `decode` replaces decode settings (beam=5, ...);
        `then`: a second checkpoint, a chain (nmt/translate/pivot.py); `adapter`: an
        adapter checkpoint on the one checkpoint, its base; `memory`: a translation memory
        (nmt/translate/memory.py). docs/python.md says each in full."""
        model = load_model(checkpoints, device, quantize, attention_layer, adapter)
        loaded = _loaded(cls, checkpoints, model, quantize, workers, decode)
        loaded.tgt_lang = tgt_lang
        if memory is not None:
            loaded.memory = memory_for(memory, loaded.config)
        if then is not None:
            second = load_model(then, device, quantize, attention_layer)  # both legs' maps
            loaded = loaded.chained(_loaded(cls, then, second, quantize, workers, decode))
        if tgt_lang is not None:
            (loaded.then or loaded).towards(tgt_lang)  # an unknown language fails here
        return loaded

    def chained(self, then: Translator) -> Translator:
        """This translator (its model shared) translating on through `then`: a chain of two,
        refused where the first's languages and the second's do not meet."""
        chain = copy.copy(self)
        chain.then = then
        meeting(chain, then, chain.decode.through)
        return chain

    def with_decode(self, **options: Any) -> Translator:
        """This translator, its model shared (loaded once), with decode settings replaced
        (beam=10, alpha=1.0, ...), checked as Translator.load checks them."""
        tuned, tuned.decode = copy.copy(self), decode_settings(self.decode, options)
        _check_settings(self.config, tuned.decode, self.shortlist)
        return tuned

    @property
    def source_languages(self) -> list[str]:
        return source_languages(self)

    @property
    def target_languages(self) -> list[str]:
        """The languages this model writes; with several, each call names one (tgt_lang)."""
        return self.config.data.target_languages

    def towards(self, tgt_lang: str | None) -> Tokenizer:
        """The tokenizer for writing `tgt_lang` (None: the translator's, or the only one)."""
        return tokenizer_towards(self.tokenizer, self.target_languages, tgt_lang or self.tgt_lang)

    @overload
    def translate(self, sentences: str, **options: Any) -> Translation: ...

    @overload
    def translate(self, sentences: Sequence[str], **options: Any) -> list[Translation]: ...

    def translate(
        self,
        sentences: str | Sequence[str],
        *,
        constraints: Constraining | Sequence[Constraining] = None,
        prefix: str | Sequence[str | None] | None = None,
        markup: MarkupKind | None = None,
        **options: Any,
    ) -> Translation | list[Translation]:
        """Translates one sentence (a str: one Translation) or a list (one each, in order),
        sorted by length into batches all together. `constraints` ({"include": [phrases],
        "exclude": [phrases]}, or one per sentence) and `prefix` (the text a translation
        starts with, or one per sentence): nmt/search/constraints.py; `markup` ("html" or
        "xml", with `keep` and `placement`): nmt/translate/markup.py; the rest: `stream`'s."""
        single = isinstance(sentences, str)
        lines = [sentences] if single else _sentences(sentences)
        if self.memory is not None and markup is not None:
            refused_with_memory({"markup": True})
        if markup is not None or {"keep", "placement"} & options.keys():
            marked = dict(constraints=constraints, prefix=prefix, **options)
            found = marked_translations(self, lines, markup, **marked)
        else:
            guides = per_sentence(constraints, lines, single, "constraints", parse_constraints)
            starts = per_sentence(prefix, lines, single, "prefix", prefix_text)
            found = list(
                self.stream(lines, constraints=guides, prefix=starts, chunk=None, **options)
            )
        return found[0] if single else found

    def stream(
        self,
        lines: Iterable[str],
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
        constraints: Iterable[Constraining] | None = None,
        prefix: Iterable[str | None] | None = None,
        tgt_lang: str | None = None,
        chunk: int | None = CHUNK_LINES,
        done: Callable[[int], None] | None = None,
        first: Numbering = 0,
        through: str | None = None,
        src_lang: str | None = None,
    ) -> Iterator[Translation]:
        """Each line's Translation in input order, `chunk` lines at a time (None: all at
        once), so memory stays bounded whatever the input's length. Options not given are
        the translator's decode settings; `alignments` and `attention` add each candidate's
        word alignment and attention map (only then is attention kept). `constraints` and
        `prefix`: one per line, read in step with the lines. `tgt_lang`: the language to
        write (see `target_languages`). `done(n)` hears of each batch of n sentences.
        `first`: how many lines of the same input earlier calls took (an input read in
        parts), or each line's own number: sampling seeds each line by decode.seed and its
        number in the input, and errors name it. `through`: a pivot language; `src_lang`:
        the lines' language, where it decides the path (nmt/translate/routing.py:
        untrained directions and chains go through one)."""
        options = dict(beam=beam, alpha=alpha, nbest=nbest, sample=sample, max_src_len=max_src_len)
        options.update(no_repeat_ngram=no_repeat_ngram, coverage_penalty=coverage_penalty)
        decode = decode_settings(self.decode, {**options, "through": through})
        wanted = dict(alignments=alignments, attention=attention, batch_size=batch_size)
        args = (lines, tgt_lang, src_lang, wanted, constraints, prefix, chunk, done, first)
        given = {"through": decode.through, **wanted, "constraints": constraints}
        check_memory_call(self, {**given, "prefix": prefix}, tgt_lang)
        routed = pivoting.routed_stream(self, decode, *args)
        return routed if routed is not None else _searched(self, decode, *args)

    def score(
        self,
        sources: Sequence[str],
        targets: Sequence[Target],
        batch_size: int | None = None,
        tgt_lang: str | None = None,
        through: str | None = None,
        src_lang: str | None = None,
    ) -> list[PairScore]:
        """The model's log-probability of each target given its source, token by token, as
        search computes it without a shortlist (which search normalises over alone), an
        ensemble's included; a pair whose source `translate` would pivot (`through`, a
        chain, an untrained direction; `src_lang` as there), as search ranks its paths. A
        target is text, or the token ids search wrote (`Hypothesis.tokens`); a source is
        cut at decode.max_src_len subwords; a blank one gets no score."""
        sources = _sentences(sources)
        check_targets(sources, targets)
        decode = decode_settings(self.decode, {"through": through, "batch_size": batch_size})
        routed = pivoting.scored(self, decode, sources, list(targets), tgt_lang, src_lang)
        if routed is not None:
            return routed
        tokenizer = self.towards(tgt_lang)
        return score_pairs(
            self.model, tokenizer, decode, sources, targets, decode.batch_size, self.workers
        )


def _searched(
    translator: Translator, decode: DecodeConfig, lines, tgt_lang, src_lang, wanted, *rest
) -> Iterator[Translation]:
    """A stream searched by the translator's own model (no pivot, no chain); `rest`:
    constraints, prefix, chunk, done, first, as `stream` takes them."""
    tokenizer = translator.towards(tgt_lang)
    shown = wanted["alignments"] or wanted["attention"]
    search = ModelSearch(translator.model, tokenizer, shown, translator.shortlist)
    kept = Wanted(wanted["alignments"], wanted["attention"])
    batch, workers = wanted["batch_size"], translator.workers
    if not remembers(translator, tgt_lang):
        return translate_stream(lines, tokenizer, decode, search, kept, batch, workers, *rest)
    _, _, chunk, done, first = rest

    def searched(sources: list[str], numbers: list[int]) -> Iterator[Translation]:
        args = (None, None, None, done, numbers)
        return translate_stream(sources, tokenizer, decode, search, kept, batch, workers, *args)

    config = translator.config
    return recalled(translator.memory, config, tokenizer, lines, chunk, first, searched, done)


def _loaded(cls, checkpoints, loaded, quantize, workers, decode) -> Translator:
    """A Translator of `checkpoints`, whose load_model answer is `loaded`, as Translator.load
    describes."""
    model, tokenizer, config, device = loaded
    settings = decode_settings(config.decode, decode)
    named = precision_named(settings, decode, "the checkpoint's")
    auto = functools.partial(auto_precision, config, tokenizer, device)
    model = in_precision(model, settings.precision, quantize, auto, named)
    if workers is None:
        workers = available_cores() if device.type == "cpu" else 1
    first, best = checkpoint_paths(checkpoints)[0], settings.shortlist
    shortlist = translation_shortlist(first, model, tokenizer, best) if best else None
    return cls(model, tokenizer, config, settings, device, workers, None, shortlist)


def _check_settings(config: Experiment, decode: DecodeConfig, shortlist: Shortlist | None) -> None:
    config.check_decode(decode)
    if decode.shortlist and shortlist is None:
        raise UserError(
            f"decode.shortlist {decode.shortlist} needs the checkpoint's shortlist: "
            "Translator.load(checkpoint, shortlist=K) loads it (after `nmt shortlist`), or "
            "pass shortlist=0."
        )


def _sentences(sentences: Sequence[str]) -> list[str]:
    if isinstance(sentences, (bytes, bytearray)) or not isinstance(sentences, Sequence):
        raise UserError(
            f"translate expects a sentence (str) or a list of them, got {type(sentences).__name__}."
        )
    wrong = next((s for s in sentences if not isinstance(s, str)), None)
    if wrong is not None:
        raise UserError(f"translate expects sentences as str, got a {type(wrong).__name__}.")
    return list(sentences)
