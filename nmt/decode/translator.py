"""Lines of text in, translations out: length-sorted batches, input order and blank lines kept."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmt.checkpoint import load_checkpoint, restore_model
from nmt.config import ConfigError, DecodeConfig, Experiment
from nmt.data.batching import pad
from nmt.data.tokenizer import Tokenizer
from nmt.decode.beam import beam_search
from nmt.decode.ensemble import Ensemble
from nmt.decode.quantize import quantize as quantize_model
from nmt.decode.sampling import sample_search
from nmt.decode.search import Hypothesis, greedy_search, max_lengths
from nmt.errors import UserError

log = logging.getLogger(__name__)


@dataclass
class Translation:
    src_ids: list[int]
    hypotheses: list[Hypothesis]  # best first (decode.nbest of them); empty for a blank line
    texts: list[str]  # detokenized, one per hypothesis
    truncated: bool = False  # the source was cut at decode.max_src_len subwords

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""


class Translator:
    def __init__(
        self,
        model: torch.nn.Module,  # a SearchModel: Seq2Seq or Ensemble
        tokenizer: Tokenizer,
        decode: DecodeConfig,
        device: torch.device | None = None,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.decode = decode
        self.device = device or next(model.parameters()).device
        # Every draw comes from this one generator: the same seed, input and batches repeat them.
        self.generator = torch.Generator(device=self.device).manual_seed(decode.seed)

    def translate(self, lines: Sequence[str], batch_size: int | None = None) -> list[Translation]:
        """Translates every line; a blank line gives a blank translation, in input order."""
        return translate_lines(lines, self.tokenizer, self.decode, self._search, batch_size)

    def _search(self, src_ids: list[list[int]]) -> list[list[Hypothesis]]:
        decode, tgt = self.decode, self.tokenizer.tgt
        src = pad(src_ids, self.tokenizer.src.pad_id).to(self.device)
        lengths = torch.tensor([len(ids) for ids in src_ids])
        limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra)
        common = (self.model, src, lengths, tgt.bos_id, tgt.eos_id, limits)
        if decode.sample:
            return sample_search(
                *common,
                decode.nbest,
                decode.temperature,
                decode.top_k,
                decode.top_p,
                self.generator,
            )
        if decode.beam == 1:
            return [[hypothesis] for hypothesis in greedy_search(*common)]
        return beam_search(*common, decode.beam, decode.alpha, decode.nbest)


Search = Callable[[list[list[int]]], list[list[Hypothesis]]]  # source ids -> n-best of each


def translate_lines(
    lines: Sequence[str],
    tokenizer: Tokenizer,
    decode: DecodeConfig,
    search: Search,
    batch_size: int | None = None,
) -> list[Translation]:
    """Lines in, translations out, whatever runs the search (our models, or CTranslate2's
    for an exported one): sources cut at decode.max_src_len subwords, length-sorted batches,
    hypotheses best first, blank lines blank, input order kept."""
    batch_size = batch_size or decode.batch_size
    encoded = tokenizer.src.encode([line.strip() for line in lines])
    src_ids = _truncated(encoded, decode.max_src_len)
    results = [
        Translation(ids, [], [], len(ids) < len(full))
        for ids, full in zip(src_ids, encoded, strict=True)
    ]
    order = sorted((i for i, ids in enumerate(src_ids) if ids), key=lambda i: len(src_ids[i]))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        for index, hypotheses in zip(chunk, search([src_ids[i] for i in chunk]), strict=True):
            # beam search ranks its n-best already; samples come in the order drawn
            hypotheses.sort(key=lambda h: h.normalised_score(decode.alpha), reverse=True)
            texts = [tokenizer.tgt.decode(h.tokens) for h in hypotheses]
            results[index] = dataclasses.replace(results[index], hypotheses=hypotheses, texts=texts)
    return results


def _truncated(src_ids: list[list[int]], limit: int) -> list[list[int]]:
    """Cuts sources at decode.max_src_len subwords, so one huge line cannot exhaust memory."""
    long = [index for index, ids in enumerate(src_ids) if len(ids) > limit]
    if not long:
        return src_ids
    log.warning(
        "warning: %d source line(s) longer than decode.max_src_len=%d subwords were cut to "
        "that length (first: line %d, %d subwords). Raise decode.max_src_len to keep more.",
        len(long),
        limit,
        long[0] + 1,
        len(src_ids[long[0]]),
    )
    return [ids[:limit] for ids in src_ids]


def load_translator(
    checkpoints: Path | Sequence[Path],
    device: torch.device | None = None,
    attention_layer: int | None = None,
    quantize: str | None = None,
    **decode_overrides: Any,
) -> tuple[Translator, Experiment]:
    """One checkpoint, or several as an ensemble, on `device` (default: the CPU); the first
    one's decode settings, overridden. `attention_layer` (1..layers): whose attention over
    the source a Transformer reports, for plots and alignments (default: its last layer).
    `quantize` "int8": int8 Linear and recurrent layers (nmt/decode/quantize.py); None: fp32.

    Ensemble members must share both vocabularies: every step averages their predictions
    over the same target ids, from the same source ids.
    """
    paths = [checkpoints] if isinstance(checkpoints, Path) else list(checkpoints)
    restored = [restore_model(load_checkpoint(path), path) for path in paths]
    models = [model for model, _, _ in restored]
    if attention_layer is not None:
        _choose_attention_layer(models, paths, attention_layer)
    tokenizer, config = restored[0][1], restored[0][2]
    for path, (_, other, _) in zip(paths[1:], restored[1:], strict=True):
        for side in ("src", "tgt"):
            if getattr(other, side).model_proto != getattr(tokenizer, side).model_proto:
                name = "source" if side == "src" else "target"
                raise UserError(
                    f"checkpoints {paths[0]} and {path} have different {name} vocabularies "
                    "(their SentencePiece models differ); an ensemble needs models trained "
                    "with the same tokenizer."
                )
    try:
        decode = dataclasses.replace(config.decode, **decode_overrides)
    except ConfigError as error:
        raise ConfigError(f"decode.{error.path}", error.detail) from None
    model = models[0] if len(models) == 1 else Ensemble(models)
    model = model.to(device or torch.device("cpu"))
    if quantize is not None:
        model = quantize_model(model, quantize)
    return Translator(model, tokenizer, decode), config


def _choose_attention_layer(models: list[torch.nn.Module], paths: list[Path], number: int) -> None:
    """Sets the reporting layer of every Transformer; an RNNsearch has one attention only."""
    decoders = [model.decoder for model in models]
    layered = [decoder for decoder in decoders if hasattr(decoder, "choose_attention_layer")]
    if not layered:
        raise UserError(
            f"--attention-layer {number}: {paths[0]} has an RNNsearch decoder, whose attention "
            "is a single layer; drop the option (it chooses a Transformer decoder's layer)."
        )
    for decoder in layered:
        decoder.choose_attention_layer(number)
