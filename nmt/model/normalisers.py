"""Normalisers: turn attention scores into weights on the simplex over the source positions.

`model.attention.normaliser` names one of `NORMALISERS`; `build_normaliser(name)` returns a
module called as `normaliser(scores, mask) -> weights` with

    scores  [B, T, H, S]  any real values
    mask    bool, broadcastable to scores ([B, 1, 1, S] or [B, T, 1, S]), True = real token;
            None: every position is real
    weights [B, T, H, S]  non-negative, each row summing to 1, exactly 0 on padding

Every row is assumed to have at least one real position (every source sentence has a token,
and a local window only biases scores, never masks them). A fully masked row is not
checked for: it would give NaN weights, or in eval a hard one-hot on padding.

    softmax    dense: every real position gets weight
    sparsemax  Martins & Astudillo 2016, the Euclidean projection onto the simplex: sparse
    entmax15   Peters et al. 2019, 1.5-entmax: between the two, sparse but smoother
    hard       exactly one position per query, trained by straight-through Gumbel-softmax

sparsemax and entmax15 come from the `entmax` package. Padding is filled with -inf before
any of them: softmax maps it to exactly 0, and so do entmax's sort-based solvers, which rank
-inf last, leave it out of the support and clamp it to 0 (entmax's own `test_mask` does the
same). The NaN that 1.5-entmax computes internally for the -inf positions (inf - inf in the
running variance) only ever decides that those positions are outside the support, and its
backward uses the output alone, so forward and backward stay finite. A finite fill is no
safer: `finfo.min` overflows to -inf or inf in the same sums and squares, and a fill set
relative to the row's maximum vanishes in rounding once the scores are large.
"""

from __future__ import annotations

from collections.abc import Callable

import entmax
import torch
from torch import nn

from nmt.config import AttentionConfig


def fill_padding(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """scores with -inf where mask is False (None: unchanged)."""
    return scores if mask is None else scores.masked_fill(~mask, float("-inf"))


class MaskedNormaliser(nn.Module):
    """Fill padding with -inf, then map the last dim onto the simplex with `transform`."""

    def __init__(self, transform: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.transform = transform

    def forward(self, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """scores [B, T, H, S], mask broadcastable to them -> weights [B, T, H, S]."""
        return self.transform(fill_padding(scores, mask))

    def extra_repr(self) -> str:
        return self.transform.__name__


def softmax(scores: torch.Tensor) -> torch.Tensor:
    return scores.softmax(dim=-1)


def sparsemax(scores: torch.Tensor) -> torch.Tensor:
    return entmax.sparsemax(scores, dim=-1)


def entmax15(scores: torch.Tensor) -> torch.Tensor:
    return entmax.entmax15(scores, dim=-1)


class HardAttention(nn.Module):
    """Exactly one source position per query: weights are a one-hot row.

    In eval mode the position is argmax_j e_ij over real positions. In training it is a
    sample, argmax_j (e_ij + g_ij) with Gumbel noise g_ij, which draws j with probability
    softmax(e_i)_j (the Gumbel-max trick); the forward pass returns that one-hot, and the
    backward pass the gradient of the relaxation softmax((e_i + g_i) / tau) (straight-through
    Gumbel-softmax, Jang et al. 2017; Maddison et al. 2017). As tau falls the relaxation
    nears the one-hot, so the gradient is less biased but noisier: the trainer anneals
    `temperature` with `annealed_temperature`.

    Chosen over REINFORCE with a learned baseline (Xu et al. 2015): the pathwise gradient has
    far lower variance than a score-function estimate, needs no baseline network and no
    reward plumbing, and trains with the same loss and optimiser as soft attention, while
    the forward pass still attends to exactly one position.
    """

    def __init__(self, temperature: float = 1.0):
        super().__init__()
        self.temperature = temperature  # tau > 0, set by the trainer at every step

    def forward(self, scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """scores [B, T, H, S], mask broadcastable to them -> one-hot weights [B, T, H, S]."""
        scores = fill_padding(scores, mask)  # padding never wins an argmax
        if not self.training:
            return _one_hot_argmax(scores)
        perturbed = scores + gumbel_noise(scores)
        relaxed = (perturbed / self.temperature).softmax(dim=-1)
        # relaxed - relaxed.detach() is exactly 0 forward and the identity backward, so the
        # forward value is the one-hot itself, not one rounded through hard + soft - soft.
        return _one_hot_argmax(perturbed) + (relaxed - relaxed.detach())

    def extra_repr(self) -> str:
        return f"temperature={self.temperature}"


def gumbel_noise(like: torch.Tensor) -> torch.Tensor:
    """Standard Gumbel samples shaped like `like`, -log(-log(u)) with u ~ U(0, 1) drawn from
    torch's global generator, so seeded runs repeat. u is kept inside (0, 1) so that neither
    logarithm sees 0."""
    eps = torch.finfo(like.dtype).eps
    uniform = torch.rand_like(like).clamp_(min=torch.finfo(like.dtype).tiny, max=1 - eps)
    return -(-uniform.log()).log()


def _one_hot_argmax(scores: torch.Tensor) -> torch.Tensor:
    """1 at the first maximum of each row, 0 elsewhere. [B, T, H, S] -> [B, T, H, S]."""
    index = scores.argmax(dim=-1, keepdim=True)  # [B, T, H, 1]
    return torch.zeros_like(scores).scatter_(-1, index, 1.0)


def annealed_temperature(step: int, total_steps: int, start: float, end: float) -> float:
    """The Gumbel-softmax temperature at `step`: exponential decay from start to end.

        step                  temperature
        0                     start
        total_steps / 2       sqrt(start * end)
        >= total_steps        end

    i.e. start * (end / start) ** (step / total_steps); start and end > 0.
    """
    if step >= total_steps:
        return end
    return start * (end / start) ** (step / total_steps)


NORMALISERS: dict[str, Callable[[], nn.Module]] = {
    "softmax": lambda: MaskedNormaliser(softmax),
    "sparsemax": lambda: MaskedNormaliser(sparsemax),
    "entmax15": lambda: MaskedNormaliser(entmax15),
    "hard": HardAttention,
}


def build_normaliser(name: str) -> nn.Module:
    return NORMALISERS[name]()


def set_hard_temperature(model: nn.Module, temperature: float) -> None:
    """Sets the Gumbel-softmax temperature of every hard attention in `model`."""
    for module in model.modules():
        if isinstance(module, HardAttention):
            module.temperature = temperature


def anneal_hard_attention(model: nn.Module, attention: AttentionConfig, step: int) -> None:
    """Hard attention's Gumbel-softmax temperature at training step `step`, a function of
    the step like the learning rate; nothing for other normalisers."""
    if attention.normaliser == "hard":
        temperature = annealed_temperature(
            step,
            attention.temperature_steps,
            attention.temperature_start,
            attention.temperature_end,
        )
        set_hard_temperature(model, temperature)
