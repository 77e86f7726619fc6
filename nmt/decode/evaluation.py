"""Scoring a checkpoint on a test set: the code `nmt eval` and the end of `nmt train` share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nmt.config import Experiment, apply_override, config_from_dict, config_to_dict, parse_override
from nmt.data.splits import ROLES, ParallelText, load_split
from nmt.decode.translator import Translator
from nmt.errors import UserError
from nmt.scoring import Scores, score


@dataclass
class Evaluation:
    hypotheses: list[str]  # one detokenized translation per source line
    scores: Scores


def evaluate(translator: Translator, text: ParallelText) -> Evaluation:
    """Translates the source side of `text` with the translator's decode settings and scores
    the translations against the target side."""
    hypotheses = [translation.text for translation in translator.translate(text.src)]
    return Evaluation(hypotheses, score(hypotheses, text.tgt))


def checkpoint_split(config: Experiment, split: str, overrides: Sequence[str] = ()) -> ParallelText:
    """The split that plays `split` (train, valid or test) in a checkpoint's corpus.

    `overrides` (`data.path=DIR`, ...) amend the checkpoint's own config, e.g. when the
    corpus has moved since training.
    """
    if split not in ROLES:
        raise UserError(f"--split must be one of {', '.join(ROLES)}, got '{split}'.")
    raw = config_to_dict(config)
    for override in overrides:
        apply_override(raw, *parse_override(override))
    config = config_from_dict(raw)
    if getattr(config.data.splits, split) is None:
        raise UserError(f"the checkpoint's config names no {split} split (data.splits.{split}).")
    return load_split(config.data, split)
