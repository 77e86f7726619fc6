"""Validation during training: greedy BLEU and chrF on the first `train.valid_max_sentences`
pairs of the valid split, and the teacher-forced loss on the same pairs.

Validating leaves every RNG stream as it found it, so a run draws the same dropout masks
whether or how often it validates.
"""

from __future__ import annotations

import math

import torch

from nmt.config import Experiment
from nmt.data.batching import make_batch
from nmt.data.corpus import Corpus
from nmt.data.splits import ParallelText
from nmt.data.tokenizer import Tokenizer
from nmt.model.seq2seq import Seq2Seq
from nmt.train.precision import Precision
from nmt.train.progress import Progress
from nmt.train.rng import rng_preserved
from nmt.translate.evaluation import evaluate
from nmt.translate.translator import Translator


class Validator:
    """Scores one model on the valid split, once per validation."""

    def __init__(
        self,
        model: Seq2Seq,
        corpus: Corpus,
        config: Experiment,
        precision: Precision,
        device: torch.device,
    ):
        self.model = model
        self.corpus = corpus
        self.config = config
        self.precision = precision
        self.device = device

    def record(self, progress: Progress) -> dict:
        """The validation record of the model as it stands at `progress.step`."""
        valid, limit = self.corpus.valid, self.config.train.valid_max_sentences
        text = ParallelText(valid.src[:limit], valid.tgt[:limit], valid.origin)
        tokenizer, batch_size = self.corpus.tokenizer, self.config.decode.batch_size
        with rng_preserved(), torch.no_grad(), self.precision.autocast():
            translator = Translator(self.model, tokenizer, self.config, self.config.decode.greedy())
            scores = evaluate(translator, text).scores
            loss = valid_loss(self.model, tokenizer, text.src, text.tgt, batch_size, self.device)
            return {
                "step": progress.step,
                "valid_loss": round(loss, 4),
                "valid_ppl": round(math.exp(min(loss, 50)), 2),
                "valid_bleu": scores.bleu,
                "valid_chrf": scores.chrf,
                "minutes": round(progress.minutes(), 2),
            }


def valid_loss(
    model: Seq2Seq,
    tokenizer: Tokenizer,
    src: list[str],
    refs: list[str],
    batch_size: int,
    device: torch.device,
) -> float:
    """Teacher-forced cross-entropy per target token (no label smoothing), over batches of
    `batch_size` pairs taken in order of target length."""
    src_ids, tgt_ids = tokenizer.src.encode(src), tokenizer.tgt.encode(refs)
    order = sorted(range(len(src_ids)), key=lambda i: len(tgt_ids[i]))
    total = tokens = 0.0
    model.eval()
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = make_batch(
            [src_ids[i] for i in chunk],
            [tgt_ids[i] for i in chunk],
            tokenizer.tgt,
            tokenizer.src.pad_id,
        ).to(device)
        total += float(model(batch.src, batch.src_lengths, batch.tgt_in, batch.tgt_out))
        tokens += batch.num_tgt_tokens
    return total / max(tokens, 1)
