"""Pivot translation: from the source into a pivot language, then from it into the target,
with one multilingual model (both legs) or a chain of two (`Translator.load(then=...)`).

A multilingual model trained on English-centric directions translates German into Czech
badly on its own (zero-shot) and well through English. So a direction the model never
trained goes through the language that connects it (decode.zero_shot: pivot, the default)
with a notice naming the path; `decode.through` pivots any direction; decode.zero_shot:
direct keeps the zero-shot path for research. Which path each line takes, and what is
refused before any is translated, is routing.py's.

Each leg searches with the decoding settings; constraints and a prefix apply to the second
(they name target text). Both legs number a line by its place in its input (a candidate of
the first leg by its line), so errors name the input line and sampling seeds a line as
it would without a pivot. With `decode.pivot_candidates` k, the first leg's k best are each
translated into k (or nbest) candidates, and the candidates rank by the sum of the two legs'
scores as each leg's search ranks them (log-probability over the length penalty), the score
of the path (searching k x k pairs costs k times the second leg); k = 1 is one-best
pivoting. Raw log-probabilities would favour short pivots and short translations: on
Multi30k's valid set they cost 1 BLEU against one-best pivoting (docs/results.md). A
candidate keeps the first leg's candidate it came through (`Candidate.pivot`), so the pivot
text, each leg's attention and the source-target word alignment (source->pivot composed
with pivot->target) come with it.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from nmt.search import length_penalty
from nmt.translate.pipeline import in_step
from nmt.translate.results import Candidate, PairScore, Translation
from nmt.translate.routing import by_route, check_route, line_routes, routes_any, target_of


def composed_alignment(first: str, second: str) -> str:
    """Source->pivot and pivot->target Pharaoh alignments -> source->target: i-k for every
    pivot word j with i-j in the first and j-k in the second."""
    into: dict[int, set[int]] = {}
    for link in first.split():
        i, j = map(int, link.split("-"))
        into.setdefault(j, set()).add(i)
    pairs = set()
    for link in second.split():
        j, k = map(int, link.split("-"))
        pairs |= {(i, k) for i in into.get(j, ())}
    return " ".join(f"{i}-{k}" for i, k in sorted(pairs))


def through_pivot(
    first: Any,
    second: Any,
    lines: list[str],
    pivot: str,
    target: str,
    options: dict,
    constraints: list | None,
    prefix: list | None,
    numbers: list[int],
) -> list[Translation]:
    """The lines translated into `pivot` by `first` and on into `target` by `second` (see
    the module's docstring); `options`: translate's (beam, nbest, alignments, attention...);
    `numbers`: each line's number in its input, which both legs number it by (a candidate
    by its line), for messages and sampling seeds."""
    decode = first.decode
    k = decode.pivot_candidates
    nbest = options.get("nbest") or decode.nbest
    beam = options.get("beam") or decode.beam
    leg = {**options, "nbest": k, "beam": max(beam, k)}
    legs = first.translate(lines, **leg, tgt_lang=pivot, first=numbers)
    texts, owners = [], []
    for number, translation in enumerate(legs):
        for candidate in translation.nbest:
            texts.append(candidate.text)
            owners.append((number, candidate))
    wanted = max(k, nbest)
    finals = second.translate(
        texts,
        **{**options, "nbest": wanted, "beam": max(beam, wanted)},
        tgt_lang=target,
        constraints=_each(constraints, owners),
        prefix=_each(prefix, owners),
        first=_each(numbers, owners),
    )
    ranked: list[list[Candidate]] = [[] for _ in lines]
    for (number, via), found in zip(owners, finals, strict=True):
        ranked[number] += [_through(via, candidate, options) for candidate in found.nbest]
    return [
        dataclasses.replace(leg, nbest=_best(candidates, nbest))
        for leg, candidates in zip(legs, ranked, strict=True)
    ]


def _each(values: list | None, owners: list[tuple[int, Candidate]]) -> list | None:
    """A line's constraints (or prefix, or number) for each of its pivot candidates."""
    return None if values is None else [values[number] for number, _ in owners]


def _through(via: Candidate, final: Candidate, options: dict) -> Candidate:
    """A second-leg candidate as one of the path: scored by both legs' ranking scores."""
    alignment = None
    if options.get("alignments") and via.alignment is not None and final.alignment is not None:
        alignment = composed_alignment(via.alignment, final.alignment)
    score = via.score + final.score
    return dataclasses.replace(final, score=score, alignment=alignment, pivot=via)


def _best(candidates: list[Candidate], nbest: int) -> list[Candidate]:
    """The `nbest` best by the path's score, one per distinct text (its best path)."""
    kept: dict[str, Candidate] = {}
    for candidate in sorted(candidates, key=lambda c: c.score, reverse=True):
        kept.setdefault(candidate.text, candidate)
    return list(kept.values())[:nbest]


def scored_through_pivot(
    first: Any, second: Any, sources: list[str], targets: list, pivot: str, target: str
) -> list[PairScore]:
    """Each target's score through the pivot, by the rule search ranks with: the first
    leg's k best pivots, the target forced after each, the best sum of the two legs'
    scores (the second's forced log-probability over its length penalty; a coverage
    penalty is search's alone). Its tokens and log-probabilities are the second leg's."""
    k, alpha = first.decode.pivot_candidates, second.decode.alpha
    legs = first.translate(sources, nbest=k, beam=max(first.decode.beam, k), tgt_lang=pivot)
    pivots = [(number, c) for number, leg in enumerate(legs) for c in leg.nbest]
    forced = second.score(
        [c.text for _, c in pivots], [targets[n] for n, _ in pivots], tgt_lang=target
    )
    best: list[PairScore | None] = [None] * len(sources)
    for (number, via), scored in zip(pivots, forced, strict=True):
        if scored.total is None:
            continue
        total = via.score + scored.total / length_penalty(len(scored.log_probs), alpha)
        if best[number] is None or total > best[number].total:
            best[number] = dataclasses.replace(scored, total=total)
    return [found or PairScore(None, [], []) for found in best]


