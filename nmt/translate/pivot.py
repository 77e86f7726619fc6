"""Pivot translation: from the source into a pivot language, then from it into the target,
with one multilingual model (both legs) or a chain of two (`Translator.load(then=...)`).

A multilingual model trained on English-centric directions translates German into Czech
badly on its own (zero-shot) and well through English. So a direction the model never
trained goes through the language that connects it (decode.zero_shot: pivot, the default)
with a notice naming the path; `decode.through` pivots any direction; decode.zero_shot:
direct keeps the zero-shot path for research. The source's language, where it decides the
path, is the one asked for (`src_lang`) or the one py3langid reads among the model's.

Each leg searches with the decoding settings; constraints and a prefix apply to the second
(they name target text). With `decode.pivot_candidates` k, the first leg's k best are each
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
import logging
from collections.abc import Sequence
from typing import Any

from nmt.errors import UserError
from nmt.search import length_penalty
from nmt.translate.results import Candidate, PairScore, Translation

log = logging.getLogger(__name__)


def connecting(pairs: Sequence[tuple[str, str]], source: str, target: str) -> str | None:
    """A language L such that source->L and L->target are trained (the first in the pairs'
    order), or None."""
    trained = set(pairs)
    for _, pivot in pairs:
        if pivot not in (source, target) and {(source, pivot), (pivot, target)} <= trained:
            return pivot
    return None


def pivot_of(
    pairs: Sequence[tuple[str, str]], source: str | None, target: str, decode: Any
) -> str | None:
    """The pivot a line of `source` goes through into `target` under `decode` (through,
    zero_shot); None: directly."""
    if decode.through is not None:
        return decode.through
    if source in (None, target) or (source, target) in set(pairs) or decode.zero_shot == "direct":
        return None  # a line already in the target language is no direction to pivot
    return connecting(pairs, source, target)


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
    constraints: list | None = None,
    prefix: list | None = None,
) -> list[Translation]:
    """The lines translated into `pivot` by `first` and on into `target` by `second` (see
    the module's docstring); `options`: translate's (beam, nbest, alignments, attention...)."""
    decode = first.decode
    k = decode.pivot_candidates
    nbest = options.get("nbest") or decode.nbest
    beam = options.get("beam") or decode.beam
    legs = first.translate(lines, **{**options, "nbest": k, "beam": max(beam, k)}, tgt_lang=pivot)
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
    )
    ranked: list[list[Candidate]] = [[] for _ in lines]
    for (number, via), found in zip(owners, finals, strict=True):
        ranked[number] += [_through(via, candidate, options) for candidate in found.nbest]
    return [
        dataclasses.replace(leg, nbest=_best(candidates, nbest))
        for leg, candidates in zip(legs, ranked, strict=True)
    ]


def _each(values: list | None, owners: list[tuple[int, Candidate]]) -> list | None:
    """A line's constraints (or prefix) for each of its pivot candidates."""
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


def check_through(translator: Any, through: str | None) -> None:
    """A UserError where one model is asked to pivot through a language it does not write."""
    languages = translator.target_languages
    if through is not None and translator.then is None and through not in languages:
        raise UserError(
            f"--through {through}: this model writes {', '.join(languages)}, so it cannot "
            "translate into that pivot; pivot through one of those, or chain a model that "
            "writes it (--then)."
        )


def check_chain(first: Any, second: Any, through: str | None) -> str:
    """The language two chained models meet in; a UserError where they do not."""
    writes = set(first.target_languages)
    reads = {source for source, _ in second.config.data.pairs}
    met = sorted(writes & reads) if through is None else [through]
    if through is not None and (through not in writes or through not in reads):
        met = []
    if len(met) != 1:
        raise UserError(
            f"a chain of two models: the first writes {', '.join(sorted(writes))} and the "
            f"second reads {', '.join(sorted(reads))}; they must meet in one language"
            + (f" (--through {through})" if through else "")
            + ". Chain a model into the language the other translates from."
        )
    return met[0]


def notice(source: str, pivot: str, target: str, lines: int) -> None:
    log.warning(
        "notice: %s-%s was not trained: %d line(s) go through %s (%s-%s-%s); "
        "--zero-shot direct (decode.zero_shot) translates them directly.",
        source,
        target,
        lines,
        pivot,
        source,
        pivot,
        target,
    )


def routes_any(translator: Any, decode: Any, target: str) -> bool:
    """Whether some line could go through a pivot (else the plain path serves all)."""
    if translator.then is not None or decode.through is not None:
        return True
    if decode.zero_shot == "direct":
        return False
    pairs = set(translator.config.data.pairs)
    return any((source, target) not in pairs for source, _ in pairs)


def routed(
    translator: Any,
    lines: list[str],
    target: str,
    src_lang: str | None,
    options: dict,
    constraints: list | None,
    prefix: list | None,
    first_line: int = 0,
) -> list[Translation]:
    """The lines translated into `target`, each directly or through its pivot: the chain's,
    decode.through, or for a direction never trained the language that connects it
    (`first_line`: the number of the first in its input, so that where all go directly
    they draw samples as the plain path would)."""
    decode, first = translator.decode, direct(translator)
    if translator.then is not None:
        pivot = check_chain(translator, translator.then, decode.through)
        second = direct(translator.then)
        return through_pivot(first, second, lines, pivot, target, options, constraints, prefix)
    pairs = translator.config.data.pairs
    if src_lang:
        languages = [src_lang if line.strip() else None for line in lines]
    else:
        languages = source_languages(lines, pairs)
    routes = [pivot_of(pairs, language, target, decode) for language in languages]
    if not any(routes):
        kept = dict(constraints=constraints, prefix=prefix, chunk=None, first=first_line)
        return list(first.stream(lines, tgt_lang=target, **kept, **options))
    found: list[Translation | None] = [None] * len(lines)
    for pivot in dict.fromkeys(routes):
        rows = [i for i, route in enumerate(routes) if route == pivot]
        picked = [lines[i] for i in rows]
        guides = None if constraints is None else [constraints[i] for i in rows]
        starts = None if prefix is None else [prefix[i] for i in rows]
        if pivot is None:
            done = first.translate(
                picked, tgt_lang=target, constraints=guides, prefix=starts, **options
            )
        else:
            if decode.through is None:
                for source in sorted({languages[i] for i in rows}):
                    notice(source, pivot, target, sum(languages[i] == source for i in rows))
            done = through_pivot(first, first, picked, pivot, target, options, guides, starts)
        for i, translation in zip(rows, done, strict=True):
            found[i] = translation
    return found


def direct(translator: Any) -> Any:
    """The translator as one leg: no pivot, no chain."""
    leg = copy.copy(translator)
    leg.decode = dataclasses.replace(translator.decode, through=None, zero_shot="direct")
    leg.then = None
    return leg


def source_languages(lines: list[str], pairs: Sequence[tuple[str, str]]) -> list[str | None]:
    """Each line's language among the model's source languages, as py3langid reads it (None
    for a blank line)."""
    from nmt.data.language_id import identified

    return identified(lines, sorted({source for source, _ in pairs}))


def routed_stream(
    translator: Any,
    decode: Any,
    lines: Any,
    tgt_lang: str | None,
    src_lang: str | None,
    wanted: dict,
    constraints: Any,
    prefix: Any,
    chunk: int | None,
    done: Any,
    first: int = 0,
) -> Any:
    """Translator.stream's answer where some line may go through a pivot under `decode`
    (`routed` a chunk of lines at a time, constraints and prefixes read in step); None
    where none can, for the plain path to serve."""
    target = _target(translator, tgt_lang)
    if target is None or not routes_any(translator, decode, target):
        return None
    check_through(translator, decode.through)
    tuned = copy.copy(translator)
    tuned.decode = decode
    args = (lines, target, src_lang, wanted, constraints, prefix, chunk, done, first)
    return _chunks(tuned, *args)


def _target(translator: Any, tgt_lang: str | None) -> str | None:
    """The language the translator (or its chain's second model) is asked to write: the
    call's, the translator's, or the only one it writes."""
    languages = (translator.then or translator).target_languages
    return tgt_lang or translator.tgt_lang or (languages[0] if len(languages) == 1 else None)


def _chunks(translator, lines, target, src_lang, wanted, constraints, prefix, chunk, done, first):
    items = iter(lines)
    guides = None if constraints is None else iter(constraints)
    starts = None if prefix is None else iter(prefix)
    number = first
    while part := list(itertools.islice(items, chunk)):
        taken = [None if given is None else list(itertools.islice(given, len(part)))
                 for given in (guides, starts)]  # fmt: skip
        found = routed(translator, part, target, src_lang, wanted, *taken, first_line=number)
        number += len(part)
        if done is not None:
            done(len(part))
        yield from found


def scored(translator: Any, sources: list[str], targets: list, tgt_lang: str | None) -> Any:
    """Translator.score's answer through a pivot (decode.through, or a chain's), by the
    rule search ranks paths with; None where the plain score serves."""
    if translator.then is None and translator.decode.through is None:
        return None
    check_through(translator, translator.decode.through)
    second = translator.then or translator
    pivot = translator.decode.through
    if translator.then is not None:
        pivot = check_chain(translator, translator.then, pivot)
    target = _target(translator, tgt_lang)
    first, second = direct(translator), direct(second)
    return scored_through_pivot(first, second, sources, list(targets), pivot, target)
