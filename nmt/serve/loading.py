"""Loading what `nmt serve` offers: each checkpoint under its id, then what goes on a served
model beside it: adapters (`--adapter`), each on the model whose weights it was trained on
and sharing them, and translation memories (`--tm`), on every model of their direction."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from nmt.checkpoint import (
    adapter_payload,
    checkpoint_file,
    load_checkpoint,
    translation_weights,
    weights_digest,
)
from nmt.config import checkpoint_config
from nmt.data.memory import TranslationMemory
from nmt.errors import UserError
from nmt.serve.catalog import ServedModel, parse_spec
from nmt.translate.loading import decode_settings, shared_adapters
from nmt.translate.translator import Translator


def load_models(
    specs: Sequence[str],
    device: str | torch.device = "auto",
    quantize: str | None = None,
    adapters: Sequence[str] = (),
    memories: Sequence[Path] = (),
    **decode: Any,
) -> dict[str, ServedModel]:
    """Loads every checkpoint (as `nmt translate` does, `quantize` "int8" as with
    `--quantize int8`, `decode` replacing its decode settings as `--max-src-len` and
    `--no-repeat-ngram` do) under its id, ids unique; then each of `adapters` (NAME=PATH)
    on the served model it was trained on (add_adapter); then each translation memory of
    `memories` on every model (adapters too) that translates its direction."""
    # every name is checked before the slow loading starts; a run directory gives its best.pt
    parsed = [(model_id, checkpoint_file(path)) for model_id, path in map(parse_spec, specs)]
    models: dict[str, ServedModel] = {}
    sources: dict[str, Path] = {}
    for model_id, path in parsed:
        # one decoding worker per batch: the server runs its batches side by side itself
        translator = Translator.load(path, device, quantize=quantize, workers=1, **decode)
        model_id = model_id or translator.config.name
        if model_id in models:
            raise UserError(
                f"two checkpoints have the model id {model_id!r} ({sources[model_id]} and "
                f"{path}); name them apart with --checkpoint ID=PATH, e.g. "
                f"--checkpoint {model_id}-2={path}."
            )
        models[model_id] = ServedModel(model_id, translator, quantize)
        sources[model_id] = path
    if adapters:  # which served model each adapter goes on: by its weights' digest
        digests = {
            i: weights_digest(translation_weights(load_checkpoint(f))) for i, f in sources.items()
        }
        for spec in adapters:
            add_adapter(models, digests, spec, decode)
    for path in memories:
        add_memory(models, path)
    return models


def add_memory(models: dict[str, ServedModel], path: Path) -> None:
    """The translation memory in `path` on each served model that translates its direction."""
    memory = TranslationMemory.load(path)
    direction = (memory.src_lang, memory.tgt_lang)
    served = [m for model in models.values() for m in (model, *model.adapters.values())]
    fitting = [model for model in served if direction in model.translator.config.data.pairs]
    if not fitting:
        raise UserError(
            f"--tm {path} holds {'-'.join(direction)} pairs, and no served model translates "
            f"{'-'.join(direction)}: serve one that does, or build the memory of a served "
            "model's direction."
        )
    for model in fitting:
        if model.translator.memory is not None:
            held = model.translator.memory
            raise UserError(
                f"--tm {path}: served model {model.id!r} already reads an earlier --tm (of "
                f"{held.src_lang}-{held.tgt_lang} pairs), and a model reads one memory: give "
                "it one --tm, of the direction to remember."
            )
        model.translator.memory = memory


def add_adapter(
    models: dict[str, ServedModel], digests: dict[str, str], spec: str, decode: dict
) -> None:
    """The adapter `spec` (NAME=PATH) on the served model whose weights it was trained on,
    sharing them: its own config and decode settings, its base's precision."""
    name, path = parse_spec(spec, "--adapter")
    path = checkpoint_file(path)
    payload = adapter_payload(path, f"--adapter {spec}:", "serve it with --checkpoint")
    digest = payload["base"]["digest"]
    base_id = next((i for i, found in digests.items() if found == digest), None)
    if base_id is None:
        raise UserError(
            f"--adapter {spec}: it was trained on the base {payload['base']['path']} (weights' "
            f"digest {digest[:12]}...), which no --checkpoint serves; serve that base too."
        )
    base = models[base_id]
    name = name or checkpoint_config(payload["config"]).name
    if name in base.adapters:
        raise UserError(
            f"--adapter {spec}: model {base_id!r} has an adapter named {name!r} already; "
            f"name them apart with --adapter NAME=PATH."
        )
    if base.quantize is not None:
        raise UserError(
            f"--adapter {spec}: its base {base_id!r} is served as int8 (--quantize), whose "
            "layers adapters cannot wrap; merge the adapter (nmt adapter merge) and serve "
            "the merged checkpoint, or serve without --quantize."
        )
    translator = adapted(base.translator, payload, path, decode)
    pairs = translator.config.data.pairs
    described = {
        "adapter": name,
        "base": base_id,
        "type": translator.config.train.adapters.type,
        "src_lang": pairs[0][0],
        "tgt_lang": pairs[0][1],
        "directions": ["-".join(pair) for pair in pairs],
        "tgt_langs": translator.target_languages,
    }
    base.adapters[name] = ServedModel(f"{base_id}+{name}", translator, None, {}, described)


def adapted(base: Translator, payload: dict, path: Path, decode: dict) -> Translator:
    """A Translator of the adapter checkpoint `payload` (read from `path`) on `base`'s
    model, sharing its weights (in memory once): the adapter's config and decode settings
    (`decode` replacing them), computing in the base's precision. LoRA stays beside its
    matrices: folding it in would copy them."""
    model, config = shared_adapters(base.model, payload, path)
    dtype = next(base.model.parameters()).dtype
    precision = {"precision": "bf16" if dtype == torch.bfloat16 else "fp32"}
    settings = decode_settings(config.decode, {**decode, **precision})
    return Translator(model, base.tokenizer, config, settings, base.device, base.workers)
