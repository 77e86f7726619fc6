"""Beam search over the whole batch at once: sentences × beam rows in one tensor.

The beam of each sentence has `beam` slots, as in the RNNsearch authors' own decoder
(GroundHog, Nematus): at every step the best `beam - finished` extensions of the live
hypotheses are kept, and one that ends (eos, or the sentence's length limit) takes a slot for
good. So the beam shrinks as hypotheses finish, and a beam of 1 is greedy search exactly.

Finished hypotheses are ranked by score / length_penalty(steps, alpha). A sentence stops early
when its `nbest`-th best finished hypothesis already beats the best any live one could still
reach: a live hypothesis with score s (a sum of log-probabilities, so it only falls) ends with
a normalised score of at most s / length_penalty(limit), because the penalty is >= 1 and grows
with length for alpha >= 0. The bound is sound, so stopping early never changes the result.

Only live hypotheses run through the model: a slot that finished, a sentence that is done,
costs nothing at the next step. Each live row proposes its own `beam` best extensions and the
sentence keeps the best `beam` of those, which is exactly the best `beam` of all extensions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from nmt.search.blocking import merged_bans
from nmt.search.constraints import Constraints, Guide, Progress, satisfies
from nmt.search.hypothesis import (
    Columns,
    Hypothesis,
    SearchModel,
    coverage_penalty,
    hypotheses_from_rows,
    length_penalty,
    unwritable_columns,
)


@dataclass
class FinishedPool:
    """Up to `beam` finished hypotheses per sentence; row b * beam + i is sentence b's i-th."""

    tokens: torch.Tensor  # [B * K, T] eos included when produced
    attention: torch.Tensor | None  # [B * K, T, H, S]; None where search keeps none
    steps: torch.Tensor  # [B * K] tokens scored, eos included; 0 for an empty row
    scores: torch.Tensor  # [B * K] sum of log-probabilities; -inf for an empty row
    coverage: torch.Tensor  # [B * K] coverage penalty, set as a hypothesis finishes
    count: torch.Tensor  # [B] rows filled

    @classmethod
    def empty(
        cls,
        batch: int,
        beam: int,
        max_steps: int,
        weights: torch.Tensor | None,
        device: torch.device,
    ) -> FinishedPool:
        """weights [B * K, H, S] of the first step give the attention's shape (None: none)."""
        return cls(
            tokens=torch.zeros(batch * beam, max_steps, dtype=torch.long, device=device),
            attention=None
            if weights is None
            else weights.new_zeros(batch * beam, max_steps, *weights.shape[1:]),
            steps=torch.zeros(batch * beam, dtype=torch.long, device=device),
            scores=torch.full((batch * beam,), float("-inf"), device=device),
            coverage=torch.zeros(batch * beam, device=device),
            count=torch.zeros(batch, dtype=torch.long, device=device),
        )

    def normalised(self, alpha: float) -> torch.Tensor:
        """What ranks the hypotheses (Hypothesis.normalised_score), [B * K]; -inf where empty."""
        return self.scores / length_penalty(self.steps, alpha) + self.coverage


