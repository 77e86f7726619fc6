"""What every answer of the pairwise test (tests/test_option_pairs.py) keeps, whatever the
options: a line (or n-best rows) per input, a blank line for a blank one; alignment links
within the source's and the translation's words; included phrases held (unless reported
missed), excluded ones never written, prefixes kept; a heatmap per line and leg; only the
pieces the shortlist and the target language allow; scores equal to forced scores where
the docs promise it; eval's, score's and distill's files equal to the Translator's answers;
marked-up lines with their tags, a subtitle file with its cues."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import srt
from pair_factors import CONSTRAINTS, LINES, MARKED, PREFIXES, REMEMBERED
from pair_kinds import KINDS

from nmt.translate.translator import Translator


def pivoted(case: dict) -> bool:
    """Whether the lines go through a pivot: a chain, --through, or the untrained direction
    of a multilingual kind (which --zero-shot direct takes directly)."""
    kind = KINDS[case["kind"]]
    return kind.chain or bool(case["through"]) or (kind.pivot and case["zero_shot"] == "pivot")


def alignment(link_text: str, source: str, target: str) -> None:
    """Every link i-j names a source word i and a target word j."""
    for link in link_text.split():
        i, j = map(int, link.split("-"))
        assert 0 <= i < len(source.split()) and 0 <= j < len(target.split()), (link, target)


def guides(case: dict, number: int, text: str, met: bool | None = True) -> None:
    """The line's constraints (included phrases only where `met`) and prefix."""
    if case["constraints"] and CONSTRAINTS[number]:
        if met:
            assert all(p in text for p in CONSTRAINTS[number].get("include", [])), text
        assert not any(p in text.split() for p in CONSTRAINTS[number].get("exclude", [])), text
    if case["prefix"] and PREFIXES[number]:
        assert text.startswith(PREFIXES[number]), text


def written(case: dict, rows: list[str], plots: Path, stderr: str) -> None:
    """nmt translate's output: n-best rows (INDEX ||| text ||| score [||| alignment]) or a
    line per input [||| alignment]; a heatmap per non-blank input and leg."""
    nbest, missed = case["nbest"], "miss some of their constraints" in stderr
    by_line: dict[int, list[list[str]]] = {}
    for number, row in enumerate(rows):
        fields = row.split(" ||| ")
        line = int(fields[0]) if nbest > 1 else number
        by_line.setdefault(line, []).append(fields[1:] if nbest > 1 else fields)
    assert sorted(by_line) == list(range(len(LINES))), rows
    if case["tm"]:  # the memory's exact match, alone, as it is
        assert [fields[0] for fields in by_line[0]] == [REMEMBERED[1]], by_line
    for number, found in by_line.items():
        assert 1 <= len(found) <= nbest, (number, found)
        for fields in found:
            text = fields[0]
            assert bool(text) <= bool(LINES[number]), (number, text)
            if nbest > 1 and LINES[number]:
                assert float(fields[1]) <= 0, fields
            if case["alignments"]:
                alignment(fields[-1], LINES[number], text)
            if LINES[number]:
                guides(case, number, text, met=not missed)
    if case["plots"]:
        legs = ("", ".pivot") if pivoted(case) else ("",)
        full = [n for n, line in enumerate(LINES) if line]
        expected = sorted(f"{n:05d}{leg}.png" for n in full for leg in legs)
        assert sorted(p.name for p in plots.iterdir()) == expected


TAG = re.compile(r"<[^>]+>")


def marked(found: list[str]) -> None:
    """Marked-up lines: each line's tags, each once (a line's order may change), and words
    where the line had words; a blank line blank."""
    assert len(found) == len(MARKED), found
    for line, text in zip(MARKED, found, strict=True):
        assert sorted(TAG.findall(text)) == sorted(TAG.findall(line)), (line, text)
        assert bool(TAG.sub("", text).strip()) == bool(TAG.sub("", line).strip()), (line, text)


def subtitles(source: str, written: str) -> None:
    """A SubRip file: the same cues, numbers and timings, text where the cue had text."""
    before, after = list(srt.parse(source)), list(srt.parse(written))
    assert [(c.index, c.start, c.end) for c in before] == [(c.index, c.start, c.end) for c in after]
    assert all(bool(c.content.strip()) for c in after), written


