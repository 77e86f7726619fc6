"""What translating and scoring give back: a Translation per sentence with its candidates,
an AttentionMap where asked, and a PairScore per scored pair."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nmt.data.memory import Match
from nmt.data.tokenizer import Tokenizer
from nmt.search import Hypothesis
from nmt.translate.alignment import step_labels


@dataclass(frozen=True)
class AttentionMap:
    """The attention of one translation over its source, as a plot draws it."""

    src_tokens: list[str]  # source subwords, one per column
    tgt_tokens: list[str]  # target subwords, one per row; '</s>' for the eos step
    weights: torch.Tensor  # [T, H, S]: rows as tgt_tokens, one map per head, columns as src

    @classmethod
    def of(
        cls, hypothesis: Hypothesis, src_tokens: list[str], tokenizer: Tokenizer
    ) -> AttentionMap:
        labels = step_labels(hypothesis, tokenizer.tgt, src_tokens)
        return cls(src_tokens, labels, hypothesis.attention)


@dataclass(frozen=True)
class Candidate:
    """One translation of a sentence."""

    text: str  # detokenized
    score: float  # log-probability / ((5 + steps) / 6) ** alpha (+ coverage penalty): its rank
    # the search's own: target ids, log-probability, and its attention when alignments or
    # attention maps were asked for (else None: a long input keeps no attention in memory)
    hypothesis: Hypothesis
    alignment: str | None = None  # Pharaoh word alignment 'i-j ...', when asked
    attention: AttentionMap | None = None  # when asked
    constraints_met: bool | None = None  # holds every included phrase and no excluded one
    # through a pivot: the first leg's candidate this one translates (its text the pivot
    # text, its attention over the source); score is then the two legs' log-probability
    pivot: Candidate | None = None


@dataclass(frozen=True)
class Translation:
    """A sentence and its translations, best first (decode.nbest of them, or fewer when the
    search finds fewer; none when blank)."""

    source: str
    src_ids: list[int]
    nbest: list[Candidate]
    truncated: bool = False  # the source was cut at decode.max_src_len subwords
    # a marked-up line's (nmt/translate/markup.py): each of its sentences as translated, in
    # plain text with its word alignment; nbest then holds the line with its tags, once
    sentences: tuple[Translation, ...] = ()
    # with a translation memory (nmt/translate/memory.py): the entry used, an exact one
    # (its target is the translation) or a fuzzy match the model read; None: none
    match: Match | None = None

    @property
    def text(self) -> str:
        return self.nbest[0].text if self.nbest else ""

    @property
    def constraints_met(self) -> bool | None:
        """Whether the best translation meets its constraints (None: it had none)."""
        return self.nbest[0].constraints_met if self.nbest else None

    @property
    def score(self) -> float:
        return self.nbest[0].score if self.nbest else 0.0

    @property
    def alignment(self) -> str | None:
        return self.nbest[0].alignment if self.nbest else None

    @property
    def attention(self) -> AttentionMap | None:
        return self.nbest[0].attention if self.nbest else None

    @property
    def pivot(self) -> Candidate | None:
        """The first leg's candidate the best translation went through, if it did."""
        return self.nbest[0].pivot if self.nbest else None

    @property
    def hypotheses(self) -> list[Hypothesis]:
        return [candidate.hypothesis for candidate in self.nbest]


@dataclass(frozen=True)
class PairScore:
    """How likely the model finds a given translation of a source (forced decoding), token
    by token as search scores it."""

    # the sum of the token log-probabilities (through a pivot: the path's score, as search
    # ranks it, nmt/translate/pivot.py); None: blank source
    total: float | None
    tokens: list[str]  # the target's subwords, then '</s>' when it is scored (see ended)
    log_probs: list[float]  # one per token
    p_gen: list[float] | None = None  # a copy model's, one per token: the share not copied
    # False: the target reaches the source's output length limit, where search stops without
    # eos, so eos is not scored (raise --max-len-extra to score it)
    ended: bool = True
    unknown: int = 0  # <unk> pieces: target text neither the vocabulary nor a copy can spell

    @property
    def mean(self) -> float | None:
        """The log-probability per token: comparable across lengths, e.g. to filter data."""
        return None if self.total is None else self.total / max(1, len(self.tokens))