@torch.no_grad()
def beam_search(
    model: SearchModel,
    src: torch.Tensor,
    src_lengths: torch.Tensor,
    start: int,
    eos_id: int,
    limits: torch.Tensor,
    beam: int,
    alpha: float,
    nbest: int = 1,
    no_repeat_ngram: int = 0,
    constraints: Sequence[Constraints | None] | None = None,
    coverage_penalty: float = 0.0,
    attention: bool = True,
    shortlist: Columns | None = None,
    unwritable: Sequence[int] = (),
) -> list[list[Hypothesis]]:
    """The `nbest` best hypotheses of every sentence, best first by normalised score (plus
    GNMT's coverage penalty of weight `coverage_penalty`, which is <= 0, so stopping early
    stays exact). `no_repeat_ngram` n > 0: no hypothesis repeats an n-gram
    (nmt/search/blocking.py). `constraints`: one per sentence (nmt/search/constraints.py);
    the hypotheses that meet theirs rank first. `attention`: whether the hypotheses carry
    their attention (the coverage penalty needs it regardless); `shortlist`: the only target
    ids a hypothesis may hold (None: all); `unwritable`: ids none holds (see
    `unwritable_columns`)."""
    batch, device = src.size(0), src.device
    attention = attention or bool(coverage_penalty)
    limits = limits.to(device)
    penalised = _penalised(coverage_penalty, src, src_lengths, beam)
    guide = Guide(constraints, limits) if constraints and any(constraints) else None
    progress = _progress(guide, batch, beam)
    first_row = torch.arange(batch, device=device)[:, None] * beam  # [B, 1]
    ids = None if shortlist is None else shortlist.ids
    state = model.init_state(model.encode(src, src_lengths), attention, ids)
    # the columns picked among: the shortlist's, or every id where constraints need them
    columns = shortlist if guide is None else None
    never = unwritable_columns(unwritable, columns, device)
    alive = torch.arange(batch, device=device) * beam  # the rows of [B * K] the state holds
    prev = torch.full((batch,), start, dtype=torch.long, device=device)
    live = torch.full((batch, beam), float("-inf"), device=device)  # scores; -inf: no hypothesis
    live[:, 0] = 0.0
    history = torch.zeros(batch * beam, 0, dtype=torch.long, device=device)  # [B * K, t]
    kept_attention = pool = None  # [B * K, t, H, S] of the live candidates, if kept
    rank = torch.arange(beam, device=device)[None, :]  # [1, K]
    for t in range(int(limits.max())):
        logits, state, weights = model.step(state, prev)  # [N, V or C], weights [N, H, S]
        logits = logits.float()
        if shortlist is not None and columns is None:
            logits = shortlist.widened(logits)
        vocab = logits.size(1) if columns is None else columns.size
        width = min(beam, logits.size(1))
        log_norm = logits.logsumexp(1, keepdim=True)  # of every token, banned ones included
        if never is not None:
            logits = logits.index_fill(1, never, float("-inf"))
        banned = _banned(guide, progress, t, alive, beam, history, vocab, eos_id, no_repeat_ngram)
        if banned is not None:
            logits = logits.masked_fill(_narrowed(banned, columns), float("-inf"))
        proposals, tokens = _proposals(logits, log_norm, live, alive, columns, width)
        # [B, K * W]: a sentence's best K extensions are among its rows' own best W
        top_scores, top_index = proposals.view(batch, -1).topk(beam, dim=1)  # [B, K]
        token = tokens.view(batch, -1).gather(1, top_index)
        rows = (first_row + top_index // width).view(-1)  # [B * K] the row each one extends
        compact = alive.new_zeros(batch * beam)  # [B * K] row -> its state row, where alive
        compact[alive] = torch.arange(alive.numel(), device=device)
        if progress is not None:  # dynamic beam allocation, where phrases are to be included
            free = [beam] * batch if pool is None else (beam - pool.count).tolist()
            candidates = (proposals.view(batch, -1), tokens.view(batch, -1))
            scoring = (logits, log_norm[:, 0], compact, live.view(-1))
            kept = guide.select(beam, free, *candidates, progress, scoring)
            top_scores, token, rows, progress = _allocated(
                kept, top_scores, token, rows, guide, beam
            )
        history = torch.cat([history.index_select(0, rows), token.view(-1, 1)], 1)
        weights = weights if attention else None  # a decoder may give them regardless
        if pool is None:  # the first step tells the attention's shape
            pool = FinishedPool.empty(batch, beam, int(limits.max()), weights, device)
            kept_attention = None if weights is None else pool.attention[:, :0]
        if weights is not None:  # [B * K, t + 1, H, S]
            step_attention = weights.index_select(0, compact[rows])[:, None]
            kept_attention = torch.cat([kept_attention[rows], step_attention], 1)
        taken = (rank < (beam - pool.count)[:, None]) & (top_scores > float("-inf"))
        ends = taken & ((token == eos_id) | (t + 1 >= limits[:, None]))
        _finish(pool, ends, first_row, history, kept_attention, top_scores, penalised)
        live = top_scores.masked_fill(~taken | ends, float("-inf"))
        live = _still_live(live, pool, alpha, nbest, limits)
        alive = (live.view(-1) > float("-inf")).nonzero().squeeze(1)
        if alive.numel() == 0:
            break
        state, prev = state.select(compact[rows[alive]]), token.view(-1)[alive]
    return _best(pool, src_lengths, eos_id, (alpha, coverage_penalty), beam, nbest, guide)


def _progress(guide: Guide | None, batch: int, beam: int) -> list[Progress | None] | None:
    """Each row's progress through its sentence's included phrases, for dynamic beam
    allocation (None: no sentence includes any)."""
    if guide is None or not guide.includes:
        return None
    return [guide.start(row // beam) for row in range(batch * beam)]


def _narrowed(banned: torch.Tensor, columns: Columns | None) -> torch.Tensor:
    return banned if columns is None else columns.narrowed(banned)


def _penalised(
    beta: float, src: torch.Tensor, src_lengths: torch.Tensor, beam: int
) -> tuple[float, torch.Tensor] | None:
    """With a coverage penalty, (its weight, [B * K, S] True on source words); else None."""
    if not beta:
        return None
    positions = torch.arange(src.size(1), device=src.device)[None, :]
    return beta, positions < src_lengths.to(src.device).repeat_interleave(beam)[:, None]


def _proposals(
    logits: torch.Tensor,
    log_norm: torch.Tensor,
    live: torch.Tensor,
    alive: torch.Tensor,
    columns: Columns | None,
    width: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each live row's best `width` extensions, as (scores, tokens) [B * K, W] with -inf
    (token 0) on the rows not alive. Normalising shifts a row by one constant, so the best
    logits are the best extensions, and only those W are normalised and extended."""
    row_best, row_token = logits.topk(width, dim=1)  # [N, W]
    if columns is not None:
        row_token = columns.ids[row_token]
    row_best = (row_best - log_norm) + live.view(-1)[alive, None]
    proposals = row_best.new_full((live.numel(), width), float("-inf"))
    proposals[alive] = row_best
    tokens = row_token.new_zeros(live.numel(), width)
    tokens[alive] = row_token
    return proposals, tokens


def _still_live(
    live: torch.Tensor, pool: FinishedPool, alpha: float, nbest: int, limits: torch.Tensor
) -> torch.Tensor:
    """`live` [B, K] with the sentences done set to -inf: those whose `nbest`-th finished
    hypothesis beats the best that any live one could still reach (see the module's
    docstring)."""
    finished = pool.normalised(alpha).view(live.shape)  # [B, K], -inf where empty
    nth_best = finished.topk(nbest, dim=1).values[:, -1]  # [B]
    reachable = live.amax(1) / length_penalty(limits, alpha)  # [B]
    return live.masked_fill((nth_best >= reachable)[:, None], float("-inf"))


def _finish(
    pool: FinishedPool,
    ends: torch.Tensor,
    first_row: torch.Tensor,
    history: torch.Tensor,
    attention: torch.Tensor | None,
    scores: torch.Tensor,
    penalised: tuple[float, torch.Tensor] | None,
) -> None:
    """Moves the candidates marked in `ends` [B, K] into the next free rows of the pool,
    with their coverage penalty (`penalised`: its weight and the source words), computed
    once, as the attention of a finished hypothesis never changes."""
    slots = first_row + pool.count[:, None] + ends.long().cumsum(1) - 1  # [B, K]
    source = ends.view(-1).nonzero().squeeze(1)  # candidate rows that end now
    target = slots.view(-1)[source]
    steps = history.size(1)
    pool.tokens[target, :steps] = history[source]
    if attention is not None:
        pool.attention[target, :steps] = attention[source]
    pool.steps[target] = steps
    pool.scores[target] = scores.view(-1)[source]
    if penalised is not None:
        beta, words = penalised
        pool.coverage[target] = coverage_penalty(attention[source], beta, words[source])
    pool.count += ends.sum(1)


def _best(
    pool: FinishedPool,
    src_lengths: torch.Tensor,
    eos_id: int,
    penalties: tuple[float, float],
    beam: int,
    nbest: int,
    guide: Guide | None = None,
) -> list[list[Hypothesis]]:
    """Each sentence's finished hypotheses, best `nbest` first by normalised score under
    `penalties` (alpha, beta) (under constraints, those that meet them first)."""
    hypotheses = hypotheses_from_rows(
        pool.tokens,
        pool.scores,
        pool.attention,
        src_lengths.repeat_interleave(beam),
        eos_id,
        pool.steps,
    )
    counts = pool.count.tolist()
    result = []
    for sentence, count in enumerate(counts):
        filled = hypotheses[sentence * beam : sentence * beam + count]
        if guide is None:
            filled.sort(key=lambda h: h.normalised_score(*penalties), reverse=True)
        else:
            constraints = guide.constraints[sentence]
            filled.sort(
                key=lambda h: (satisfies(h.tokens, constraints), h.normalised_score(*penalties)),
                reverse=True,
            )
        result.append(filled[:nbest])
    return result


def _banned(
    guide: Guide | None,
    progress: list[Progress | None] | None,
    step: int,
    alive: torch.Tensor,
    beam: int,
    history: torch.Tensor,
    vocab: int,
    eos_id: int,
    no_repeat_ngram: int = 0,
) -> torch.Tensor | None:
    """[N, V] the tokens the live rows may not write under their constraints and, for
    `no_repeat_ngram` n > 0, n-gram blocking; None: any."""
    if guide is None and not no_repeat_ngram:
        return None
    rows, live_history = alive.tolist(), history.index_select(0, alive)
    constrained = guide and guide.banned(
        step,
        [row // beam for row in rows],
        live_history,
        vocab,
        eos_id,
        None if progress is None else [progress[row] for row in rows],
    )
    return merged_bans(constrained, live_history, no_repeat_ngram, vocab)


def _allocated(
    kept: dict[int, list[tuple[float, int, int, Progress]]],
    top_scores: torch.Tensor,
    token: torch.Tensor,
    rows: torch.Tensor,
    guide: Guide,
    beam: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[Progress | None]]:
    """The step's kept extensions [B, K] with the sentences under included phrases replaced
    by what dynamic beam allocation kept for them (unfilled slots: -inf), and the progress
    of each new row."""
    scores, words, extended = top_scores.tolist(), token.tolist(), rows.view(-1, beam).tolist()
    batch = len(scores)
    after: list[Progress | None] = [guide.start(row // beam) for row in range(batch * beam)]
    for sentence in range(batch):
        chosen = kept.get(sentence)
        if chosen is None:
            continue
        first = sentence * beam
        scores[sentence] = [float("-inf")] * beam
        words[sentence] = [0] * beam
        extended[sentence] = [first] * beam
        after[first : first + beam] = [None] * beam
        for slot, (score, row, word, reached) in enumerate(chosen):
            scores[sentence][slot], words[sentence][slot] = score, word
            extended[sentence][slot], after[first + slot] = row, reached
    device = top_scores.device
    return (
        torch.tensor(scores, dtype=top_scores.dtype, device=device),
        torch.tensor(words, dtype=token.dtype, device=device),
        torch.tensor(extended, dtype=rows.dtype, device=device).view(-1),
        after,
    )