def served(case: dict, answer: list) -> None:
    """The server's answer: n_best ranks of a translation per item."""
    assert len(answer) == case["nbest"] and all(len(rank) == len(LINES) for rank in answer)
    if case["tm"]:
        assert answer[0][0]["tgt"] == REMEMBERED[1] and answer[0][0]["tm_match"]["exact"]
    for rank in answer:
        for number, found in enumerate(rank):
            assert ("align" in found) == case["alignments"], found
            assert bool(found["tgt"]) <= bool(LINES[number]), found
            if not LINES[number]:
                continue
            if case["alignments"]:
                alignment(found["align"], LINES[number], found["tgt"])
            guides(case, number, found["tgt"], met=found.get("constraints_met", True))
            assert bool(found.get("pivot")) == bool(pivoted(case)), found


def translations(case: dict, translator: Translator, found: list) -> None:
    """Translator.translate's answer: n-best candidates ranked, only the pieces allowed."""
    language = KINDS[case["kind"]].tgt_lang
    last = translator.then or translator
    tgt = last.towards(language).tgt
    never = {tgt.pad_id, tgt.bos_id, *tgt.tags.values()}
    assert len(found) == len(LINES)
    for number, translation in enumerate(found):
        if not LINES[number]:
            assert translation.text == "" and not translation.nbest
            continue
        assert 1 <= len(translation.nbest) <= case["nbest"]
        scores = [c.score for c in translation.nbest]
        assert case["search"] == "sample" or scores == sorted(scores, reverse=True)
        for candidate in translation.nbest:
            written = {t for t in candidate.hypothesis.tokens if t < tgt.size}  # copies: beyond
            assert not written & never, (number, candidate.hypothesis.tokens)
            guides(case, number, candidate.text, candidate.constraints_met)
            assert (candidate.alignment is not None) == case["alignments"]
            assert (candidate.attention is not None) == case["plots"]
            assert (candidate.pivot is not None) == bool(pivoted(case)), candidate
            if case["alignments"]:
                alignment(candidate.alignment, LINES[number], candidate.text)
    if case["tm"]:  # the memory's exact match, as it is, unsearched
        assert found[0].text == REMEMBERED[1] and found[0].match.exact
    allowed = case["shortlist"] or case["restrict"] or case["int8"] or pivoted(case)
    allowed = allowed or case["tm"]  # a memory's answers are not the model's own
    if not (allowed or case["precision"] != "fp32"):
        forced_scores(translator, found, language)


def forced_scores(translator: Translator, found: list, language: str | None) -> None:
    """Each hypothesis's score is the sum of its tokens' log-probabilities, as nmt score
    computes them (over every piece, and in float32 weights)."""
    pairs = [(t.source, c.hypothesis) for t in found for c in t.nbest]
    forced = translator.score(
        [s for s, _ in pairs], [h.tokens for _, h in pairs], tgt_lang=language
    )
    for (_, hypothesis), scored in zip(pairs, forced, strict=True):
        assert scored.total == pytest.approx(hypothesis.score, abs=2e-3), (scored, hypothesis)


def scores(lines: list[str], expected: list) -> None:
    """nmt score's file: the Translator's total and mean per pair, blank for a blank one."""
    assert len(lines) == len(LINES), lines
    for line, pair in zip(lines, expected, strict=True):
        if pair.total is None:
            assert line == ""
            continue
        total, mean = map(float, line.split("\t"))
        assert total == pytest.approx(pair.total, abs=1e-3) and mean == pytest.approx(
            pair.mean, abs=1e-3
        )


def distilled(output: Path, translator: Translator) -> None:
    """nmt distill's corpus: each direction's targets are the Translator's translations."""
    manifest = json.loads((output / "manifest.json").read_text("utf-8"))
    for direction in manifest["directions"]:
        sources = (output / direction["source"]).read_text("utf-8").splitlines()
        targets = (output / direction["target"]).read_text("utf-8").splitlines()
        source, target = direction["name"].split("-")
        found = translator.translate(sources, tgt_lang=target, src_lang=source)
        assert targets == [t.text for t in found], direction
