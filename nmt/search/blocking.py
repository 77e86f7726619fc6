"""n-gram blocking: no hypothesis may repeat an n-gram it already holds (`decode.no_repeat_ngram`).

A cheap cure for the loops that weak models fall into ("a dog and a dog and a dog"): at each
step the tokens that would complete an n-gram already in the hypothesis get probability zero.
Scores stay the model's own log-probabilities of the tokens chosen.
"""

from __future__ import annotations

import torch


def repeated_ngrams(history: torch.Tensor, n: int, vocab: int) -> torch.Tensor:
    """history [N, t] (each row's tokens so far) -> banned [N, V]: True for every token that
    would end an n-gram the row already holds (for n = 1: every token it holds)."""
    rows, length = history.shape
    banned = torch.zeros(rows, vocab + 1, dtype=torch.bool, device=history.device)
    if n == 1:
        return banned.scatter_(1, history, True)[:, :vocab]
    if length < n:
        return banned[:, :vocab]
    windows = history.unfold(1, n, 1)  # [N, t - n + 1, n]
    prefix = history[:, length - n + 1 :]  # [N, n - 1]: the n-gram the next token would end
    matches = (windows[:, :, :-1] == prefix[:, None, :]).all(-1)  # [N, t - n + 1]
    # each match bans the token that followed it; the others go to a column dropped below
    followers = windows[:, :, -1].masked_fill(~matches, vocab)
    return banned.scatter_(1, followers, True)[:, :vocab]


def merged_bans(
    constrained: torch.Tensor | None, history: torch.Tensor, n: int, vocab: int
) -> torch.Tensor | None:
    """The tokens each row may not write, [N, V] (None: any): what its constraints ban
    (`constrained`, nmt/search/constraints.py; None: nothing) and, for n > 0, what would
    repeat an n-gram of its `history` [N, t]. Blocking gives way where it would leave a row
    nothing its constraints allow, so a prefix's or a phrase's forced token is written even
    when it repeats an n-gram. A row left with no token at all is a ValueError, never a
    silent token 0."""
    banned = constrained
    if n and history.size(1):
        repeats = repeated_ngrams(history, n, vocab)
        if constrained is None:
            banned = repeats
        else:
            both = constrained | repeats
            banned = torch.where(both.all(1, keepdim=True), constrained, both)
    if banned is not None and bool(banned.all(1).any()):
        row = int(banned.all(1).nonzero()[0])
        raise ValueError(f"row {row} has no token left to write under its constraints")
    return banned
