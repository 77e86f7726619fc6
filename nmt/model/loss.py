"""Label-smoothed cross-entropy over real target tokens, fused with the vocabulary projection.

The logits of a batch, [N, V] for N target tokens, are the largest tensor of a training
step. Here they never outlive a chunk of rows: each chunk's logits turn, in place, into the
gradient of the loss with respect to them (softmax minus the smoothed target), which is
folded at once into the gradients of the features, weight and bias; backward only scales
those by the incoming gradient. The projection is padded out to a multiple of 64 vocabulary
rows (bias -inf, so they get probability 0), because matrix products with an odd width, such
as a SentencePiece model plus an appended pad, run a third slower.

The loss is torch's `cross_entropy(..., label_smoothing=eps)`:
lse - (1 - eps) z_target - eps mean_v z_v, summed over tokens whose target is not padding.
"""

from __future__ import annotations

import torch
from torch import nn

CHUNK_ROWS = 1024  # bounds the logits held at once to CHUNK_ROWS × V
ALIGN = 64


def vocabulary_loss(
    features: torch.Tensor,
    projection: nn.Linear,
    targets: torch.Tensor,
    pad_id: int,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Summed loss of `projection(features)` against targets; features [..., D], targets [...].

    Divide by the number of real target tokens yourself.
    """
    inputs = (features.flatten(0, -2), projection.weight, projection.bias)
    targets = targets.flatten()
    if torch.is_grad_enabled() and any(tensor.requires_grad for tensor in inputs):
        return _LinearCrossEntropy.apply(*inputs, targets, pad_id, label_smoothing)
    return _chunked(*inputs, targets, pad_id, label_smoothing, gradients=False)[0]


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, features, weight, bias, targets, pad_id, label_smoothing):
        loss, *gradients = _chunked(
            features, weight, bias, targets, pad_id, label_smoothing, gradients=True
        )
        ctx.save_for_backward(*gradients)
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        grads = [grad * grad_loss.to(grad.dtype) for grad in ctx.saved_tensors]
        return *grads, None, None, None


def _chunked(
    features: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    targets: torch.Tensor,
    pad_id: int,
    smoothing: float,
    gradients: bool,
) -> tuple[torch.Tensor, ...]:
    """The summed loss (and, if asked, the gradients of it) chunk by chunk, without a host sync.

    Runs outside autocast: products and the softmax's exponentials in the features' dtype
    (bf16's halve the bytes through the largest tensor of a step); the loss and the
    gradients' sums in float32. The sums over a [rows, V] chunk are summed by the kernel in
    float32 and rounded once to the features' dtype: asking for a float32 result instead
    makes torch copy the whole chunk to float32 first, which cost bf16 a twelfth of its step.
    """
    vocab, padded = weight.size(0), -(-weight.size(0) // ALIGN) * ALIGN
    dtype = features.dtype
    with torch.autocast(features.device.type, enabled=False):
        aligned_weight, aligned_bias = weight.to(dtype), bias.to(dtype)
        if padded > vocab:
            aligned_weight = torch.cat(
                [aligned_weight, weight.new_zeros(padded - vocab, weight.size(1), dtype=dtype)]
            )
            aligned_bias = torch.cat(
                [aligned_bias, bias.new_full((padded - vocab,), float("-inf"), dtype=dtype)]
            )
        mean_weight, mean_bias = weight.float().mean(0), bias.float().mean()
        real = (targets != pad_id)[:, None]  # [N, 1]
        loss = features.new_zeros((), dtype=torch.float32)
        grad_features = torch.empty_like(features)
        grad_weight = aligned_weight.new_zeros(aligned_weight.shape, dtype=torch.float32)
        grad_bias = aligned_bias.new_zeros(aligned_bias.shape, dtype=torch.float32)
        for start in range(0, features.size(0), CHUNK_ROWS):
            rows = slice(start, start + CHUNK_ROWS)
            chunk, target, keep = features[rows], targets[rows, None], real[rows]
            logits = torch.addmm(aligned_bias, chunk, aligned_weight.t())  # features' dtype
            target_logit = logits.gather(1, target).float()
            peak = logits.amax(-1, keepdim=True)
            exps = logits.sub_(peak).exp_()  # in place: one pass over the logits, one exp
            sums = exps.sum(-1, keepdim=True).float()
            mean_logit = chunk.float() @ mean_weight[:, None] + mean_bias
            per_token = peak.float() + sums.log() - (1 - smoothing) * target_logit
            loss += (per_token - smoothing * mean_logit).masked_fill(~keep, 0).sum()
            if not gradients:
                continue
            grad_logits = exps.mul_((keep / sums).to(dtype))  # the softmax; padding rows 0
            # one logit a row: index_put_ adds in place, where bf16's scatter_add_ on a CPU
            # copies the whole chunk three times (a twentieth of a bf16 step)
            at = (torch.arange(len(target), device=target.device), target[:, 0])
            grad_logits.index_put_(at, (keep[:, 0] * (smoothing - 1.0)).to(dtype), accumulate=True)
            # -eps mean_v z_v adds -eps / V to the gradient of every real logit
            grad_features[rows] = (grad_logits @ aligned_weight).float() - smoothing * (
                keep * mean_weight
            )
            if chunk.dtype == grad_weight.dtype:  # float32: accumulated in place
                grad_weight.addmm_(grad_logits.t(), chunk)
            else:  # bf16: the product on bf16's units, summed in float32
                grad_weight += grad_logits.t() @ chunk
            grad_bias += grad_logits.sum(0)
        if not gradients:
            return (loss,)
        grad_weight[:vocab] -= smoothing / vocab * (real * features.float()).sum(0)
        grad_bias[:vocab] -= smoothing / vocab * real.sum()
        return (
            loss,
            grad_features,
            grad_weight[:vocab].to(weight.dtype),
            grad_bias[:vocab].to(bias.dtype),
        )
