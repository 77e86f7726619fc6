"""Starting a run from another run's checkpoint (`train.init_from`): a parent model trained
on plenty of data passes what it learnt to a child pair with little (Zoph et al. 2016).

The child takes the parent's weights and its tokenizer, so the vocabulary matches the
embeddings; its optimizer, schedule and step count start afresh, on whatever directions the
child's config names.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from nmt.checkpoint import (
    base_reference,
    checkpoint_file,
    load_checkpoint,
    translation_weights,
    whole_model,
)
from nmt.config import Experiment
from nmt.data.tokenizer import Tokenizer, language_tag
from nmt.errors import UserError
from nmt.model.adapters import add_adapters

log = logging.getLogger("nmt")


def parent_checkpoint(config: Experiment) -> tuple[dict, Tokenizer]:
    """The checkpoint of train.init_from and its tokenizer, checked against the child's
    directions: each language the child writes needs a tag when the parent reads tags, and
    a child that writes several languages needs a parent that reads tags."""
    path = Path(config.train.init_from)
    payload = whole_model(load_checkpoint(path), path, "train.init_from")
    tokenizer = Tokenizer.from_state(payload["tokenizer"])
    targets = config.data.target_languages
    missing = [language for language in targets if language not in tokenizer.tags]
    if (tokenizer.tags or len(targets) > 1) and missing:
        having = ", ".join(map(language_tag, tokenizer.tags)) or "none"
        raise UserError(
            f"train.init_from {path}: its tokenizer has no tag for "
            f"{', '.join(map(language_tag, missing))} (it has: {having}), so it cannot ask "
            f"for a translation into {', '.join(missing)}. Start from a checkpoint trained "
            "with those target languages, or drop the directions into them."
        )
    log.info(
        "notice: the tokenizer (%d pieces) and the weights come from train.init_from %s; "
        "the tokenizer.* keys of the config are ignored",
        tokenizer.src.size,
        path,
    )
    return payload, tokenizer


def load_parent_weights(
    model: torch.nn.Module, payload: dict, path: str, config: Experiment
) -> None:
    """The parent's weights into the child's model, which must have the same shapes. A
    child may add parameters the parent lacks (a coverage weight, a copy gate, as See et
    al. 2017 add coverage to a trained model): those start fresh, with a notice."""
    weights = translation_weights(payload)
    child = model.state_dict()
    unknown = sorted(set(weights) - set(child))
    misfits = [
        f"{name}: {tuple(weights[name].shape)} in the parent, {tuple(tensor.shape)} here"
        for name, tensor in child.items()
        if name in weights and weights[name].shape != tensor.shape
    ]
    if unknown or misfits:
        problems = "; ".join([*misfits, *(f"{name}: not in this model" for name in unknown)])
        raise UserError(
            f"train.init_from {path}: its weights do not fit the model of this config "
            f"({problems[:300]}). Give the child the parent's model section (the same types "
            "and sizes), or start from another checkpoint."
        )
    fresh = sorted(set(child) - set(weights))
    if fresh and config.train.adapters is not None:
        raise UserError(
            f"train.init_from {path} has no {', '.join(fresh[:4])}: under train.adapters the "
            "base stays frozen, so they would never learn. Give the config the base's model "
            "section, or train without adapters."
        )
    model.load_state_dict(weights, strict=False)
    if fresh:
        log.info(
            "notice: train.init_from %s has no %s: %s start%s from scratch",
            path,
            ", ".join(fresh),
            "they" if len(fresh) > 1 else "it",
            "" if len(fresh) > 1 else "s",
        )


def with_adapters(
    model: torch.nn.Module, config: Experiment, base: dict | None, resumed: dict | None
) -> dict | None:
    """Under train.adapters: `model` (the base's weights in it) frozen, with its adapters
    added; the base_reference its checkpoints carry. A resumed run (`resumed`, its last.pt)
    first takes its base again: `base`, the checkpoint with the digest last.pt names
    (adapter_base); a new run's `base` is train.init_from's checkpoint."""
    if config.train.adapters is None:
        return None
    if resumed is not None:
        model.load_state_dict(translation_weights(base))
        reference = resumed["base"]
    else:
        reference = base_reference(base, checkpoint_file(config.train.init_from))
    names = add_adapters(model, config.train.adapters)
    log.info(
        "adapters (%s) on %d modules of the frozen base", config.train.adapters.type, len(names)
    )
    return reference
