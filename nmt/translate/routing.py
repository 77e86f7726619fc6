"""Pivoting's rules in one place: which path each line takes into its target (directly, or
through which pivot language) and the one check every caller makes before any line is
translated or scored, so that `nmt translate`, `nmt score`, `nmt eval`, the Python API and
the server refuse alike (exit 2, UserError, 422).

A line goes through a pivot where a chain of two models says (the language they meet in),
where decode.through names one, or where its direction was never trained and a language
connects it (decode.zero_shot: pivot, the default). Its source's language, where that
decides, is the one asked for (`src_lang`) or the one py3langid reads among the model's;
a line read as being in the pivot language already goes on from it directly, where the model
learned that direction (else it is refused, as an untrained leg). The check
(`check_route`) refuses a `src_lang` the model does not read, a pivot that one model does
not write or that two chained models do not meet in, and a pivot that is the source's
language or the target's: either way one leg would be a direction no model trained.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from nmt.errors import UserError

log = logging.getLogger(__name__)


class RouteError(UserError):
    """A path refused: `field` names what to change (src_lang, through, then), as the server
    and Python name it; the message names it as the command line does (--src-lang);
    `detail` says why."""

    def __init__(self, field: str, detail: str, value: str | None = None):
        flag = "--" + field.replace("_", "-")
        super().__init__(f"{flag}{'' if value is None else f' {value}'}: {detail}.")
        self.field, self.detail = field, detail


def check_route(
    translator: Any, decode: Any, target: str | None, src_lang: str | None
) -> str | None:
    """The pivot every line takes (a chain's, or decode.through; None where it depends on
    the line), after refusing what the module's docstring lists with a RouteError. `target`:
    the language to write (None: not yet known)."""
    reads = source_languages(translator)
    if src_lang is not None and src_lang not in reads:
        raise RouteError(
            "src_lang",
            f"this model reads {', '.join(reads)}: name one of them, or leave it out to have "
            "each line's language read from its text",
            src_lang,
        )
    writes, through = translator.target_languages, decode.through
    if translator.then is not None:
        pivot = meeting(translator, translator.then, through)
    elif through is not None and through not in writes:
        raise RouteError(
            "through",
            f"this model writes {', '.join(writes)}, so it cannot translate into that pivot; "
            f"{_advice(translator, src_lang, target)}, or chain a model that writes it (--then)",
            through,
        )
    else:
        pivot = through
    for language, role in (
        (target, "the language translated into"),
        (src_lang, "the source's language"),
    ):
        if pivot is not None and pivot == language:
            field = "then" if through is None else "through"
            detail = f"{pivot} is {role}, and a pivot lies between the source and the target"
            advice = _advice(translator, src_lang, target)
            raise RouteError(field, f"{detail}: {advice}", pivot)
    return pivot


def _advice(translator: Any, source: str | None, target: str | None) -> str:
    """Which pivots the model could take from `source` (None: any it reads) into `target`:
    languages it writes that are neither."""
    sources = [source] if source else source_languages(translator)
    others = [
        pivot
        for pivot in translator.target_languages
        if pivot != target and any(s not in (pivot, target) for s in sources)
    ]
    return (
        f"pivot through {' or '.join(others)}" if others else "translate directly, without a pivot"
    )


def meeting(first: Any, second: Any, through: str | None) -> str:
    """The language two chained models meet in (`through`, where given); a RouteError
    where they do not."""
    writes = set(first.target_languages)
    reads = {source for source, _ in second.config.data.pairs}
    met = sorted(writes & reads)
    chain = (
        f"a chain of two models: the first writes {', '.join(sorted(writes))} and the second "
        f"reads {', '.join(sorted(reads))}"
    )
    if not met:
        raise RouteError(
            "then",
            f"{chain}; they must meet in one language. Chain a model into the language the "
            "other translates from",
        )
    if through is not None and through not in met:
        detail = f"the two models meet in {' and '.join(met)}, not {through}"
        raise RouteError("through", f"{detail}: chain through {' or '.join(met)}", through)
    if through is None and len(met) > 1:
        raise RouteError("then", f"{chain}; name the language to meet in (--through)")
    return through or met[0]


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
    if decode.through is not None:  # a line in the pivot language goes on from it
        return None if source == decode.through else decode.through
    if source in (None, target) or (source, target) in set(pairs) or decode.zero_shot == "direct":
        return None  # a line already in the target language is no direction to pivot
    return connecting(pairs, source, target)


def routes_any(translator: Any, decode: Any, target: str) -> bool:
    """Whether some line could go through a pivot (else the plain path serves all)."""
    if translator.then is not None or decode.through is not None:
        return True
    if decode.zero_shot == "direct":
        return False
    pairs = set(translator.config.data.pairs)
    return any((source, target) not in pairs for source, _ in pairs)


def line_routes(
    translator: Any, decode: Any, lines: list[str], target: str, src_lang: str | None
) -> list[str | None]:
    """Each line's pivot (None: directly), checked by `check_route`; a notice names each
    untrained direction that goes through a pivot by default."""
    chained = check_route(translator, decode, target, src_lang)
    if translator.then is not None:
        return [chained] * len(lines)
    pairs = translator.config.data.pairs
    if src_lang:
        languages = [src_lang if line.strip() else None for line in lines]
    else:
        languages = identified(lines, pairs)
    if decode.through is not None:
        _check_read_as_pivot(translator, languages, decode.through, target)
    routes = [pivot_of(pairs, language, target, decode) for language in languages]
    if decode.through is None:
        for pivot, rows in by_route(routes):
            sources = [languages[i] for i in rows]
            for source in sorted(set(sources)) if pivot else ():
                notice(source, pivot, target, sources.count(source))
    return routes


def _check_read_as_pivot(
    translator: Any, languages: list[str | None], through: str, target: str
) -> None:
    """A line read as the pivot language goes on from it directly, where the model learned
    that direction; where it did not, that leg would be untrained: refused."""
    if through in languages and (through, target) not in set(translator.config.data.pairs):
        raise RouteError(
            "through",
            f"a line of this input reads as {through}, the pivot, and this model never "
            f"learned {through} -> {target}: name the lines' language with --src-lang, or "
            f"{_advice(translator, None, target)}",
            through,
        )


def by_route(routes: list[str | None]) -> Iterator[tuple[str | None, list[int]]]:
    """Each distinct route (in order of first use) with the lines that take it."""
    for pivot in dict.fromkeys(routes):
        yield pivot, [i for i, route in enumerate(routes) if route == pivot]


def target_of(translator: Any, tgt_lang: str | None) -> str | None:
    """The language the translator (or its chain's second model) is asked to write: the
    call's, the translator's, or the only one it writes."""
    languages = (translator.then or translator).target_languages
    return tgt_lang or translator.tgt_lang or (languages[0] if len(languages) == 1 else None)


def source_languages(translator: Any) -> list[str]:
    """The languages a translator (a chain's first model) reads."""
    return sorted({source for source, _ in translator.config.data.pairs})


def identified(lines: list[str], pairs: Sequence[tuple[str, str]]) -> list[str | None]:
    """Each line's language among the model's source languages, as py3langid reads it (None
    for a blank line)."""
    from nmt.data.language_id import identified

    return identified(lines, sorted({source for source, _ in pairs}))


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
