"""One self-contained checkpoint file: weights, resolved config, tokenizer, step and metrics.

Files are written atomically (temporary file, fsync, rename), so a crash at any moment
leaves either the old checkpoint or the new one, never a torn file. They are read with
`weights_only=True`, so a crafted checkpoint cannot run code.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile
from pathlib import Path

import torch

from nmt.config import Experiment, config_from_dict, config_to_dict
from nmt.errors import UserError
from nmt.model import Seq2Seq, build_model
from nmt.tokenizer import Tokenizer

FORMAT_VERSION = 1
TEMPORARY_SUFFIX = ".tmp"  # a write killed midway leaves .NAME.XXXX.tmp


def save_checkpoint(path: Path, payload: dict) -> None:
    path = Path(path)
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, renamed only if complete
        dir=path.parent, prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX, delete=False
    )
    try:
        with handle:
            torch.save({"format_version": FORMAT_VERSION, **payload}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def remove_temporaries(directory: Path) -> None:
    """Deletes what writes killed midway (kill -9, power loss) left behind in `directory`."""
    for leftover in Path(directory).glob(f".*.pt.*{TEMPORARY_SUFFIX}"):
        leftover.unlink(missing_ok=True)


def load_checkpoint(path: Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"checkpoint {path} does not exist.")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        raise UserError(
            f"checkpoint {path} was refused: it holds objects other than tensors "
            f"and plain data, which could run code ({str(error).splitlines()[0]}). "
            "Only load checkpoints written by nmt."
        ) from None
    except (RuntimeError, EOFError, zipfile.BadZipFile, OSError) as error:
        raise UserError(
            f"checkpoint {path} is truncated or corrupt ({error}). "
            "Use another checkpoint, e.g. last.pt or best.pt of the run."
        ) from None
    if not isinstance(payload, dict) or "format_version" not in payload:
        raise UserError(f"{path} is not an nmt checkpoint.")
    if payload["format_version"] > FORMAT_VERSION:
        raise UserError(
            f"checkpoint {path} has format version {payload['format_version']}, "
            f"newer than this nmt reads ({FORMAT_VERSION}). Upgrade nmt."
        )
    return payload


def checkpoint_payload(
    model: Seq2Seq, config: Experiment, tokenizer: Tokenizer, step: int, metrics: dict
) -> dict:
    return {
        "config": config_to_dict(config),
        "tokenizer": tokenizer.to_state(),
        "model": model.state_dict(),
        "step": step,
        "metrics": metrics,
    }


def restore_model(payload: dict, path: Path) -> tuple[Seq2Seq, Tokenizer, Experiment]:
    """Rebuilds the model and tokenizer from a checkpoint alone, in eval mode."""
    config = config_from_dict(payload["config"])
    tokenizer = Tokenizer.from_state(payload["tokenizer"])
    model = build_model(
        config.model,
        tokenizer.src.size,
        tokenizer.tgt.size,
        tokenizer.src.pad_id,
        tokenizer.tgt.pad_id,
    )
    try:
        model.load_state_dict(payload["model"])
    except RuntimeError as error:
        raise UserError(
            f"checkpoint {path}: its weights do not match its own config "
            f"({str(error).splitlines()[0]}). The file was altered or mixed up."
        ) from None
    return model.eval(), tokenizer, config
