"""Greedy search, and the loop it shares with sampling: one token per row and step, the
argmax or a draw (nmt/search/sampling.py), until eos or the row's length limit."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from nmt.search.blocking import merged_bans
from nmt.search.constraints import Constraints, Guide
from nmt.search.hypothesis import (
    Columns,
    Hypothesis,
    SearchModel,
    hypotheses_from_rows,
    log_probabilities,
    unwritable_columns,
)

# log-probabilities [A, V] of the active rows, their row numbers [A] -> tokens [A]
Choose = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@torch.no_grad()
def greedy_search(
    model: SearchModel,
    src: torch.Tensor,
    src_lengths: torch.Tensor,
    start: int,
    eos_id: int,
    limits: torch.Tensor,
    no_repeat_ngram: int = 0,
    constraints: Sequence[Constraints | None] | None = None,
    attention: bool = True,
    shortlist: Columns | None = None,
    unwritable: Sequence[int] = (),
) -> list[Hypothesis]:
    """Batched argmax decoding; each sentence stops at eos or at its own length limit.
    `constraints`: prefixes and excluded phrases only (included ones need beam search).
    `attention`, `shortlist` and `unwritable` as in `step_by_step_search`."""
    return step_by_step_search(
        model,
        src,
        src_lengths,
        start,
        eos_id,
        limits,
        lambda log_probs, rows: log_probs.argmax(-1),
        no_repeat_ngram=no_repeat_ngram,
        constraints=constraints,
        attention=attention,
        shortlist=shortlist,
        unwritable=unwritable,
    )


@torch.no_grad()
def step_by_step_search(
    model: SearchModel,
    src: torch.Tensor,
    src_lengths: torch.Tensor,
    start: int,
    eos_id: int,
    limits: torch.Tensor,
    choose: Choose,
    copies: int = 1,
    no_repeat_ngram: int = 0,
    constraints: Sequence[Constraints | None] | None = None,
    attention: bool = True,
    shortlist: Columns | None = None,
    unwritable: Sequence[int] = (),
) -> list[Hypothesis]:
    """Extends each row by the token `choose` picks, until eos or the row's limit.

    `copies` rows decode each sentence (several samples of it); the result is sentence-major,
    copies of one sentence side by side. `no_repeat_ngram` n > 0: `choose` never sees a token
    that would repeat an n-gram of its row (nmt/search/blocking.py). Scores are the model's
    own log-probabilities of the tokens picked, whatever `choose` did to pick them.
    `constraints` (one per sentence): `choose` sees only the prefix's token while it lasts
    and never the token that would complete an excluded phrase (nmt/search/constraints.py).
    `attention`: whether the hypotheses carry their attention (else None, and the model may
    skip computing it). `shortlist`: the only target ids the model may write (None: all);
    `unwritable`: ids it never writes (see `unwritable_columns`). A row leaves the batch
    when it ends: only the rows still decoding run through the model.
    """
    if constraints and any(c and c.include for c in constraints):
        raise ValueError("included phrases need beam search (beam_search, any beam size)")
    guide = Guide(constraints, limits) if constraints and any(constraints) else None
    device = src.device
    ids = None if shortlist is None else shortlist.ids
    state = model.init_state(model.encode(src, src_lengths), attention, ids)
    # the columns picked among: the shortlist's, or every id where constraints need them
    columns = shortlist if guide is None else None
    never = unwritable_columns(unwritable, columns, device)
    if copies > 1:
        state = state.select(torch.arange(src.size(0), device=device).repeat_interleave(copies))
    src_lengths = src_lengths.repeat_interleave(copies)
    limits = limits.to(device).repeat_interleave(copies)
    rows = limits.numel()
    active = torch.arange(rows, device=device)  # the rows still decoding, as the state holds them
    prev = torch.full((rows,), start, dtype=torch.long, device=device)
    scores = torch.zeros(rows, device=device)
    tokens, weights = [], []
    for t in range(int(limits.max())):
        logits, state, weight = model.step(state, prev)  # only the active rows run
        if shortlist is not None and columns is None:
            logits = shortlist.widened(logits)
        log_probs = log_probabilities(logits)  # [A, V or C]
        vocab = log_probs.size(1) if columns is None else columns.size
        allowed = log_probs if never is None else log_probs.index_fill(1, never, float("-inf"))
        banned = None
        if guide is not None or no_repeat_ngram:
            history = torch.stack(tokens, 1)[active] if tokens else active.new_zeros(len(active), 0)
            sentences = (active // copies).tolist()
            constrained = guide and guide.banned(t, sentences, history, vocab, eos_id)
            banned = merged_bans(constrained, history, no_repeat_ngram, vocab)
        if banned is not None:
            banned = banned if columns is None else columns.narrowed(banned)
            allowed = allowed.masked_fill(banned, float("-inf"))
        picked = choose(allowed, active)
        scores[active] += log_probs.gather(1, picked[:, None]).squeeze(1)
        chosen = picked if columns is None else columns.ids[picked]
        # finished rows read eos and zero attention from here on; their hypotheses end before
        tokens.append(chosen.new_full((rows,), eos_id).index_copy_(0, active, chosen))
        if attention:
            weights.append(weight.new_zeros(rows, *weight.shape[1:]).index_copy_(0, active, weight))
        going = ((chosen != eos_id) & (t + 1 < limits[active])).nonzero().squeeze(1)
        if going.numel() == 0:
            break
        if going.numel() < active.numel():
            active, state = active[going], state.select(going)
        prev = chosen[going]
    weights = torch.stack(weights, 1) if attention else None
    return hypotheses_from_rows(
        torch.stack(tokens, 1), scores, weights, src_lengths, eos_id, limits
    )
