"""Control over what a translation holds: phrases it must include (lexical constraints decoded
with dynamic beam allocation, Post & Vilar 2018), phrases it must not, and a prefix it must
start with.

A prefix and the excluded phrases only take tokens away at each step (`Guide.banned`), so
every search honours them. Included phrases need beam search: a hypothesis that writes a
constraint token scores worse than its rivals for a step or two, and a plain beam drops it.
Dynamic beam allocation keeps it: the candidates of a sentence are its rows' best extensions
plus every extension that writes the next token of a phrase, and the beam is shared among
banks by the number of constraint tokens met, so hypotheses that made progress keep slots.
A hypothesis cannot end (eos) before it has met all its phrases, and when its length limit
leaves just enough steps for the tokens still missing it must write them; so every phrase
appears whenever the limit allows, at any beam size, 1 included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

Phrase = tuple[int, ...]


@dataclass(frozen=True)
class Constraints:
    """One sentence's constraints, as target token ids."""

    include: tuple[Phrase, ...] = ()  # each must appear, in any order
    exclude: tuple[Phrase, ...] = ()  # none may appear
    prefix: Phrase = ()  # the output starts with it

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude or self.prefix)

    def named_pieces(self) -> list[int]:
        """Every piece it makes search write: those of the included phrases and the prefix."""
        return [piece for phrase in (*self.include, self.prefix) for piece in phrase]


def satisfies(tokens: Sequence[int], constraints: Constraints) -> bool:
    """Whether an output holds every included phrase and no excluded one."""
    tokens = tuple(tokens)
    return all(_holds(tokens, phrase) for phrase in constraints.include) and not any(
        _holds(tokens, phrase) for phrase in constraints.exclude
    )


def _holds(tokens: tuple[int, ...], phrase: Phrase) -> bool:
    width = len(phrase)
    return any(tokens[start : start + width] == phrase for start in range(len(tokens) - width + 1))


class Progress(NamedTuple):
    """How far one hypothesis has got through its sentence's included phrases."""

    phrases: tuple[Phrase, ...]
    met: int = 0  # a bit per phrase written in full
    current: int = -1  # the phrase being written (-1: none)
    position: int = 0  # how many of its tokens are written

    @property
    def met_tokens(self) -> int:
        done = sum(len(p) for i, p in enumerate(self.phrases) if self.met >> i & 1)
        return done + self.position

    @property
    def unmet_tokens(self) -> int:
        return sum(len(phrase) for phrase in self.phrases) - self.met_tokens

    @property
    def complete(self) -> bool:
        return self.met == (1 << len(self.phrases)) - 1

    def advancing(self) -> list[int]:
        """The tokens that would meet one more constraint token: the next one of the phrase
        being written, or else the first of every phrase not met."""
        if self.current >= 0:
            return [self.phrases[self.current][self.position]]
        firsts = {p[0] for i, p in enumerate(self.phrases) if not self.met >> i & 1}
        return sorted(firsts)

    def advance(self, token: int) -> Progress:
        """The progress after writing `token`. A phrase left half written starts over."""
        if self.current >= 0:
            phrase = self.phrases[self.current]
            if phrase[self.position] == token:
                if self.position + 1 < len(phrase):
                    return self._replace(position=self.position + 1)
                return self._replace(met=self.met | 1 << self.current, current=-1, position=0)
            return self._replace(current=-1, position=0)._start(token)
        return self._start(token)

    def _start(self, token: int) -> Progress:
        for index, phrase in enumerate(self.phrases):
            if not self.met >> index & 1 and phrase[0] == token:
                if len(phrase) == 1:
                    return self._replace(met=self.met | 1 << index)
                return self._replace(current=index, position=1)
        return self