def routed(
    translator: Any,
    lines: list[str],
    target: str,
    src_lang: str | None,
    options: dict,
    constraints: list | None,
    prefix: list | None,
    numbers: list[int],
) -> list[Translation]:
    """The lines translated into `target`, each directly or through its pivot (routing.py);
    `numbers`: each line's number in its input (where all go directly, they draw samples
    as the plain path would)."""
    routes = line_routes(translator, translator.decode, lines, target, src_lang)
    first, second = direct(translator), direct(translator.then or translator)
    if not any(routes):
        kept = dict(constraints=constraints, prefix=prefix, chunk=None, first=numbers)
        return list(first.stream(lines, tgt_lang=target, **kept, **options))

    def translated(pivot: str | None, rows: list[int]) -> list[Translation]:
        picked, taken = [lines[i] for i in rows], [numbers[i] for i in rows]
        guides = None if constraints is None else [constraints[i] for i in rows]
        starts = None if prefix is None else [prefix[i] for i in rows]
        if pivot is None:
            kept = dict(constraints=guides, prefix=starts, first=taken)
            return first.translate(picked, tgt_lang=target, **kept, **options)
        legs = (first, second, picked, pivot, target, options)
        return through_pivot(*legs, guides, starts, taken)

    return _per_route(routes, translated)


def _per_route(routes: list[str | None], run: Any) -> list:
    """`run(pivot, rows)`'s answers for the lines of each route, back in the lines' order."""
    found: list = [None] * len(routes)
    for pivot, rows in by_route(routes):
        for i, answer in zip(rows, run(pivot, rows), strict=True):
            found[i] = answer
    return found


def direct(translator: Any) -> Any:
    """The translator as one leg: no pivot, no chain."""
    leg = copy.copy(translator)
    leg.decode = dataclasses.replace(translator.decode, through=None, zero_shot="direct")
    leg.then = None
    return leg


def routed_stream(
    translator: Any,
    decode: Any,
    lines: Iterable[str],
    tgt_lang: str | None,
    src_lang: str | None,
    wanted: dict,
    constraints: Any,
    prefix: Any,
    chunk: int | None,
    done: Any,
    first: int | Sequence[int] = 0,
) -> Any:
    """Translator.stream's answer where some line may go through a pivot under `decode`
    (`routed` a chunk of lines at a time, constraints and prefixes read in step); None
    where none can, for the plain path to serve. Either way the route is checked first
    (routing.check_route), so an impossible one is refused before any line is read."""
    pivoting = _pivoting(translator, decode, tgt_lang, src_lang)
    if pivoting is None:
        return None
    tuned, target = pivoting
    args = (lines, target, src_lang, wanted, constraints, prefix, chunk, done, first)
    return _chunks(tuned, *args)


def _pivoting(translator: Any, decode: Any, tgt_lang: str | None, src_lang: str | None):
    """(the translator decoding under `decode`, the target language) where some line may
    go through a pivot, after routing.check_route; None where none can."""
    target = target_of(translator, tgt_lang)
    check_route(translator, decode, target, src_lang)
    if target is None or not routes_any(translator, decode, target):
        return None
    tuned = copy.copy(translator)
    tuned.decode = decode
    return tuned, target


def _chunks(translator, lines, target, src_lang, wanted, constraints, prefix, chunk, done, first):
    """`chunk` lines at a time, each with its number, constraints and prefix (a UserError
    where those end before the lines do, as without a pivot)."""
    items = in_step(lines, constraints, prefix, first)
    while part := list(itertools.islice(items, chunk)):
        counted, texts, guides, starts = (list(column) for column in zip(*part, strict=True))
        taken = [None if given is None else values
                 for given, values in ((constraints, guides), (prefix, starts))]  # fmt: skip
        yield from routed(translator, texts, target, src_lang, wanted, *taken, counted)
        if done is not None:
            done(len(part))


def scored(
    translator: Any,
    decode: Any,
    sources: list[str],
    targets: list,
    tgt_lang: str | None,
    src_lang: str | None,
) -> list[PairScore] | None:
    """Translator.score's answer where some pair may go through a pivot under `decode`, by
    the rule search ranks paths with, each pair routed as translate routes its source; None
    where the plain score serves all."""
    pivoting = _pivoting(translator, decode, tgt_lang, src_lang)
    if pivoting is None:
        return None
    tuned, target = pivoting
    routes = line_routes(tuned, decode, sources, target, src_lang)
    if not any(routes):
        return None
    first, second = direct(tuned), direct(tuned.then or tuned)

    def scores(pivot: str | None, rows: list[int]) -> list[PairScore]:
        picked, wanted = [sources[i] for i in rows], [targets[i] for i in rows]
        if pivot is None:
            return first.score(picked, wanted, tgt_lang=target)
        return scored_through_pivot(first, second, picked, wanted, pivot, target)

    return _per_route(routes, scores)
