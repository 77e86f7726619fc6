"""Translating with a translation memory (`--tm`, Translator.load(memory=...)).

A line with an exact match (the same source, spaces aside) gets the match's target as it
is, flagged by Translation.match, without a search. A model trained with
data.fuzzy_matches also reads the best fuzzy match scoring at least its threshold, appended
after the separator as in training (nmt/data/fuzzy_repair.py); any other model translates
the remaining lines as they are.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from nmt.config import Experiment
from nmt.data.fuzzy_repair import with_match
from nmt.data.memory import BANDS, Match, TranslationMemory, band_of
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search import Hypothesis
from nmt.translate.pipeline import Numbering
from nmt.translate.results import Candidate, Translation

# what a line with a memory cannot ask for: a fuzzy match appended to the source changes
# what attention, alignments, constraints and prefixes refer to
NOT_WITH_MEMORY = ("alignments", "attention", "constraints", "prefix", "through", "markup")


def memory_for(path: Path | str, config: Experiment) -> TranslationMemory:
    """The memory in `path`, refused unless the model translates its direction."""
    memory = TranslationMemory.load(path)
    direction = (memory.src_lang, memory.tgt_lang)
    if direction not in config.data.pairs:
        trained = ", ".join("-".join(pair) for pair in config.data.pairs)
        raise UserError(
            f"translation memory {path} holds {'-'.join(direction)} pairs, and the model "
            f"translates {trained}: build one of the model's direction (nmt tm build "
            "--src-lang, --tgt-lang)."
        )
    return memory


def remembers(translator, tgt_lang: str | None) -> bool:
    """Whether `translator` looks lines up in its memory when asked for `tgt_lang` (None: its
    own language): it has one, and the memory's targets are in that language."""
    memory = translator.memory
    if memory is None:
        return False
    languages = translator.target_languages
    target = tgt_lang or translator.tgt_lang or (languages[0] if len(languages) == 1 else None)
    return target == memory.tgt_lang


def without_memory(translator):
    """`translator` itself where it has no memory, else a copy that reads none: for what
    cannot go with one (a direction it does not hold, a file whose tags need alignments)."""
    if translator.memory is None:
        return translator
    translator = copy.copy(translator)
    translator.memory = None
    return translator


def check_memory_call(translator, options: dict, tgt_lang: str | None) -> None:
    """A UserError where a call of `translator` with a memory asks for what cannot go with
    one (`options`: refused_with_memory) or for another language than the one its memory's
    targets are in (`tgt_lang`, None: the translator's own); nothing for a translator
    without one."""
    memory = translator.memory
    if memory is None:
        return
    refused_with_memory(options)
    languages = translator.target_languages
    target = tgt_lang or translator.tgt_lang or languages[0]
    if target != memory.tgt_lang:
        raise UserError(
            f"the translation memory (--tm) holds {memory.src_lang}-{memory.tgt_lang} pairs, "
            f"and this translates into {target}: ask for {memory.tgt_lang} (--tgt-lang, "
            "tgt_lang), or give a memory of the direction translated."
        )


def recalled(
    memory: TranslationMemory,
    config: Experiment,
    tokenizer: Tokenizer,
    lines: Iterable[str],
    chunk: int | None,
    first: Numbering,
    search: Callable[[list[str], list[int]], Iterator[Translation]],
    done: Callable[[int], None] | None = None,
) -> Iterator[Translation]:
    """Each line's Translation in order, `chunk` lines at a time (None: all): an exact
    match's target, or what `search` (sources, their line numbers) makes of the line, with
    the best fuzzy match appended where the model reads them; `done` hears of the exact
    matches, as search tells it of the lines it translates."""
    fuzzy = config.data.fuzzy_matches
    numbers = itertools.count(first) if isinstance(first, int) else iter(first)
    lines = iter(lines)
    while block := list(itertools.islice(lines, chunk)) if chunk else list(lines):
        numbered = [next(numbers) for _ in block]
        matches = [
            memory.best(line, fuzzy.threshold) if fuzzy else memory.exact(line) for line in block
        ]
        searched = [index for index, match in enumerate(matches) if not (match and match.exact)]
        sources = [_source(block[i], matches[i]) for i in searched]
        found = dict(zip(searched, search(sources, [numbered[i] for i in searched]), strict=True))
        if done is not None and len(searched) < len(block):
            done(len(block) - len(searched))
        for index, (line, match) in enumerate(zip(block, matches, strict=True)):
            if index in found:
                yield _as_read(found[index], line, match)
            else:
                yield verbatim(line, match, tokenizer)
        if not chunk:
            return


def _source(line: str, match: Match | None) -> str:
    return line if match is None else with_match(line, match.target)


def _as_read(translation: Translation, line: str, match: Match | None) -> Translation:
    """A searched line's Translation, its source the line as given, with the match read."""
    return dataclasses.replace(translation, source=line, match=match)


def verbatim(line: str, match: Match, tokenizer: Tokenizer) -> Translation:
    """An exact match's target as the line's translation, scored 0 (no search ran)."""
    ids = tokenizer.tgt.encode([match.target])[0]
    hypothesis = Hypothesis(ids, 0.0, None, steps=len(ids) + 1)
    candidate = Candidate(match.target, 0.0, hypothesis)
    return Translation(line, tokenizer.src.encode([line])[0], [candidate], match=match)


def _given(value: object) -> bool:
    """Whether an option is set: a list of per-line values, when one of them is."""
    if isinstance(value, (list, tuple)):
        return any(item is not None for item in value)
    return bool(value)


def refused_with_memory(options: dict) -> None:
    """A UserError naming the options given (true or set) that cannot go with a memory."""
    given = [name for name in NOT_WITH_MEMORY if _given(options.get(name))]
    if given:
        raise UserError(
            f"a translation memory (--tm) cannot go with {', '.join(given)}: an appended "
            "fuzzy match changes the source they refer to, and an exact match is not "
            "searched. Leave them out, or translate without --tm."
        )


def band_scores(
    memory: TranslationMemory,
    sources: Sequence[str],
    hypotheses: Sequence[str],
    references: Sequence[str],
) -> dict[str, dict[str, float]]:
    """Lines and BLEU per band of each source's best match in `memory` (band_of), the
    bands no line falls in left out: where a memory helps and where it does not."""
    from sacrebleu.metrics import BLEU

    grouped: dict[str, list[int]] = {band: [] for band in BANDS}
    for index, source in enumerate(sources):
        grouped[band_of(memory.best(source, 0.5))].append(index)
    return {
        band: {
            "lines": len(rows),
            "bleu": BLEU()
            .corpus_score([hypotheses[i] for i in rows], [[references[i] for i in rows]])
            .score,
        }
        for band, rows in grouped.items()
        if rows
    }
