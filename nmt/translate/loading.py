"""Loading what a Translator runs: one checkpoint's model or several as an ensemble, checked
to read and write the same vocabularies and languages; and its decode settings."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from nmt.checkpoint import adapt, adapter_payload, checkpoint_file, load_checkpoint, restore_model
from nmt.config import ConfigError, DecodeConfig, Experiment
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.model.adapters import merged, sharing_base
from nmt.model.device import resolve_device
from nmt.search import Ensemble
from nmt.translate.quantize import quantize as quantize_model

PathLike = str | os.PathLike


def load_model(
    checkpoints: PathLike | Sequence[PathLike],
    device: str | torch.device = "auto",
    quantize: str | None = None,
    attention_layer: int | None = None,
    adapter: PathLike | None = None,
) -> tuple[torch.nn.Module, Tokenizer, Experiment, torch.device]:
    """The model of one checkpoint (a .pt file or a run directory), or an Ensemble of
    several, on `device` ("auto": CUDA when torch sees one, unless quantized), with the
    first checkpoint's tokenizer and config; with `adapter`, an adapter checkpoint, the
    one checkpoint is its base. LoRA updates are folded into their matrices, so an adapted
    model translates at its base's speed. See Translator.load."""
    if isinstance(device, str):
        device = resolve_device("cpu" if quantize and device == "auto" else device, 0, "device")
    paths = [checkpoint_file(path) for path in checkpoint_paths(checkpoints)]
    if adapter is not None:
        restored = [adapted_model(paths, checkpoint_file(adapter))]
    else:
        restored = [restore_model(load_checkpoint(path), path) for path in paths]
    models = [merged(model) for model, _, _ in restored]
    tokenizer, config = restored[0][1], restored[0][2]
    for path, (_, other, other_config) in zip(paths[1:], restored[1:], strict=True):
        _check_same_vocabularies(paths[0], path, tokenizer, other)
        _check_same_languages(paths[0], path, config, other_config)
    if attention_layer is not None:
        _choose_attention_layer(models, paths, attention_layer)
    model = models[0] if len(models) == 1 else Ensemble(models)
    model = model.to(device)
    if quantize is not None:
        model = quantize_model(model, quantize)
    return model, tokenizer, config, device


def adapted_model(bases: list[Path], adapter: Path) -> tuple:
    """restore_model's answer for the adapter checkpoint `adapter` on the one base in
    `bases`."""
    if len(bases) != 1:
        raise UserError(
            f"--adapter {adapter} adapts one model, and {len(bases)} checkpoints are given: "
            "name its base alone with --checkpoint (an ensemble of adapted models: merge "
            "each with nmt adapter merge and ensemble the results)."
        )
    payload = adapter_payload(adapter, "--adapter", "translate it with --checkpoint alone")
    return restore_model(payload, adapter, bases[0])


def shared_adapters(base: torch.nn.Module, payload: dict, path: Path) -> tuple:
    """The adapters of the adapter checkpoint `payload` (read from `path`) on a copy of
    `base` that shares its weights, in their precision; with the adapter's config."""
    model = sharing_base(base)
    config = adapt(model, payload, path)
    return model.to(next(base.parameters()).dtype).eval(), config


def precision_named(decode: DecodeConfig, options: dict[str, Any], whose: str) -> str:
    """How messages name decode.precision: the option given (`options`, None: not given),
    or `whose` ("the checkpoint's") own setting."""
    if options.get("precision") is not None:
        return f"--precision {decode.precision}"
    return f"{whose} decode.precision {decode.precision}"


def in_precision(
    model: torch.nn.Module,
    precision: str,
    quantize: str | None,
    auto: Callable[[], str],
    named: str,
) -> torch.nn.Module:
    """`model` as search computes with it under decode.precision (`named` in messages:
    precision_named): bf16 weights (so bf16 activations, search summing scores in float32),
    or as it is; `auto` is what `auto()` makes of it (training's answer for this model on
    this device: nmt/translate/auto_precision.py), unless the weights are int8."""
    if quantize is not None:
        if precision == "bf16":
            raise UserError(
                f"{named} and --quantize int8 are two ways to compute faster (the int8 layers "
                "compute in int8 and float32): choose one (--precision fp32 keeps int8 alone)."
            )
        return model
    if (auto() if precision == "auto" else precision) == "bf16":
        return model.to(torch.bfloat16)
    return model