def bank_sizes(slots: int, counts: list[int]) -> list[int]:
    """Post & Vilar's allocation: `slots` shared evenly among the banks (bank i holds the
    candidates that met i constraint tokens), the remainder to the bank that met them all;
    what a bank cannot fill moves one bank down (from the top, round to the top again)."""
    banks = len(counts)
    sizes = [slots // banks] * banks
    sizes[-1] += slots - sum(sizes)
    for bank in reversed(range(banks)):
        spare = sizes[bank] - counts[bank]
        if spare > 0:
            sizes[bank] -= spare
            sizes[(bank - 1) % banks] += spare
    return sizes


class Guide:
    """One batch's constraints, applied step by step; row r of a search holds sentence
    `sentence_of[r]` (beam search: r // beam; sampling: r // samples)."""

    def __init__(self, constraints: Sequence[Constraints | None], limits: torch.Tensor):
        self.constraints = [c or Constraints() for c in constraints]
        self.limits = limits.tolist()
        self.includes = any(c.include for c in self.constraints)

    def start(self, sentence: int) -> Progress:
        return Progress(self.constraints[sentence].include)

    def banned(
        self,
        step: int,
        sentences: list[int],
        history: torch.Tensor,
        vocab: int,
        eos_id: int,
        progress: list[Progress | None] | None = None,
    ) -> torch.Tensor | None:
        """[N, V] True for the tokens row n may not write at `step` (None: no row is
        constrained): all but its prefix's token while the prefix lasts; the last token of
        an excluded phrase whose other tokens it just wrote; eos until its phrases are met,
        and every token that meets none when its limit leaves no step to spare."""
        rows, banned_tokens, only = [], [], []
        tails = None
        for row, sentence in enumerate(sentences):
            constraints = self.constraints[sentence]
            if step < len(constraints.prefix):
                only.append((row, [constraints.prefix[step]]))
                continue
            for phrase in constraints.exclude:
                if len(phrase) > 1:
                    if step < len(phrase) - 1:
                        continue
                    tails = history.tolist() if tails is None else tails
                    if tuple(tails[row][step - len(phrase) + 1 :]) != phrase[:-1]:
                        continue
                rows.append(row)
                banned_tokens.append(phrase[-1])
            reached = None if progress is None else progress[row]
            if reached is not None and not reached.complete:
                if self.limits[sentence] - step <= reached.unmet_tokens:
                    only.append((row, reached.advancing()))
                else:
                    rows.append(row)
                    banned_tokens.append(eos_id)
        if not rows and not only:
            return None
        banned = torch.zeros(len(sentences), vocab, dtype=torch.bool, device=history.device)
        banned[rows, banned_tokens] = True
        for row, allowed in only:
            banned[row] = True
            banned[row, allowed] = False
        return banned

    def select(
        self,
        beam: int,
        free_slots: list[int],
        proposals: torch.Tensor,
        proposed_tokens: torch.Tensor,
        progress: list[Progress | None],
        step: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    ) -> dict[int, list[tuple[float, int, int, Progress]]]:
        """Each sentence with included phrases -> its kept extensions (score, row, token,
        progress after it), best first: dynamic beam allocation over its rows' best
        extensions (`proposals` [B, K * W] scores, -inf where none, and their tokens) and
        every extension that meets a constraint token. `step`: the live rows' logits [N, V]
        (banned tokens -inf) and log-normalisers [N], the live row of each row [B * K], and
        each row's score so far [B * K] (-inf where no hypothesis lives)."""
        width = proposals.size(1) // beam
        wanted = [
            (row, token)
            for sentence, constraints in enumerate(self.constraints)
            if constraints.include and free_slots[sentence] > 0
            for row in range(sentence * beam, (sentence + 1) * beam)
            if progress[row] is not None
            for token in progress[row].advancing()
        ]
        scored = _extension_scores(wanted, *step) if wanted else []
        extras: dict[int, list[tuple[float, int, int]]] = {}
        for (row, token), score in zip(wanted, scored, strict=True):
            extras.setdefault(row // beam, []).append((score, row, token))
        scores, tokens = proposals.tolist(), proposed_tokens.tolist()
        kept = {}
        for sentence, constraints in enumerate(self.constraints):
            if not constraints.include or free_slots[sentence] <= 0:
                continue
            candidates = {}
            best = zip(scores[sentence], tokens[sentence], strict=True)
            own = [(s, sentence * beam + j // width, t) for j, (s, t) in enumerate(best)]
            for score, row, token in own + extras.get(sentence, []):
                if score > float("-inf") and (row, token) not in candidates:
                    candidates[row, token] = (score, row, token, progress[row].advance(token))
            kept[sentence] = _allocate(list(candidates.values()), free_slots[sentence])
        return kept


def _extension_scores(
    pairs: list[tuple[int, int]],
    logits: torch.Tensor,
    log_norm: torch.Tensor,
    live_row: torch.Tensor,
    score: torch.Tensor,
) -> list[float]:
    """The score of each (row, token) extension, as beam search scores its own."""
    row, token = torch.tensor(pairs, device=logits.device).unbind(1)
    at = live_row[row]
    return ((logits[at, token] - log_norm[at]) + score[row]).tolist()


def _allocate(
    candidates: list[tuple[float, int, int, Progress]], slots: int
) -> list[tuple[float, int, int, Progress]]:
    """The best of each bank, as many as bank_sizes gives it; best first."""
    if not candidates:
        return []
    total = sum(len(phrase) for phrase in candidates[0][3].phrases)
    banks: list[list[tuple[float, int, int, Progress]]] = [[] for _ in range(total + 1)]
    for candidate in candidates:
        banks[candidate[3].met_tokens].append(candidate)
    sizes = bank_sizes(slots, [len(bank) for bank in banks])
    chosen = [c for bank, size in zip(banks, sizes, strict=True) for c in _best(bank, size)]
    return sorted(chosen, key=lambda candidate: candidate[0], reverse=True)


def _best(bank: list, size: int) -> list:
    return sorted(bank, key=lambda candidate: candidate[0], reverse=True)[:size]
