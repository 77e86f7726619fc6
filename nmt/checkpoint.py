"""One self-contained checkpoint file: weights, resolved config, tokenizer, step and metrics.

Files are written atomically (temporary file, fsync, rename), so a crash at any moment
leaves either the old checkpoint or the new one, never a torn file. They are read with
`weights_only=True`, so a crafted checkpoint cannot run code.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import pickle
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import torch

from nmt.config import ConfigError, Experiment, checkpoint_config, config_to_dict
from nmt.data.tokenizer import BORROWED, Tokenizer, with_vocabularies, without_vocabularies
from nmt.errors import UserError
from nmt.model.adapters import add_adapters, load_trained_state, trained_state
from nmt.model.seq2seq import Seq2Seq, build_model
from nmt.outputs import TEMPORARY_SUFFIX, write_atomically
from nmt.reads import record

# The newest format this nmt reads. Version 2 added adapter checkpoints that leave their
# vocabularies to their base (without_vocabularies); every other checkpoint is written as
# version 1, which older nmt reads.
FORMAT_VERSION = 2
REQUIRED_KEYS = {"format_version", "config", "tokenizer", "model"}


def save_checkpoint(path: Path, payload: dict) -> None:
    """Replaces `path` atomically; on a write error (disk full, read-only) the old file stays."""
    path = Path(path)
    try:
        version = FORMAT_VERSION if payload.get("tokenizer", {}).get(BORROWED) else 1
        _write_atomically(path, {"format_version": version, **payload})
    except OSError as error:
        raise UserError(
            f"cannot write checkpoint {path}: {error.strerror or error}. The previous "
            f"{path.name}, if any, is unchanged and usable. Free disk space or make "
            f"{path.parent} writable."
        ) from None


def _write_atomically(path: Path, payload: dict) -> None:
    """Serialises in memory first: torch's zip writer turns a full disk into an opaque
    RuntimeError ("unexpected pos 64 vs 0"), where a plain write reports the OS reason."""
    serialised = io.BytesIO()
    torch.save(payload, serialised)
    write_atomically(path, serialised.getbuffer())


def remove_temporaries(directory: Path) -> None:
    """Deletes what writes killed midway (kill -9, power loss) left behind in `directory`."""
    for leftover in Path(directory).glob(f".*.pt.*{TEMPORARY_SUFFIX}"):
        leftover.unlink(missing_ok=True)


def checkpoint_file(path: Path | str) -> Path:
    """The checkpoint `path` names: a .pt file, or a run directory's best.pt."""
    path = Path(path)
    if path.is_dir():
        best = path / "best.pt"
        if not best.is_file():
            raise UserError(
                f"checkpoint {path} is a directory without best.pt: name a run directory of "
                "nmt train (best.pt appears at its first validation) or a .pt file in it."
            )
        return best
    if not path.is_file():
        raise UserError(f"checkpoint {path} does not exist: name a .pt file or a run directory.")
    return path


def load_checkpoint(path: Path | str) -> dict:
    """Reads a checkpoint (a .pt file, or a run directory's best.pt); any file that is not
    one nmt wrote is a UserError, never code run."""
    path = record(checkpoint_file(path), "a checkpoint it loads")
    if not zipfile.is_zipfile(path):  # torch.save always writes a zip archive
        raise _corrupt(path, "not a PyTorch zip archive")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(error))
        raise UserError(
            f"checkpoint {path} was refused: it refers to "
            f"{found.group(1) if found else 'objects'} beyond tensors and plain data, so "
            "loading it could run code. Only load checkpoints written by nmt."
        ) from None
    except Exception as error:  # a damaged archive makes the reader fail in many ways
        raise _corrupt(path, _first_line(error)) from None
    version = payload.get("format_version") if isinstance(payload, dict) else None
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise UserError(
            f"checkpoint {path} has format version {version}, "
            f"newer than this nmt reads ({FORMAT_VERSION}). Upgrade nmt."
        )
    if not isinstance(version, int) or not REQUIRED_KEYS.issubset(payload):
        raise UserError(f"{path} is not an nmt checkpoint (it lacks weights, config or tokenizer).")
    return payload


def _corrupt(path: Path, reason: str) -> UserError:
    return UserError(
        f"checkpoint {path} is truncated or corrupt ({reason}). "
        "Use another checkpoint, e.g. last.pt or best.pt of the run."
    )


def _first_line(error: Exception) -> str:
    lines = str(error).splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def checkpoint_payload(
    model: Seq2Seq,
    config: Experiment,
    tokenizer: Tokenizer,
    step: int,
    metrics: dict,
    base: dict | None = None,
    resumable: bool = False,
) -> dict:
    """A checkpoint of `model`; of an adapted one (train.adapters), its adapters alone and
    `base`, the base_reference of the model they adapt, whose vocabularies it uses, and in
    float16 unless `resumable` (last.pt, resumed from exactly)."""
    payload = {
        "config": config_to_dict(config),
        "tokenizer": tokenizer.to_state(),
        "model": trained_state(model),
        "step": step,
        "metrics": metrics,
    }
    if base is None:
        return payload
    tokenizer_state = without_vocabularies(payload["tokenizer"])
    weights = payload["model"] if resumable else half_precision(payload["model"])
    return {**payload, "tokenizer": tokenizer_state, "model": weights, "base": base}


