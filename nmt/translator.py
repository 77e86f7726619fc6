"""Lines of text in, translations out: length-sorted batches, input order and blank lines kept."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.checkpoint import load_checkpoint, restore_model
from nmt.config import DecodeConfig, Experiment
from nmt.data import pad
from nmt.model import Seq2Seq
from nmt.search import Hypothesis, greedy_search, max_lengths
from nmt.tokenizer import Tokenizer

log = logging.getLogger(__name__)


@dataclass
class Translation:
    text: str
    hypothesis: Hypothesis | None  # None for a blank input line
    src_ids: list[int]


class Translator:
    def __init__(
        self,
        model: Seq2Seq,
        tokenizer: Tokenizer,
        decode: DecodeConfig,
        device: torch.device | None = None,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.decode = decode
        self.device = device or next(model.parameters()).device

    def translate(self, lines: Sequence[str], batch_size: int | None = None) -> list[Translation]:
        """Translates every line; a blank line gives a blank translation, in input order."""
        batch_size = batch_size or self.decode.batch_size
        src_ids = self._truncated(self.tokenizer.src.encode([line.strip() for line in lines]))
        results: list[Translation | None] = [
            None if ids else Translation("", None, ids) for ids in src_ids
        ]
        order = sorted((i for i, ids in enumerate(src_ids) if ids), key=lambda i: len(src_ids[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            for index, hypothesis in zip(
                chunk, self._search([src_ids[i] for i in chunk]), strict=True
            ):
                text = self.tokenizer.tgt.decode(hypothesis.tokens)
                results[index] = Translation(text, hypothesis, src_ids[index])
        return results

    def _truncated(self, src_ids: list[list[int]]) -> list[list[int]]:
        """Cuts sources at decode.max_src_len subwords, so one huge line cannot exhaust memory."""
        limit = self.decode.max_src_len
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

    def _search(self, src_ids: list[list[int]]) -> list[Hypothesis]:
        src = pad(src_ids, self.tokenizer.src.pad_id).to(self.device)
        lengths = torch.tensor([len(ids) for ids in src_ids])
        limits = max_lengths(lengths, self.decode.max_len_ratio, self.decode.max_len_extra)
        return greedy_search(
            self.model, src, lengths, self.tokenizer.tgt.bos_id, self.tokenizer.tgt.eos_id, limits
        )


def load_translator(path: Path) -> tuple[Translator, Experiment]:
    model, tokenizer, config = restore_model(load_checkpoint(path), path)
    return Translator(model, tokenizer, config.decode), config
