"""Checkpoint averaging: the mean of several checkpoints' weights, as one that translates.

The checkpoints must come from one config (keys a resume may change, like train.max_steps,
aside) and one tokenizer; the result carries the newest one's config, tokenizer and step,
and no training state.
"""

from __future__ import annotations

from pathlib import Path

from nmt.checkpoint import load_checkpoint, restore_model, save_checkpoint, translation_weights
from nmt.config import checkpoint_config, config_differences, config_to_dict
from nmt.data.tokenizer import without_vocabularies
from nmt.errors import UserError
from nmt.outputs import check_output
from nmt.train.resume import RESUMABLE_KEYS
from nmt.train.rundir import step_checkpoints


def average_checkpoints(paths: list[Path], output: Path) -> dict:
    """Writes the averaged checkpoint to `output` and returns its payload."""
    payloads = [load_checkpoint(path) for path in paths]
    newest = max(range(len(paths)), key=lambda i: payloads[i]["step"])
    reference, reference_path = payloads[newest], paths[newest]
    expected = config_to_dict(checkpoint_config(reference["config"]))  # new keys: defaults
    for path, payload in zip(paths, payloads, strict=True):
        stored = config_to_dict(checkpoint_config(payload["config"]))
        differences = config_differences(expected, stored, RESUMABLE_KEYS)
        if differences:
            raise UserError(
                f"cannot average {path} with {reference_path}: their configs differ "
                f"({'; '.join(differences[:4])}). Average checkpoints of one run or config."
            )
        if payload.get("base", {}).get("digest") != reference.get("base", {}).get("digest"):
            raise UserError(
                f"cannot average {path} with {reference_path}: they adapt different base "
                "models (or one is an adapter checkpoint and the other a whole model)."
            )
        if _vocabularies(payload) != _vocabularies(reference):
            raise UserError(
                f"cannot average {path} with {reference_path}: their tokenizers differ."
            )
    averaged = {}
    weights = [translation_weights(payload) for payload in payloads]
    for name, tensor in translation_weights(reference).items():
        if tensor.is_floating_point():
            total = sum(found[name].double() for found in weights)
            averaged[name] = (total / len(payloads)).to(tensor.dtype)
        else:
            averaged[name] = tensor.clone()
    result = {
        "config": reference["config"],
        "tokenizer": reference["tokenizer"],
        "model": averaged,
        "step": reference["step"],
        "metrics": {"averaged": [str(path) for path in paths]},
        **({"base": reference["base"]} if "base" in reference else {}),
    }
    restore_model(result, output)  # the weights must rebuild the model before they are written
    check_output(Path(output), "--output")  # against every checkpoint averaged
    save_checkpoint(output, result)
    return result


def last_checkpoints(run_dir: Path, count: int) -> list[Path]:
    """The `count` newest step-NNNNNN.pt checkpoints of a run (train.keep_last keeps them)."""
    if not run_dir.is_dir():
        raise UserError(f"--last: {run_dir} is not a run directory.")
    found = step_checkpoints(run_dir)
    if len(found) < count:
        raise UserError(
            f"--last {count}: {run_dir} holds {len(found)} step checkpoints (step-*.pt). "
            f"Train with train.keep_last >= {count} to keep that many."
        )
    return found[-count:]


def _vocabularies(payload: dict) -> dict:
    """What two checkpoints averaged must share of their tokenizers: the state without what
    a run records of its corpus (target_pieces), which checkpoints written before nmt
    recorded it lack; an adapter checkpoint's without the vocabularies too, its base's
    (whose digest is compared), which older ones kept a copy of."""
    state = payload["tokenizer"]
    if "base" in payload:
        state = without_vocabularies(state)
    return {key: value for key, value in state.items() if key != "target_pieces"}