def decode_settings(decode: DecodeConfig, options: dict[str, Any]) -> DecodeConfig:
    """`decode` with the options given (None: not given), checked like the config's keys."""
    given = {key: value for key, value in options.items() if value is not None}
    unknown = sorted(set(given) - {spec.name for spec in dataclasses.fields(DecodeConfig)})
    if unknown:
        raise UserError(
            f"unknown decode option(s) {', '.join(unknown)}; the decode settings are "
            f"{', '.join(spec.name for spec in dataclasses.fields(DecodeConfig))}."
        )
    try:
        return dataclasses.replace(decode, **given)
    except ConfigError as error:
        raise ConfigError(f"decode.{error.path}", error.detail) from None


def tokenizer_towards(
    tokenizer: Tokenizer, languages: Sequence[str], language: str | None
) -> Tokenizer:
    """The tokenizer for translating into `language` (None: the only one of `languages`,
    the languages a model writes): sources tagged with it when the model reads tags."""
    if language is None and len(languages) > 1:
        raise UserError(
            f"this model writes {', '.join(languages)}: name the language to translate "
            "into (--tgt-lang on the command line, tgt_lang in Python and the server)."
        )
    if language is not None and language not in languages:
        raise UserError(
            f"tgt_lang '{language}': this model writes {', '.join(languages)} only; "
            "choose one of them."
        )
    return tokenizer.towards(language or languages[0])


def checkpoint_paths(checkpoints: PathLike | Sequence[PathLike]) -> list[Path]:
    """A path (str or PathLike) or a sequence of them, as Paths; a str is one path."""
    if isinstance(checkpoints, (str, os.PathLike)):
        return [Path(checkpoints)]
    if isinstance(checkpoints, Sequence) and all(
        isinstance(path, (str, os.PathLike)) for path in checkpoints
    ):
        if not checkpoints:
            raise UserError("no checkpoint given: name one .pt file, or several for an ensemble.")
        return [Path(path) for path in checkpoints]
    raise UserError(
        f"expected a checkpoint path (str or PathLike) or a list of them, got "
        f"{type(checkpoints).__name__}."
    )


def _check_same_vocabularies(first: Path, path: Path, tokenizer: Tokenizer, other: Tokenizer):
    for side in ("src", "tgt"):
        if getattr(other, side).model_proto != getattr(tokenizer, side).model_proto:
            name = "source" if side == "src" else "target"
            raise UserError(
                f"checkpoints {first} and {path} have different {name} vocabularies "
                "(their SentencePiece models differ); an ensemble needs models trained "
                "with the same tokenizer."
            )


def _check_same_languages(first: Path, path: Path, config: Experiment, other: Experiment):
    if other.data.target_languages != config.data.target_languages:
        raise UserError(
            f"checkpoints {first} and {path} write different languages "
            f"({', '.join(config.data.target_languages)} vs "
            f"{', '.join(other.data.target_languages)}); an ensemble needs models that write "
            "the same ones."
        )
    if other.data.tags != config.data.tags and len(config.data.target_languages) > 1:
        raise UserError(
            f"checkpoints {first} and {path} read the target language's tag in different "
            f"places (data.tags: {config.data.tags} vs {other.data.tags}); an ensemble needs "
            "models that read it in the same place."
        )


def _choose_attention_layer(models: list[torch.nn.Module], paths: list[Path], number: int):
    """Sets the reporting layer of every Transformer; an RNNsearch has one attention only."""
    layered = [
        (path, model) for path, model in zip(paths, models, strict=True) if model.attention_layers
    ]
    if not layered:
        raise UserError(
            f"--attention-layer {number}: {paths[0]} has an RNNsearch decoder, whose attention "
            "is a single layer; drop the option (it chooses a Transformer decoder's layer)."
        )
    for path, model in layered:
        if not 1 <= number <= model.attention_layers:
            raise UserError(
                f"--attention-layer {number}: the Transformer decoder of {path} has layers 1 "
                f"to {model.attention_layers}; choose one of them (default: the last)."
            )
        model.choose_attention_layer(number)
