"""Adapters on a frozen model (`train.adapters`). Low-rank adapters (LoRA, Hu et al. 2021):
each chosen weight matrix W [out, in] becomes W + (alpha / rank) B A, with A (r x in)
drawn as nn.Linear draws its weights and B (out x r) zero, r the rank (or its target's
own, `ranks`, at the same scale); `merged` folds them into W for a plain model of the
base's shape. Bottleneck adapters (Bapna & Firat 2019): after each
Transformer layer, x + W_up ReLU(W_down LN(x)), W_up zero. Either way the adapted model
starts computing exactly what the base does, and only the adapters learn.

Which matrices: those of the modules whose names `TARGETS` lists, so one rule serves the
Transformer, RNNsearch and imported models alike. A matrix is adapted once, wherever it
is used: an output layer tied to the embeddings shares its update with them, so merging
stays exact.
"""

from __future__ import annotations

import copy
import logging
import math

import torch
import torch.nn.functional as F
from torch import nn

from nmt.config import AdapterConfig
from nmt.errors import UserError
from nmt.model.layers import TransformerLayer

log = logging.getLogger("nmt")

# what `train.adapters.targets` names, and the module names each covers
TARGETS = {
    "attention": ("query_proj", "key_proj", "value_proj", "output_proj"),
    "feed_forward": ("feed_forward",),
    "embeddings": ("embed",),
    "output": ("readout", "generator"),
    "rnn_inputs": ("embedding_gates", "context_gates"),
}
OWN_NAMES = (".lora_", ".bottleneck_")  # what an adapter's own parameters are called


class LoRA(nn.Module):
    """The low-rank update scale * B A of one weight matrix [out, in]."""

    def __init__(self, out_features: int, in_features: int, rank: int, scale: float):
        super().__init__()
        self.scale = scale
        self.lora_a = nn.Parameter(torch.empty(rank, in_features))
        self.lora_b = nn.Parameter(torch.zeros(out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))  # as nn.Linear draws weights

    def delta(self, dtype: torch.dtype) -> torch.Tensor:
        return (self.scale * (self.lora_b @ self.lora_a)).to(dtype)

    def extra_repr(self) -> str:
        return f"rank={self.lora_a.shape[0]}, scale={self.scale}"


class LoRALinear(nn.Module):
    """A frozen nn.Linear plus a LoRA update of its weight, computed beside it (x A^T B^T)
    rather than added to it, so a step costs two thin products instead of a new matrix."""

    def __init__(self, base: nn.Linear, update: LoRA, dropout: float = 0.0):
        super().__init__()
        self.base, self.update = base, update
        self.dropout = nn.Dropout(dropout) if dropout else nn.Identity()

    @property
    def weight(self) -> torch.Tensor:
        """The effective weight (what the fused loss and a shortlist's cut read)."""
        return self.base.weight + self.update.delta(self.base.weight.dtype)

    @property
    def bias(self) -> torch.Tensor | None:
        return self.base.bias

    @property
    def in_features(self) -> int:
        return self.base.in_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.update.lora_a.to(x.dtype), self.update.lora_b.to(x.dtype)
        return self.base(x) + self.update.scale * (self.dropout(x) @ a.t() @ b.t())


class LoRAEmbedding(nn.Module):
    """A frozen nn.Embedding plus a LoRA update of its table [vocab, dim]: row i gains
    scale * B[i] A. The padding row's update never learns, as the table's own does not."""

    def __init__(self, base: nn.Embedding, update: LoRA):
        super().__init__()
        self.base, self.update = base, update

    @property
    def weight(self) -> torch.Tensor:
        return self.base.weight + self.update.delta(self.base.weight.dtype)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        lookup = self.base(ids)
        rows = F.embedding(ids, self.update.lora_b, padding_idx=self.base.padding_idx)
        update = rows.to(lookup.dtype) @ self.update.lora_a.to(lookup.dtype)
        return lookup + self.update.scale * update


