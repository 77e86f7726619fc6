"""Which search decodes a batch: sampling, greedy, or beam search (which included phrases
always take), with the settings of `decode`."""

from __future__ import annotations

import torch

from nmt.config import DecodeConfig
from nmt.data.batching import pad
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search import Hypothesis, beam_search, greedy_search, max_lengths, sample_search
from nmt.search.constraints import Constraints
from nmt.search.hypothesis import Columns
from nmt.translate.shortlist import Shortlist

_PRIME = 1_000_003  # mixes decode.seed and a batch's numbers into its sampling seed


def search_batch(
    model: torch.nn.Module,
    tokenizer: Tokenizer,
    src_ids: list[list[int]],
    decode: DecodeConfig,
    draw: tuple[int, int],
    constraints: list[Constraints | None],
    attention: bool = True,
    shortlist: Shortlist | None = None,
) -> list[list[Hypothesis]]:
    """The hypotheses of a batch of sources. Sampling draws from a generator of its own,
    seeded by decode.seed and `draw` (the call's and the batch's number), so batches decoded
    side by side draw as they would one after another. Included phrases take beam search,
    which at beam 1 is greedy search that makes room for them. `attention`: whether the
    hypotheses carry theirs. With decode.shortlist K, they hold only pieces of the batch's
    columns of `shortlist` (which must then be given)."""
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
    ids = output_columns(tokenizer, src_ids, decode, constraints, shortlist)
    columns = None if ids is None else Columns(ids.to(device), tgt.size)
    options.update(attention=attention, shortlist=columns)
    if decode.sample:
        call, batch = draw
        seed = (decode.seed * _PRIME + call) * _PRIME + batch
        generator = torch.Generator(device).manual_seed(seed % 2**63)
        return sample_search(
            *common,
            decode.nbest,
            decode.temperature,
            decode.top_k,
            decode.top_p,
            generator,
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
    if decode.shortlist:
        if shortlist is None:
            raise UserError(
                "decode.shortlist needs the shortlist of the checkpoint: load the translator "
                "with Translator.load(checkpoint, shortlist=K), after `nmt shortlist`."
            )
        ids = shortlist.columns(src_ids, decode.shortlist, specials, constraints)
    if decode.restrict_to_target_language:
        if tokenizer.language is None:
            raise UserError(
                "decode.restrict_to_target_language restricts a model that writes several "
                "languages to the one asked for; this one writes one language. Drop it."
            )
        allowed = torch.tensor(tokenizer.language_pieces(tokenizer.language))
        ids = allowed if ids is None else ids[torch.isin(ids, allowed)]
        named = [p for guide in constraints if guide for p in guide.named_pieces() if p < tgt.size]
        ids = torch.cat([ids, torch.tensor([*specials, *named], dtype=torch.long)]).unique()
    return ids
