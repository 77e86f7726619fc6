"""Which search decodes a batch: sampling, greedy, or beam search (which included phrases
always take), with the settings of `decode`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nmt.config import DecodeConfig
from nmt.data.batching import pad
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search import Hypothesis, beam_search, greedy_search, max_lengths, sample_search
from nmt.search.constraints import Constraints
from nmt.search.hypothesis import Columns
from nmt.translate.shortlist import Shortlist

_PRIME = 1_000_003  # mixes decode.seed and a line's number into its sampling seed


@dataclass(frozen=True)
class ModelSearch:
    """`search_batch` for one model, as the pipeline calls a search (nmt/translate/
    pipeline.py: src_ids, decode, lines, constraints -> each source's hypotheses)."""

    model: torch.nn.Module
    tokenizer: Tokenizer
    attention: bool
    shortlist: Shortlist | None

    def __call__(self, src_ids, decode, lines, constraints) -> list[list[Hypothesis]]:
        return search_batch(
            self.model,
            self.tokenizer,
            src_ids,
            decode,
            lines,
            constraints,
            attention=self.attention,
            shortlist=self.shortlist,
        )


def search_batch(
    model: torch.nn.Module,
    tokenizer: Tokenizer,
    src_ids: list[list[int]],
    decode: DecodeConfig,
    lines: list[int],
    constraints: list[Constraints | None],
    attention: bool = True,
    shortlist: Shortlist | None = None,
) -> list[list[Hypothesis]]:
    """The hypotheses of a batch of sources. Sampling draws each source's tokens from a
    generator of its own, seeded by decode.seed and the source's number in its input
    (`lines`), so a line draws the same whatever batch, worker, chunk or read of a pipe it
    came in. Included phrases take beam search, which at beam 1 is greedy search that makes
    room for them. `attention`: whether the hypotheses carry theirs (they do regardless
    under a coverage penalty, which reads it). With decode.shortlist K, they hold only
    pieces of the batch's columns of `shortlist` (which must then be given)."""
    if decode.sample and any(guide and guide.include for guide in constraints):
        raise UserError(
            "included phrases need beam search (any beam size, 1 included), not sampling; "
            "drop sample, or the include constraints."
        )
    device, tgt = next(model.parameters()).device, tokenizer.tgt
    src = pad(src_ids, tokenizer.src.pad_id).to(device)
    lengths = torch.tensor([len(ids) for ids in src_ids])
    limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra)
    common = (model, src, lengths, tokenizer.start_id, tgt.eos_id, limits)
    options = {"no_repeat_ngram": decode.no_repeat_ngram, "constraints": constraints}
    # pieces of no text: what a model, even an imported one, must never be let write
    options["unwritable"] = (tgt.pad_id, tgt.bos_id, tokenizer.start_id, *tgt.tags.values())
    ids = output_columns(tokenizer, src_ids, decode, constraints, shortlist)
    columns = None if ids is None else Columns(ids.to(device), tgt.size)
    # a coverage penalty is part of every hypothesis's score (Hypothesis.normalised_score),
    # whichever search found it, and is computed from its attention
    attention = attention or bool(decode.coverage_penalty)
    options.update(attention=attention, shortlist=columns)
    if decode.sample:
        seeds = [(decode.seed * _PRIME + line) % 2**63 for line in lines]
        return sample_search(
            *common,
            decode.nbest,
            decode.temperature,
            decode.top_k,
            decode.top_p,
            seeds,
            **options,
        )
    if decode.beam == 1 and not any(c and c.include for c in constraints):
        return [[hypothesis] for hypothesis in greedy_search(*common, **options)]
    return beam_search(
        *common,
        decode.beam,
        decode.alpha,
        decode.nbest,
        coverage_penalty=decode.coverage_penalty,
        **options,
    )


def output_columns(
    tokenizer: Tokenizer,
    src_ids: list[list[int]],
    decode: DecodeConfig,
    constraints: list[Constraints | None],
    shortlist: Shortlist | None,
) -> torch.Tensor | None:
    """The sorted target ids a batch may write (None: every one). decode.shortlist K: the
    shortlist's columns for the batch. decode.restrict_to_target_language: the pieces the
    requested language's training targets used (Chen et al. 2023: a model asked for one
    language then cannot answer in another), with the shortlist's common ones when both
    apply. The special pieces, and every piece the constraints name, always stay."""
    tgt = tokenizer.tgt
    specials = (tgt.eos_id, tgt.unk_id, tgt.bos_id, tgt.pad_id)  # as CTranslate2 does
    ids = None
    if decode.shortlist:  # a Translator holds the shortlist its settings ask for
        ids = shortlist.columns(src_ids, decode.shortlist, specials, constraints)
    if decode.restrict_to_target_language:  # of a multilingual model (Experiment.check_decode)
        allowed = torch.tensor(tokenizer.language_pieces(tokenizer.language))
        ids = allowed if ids is None else ids[torch.isin(ids, allowed)]
        named = [p for guide in constraints if guide for p in guide.named_pieces() if p < tgt.size]
        ids = torch.cat([ids, torch.tensor([*specials, *named], dtype=torch.long)]).unique()
    return ids
