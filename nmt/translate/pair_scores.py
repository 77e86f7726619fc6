"""Forced scoring: the log-probability a model gives each token of a given translation, as
search scores it (nmt/search/forced.py), from the token ids search would have written.

Two things make text differ from those ids, and both are undone here. A copy model writes a
source piece its target vocabulary lacks under an id of its own (nmt/model/copy.py), which
the target tokenizer would spell as `<unk>`: a target word the vocabulary cannot spell is
taken from the source word of the same spelling, piece by piece, as copying writes it. And
search stops a hypothesis at the sentence's length limit without eos: a target that reaches
the limit is scored without eos (`PairScore.ended` False). Targets given as token ids
(`Hypothesis.tokens`) are scored as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from nmt.config import DecodeConfig
from nmt.data.batching import pad
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search import max_lengths
from nmt.search.forced import forced_log_probs
from nmt.translate.parallel import parallel_map
from nmt.translate.pipeline import truncated
from nmt.translate.results import PairScore

Target = str | Sequence[int]  # text, or target ids as search writes them (without eos)


def score_pairs(
    model: torch.nn.Module,
    tokenizer: Tokenizer,
    decode: DecodeConfig,
    sources: Sequence[str],
    targets: Sequence[Target],
    batch_size: int,
    workers: int = 1,
) -> list[PairScore]:
    """Each target's PairScore given its source (cut at decode.max_src_len subwords, as for
    translation); a blank source gets none (total None). Batches of `batch_size` pairs in
    order of source length, `workers` of them side by side."""
    check_targets(sources, targets)
    tgt, device = tokenizer.tgt, next(model.parameters()).device
    src_ids = truncated(
        tokenizer.src.encode([line.strip() for line in sources]), decode.max_src_len
    )
    lengths = torch.tensor([len(ids) for ids in src_ids])
    limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra).tolist()
    copies = copying(model)
    scored, results = [], []
    for source, target, limit in zip(src_ids, targets, limits, strict=True):
        ids = target_ids(tokenizer, target, source, copies)
        ended = len(ids) < limit  # search writes eos only within the limit
        scored.append([*ids, tgt.eos_id] if ended else ids)
        copied = tokenizer.src.pieces(source) if any(t >= tgt.size for t in ids) else ()
        pieces = tgt.pieces(scored[-1], copied)  # a copied piece is named by its source
        results.append(PairScore(None, pieces, [], None, ended, ids.count(tgt.unk_id)))
    order = sorted((i for i, ids in enumerate(src_ids) if ids), key=lambda i: len(src_ids[i]))
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    gated = getattr(model, "copy", None) is not None  # an ensemble has no one p_gen

    def forced(batch: list[int]) -> list[tuple[list[float], list[float] | None]]:
        src = pad([src_ids[i] for i in batch], tokenizer.src.pad_id).to(device)
        lengths = torch.tensor([len(src_ids[i]) for i in batch])
        targets = pad([scored[i] or [tgt.pad_id] for i in batch], tgt.pad_id).to(device)
        found = forced_log_probs(model, src, lengths, targets, tokenizer.start_id).tolist()
        gates = [None] * len(batch)
        if gated:
            first = torch.full_like(targets[:, :1], tokenizer.start_id)
            tgt_in = torch.cat([first, targets[:, :-1]], 1)
            with torch.no_grad():
                gates = model.copy_gates(src, lengths, tgt_in).tolist()
        return [
            (row[: len(scored[i])], None if gate is None else gate[: len(scored[i])])
            for row, gate, i in zip(found, gates, batch, strict=True)
        ]

    for batch, found in zip(batches, parallel_map(forced, batches, workers), strict=True):
        for index, (log_probs, gates) in zip(batch, found, strict=True):
            pair = results[index]
            results[index] = PairScore(
                sum(log_probs), pair.tokens, log_probs, gates, pair.ended, pair.unknown
            )
    return results


def check_targets(sources: Sequence[str], targets: Sequence[Target]) -> None:
    """A UserError unless `targets` is a list of one target per source."""
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Sequence):
        raise UserError("score needs a list of targets, one per source.")
    if len(sources) != len(targets):
        raise UserError(
            f"score needs one target per source, got {len(sources)} sources and "
            f"{len(targets)} targets."
        )


def copying(model: torch.nn.Module) -> int | None:
    """The target vocabulary size V of a model that copies (or of an ensemble with a member
    that does), from which on ids are source pieces; None for a model that does not."""
    copy = getattr(model, "copy", None)
    if copy is not None:
        return copy.vocab_size
    unknown = getattr(model, "unknown", None)  # an Ensemble's (V, <unk>) when a member copies
    return None if unknown is None else unknown[0]


def target_ids(
    tokenizer: Tokenizer, target: Target, src_ids: list[int], copies: int | None
) -> list[int]:
    """The ids search would write for `target` (without eos): given ids as they are; text as
    the target tokenizer reads it, except that for a copy model (`copies`: its V) a word
    the vocabulary can only spell with `<unk>` is taken from the source word of the same
    spelling, as copying writes it."""
    if not isinstance(target, str):
        return list(target)
    tgt = tokenizer.tgt
    ids = tgt.encode([target.strip()])[0]
    if copies is None or tgt.unk_id not in ids:
        return ids
    source_words = _words(tokenizer.src.pieces(src_ids), len(tokenizer.src.prefix))
    result = []
    for word in target.split():  # SentencePiece's pieces never cross a space
        pieces = tgt.encode([word])[0]
        positions = source_words.get(word) if tgt.unk_id in pieces else None
        if positions is None:
            result += pieces
            continue
        for position in positions:
            piece = tokenizer.src.pieces([src_ids[position]])[0]
            own = tgt.processor.piece_to_id(piece)
            first = src_ids.index(src_ids[position])  # copy ids name a piece's first place
            result.append(own if own != tgt.unk_id else copies + first)
    return result


def _words(pieces: list[str], skip: int) -> dict[str, list[int]]:
    """Each source word's spelling -> the positions of its pieces (the first such word);
    the first `skip` pieces (a language tag) belong to no word."""
    words: dict[str, list[int]] = {}
    current: list[int] = []

    def close() -> None:
        if current:
            words.setdefault("".join(pieces[i] for i in current).replace("▁", ""), current)

    for position in range(skip, len(pieces)):
        if pieces[position].startswith("▁") and current:
            close()
            current = []
        current.append(position)
    close()
    return words
