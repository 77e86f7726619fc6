"""Our Transformer's weights in the layout of `transformers`' BART family, and back.

Marian (post-norm) and Pegasus (pre-norm, with a final LayerNorm per stack) name their
weights alike, and compute what our Transformer computes when its layers are of the same
kind: embeddings scaled by sqrt(d) plus sinusoidal positions, multi-head attention with
scores scaled by d_head^-1/2, a two-layer feed-forward block, LayerNorm with eps 1e-5, an
output projection plus a logits bias.

| ours                                             | theirs                                   |
|--------------------------------------------------|------------------------------------------|
| encoder.embed, decoder.embed                     | model.{encoder,decoder}.embed_tokens     |
| encoder.stages.0.layers.i, decoder.layers.i      | model.{encoder,decoder}.layers.i         |
|   attention.scorer.query_proj / key_proj         |   self_attn.q_proj / k_proj              |
|   attention.value_proj / output_proj             |   self_attn.v_proj / out_proj            |
|   attention_norm                                 |   self_attn_layer_norm                   |
|   cross_attention.* , cross_attention_norm       |   encoder_attn.* , encoder_attn_layer_norm|
|   feed_forward.0 / feed_forward.3                |   fc1 / fc2                              |
|   feed_forward_norm                              |   final_layer_norm                       |
| encoder.stages.0.norm, decoder.norm (pre-norm)   | model.{encoder,decoder}.layer_norm       |
| decoder.generator.weight / .bias                 | lm_head.weight / final_logits_bias [1, V]|
| projections without biases                       | zero biases                              |

One difference is not a name: our sinusoids interleave sin and cos (features 2i, 2i + 1),
theirs put every sin first and every cos second. Their table is fixed in code, so the
export permutes the model's feature axis instead (`ORDER`): a Transformer computes the same
function when every weight that reads or writes the residual stream is permuted alike, and
LayerNorm's statistics do not depend on the order of the features. The import permutes back.
"""

from __future__ import annotations

import re

import torch

# the part of each of our weights that faces the residual stream: its input features
# (READS), its output features and bias (WRITES), or all of it (NORM)
READS, WRITES, NORM = "reads", "writes", "norm"

LAYER_PARTS = {  # ours, within a layer -> theirs, and how it faces the residual stream
    "attention.scorer.query_proj": ("self_attn.q_proj", READS),
    "attention.scorer.key_proj": ("self_attn.k_proj", READS),
    "attention.value_proj": ("self_attn.v_proj", READS),
    "attention.output_proj": ("self_attn.out_proj", WRITES),
    "attention_norm": ("self_attn_layer_norm", NORM),
    "cross_attention.scorer.query_proj": ("encoder_attn.q_proj", READS),
    "cross_attention.scorer.key_proj": ("encoder_attn.k_proj", READS),
    "cross_attention.value_proj": ("encoder_attn.v_proj", READS),
    "cross_attention.output_proj": ("encoder_attn.out_proj", WRITES),
    "cross_attention_norm": ("encoder_attn_layer_norm", NORM),
    "feed_forward.0": ("fc1", READS),
    "feed_forward.3": ("fc2", WRITES),
    "feed_forward_norm": ("final_layer_norm", NORM),
}
MODULES = {  # ours -> theirs, outside the layers
    "encoder.embed": ("model.encoder.embed_tokens", READS),
    "decoder.embed": ("model.decoder.embed_tokens", READS),
    "encoder.stages.0.norm": ("model.encoder.layer_norm", NORM),
    "decoder.norm": ("model.decoder.layer_norm", NORM),
    "decoder.generator": ("lm_head", READS),
}
LAYER = re.compile(r"(encoder\.stages\.0\.layers|decoder\.layers)\.(\d+)\.(.+)")
STACKS = {
    "encoder.stages.0.layers": "model.encoder.layers",
    "decoder.layers": "model.decoder.layers",
}
LOGITS_BIAS = "final_logits_bias"


def their_name(ours: str) -> tuple[str, str]:
    """Our parameter name -> (theirs, how it faces the residual stream)."""
    if ours == "decoder.generator.bias":
        return LOGITS_BIAS, "bias"
    module, _, kind = ours.rpartition(".")
    match = LAYER.fullmatch(module)
    if match:
        stack, index, part = match.groups()
        name, facing = LAYER_PARTS[part]
        return f"{STACKS[stack]}.{index}.{name}.{kind}", facing
    name, facing = MODULES[module]
    return f"{name}.{kind}", facing


def feature_order(dim: int) -> torch.Tensor:
    """Theirs[f] = ours[ORDER[f]]: our sin features (even), then our cos features (odd)."""
    return torch.cat([torch.arange(0, dim, 2), torch.arange(1, dim, 2)])


def reordered(tensor: torch.Tensor, facing: str, kind: str, order: torch.Tensor) -> torch.Tensor:
    """`tensor` (a weight or a bias, `kind`) with its residual-stream features in `order`."""
    if facing == READS:
        return tensor.index_select(1, order) if kind == "weight" else tensor
    if facing in (WRITES, NORM):
        return tensor.index_select(0, order)
    return tensor  # the logits bias: one per vocabulary entry


def to_theirs(weights: dict[str, torch.Tensor], dim: int) -> dict[str, torch.Tensor]:
    """Our state dict -> theirs (missing biases as zeros are the caller's to add)."""
    order = feature_order(dim)
    theirs = {}
    for ours, tensor in weights.items():
        name, facing = their_name(ours)
        tensor = reordered(tensor.detach().float(), facing, ours.rpartition(".")[2], order)
        theirs[name] = tensor[None] if name == LOGITS_BIAS else tensor
    return theirs


def from_theirs(
    theirs: dict[str, torch.Tensor], names: list[str], dim: int
) -> dict[str, torch.Tensor]:
    """Their state dict -> ours, for our parameter `names`."""
    back = torch.argsort(feature_order(dim))
    weights = {}
    for ours in names:
        name, facing = their_name(ours)
        tensor = theirs[name].detach().float()
        tensor = tensor[0] if name == LOGITS_BIAS else tensor
        weights[ours] = reordered(tensor, facing, ours.rpartition(".")[2], back)
    return weights
