"""What every search shares: the model interface it drives, the hypotheses it returns, and
their length limits and penalty.

Search is written only against `encode`, `init_state`, `step` and `state.select`: a Seq2Seq
and an Ensemble answer the same calls, and no search asks which kind of model it drives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch


class SearchModel(Protocol):
    """What search needs. The state may be anything with `select(indices)` (rows on dim 0)."""

    def encode(self, src: torch.Tensor, src_lengths: torch.Tensor) -> Any: ...

    def init_state(
        self, encoded: Any, need_weights: bool = True, shortlist: torch.Tensor | None = None
    ) -> Any:
        """`need_weights`: whether `step` returns attention weights (else it may return None);
        `shortlist` [C]: the sorted target ids `step` then scores, its logits [B, C] in
        their order (None: every id, logits [B, V])."""
        ...

    def step(
        self, state: Any, prev_tokens: torch.Tensor
    ) -> tuple[torch.Tensor, Any, torch.Tensor | None]:
        """prev_tokens [B] -> logits [B, V], next state, attention weights [B, H, S]."""
        ...


@dataclass(frozen=True)
class Columns:
    """A vocabulary shortlist as search sees it: the target ids the model scores, in the
    order of its logits' columns. Search picks among those columns, maps the picks to ids,
    and widens the logits to the whole vocabulary only where constraints need every id."""

    ids: torch.Tensor  # [C] sorted target ids
    size: int  # the whole vocabulary's size V

    def widened(self, logits: torch.Tensor) -> torch.Tensor:
        """logits [N, C] -> [N, V], -inf outside the columns."""
        full = logits.new_full((logits.size(0), self.size), float("-inf"))
        return full.index_copy_(1, self.ids.to(logits.device), logits)

    def narrowed(self, mask: torch.Tensor) -> torch.Tensor:
        """A mask over ids [N, V] -> over the columns [N, C]."""
        return mask.index_select(1, self.ids.to(mask.device))


def unwritable_columns(
    ids: Sequence[int], columns: Columns | None, device: torch.device
) -> torch.Tensor | None:
    """The logits' columns of `ids`, target ids no hypothesis may write (pad, bos: pieces of
    no text), over every id or over a shortlist's `columns`; None for none. Search bans them
    after normalising, as `transformers` applies `bad_words_ids`, so scores stay the model's
    log-probabilities (what forced scoring computes)."""
    if not ids:
        return None
    wanted = torch.tensor(sorted(set(ids)), dtype=torch.long, device=device)
    if columns is None:
        return wanted
    return torch.isin(columns.ids.to(device), wanted).nonzero().squeeze(1)


@dataclass
class Hypothesis:
    tokens: list[int]  # without bos and eos
    score: float  # sum of token log-probabilities, eos included when produced
    # [steps, H, S_real]: one row per output token, eos included, in a tensor of its own (a
    # view would keep its whole batch's buffer alive); None where nobody asked for it
    attention: torch.Tensor | None
    steps: int = -1  # tokens scored: the tokens, and eos when produced (-1: attention's rows)

    def __post_init__(self) -> None:
        if self.steps < 0:
            self.steps = self.attention.size(0)

    @property
    def ended(self) -> bool:
        """Whether search wrote eos; if not, the sentence's length limit stopped it."""
        return self.steps > len(self.tokens)

    def normalised_score(self, alpha: float, beta: float = 0.0) -> float:
        """What beam search ranks finished hypotheses by: score / length_penalty(steps),
        plus the coverage penalty of weight `beta` (0: none), which needs the attention."""
        penalty = float(coverage_penalty(self.attention, beta)) if beta else 0.0
        return self.score / length_penalty(self.steps, alpha) + penalty


def length_penalty(steps: Any, alpha: float) -> Any:
    """GNMT (Wu et al. 2016): ((5 + steps) / 6) ** alpha; >= 1, growing with steps if alpha >= 0.

    Works on ints and on tensors of step counts alike.
    """
    return ((5 + steps) / 6) ** alpha


def coverage_penalty(
    attention: torch.Tensor, beta: float, real: torch.Tensor | None = None
) -> torch.Tensor:
    """GNMT (Wu et al. 2016): beta * sum_j log min(sum_i a_ij, 1), over the source words j
    (`real` [..., S]: which are words, not padding; None: all) of attention [..., T, H, S]
    (heads averaged; padding steps hold zeros). <= 0: it only lowers a hypothesis that left
    source words short of one step's worth of attention. A word never attended counts as
    the log of the smallest float (-87), not -inf, so such hypotheses still rank."""
    covered = attention.float().sum(-3).mean(-2).clamp(torch.finfo(torch.float32).tiny, 1.0)
    logs = covered.log()
    if real is not None:
        logs = logs.masked_fill(~real, 0.0)
    return beta * logs.sum(-1)


def max_lengths(src_lengths: torch.Tensor, ratio: float, extra: int) -> torch.Tensor:
    """Output length limit per sentence, relative to its source length. [B] -> [B]."""
    return (src_lengths.double() * ratio).ceil().long() + extra


def log_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """log_softmax, as logits - logsumexp: beam search normalises its best logits alone in
    the same way, so a beam of 1 scores exactly as greedy search does."""
    logits = logits.float()
    return logits - logits.logsumexp(-1, keepdim=True)


def hypotheses_from_rows(
    tokens: torch.Tensor,
    scores: torch.Tensor,
    weights: torch.Tensor | None,
    src_lengths: torch.Tensor,
    eos_id: int,
    limits: torch.Tensor,
) -> list[Hypothesis]:
    """tokens [N, T], scores [N], weights [N, T, H, S] -> one Hypothesis per row, cut at eos,
    each with a copy of its own attention (None without weights)."""
    result = []
    for row, score, limit, length in zip(
        tokens.tolist(), scores.tolist(), limits.tolist(), src_lengths.tolist(), strict=True
    ):
        end = row.index(eos_id) if eos_id in row[:limit] else min(limit, len(row))
        steps = min(end + 1, len(row), limit)
        attention = (
            None
            if weights is None
            else weights[len(result), :steps, :, :length].to("cpu", torch.float32, copy=True)
        )
        result.append(Hypothesis(row[:end], score, attention, steps))
    return result
