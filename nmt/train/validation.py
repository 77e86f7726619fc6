"""Validation during training: greedy BLEU and chrF on the first `train.valid_max_sentences`
pairs of the valid split, and the teacher-forced loss on the same pairs. With several
directions, each is scored on its own valid split, and `valid_loss`, `valid_bleu` and
`valid_chrf` are their means (what `train.best_metric` judges), beside
`valid_bleu_de-en` ... for each.

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
        limit = self.config.train.valid_max_sentences
        rows = {}
        model = self.precision.inference(self.model)  # validated in the training precision
        with rng_preserved(), torch.no_grad(), self.precision.autocast():
            for name, valid in self.corpus.valid.items():
                text = ParallelText(valid.src[:limit], valid.tgt[:limit], valid.origin)
                rows[name] = self._scores(model, text, target_language(name))
        means = {key: sum(row[key] for row in rows.values()) / len(rows) for key in MEANS}
        record = {
            "step": progress.step,
            "valid_loss": round(means["loss"], 4),
            "valid_ppl": round(math.exp(min(means["loss"], 50)), 2),
            "valid_bleu": round(means["bleu"], 2),
            "valid_chrf": round(means["chrf"], 2),
        }
        if len(rows) > 1:
            for name, row in rows.items():
                record.update({f"valid_{key}_{name}": row[key] for key in ("bleu", "chrf")})
        return {**record, "minutes": round(progress.minutes(), 2), "precision": self.precision.name}

    def _scores(self, model: torch.nn.Module, text: ParallelText, language: str) -> dict:
        tokenizer = self.corpus.tokenizer
        translator = Translator(
            model, tokenizer, self.config, self.config.decode.greedy(), tgt_lang=language
        )
        scores = evaluate(translator, text).scores
        batch_size = self.config.decode.batch_size
        loss = valid_loss(
            model, tokenizer.towards(language), text.src, text.tgt, batch_size, self.device
        )
        return {"loss": loss, "bleu": scores.bleu, "chrf": scores.chrf}


MEANS = ("loss", "bleu", "chrf")


def target_language(direction: str) -> str:
    """ "de-en" -> "en"."""
    return direction.partition("-")[2]


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
    src_ids, tgt_ids = tokenizer.src.encode(src), tokenizer.encode_targets(refs)
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
