"""Folding an adapter run's LoRA updates into its base (`nmt adapter merge`): a plain
checkpoint of the base's shape, which every command, export and import reads as any other.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from nmt.checkpoint import (
    adapter_payload,
    checkpoint_file,
    restore_model,
    save_checkpoint,
)
from nmt.config import config_to_dict
from nmt.errors import UserError
from nmt.model.adapters import has_adapters, merged
from nmt.outputs import check_output


def merge_adapter(adapter: Path, output: Path, base: Path | None = None) -> dict:
    """Writes `adapter` (an adapter checkpoint) merged into its base (`base`, else the one
    it names) to `output`; the payload written."""
    adapter = checkpoint_file(adapter)
    payload = adapter_payload(adapter, "ADAPTER", "there is nothing to merge")
    model, tokenizer, config = restore_model(payload, adapter, base)
    merged(model)
    if has_adapters(model):
        raise UserError(
            f"{adapter} holds bottleneck adapters, which add layers the base lacks: they "
            "cannot fold into a plain checkpoint. Translate with --checkpoint BASE --adapter "
            f"{adapter}, or train LoRA adapters (train.adapters.type: lora), which merge."
        )
    plain = dataclasses.replace(config, train=dataclasses.replace(config.train, adapters=None))
    result = {
        "config": config_to_dict(plain),
        "tokenizer": tokenizer.to_state(),
        "model": model.state_dict(),
        "step": payload["step"],
        "metrics": {**payload["metrics"], "merged_from": str(adapter)},
    }
    check_output(Path(output), "--output")  # against the adapter and the base read
    save_checkpoint(output, result)
    return result