class Bottleneck(nn.Module):
    """A Transformer layer followed by a residual bottleneck of `size` units."""

    def __init__(self, layer: nn.Module, size: int):
        super().__init__()
        self.layer = layer
        dim = layer.feed_forward_norm.normalized_shape[0]
        self.bottleneck_norm = nn.LayerNorm(dim)
        self.bottleneck_down = nn.Linear(dim, size)
        self.bottleneck_up = nn.Linear(size, dim)
        nn.init.zeros_(self.bottleneck_up.weight)
        nn.init.zeros_(self.bottleneck_up.bias)

    def __getattr__(self, name: str):
        """The wrapped layer's parts, as its own (a decoder prepares its cross-attention)."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.layer, name)

    def forward(self, x: torch.Tensor, *args, **kwargs):
        x, *rest = self.layer(x, *args, **kwargs)
        down = torch.relu(self.bottleneck_down(self.bottleneck_norm(x)))
        return (x + self.bottleneck_up(down), *rest)


def add_adapters(model: nn.Module, config: AdapterConfig) -> list[str]:
    """Freezes `model` and adds the adapters `config` describes; the modules adapted. A
    UserError when the config finds nothing to adapt in this model."""
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    if config.type == "lora":
        ranks = {target: config.ranks.get(target, config.rank) for target in config.targets}
        wrapped = add_lora(model, ranks, config.alpha / config.rank, config.dropout)
        missing = (
            f"no module of the kinds train.adapters.targets names ({', '.join(config.targets)})"
        )
    else:
        wrapped = add_bottlenecks(model, config.size)
        missing = "no Transformer layer for train.adapters.type bottleneck to follow"
    if not wrapped:
        raise UserError(
            f"this model has {missing}; choose other targets, or type lora with targets "
            "attention, feed_forward, embeddings, output or rnn_inputs."
        )
    return wrapped


def add_lora(
    model: nn.Module, ranks: dict[str, int], scale: float, dropout: float = 0.0
) -> list[str]:
    """Gives each weight matrix of a module that a target of `ranks` (TARGETS' keys, each
    with its rank) names, by its own name or a parent's, one LoRA update of that rank (the
    widest, for a matrix two targets name: tied embeddings and output; at most the matrix's
    own, beyond which a rank adds nothing), shared by every nn.Linear and nn.Embedding that
    uses the matrix; the names of the modules wrapped."""
    adaptable = _adaptable(model)
    chosen: dict[int, int] = {}  # id of a matrix -> its update's rank
    found: set[str] = set()
    for path, module in adaptable:
        for target, rank in ranks.items():
            if set(path.split(".")) & set(TARGETS[target]):
                chosen[id(module.weight)] = max(rank, chosen.get(id(module.weight), 0))
                found.add(target)
    unmatched = [target for target in ranks if target not in found]
    if found and unmatched:  # none found: add_adapters' error says so
        log.warning(
            "notice: train.adapters.targets %s: this model has no such module (an RNNsearch "
            "has no feed_forward, a Transformer no rnn_inputs); the other targets are adapted.",
            ", ".join(unmatched),
        )
    updates: dict[int, LoRA] = {}
    wrapped = []
    for path, module in adaptable:
        weight = module.weight
        if id(weight) not in chosen:
            continue
        if id(weight) not in updates:
            rank = min(chosen[id(weight)], *weight.shape)
            updates[id(weight)] = LoRA(weight.shape[0], weight.shape[1], rank, scale)
        update = updates[id(weight)]
        if isinstance(module, nn.Embedding):
            adapted: nn.Module = LoRAEmbedding(module, update)
        else:
            adapted = LoRALinear(module, update, dropout)
        parent, _, child = path.rpartition(".")
        setattr(model.get_submodule(parent), child, adapted)
        wrapped.append(path)
    return wrapped


def _adaptable(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """Every nn.Linear and nn.Embedding with its path, a tied one under each of its names
    (named_modules lists a module once; a tied matrix has two modules)."""
    found = []
    for path, module in model.named_modules(remove_duplicate=False):
        if isinstance(module, (nn.Linear, nn.Embedding)) and path:
            found.append((path, module))
    return found


def add_bottlenecks(model: nn.Module, size: int) -> list[str]:
    """Follows each Transformer layer of `model` with a Bottleneck of `size` units; the
    layers' names."""
    wrapped = []
    for path, module in list(model.named_modules()):
        if isinstance(module, TransformerLayer):
            parent, _, child = path.rpartition(".")
            setattr(model.get_submodule(parent), child, Bottleneck(module, size))
            wrapped.append(path)
    return wrapped


def has_adapters(model: nn.Module) -> bool:
    return any(isinstance(m, (LoRA, Bottleneck)) for m in model.modules())


def trained_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The weights a checkpoint of `model` holds: its adapters' alone where it has any,
    else all of them."""
    state = model.state_dict()
    if not has_adapters(model):
        return state
    return {name: t for name, t in state.items() if any(own in name for own in OWN_NAMES)}


def load_trained_state(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """`trained_state`'s inverse: an adapted model takes its adapters' weights, which must
    be exactly the ones it has (a RuntimeError naming the first that is not), and keeps
    its base."""
    if not has_adapters(model):
        model.load_state_dict(state)
        return
    expected = set(trained_state(model))
    if set(state) != expected:
        odd = sorted(set(state) ^ expected)[0]
        raise RuntimeError(f"adapter weights do not fit:\n  {odd} is missing or unexpected")
    model.load_state_dict(state, strict=False)


def merged(model: nn.Module) -> nn.Module:
    """`model` (changed in place) with each LoRA update folded into its matrix and the
    wrappers gone: the base's shape, computing what the adapted model computes."""
    folded: set[int] = set()
    for path, module in list(model.named_modules(remove_duplicate=False)):
        if isinstance(module, (LoRALinear, LoRAEmbedding)):
            plain = module.base
            if id(plain.weight) not in folded:  # a tied matrix takes its update once
                with torch.no_grad():
                    plain.weight.copy_(module.weight)
                folded.add(id(plain.weight))
            parent, _, child = path.rpartition(".")
            setattr(model.get_submodule(parent), child, plain)
    return model


def sharing_base(model: nn.Module) -> nn.Module:
    """A copy of `model` whose parameters and buffers are `model`'s own tensors: adapters
    added to it leave `model` as it was, and the base is in memory once."""
    memo = {id(tensor): tensor for tensor in [*model.parameters(), *model.buffers()]}
    return copy.deepcopy(model, memo)
