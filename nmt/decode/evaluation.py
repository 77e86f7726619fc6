"""Translating a whole split of a checkpoint's corpus, as `nmt eval` and the final test do."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nmt.checkpoint import load_checkpoint, restore_model
from nmt.config import apply_override, config_from_dict, parse_override
from nmt.data.splits import ROLES, load_split
from nmt.decode.translator import Translator
from nmt.errors import UserError


def translate_split(
    checkpoint: Path, split: str, overrides: Sequence[str] = ()
) -> tuple[list[str], list[str]]:
    """Greedy translations of a split named by role (train/valid/test), and its references.

    `overrides` (`data.path=DIR`, ...) amend the checkpoint's own config, e.g. when the
    corpus has moved since training.
    """
    if split not in ROLES:
        raise UserError(f"--split must be one of {', '.join(ROLES)}, got '{split}'.")
    payload = load_checkpoint(checkpoint)
    model, tokenizer, config = restore_model(payload, checkpoint)
    raw = payload["config"]
    for override in overrides:
        apply_override(raw, *parse_override(override))
    config = config_from_dict(raw)
    if getattr(config.data.splits, split) is None:
        raise UserError(f"{checkpoint}: its config names no {split} split (data.splits.{split}).")
    text = load_split(config.data, split)
    translations = Translator(model, tokenizer, config.decode).translate(text.src)
    return [t.text for t in translations], text.tgt
