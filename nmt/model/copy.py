"""Copying from the source: the pointer-generator of See et al. (2017).

A learnt gate p_gen = σ(w · t_i + b), read from the decoder's output features t_i (a function
of its state, the attention's context and the previous target token), mixes the vocabulary
softmax with the attention over the source, read as a distribution over source tokens:

    P(w) = p_gen · P_vocab(w) + (1 − p_gen) · Σ_{i: x_i = w} a_i

so a repeated source token adds its weights up. A source piece is a target id when the target
vocabulary has the same piece (all of them with a joint SentencePiece model). One it lacks gets
an extended id in search, V + the position where it first occurs in its sentence, so search
scores V + S columns and the output maps those ids back to the source piece's text. Training
targets never hold such a piece (it is `<unk>` in the target's own segmentation), so there the
copy weight of an unmapped piece counts for `<unk>`.

The loss is the label-smoothed cross-entropy of that mixture. The mixture differs from
log p_gen + log_softmax(z) only in the columns of the source's S pieces, so the loss never
builds it over V: the log-sum-exp and the sum of a row's logits give the vocabulary part and
S columns correct it. It runs chunk by chunk like nmt/model/loss.py, each chunk
checkpointed: the backward pass recomputes a chunk's [rows, V] logits instead of keeping them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

CHUNK_ROWS = 512  # target rows whose [rows, V] logits one checkpointed chunk holds


class Copy(nn.Module):
    """The gate and the map from source ids to target ids (-1 where the target lacks it)."""

    def __init__(
        self, features: int, src_pieces: Sequence[str], tgt_pieces: Sequence[str], unk_id: int
    ):
        super().__init__()
        self.gate = nn.Linear(features, 1)
        target = {piece: index for index, piece in enumerate(tgt_pieces)}
        mapping = [target.get(piece, -1) for piece in src_pieces]
        self.register_buffer("to_target", torch.tensor(mapping), persistent=False)
        self.vocab_size = len(tgt_pieces)
        self.unk_id = unk_id

    def source_ids(self, src: torch.Tensor) -> torch.Tensor:
        """src [B, S] -> extended target ids [B, S] for search: an unmapped piece gets
        V + the first position in its row where the same source id occurs."""
        mapped = self.to_target[src]
        first = (src[:, :, None] == src[:, None, :]).int().argmax(-1)  # first equal position
        return torch.where(mapped >= 0, mapped, self.vocab_size + first)

    def readable(self, tokens: torch.Tensor) -> torch.Tensor:
        """Target tokens as the decoder reads them: a copied piece (an id >= V) as <unk>."""
        return tokens.masked_fill(tokens >= self.vocab_size, self.unk_id)

    def training_ids(self, src: torch.Tensor) -> torch.Tensor:
        """src [B, S] -> target ids [B, S] for training: an unmapped piece counts as <unk>."""
        mapped = self.to_target[src]
        return mapped.masked_fill(mapped < 0, self.unk_id)

    def gates(self, features: torch.Tensor) -> torch.Tensor:
        """The logit of p_gen [...] for output features [..., D]."""
        return self.gate(features).squeeze(-1)

    def log_probs(
        self,
        logits: torch.Tensor,
        features: torch.Tensor,
        weights: torch.Tensor,
        source_ids: torch.Tensor,
        width: int,
    ) -> torch.Tensor:
        """log P over `width` >= V columns: logits [..., V], features [..., D], weights
        [..., S] (heads averaged), source_ids [..., S] (each < width)."""
        return mixture_log_probs(logits, self.gates(features), weights, source_ids, width)


def mixture_log_probs(
    logits: torch.Tensor,
    gate: torch.Tensor,
    weights: torch.Tensor,
    source_ids: torch.Tensor,
    width: int,
) -> torch.Tensor:
    """log(p_gen · softmax(logits) + (1 − p_gen) · copied), p_gen = σ(gate), copied[w] =
    Σ_{i: ids_i = w} a_i, in log space and float32 over `width` columns (-inf where both are
    0). logits [..., V], gate [...], weights and source_ids [..., S]."""
    gate = gate.float()[..., None]
    generated = logits.float().log_softmax(-1) + nn.functional.logsigmoid(gate)
    if width > generated.size(-1):
        missing = generated.new_full(
            (*generated.shape[:-1], width - generated.size(-1)), float("-inf")
        )
        generated = torch.cat([generated, missing], -1)
    copied = generated.new_zeros(generated.shape).scatter_add(-1, source_ids, weights.float())
    return torch.logaddexp(generated, _log(copied) + nn.functional.logsigmoid(-gate))


def copy_loss(
    features: torch.Tensor,
    projection: nn.Linear,
    copy: Copy,
    weights: torch.Tensor,
    source_ids: torch.Tensor,
    targets: torch.Tensor,
    pad_id: int,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """The summed label-smoothed cross-entropy of the mixture over the real target tokens.

    features [B, T, D], weights [B, T, S] (heads averaged), source_ids [B, S] (training_ids),
    targets [B, T]. Smoothing spreads over the V vocabulary entries, as without copying.
    """
    real = (targets != pad_id).flatten().nonzero().squeeze(1)  # padding costs nothing here
    sentence = real // targets.size(1)
    features, weights = features.flatten(0, 1)[real], weights.flatten(0, 1)[real]
    targets = targets.flatten()[real]
    loss = features.new_zeros((), dtype=torch.float32)
    for start in range(0, len(targets), CHUNK_ROWS):
        chunk = slice(start, start + CHUNK_ROWS)
        inputs = (features[chunk], weights[chunk], source_ids[sentence[chunk]], targets[chunk])
        arguments = (*inputs, projection, copy, label_smoothing)
        if torch.is_grad_enabled():
            loss = loss + checkpoint(_chunk_loss, *arguments, use_reentrant=False)
        else:
            loss = loss + _chunk_loss(*arguments)
    return loss


def _chunk_loss(
    features: torch.Tensor,
    weights: torch.Tensor,
    source_ids: torch.Tensor,
    targets: torch.Tensor,
    projection: nn.Linear,
    copy: Copy,
    smoothing: float,
) -> torch.Tensor:
    """The summed loss of rows of real targets: features [N, D], weights and ids [N, S].

    With g = log p_gen − logsumexp(z), log P(v) = g + z_v for every v no source piece names,
    so Σ_v log P(v) = V·g + Σ_v z_v plus, once per distinct source id u, log P(u) − (g + z_u).
    """
    logits = projection(features).float()  # [N, V]
    gate = copy.gates(features).float()
    generated = nn.functional.logsigmoid(gate) - logits.logsumexp(-1)  # [N]
    copying = nn.functional.logsigmoid(-gate)  # [N]: log(1 - p_gen)

    def mixed(z: torch.Tensor, mass: torch.Tensor) -> torch.Tensor:
        """log P of columns with logits z and copied attention mass, both [N, K]."""
        return torch.logaddexp(generated[:, None] + z, copying[:, None] + _log(mass))

    target_mass = (weights * (source_ids == targets[:, None])).sum(-1, keepdim=True)
    loss = -(1 - smoothing) * mixed(logits.gather(1, targets[:, None]), target_mass).sum()
    if smoothing:
        same = source_ids[:, :, None] == source_ids[:, None, :]  # [N, S, S]
        mass = (same * weights[:, None, :]).sum(-1)  # [N, S]: each position's id's mass
        source_logits = logits.gather(1, source_ids)
        corrections = mixed(source_logits, mass) - (generated[:, None] + source_logits)
        distinct = corrections / same.sum(-1)  # a repeated id is corrected once in all
        vocab = logits.size(1)
        totals = vocab * generated + logits.sum(-1) + distinct.sum(-1)  # Σ_v log P(v)
        loss = loss - smoothing / vocab * totals.sum()
    return loss


def _log(mass: torch.Tensor) -> torch.Tensor:
    """log of non-negative masses, -inf at 0 through where(), not log(0), whose infinite
    gradient would turn into NaN."""
    return torch.where(mass > 0, mass.clamp_min(torch.finfo(mass.dtype).tiny).log(), -torch.inf)