def half_precision(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`weights` in float16 where it holds them: an adapter file half the size, translating
    alike (its products run in the model's own precision). float16 rather than bfloat16 for
    its three more bits of mantissa; a tensor with values beyond its range stays as it is.
    A tensor under several names (a tied matrix's update) stays one, saved once."""
    halves: dict[tuple, torch.Tensor] = {}
    halved = {}
    for name, tensor in weights.items():
        key = (tensor.data_ptr(), tensor.shape, tensor.stride())
        if key not in halves:
            half = tensor.half() if tensor.is_floating_point() else tensor
            fits = torch.equal(torch.isfinite(half), torch.isfinite(tensor))
            halves[key] = half if fits else tensor
        halved[name] = halves[key]
    return halved


def whole_model(payload: dict, path: Path, command: str) -> dict:
    """`payload`, refused where it is an adapter checkpoint, which `command` cannot read."""
    if "base" in payload:
        raise UserError(
            f"{path} is an adapter checkpoint (train.adapters): {command} reads whole models. "
            f"Merge it into its base first (nmt adapter merge {path} --output FILE) and give "
            "FILE."
        )
    return payload


def adapter_payload(path: Path, named: str, instead: str) -> dict:
    """The adapter checkpoint at `path` (`named`: how messages call it), refused where it
    is a whole model, saying what to do `instead`."""
    payload = load_checkpoint(path)
    if "base" not in payload:
        raise UserError(
            f"{named} {path} is a whole model, not an adapter checkpoint (a run of "
            f"train.adapters writes those): {instead}."
        )
    return payload


def weights_digest(weights: dict[str, torch.Tensor]) -> str:
    """A content hash (sha256) of a model's weights, their names, types and shapes: what
    an adapter checkpoint knows its base by, wherever the base's file has moved."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        tensor = weights[name].detach().cpu().contiguous()
        digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}\n".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def base_reference(payload: dict, path: Path) -> dict:
    """What an adapter checkpoint records of the checkpoint `payload` (read from `path`)
    that its adapters adapt: its weights' digest, and where it was."""
    return {"digest": weights_digest(translation_weights(payload)), "path": str(path.resolve())}


def adapter_base(payload: dict, path: Path, base: Path | str | None = None) -> dict:
    """The base checkpoint of the adapter checkpoint `payload` (read from `path`): `base`,
    or where the base was at training; a UserError unless its weights are the ones the
    adapters were trained on."""
    reference = payload["base"]
    given = base is not None
    base_path = Path(base if given else reference["path"])
    if not given and not base_path.exists():
        raise UserError(
            f"checkpoint {path} holds adapters for the base {base_path}, which no longer "
            "exists there: name the base with --checkpoint BASE --adapter "
            f"{path} (its weights' digest must be {reference['digest'][:12]}...)."
        )
    base_payload = load_checkpoint(base_path)
    digest = weights_digest(translation_weights(base_payload)) if "base" not in base_payload else ""
    if digest != reference["digest"]:
        raise UserError(
            f"adapter {path} was trained on the base {reference['path']} (weights' digest "
            f"{reference['digest'][:12]}...), and {base_path} is another model "
            f"({'an adapter checkpoint' if not digest else 'digest ' + digest[:12] + '...'}). "
            "Translate with the base the adapter was trained on."
        )
    return base_payload


def translation_weights(payload: dict) -> dict:
    """The weights to translate with: the moving average where last.pt keeps one beside the
    raw weights it resumes from (train.ema_decay), else the only ones."""
    return payload.get("ema", payload["model"])


def restore_model(
    payload: dict, path: Path, base: Path | str | None = None
) -> tuple[Seq2Seq, Tokenizer, Experiment]:
    """Rebuilds the model and tokenizer from a checkpoint, in eval mode, with the weights
    to translate with; an adapter checkpoint's on its base (`base`, else the one it
    names: adapter_base)."""
    config = _config(payload, path)
    base_payload = adapter_base(payload, path, base) if "base" in payload else None
    tokenizer = checkpoint_tokenizer(payload, path, base_payload)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    if base_payload is not None:
        with weights_checked(path):
            model.load_state_dict(translation_weights(base_payload))
        adapt(model, payload, path)
    else:
        with weights_checked(path):
            model.load_state_dict(translation_weights(payload))
    return model.eval(), tokenizer, config


def checkpoint_tokenizer(payload: dict, path: Path, base_payload: dict | None) -> Tokenizer:
    """The tokenizer of the checkpoint `payload` (read from `path`); an adapter checkpoint's
    with the vocabularies of its base's checkpoint, `base_payload` (adapter_base)."""
    state = payload["tokenizer"]
    if base_payload is not None:
        state = with_vocabularies(state, base_payload["tokenizer"])
    try:
        return Tokenizer.from_state(state)
    except RuntimeError as error:
        raise _corrupt(path, f"its tokenizer cannot be read: {_first_line(error)}") from None


def adapt(model: Seq2Seq, payload: dict, path: Path) -> Experiment:
    """Adds the adapters of the adapter checkpoint `payload` (read from `path`) to `model`,
    its base; the adapter's config."""
    config = _config(payload, path)
    add_adapters(model, config.train.adapters)
    with weights_checked(path):
        load_trained_state(model, translation_weights(payload))
    return config


def _config(payload: dict, path: Path) -> Experiment:
    try:
        return checkpoint_config(payload["config"])
    except ConfigError as error:
        raise UserError(
            f"checkpoint {path}: its config does not fit this nmt ({error}). "
            "It was probably written by a newer nmt; upgrade nmt."
        ) from None


@contextlib.contextmanager
def weights_checked(path: Path) -> Iterator[None]:
    """Turns a state dict that does not fit its model (or an optimizer state that does not
    fit its parameters) into a UserError naming `path`."""
    try:
        yield
    except (RuntimeError, ValueError) as error:
        # the first line only says "Error(s) in loading state_dict"; the next names a tensor
        first = next(
            line.strip() for line in str(error).splitlines()[1:] + [str(error)] if line.strip()
        )
        raise UserError(
            f"checkpoint {path}: its weights do not match its own config "
            f"({first[:200]}). The file was altered or mixed up."
        ) from None
