"""`nmt translate --engine ctranslate2 --model DIR`: translating with an exported model.

The line handling is the Translator's own (nmt/translate/pipeline.py: the same SentencePiece
ids, truncation, chunks, batches, blank lines), so output differs from `nmt translate --checkpoint`
only where the searches do. Each search is told what ours does:

- No bos or eos on the source, the decoder starts from bos, and eos may come first
  (`min_decoding_length=0`, where CTranslate2 defaults to 1).
- Each sentence stops at its own limit, ceil(max_len_ratio * source length) +
  max_len_extra tokens, eos included. CTranslate2 takes one limit per call, so a batch goes
  in one call under its longest limit, and the few sentences whose output ran past their
  own limit are translated again under it (one call per distinct limit). Calls per distinct
  limit throughout would split a batch of 64 into a dozen small ones and lose most of
  CTranslate2's speed.
- Greedy search (beam 1) is ours exactly, up to floating-point differences between the
  two libraries' kernels.
- Beam search ranks by score / length ** alpha in CTranslate2 (no GNMT penalty since 2.0).
  It returns its `beam` finished hypotheses with the end token and raw scores recovered,
  and they are ranked here by our score / ((5 + steps) / 6) ** alpha. Which hypotheses
  finish still follows CTranslate2's beam (a full beam, refilled as hypotheses end) rather
  than ours (one that shrinks), so beam output may differ on a few sentences.

No attention comes back: CTranslate2 4.8's beam search reports the first step's attention
of another sentence of the batch, so alignments and attention plots stay with
`--checkpoint`. Hypotheses carry their number of steps and no attention, which is all their
normalised score reads.

`--quantize int8` loads the model with CTranslate2's int8 compute type.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from nmt.config import ConfigError, DecodeConfig, Experiment, checkpoint_config
from nmt.cores import available_cores
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.export.converter import CONFIG_FILE, VMAP_FILE, import_ctranslate2
from nmt.export.ctranslate2_search import BatchSearch
from nmt.model.device import resolve_precision
from nmt.reads import record_directory
from nmt.translate import pivot as pivoting
from nmt.translate.loading import decode_settings, precision_named, tokenizer_towards
from nmt.translate.pipeline import CHUNK_LINES, translate_stream
from nmt.translate.quantize import SCHEMES
from nmt.translate.results import Translation

log = logging.getLogger("nmt")


class CTranslate2Translator:
    """What `write_translations` and `evaluate` need of a Translator: tokenizer, config,
    decode settings, `translate(lines)` and `stream(lines)`; the search runs in CTranslate2."""

    reports_attention = False  # see the module's docstring
    then = None  # a chain of two models is the Translator's (--then with --checkpoint)

    def __init__(
        self,
        model: Any,
        tokenizer: Tokenizer,
        config: Experiment,
        decode: DecodeConfig,
        workers: int = 1,
        tgt_lang: str | None = None,
    ):
        self.model = model  # a ctranslate2.Translator with `workers` inter-op threads
        self.tokenizer = tokenizer
        self.config = config
        self.decode = decode
        self.workers = workers
        self.tgt_lang = tgt_lang
        if tgt_lang is not None:
            self.towards(tgt_lang)  # an unknown language fails here, not at the first call
        self.search = BatchSearch(model, tokenizer)

    def translate(self, lines: Sequence[str], **options: Any) -> list[Translation]:
        """Translates every line, all sorted into batches together; see `stream`."""
        return list(self.stream(lines, chunk=None, **options))

    def stream(
        self,
        lines: Iterable[str],
        *,
        beam: int | None = None,
        alpha: float | None = None,
        nbest: int | None = None,
        max_src_len: int | None = None,
        no_repeat_ngram: int | None = None,
        alignments: bool = False,
        attention: bool = False,
        batch_size: int | None = None,
        constraints: Iterable[object] | None = None,
        prefix: Iterable[str | None] | None = None,
        tgt_lang: str | None = None,
        chunk: int | None = CHUNK_LINES,
        done: Callable[[int], None] | None = None,
        first: int | Sequence[int] = 0,
        through: str | None = None,
        src_lang: str | None = None,
    ) -> Iterator[Translation]:
        """Each line's Translation in input order, `chunk` lines at a time; a blank line
        gives a blank translation. Options not given are the model's decode settings.
        `prefix`: one per line (None: none), as CTranslate2's target_prefix. `tgt_lang`: the
        language to write, for a model that writes several (the tag goes in as a piece).
        `first`, `through` and `src_lang`: as in Translator.stream (a pivot runs both legs
        in CTranslate2)."""
        options = dict(beam=beam, alpha=alpha, nbest=nbest, max_src_len=max_src_len)
        options.update(no_repeat_ngram=no_repeat_ngram, through=through)
        decode = decode_settings(self.decode, options)
        if alignments or attention:
            raise UserError(
                "CTranslate2 reports no attention here, so alignments and attention maps need "
                "the checkpoint the model was exported from."
            )
        if decode.coverage_penalty:
            raise UserError(
                "CTranslate2 reports no attention here, so it cannot rank by the coverage "
                f"penalty (decode.coverage_penalty {decode.coverage_penalty}); pass "
                "--coverage-penalty 0, or translate with the --checkpoint the model was "
                "exported from."
            )
        if decode.restrict_to_target_language:
            raise UserError(
                "CTranslate2 takes one vocabulary map for every language, so it cannot keep "
                "a translation to the requested language's pieces "
                "(decode.restrict_to_target_language); pass --any-target-piece, or translate "
                "with the --checkpoint the model was exported from."
            )
        wanted = dict(alignments=alignments, attention=attention, batch_size=batch_size)
        args = (lines, tgt_lang, src_lang, wanted, constraints, prefix, chunk, done, first)
        routed = pivoting.routed_stream(self, decode, *args)
        if routed is not None:
            return routed
        return translate_stream(
            lines,
            self.towards(tgt_lang),
            decode,
            self.search,
            batch_size=batch_size,
            workers=self.workers,
            constraints=constraints,
            prefixes=prefix,
            chunk_lines=chunk,
            done=done,
            first=first,
        )

    @property
    def target_languages(self) -> list[str]:
        return self.config.data.target_languages

    def towards(self, tgt_lang: str | None) -> Tokenizer:
        return tokenizer_towards(self.tokenizer, self.target_languages, tgt_lang or self.tgt_lang)


def load_ctranslate2_translator(
    model_dir: Path,
    quantize: str | None = None,
    workers: int | None = None,
    tgt_lang: str | None = None,
    **decode_overrides: Any,
) -> CTranslate2Translator:
    """The model `nmt export --format ctranslate2` wrote to `model_dir`, with its decode
    settings overridden; `quantize` "int8" runs it with int8 weights. `workers` batches are
    translated side by side (CTranslate2's inter-op threads), each on one thread (default:
    one per core)."""
    ct2 = import_ctranslate2("nmt translate --engine ctranslate2")
    model_dir = record_directory(model_dir, "--model")
    if not (model_dir / "model.bin").is_file() or not (model_dir / CONFIG_FILE).is_file():
        raise UserError(
            f"--model {model_dir} is not a directory written by `nmt export --format "
            "ctranslate2` (it needs model.bin and nmt.json)."
        )
    if quantize is not None and quantize not in SCHEMES:
        raise UserError(f"--quantize {quantize}: choose one of {', '.join(SCHEMES)}.")
    config = _config(model_dir)
    tokenizer = _tokenizer(model_dir)
    try:
        decode = dataclasses.replace(config.decode, **decode_overrides)
    except ConfigError as error:
        raise ConfigError(f"decode.{error.path}", error.detail) from None
    _check_shortlist(model_dir, decode.shortlist, config.decode.shortlist)
    if decode.sample:
        raise UserError(
            "--engine ctranslate2 decodes by beam or greedy search; drop --sample (or give "
            "--no-sample if the model's config samples), or sample with --checkpoint."
        )
    workers = workers or available_cores()
    named = precision_named(decode, decode_overrides, "the model's")
    compute_type = _compute_type(ct2, quantize, decode.precision, config.model.width, named)
    try:
        model = ct2.Translator(
            str(model_dir),
            device="cpu",
            compute_type=compute_type,
            inter_threads=workers,
            intra_threads=1 if workers > 1 else torch.get_num_threads(),
        )
    except (RuntimeError, ValueError) as error:
        raise UserError(f"--model {model_dir}: CTranslate2 cannot load it ({error}).") from None
    return CTranslate2Translator(model, tokenizer, config, decode, workers, tgt_lang)


def _compute_type(ct2: Any, quantize: str | None, precision: str, width: int, named: str) -> str:
    """CTranslate2's compute type for --quantize and decode.precision (`named`: how messages
    name it, the option given or the model's own setting) on a model `width` wide: bf16 is
    bfloat16 where CTranslate2 has it for this CPU, else float32 (with a notice, unless auto
    chose bf16: auto asks only for what is fast here)."""
    if quantize is not None and precision == "bf16":
        raise UserError(
            f"{named} and --quantize int8 are two ways to compute faster: choose one "
            "(--precision fp32 keeps int8 alone)."
        )
    if quantize is not None:
        return quantize
    if resolve_precision(precision, torch.device("cpu"), width) != "bf16":
        return "default"
    supported = ct2.get_supported_compute_types("cpu")
    if "bfloat16" in supported:
        return "bfloat16"
    if precision == "bf16":
        log.warning(
            "notice: %s: CTranslate2 computes no bfloat16 on this CPU (it has %s), so the "
            "model computes in float32; --precision fp32 says so without this notice.",
            named,
            ", ".join(sorted(supported)),
        )
    return "default"


def _check_shortlist(model_dir: Path, asked: int, exported: int) -> None:
    """CTranslate2 reads the shortlist as the vocabulary map written at export (`exported`:
    its K, 0 without one): another K is refused, not silently ignored."""
    if asked in (0, exported):
        return
    if not exported:
        raise UserError(
            f"--shortlist {asked}: {model_dir} has no vocabulary map ({VMAP_FILE}); export it "
            f"with `nmt export --format ctranslate2 --shortlist {asked}` (after `nmt "
            "shortlist`), or translate with --shortlist 0."
        )
    raise UserError(
        f"--shortlist {asked}: {model_dir} was exported with the shortlist's {exported} best "
        f"pieces per source piece in its vocabulary map ({VMAP_FILE}), which CTranslate2 "
        f"cannot change; give --shortlist {exported} (or 0 for none), or export it again with "
        f"`nmt export --format ctranslate2 --shortlist {asked}`."
    )


def _config(model_dir: Path) -> Experiment:
    try:
        return checkpoint_config(json.loads((model_dir / CONFIG_FILE).read_text("utf-8")))
    except (ValueError, ConfigError) as error:
        raise UserError(
            f"--model {model_dir}: {CONFIG_FILE} is not a config this nmt reads ({error})."
        ) from None


def _tokenizer(model_dir: Path) -> Tokenizer:
    try:
        return Tokenizer.load(model_dir)
    except OSError:
        raise UserError(f"--model {model_dir} lacks its SentencePiece model(s).") from None
