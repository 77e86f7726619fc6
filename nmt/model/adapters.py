"""Adapters on a frozen model. Low-rank adapters (LoRA, Hu et al. 2021): each chosen linear
map W becomes W + (alpha / rank) B A, with A (rank x in) drawn as nn.Linear draws its
weights and B (out x rank) zero; `merged` folds them into W for a plain model of the base's
shape. Bottleneck adapters (Bapna & Firat 2019): after each Transformer layer, x + W_up
ReLU(W_down LN(x)), W_up zero. Either way the adapted model starts computing exactly what
the base does, and only the adapters learn.

Which maps: by the name of the module that holds them (`TARGETS`), so one rule serves the
Transformer, RNNsearch and imported models alike."""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import nn

from nmt.model.layers import TransformerLayer

# what `train.adapters.targets` names, and the module names each covers
TARGETS = {
    "attention": ("query_proj", "key_proj", "value_proj", "output_proj"),
    "feed_forward": ("feed_forward",),
    "output": ("readout", "generator"),
    "rnn_inputs": ("embedding_gates", "context_gates"),
}


class LoRALinear(nn.Module):
    """`base` (kept frozen) plus a low-rank update of rank `rank`, scaled by alpha / rank."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, dropout: float = 0.0):
        super().__init__()
        self.base = base
        self.rank, self.scale = rank, alpha / rank
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))  # as nn.Linear draws weights
        self.dropout = nn.Dropout(dropout) if dropout else nn.Identity()
        for parameter in base.parameters():
            parameter.requires_grad_(False)

    @property
    def weight(self) -> torch.Tensor:
        """The map's effective weight (what `merged` writes)."""
        return self.base.weight + self.scale * (self.lora_b @ self.lora_a).to(
            self.base.weight.dtype
        )

    @property
    def bias(self) -> torch.Tensor | None:
        return self.base.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        update = self.dropout(x) @ self.lora_a.t().to(x.dtype) @ self.lora_b.t().to(x.dtype)
        return self.base(x) + self.scale * update

    def extra_repr(self) -> str:
        return f"rank={self.rank}, scale={self.scale}"


def add_lora(
    model: nn.Module,
    targets: Iterable[str],
    rank: int,
    alpha: float,
    dropout: float = 0.0,
) -> list[str]:
    """Freezes every parameter of `model` and wraps each nn.Linear whose module name (or a
    parent's) is one `targets` covers (TARGETS' keys) in a LoRALinear; the names wrapped."""
    names = {name for target in targets for name in TARGETS[target]}
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    wrapped = []
    for path, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{path}.{child_name}" if path else child_name
            if isinstance(child, nn.Linear) and set(full.split(".")) & names:
                setattr(module, child_name, LoRALinear(child, rank, alpha, dropout))
                wrapped.append(full)
    return wrapped


def adapter_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The adapters' own weights, what an adapter checkpoint holds."""
    own = (".lora_", ".bottleneck_")
    return {name: t for name, t in model.state_dict().items() if any(o in name for o in own)}


def merged(model: nn.Module) -> nn.Module:
    """`model` (changed in place) with each LoRALinear replaced by a plain nn.Linear of its
    effective weight: the base's shape, computing what the adapted model computes."""
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, LoRALinear):
                plain = child.base
                with torch.no_grad():
                    plain.weight.copy_(child.weight)
                for parameter in plain.parameters():
                    parameter.requires_grad_(True)
                setattr(module, child_name, plain)
    return model


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

    def forward(self, x: torch.Tensor, *args, **kwargs):
        x, *rest = self.layer(x, *args, **kwargs)
        down = torch.relu(self.bottleneck_down(self.bottleneck_norm(x)))
        return (x + self.bottleneck_up(down), *rest)


def add_bottlenecks(model: nn.Module, size: int) -> list[str]:
    """Freezes every parameter of `model` and follows each Transformer layer with a
    Bottleneck of `size` units; the layers' names."""
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    wrapped = []
    for path, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if isinstance(child, TransformerLayer):
                setattr(module, child_name, Bottleneck(child, size))
                wrapped.append(f"{path}.{child_name}" if path else child_name)
    return wrapped
