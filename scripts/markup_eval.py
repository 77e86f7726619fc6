"""How well markup translation keeps and places tags (nmt translate --markup html).

    python scripts/markup_eval.py demo --checkpoint RUN [--lines 500]
    python scripts/markup_eval.py corpus --checkpoint RUN --src test.de --ref test.en

demo: English sentences of the demo corpus's grammar (a seed training never used) with
one to three of their noun phrases (article, adjective, noun) in tags <b>, <i> or <a>. The
grammar's lexicon knows each noun's German forms, so the gold place of a tag in the
translation is the German noun phrase there (article, adjective, noun); a tag is scored
where its noun occurs once in the translation, after a plain article (not "im", "vom").
Prints structure (lines whose output is well-formed and holds exactly the source's tags)
and placement (tags whose words are exactly the gold phrase's).

corpus: each source line gets one to three tags over random word spans (seeded); BLEU of
the tagged translation with its tags removed against the untagged translation's, both
against --ref, and sentences/s of each (the same process, one after another).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import xml.etree.ElementTree as ET

import nmt  # noqa: F401 - before torch, as the command does
from nmt.data.demo import ADJECTIVES, NOUNS, generate_pairs

ARTICLES_EN = {"the", "a", "an"}
ARTICLES_DE = {"der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer"}
TAGS = ('<b id="t{}">', "</b>"), ('<i id="t{}">', "</i>"), ('<a href="#x" id="t{}">', "</a>")
PUNCTUATION = re.compile(r"^\W+|\W+$")


def tagged_demo(count: int, seed: int) -> list[tuple[str, list[str]]]:
    """(tagged English, the noun of each tag t0, t1, ... in order) for `count` sentences."""
    rng, nouns = random.Random(seed), {}
    for noun in NOUNS:
        nouns[noun.en] = nouns[noun.en_plural] = noun
    adjectives = {en for en, _ in ADJECTIVES}
    found = []
    for english, _ in generate_pairs(count * 3, seed):
        words = english.split()
        phrases = []
        for end, word in enumerate(words):
            noun = nouns.get(PUNCTUATION.sub("", word))
            start = end - 1 - (end >= 2 and words[end - 1] in adjectives)
            if noun and start >= 0 and words[start].lower() in ARTICLES_EN:
                phrases.append((start, end + 1, noun))
        if not phrases:
            continue
        chosen = sorted(rng.sample(phrases, rng.randint(1, min(3, len(phrases)))))
        out, at = [], 0
        for number, (start, end, _) in enumerate(chosen):
            open_tag, close_tag = TAGS[number % len(TAGS)]
            last = words[end - 1]
            bare = PUNCTUATION.sub("", last)
            trailing = last[len(bare) :] if last.startswith(bare) else ""
            out += words[at:start] + [open_tag.format(number) + words[start]]
            out += words[start + 1 : end - 1] + [bare + close_tag + trailing]
            at = end
        out += words[at:]
        found.append((" ".join(out), [noun for _, _, noun in chosen]))
        if len(found) == count:
            break
    return found


def gold(words: list[str], noun) -> list[str] | None:
    """The German noun phrase of `noun` among `words` (punctuation off), if it occurs once
    after a plain article."""
    forms = {noun.de, noun.de_plural, noun.de_plural + "n"}
    places = [k for k, word in enumerate(words) if word in forms]
    if len(places) != 1:
        return None
    start = places[0]
    stems = tuple(de for _, de in ADJECTIVES)
    if start > 0 and words[start - 1].startswith(stems):
        start -= 1
    if start == 0 or words[start - 1] not in ARTICLES_DE:
        return None
    return words[start - 1 : places[0] + 1]


def demo(args) -> dict:
    from nmt.translate.translator import Translator

    translator = Translator.load(args.checkpoint, beam=args.beam)
    lines = tagged_demo(args.lines, args.seed)
    started = time.perf_counter()
    tagged = [line for line, _ in lines]
    outputs = [
        t.text for t in translator.translate(tagged, markup="html", placement=args.placement)
    ]
    seconds = time.perf_counter() - started
    whole = placed = scored = 0
    for (line, nouns), output in zip(lines, outputs, strict=True):
        try:
            root = ET.fromstring(f"<r>{output}</r>")
        except ET.ParseError:
            continue
        tags = sorted(re.findall(r"<[^>]+>", output))
        whole += tags == sorted(re.findall(r"<[^>]+>", line))
        words = [PUNCTUATION.sub("", w) for w in "".join(root.itertext()).split()]
        for number, noun in enumerate(nouns):
            expected, element = gold(words, noun), root.find(f".//*[@id='t{number}']")
            if expected is None or element is None:
                continue
            scored += 1
            inside = [PUNCTUATION.sub("", w) for w in "".join(element.itertext()).split()]
            placed += inside == expected
    tags = sum(len(nouns) for _, nouns in lines)
    return {
        "lines": len(lines),
        "tags": tags,
        "structure": round(whole / len(lines), 4),
        "tags_scored": scored,
        "placement": round(placed / max(scored, 1), 4),
        "sentences_per_s": round(len(lines) / seconds, 1),
        "placement_by": args.placement or "default",
    }


def random_tags(line: str, rng: random.Random) -> str:
    """`line` with one to three tags, each over one to three words, none overlapping."""
    words = line.split()
    spans: list[tuple[int, int]] = []
    for _ in range(rng.randint(1, 3)):
        start = rng.randrange(len(words))
        end = min(len(words), start + rng.randint(1, 3))
        if words and all(end <= a or b <= start for a, b in spans):
            spans.append((start, end))
    for number, (start, end) in enumerate(sorted(spans)):
        open_tag, close_tag = TAGS[number % len(TAGS)]
        words[start] = open_tag.format(number) + words[start]
        words[end - 1] += close_tag
    return " ".join(words)


def corpus(args) -> dict:
    import sacrebleu

    from nmt.data.markup import plain
    from nmt.translate.translator import Translator

    translator = Translator.load(args.checkpoint, beam=args.beam)
    with open(args.src, encoding="utf-8") as src, open(args.ref, encoding="utf-8") as ref:
        sources, references = src.read().splitlines(), ref.read().splitlines()
    rng = random.Random(args.seed)
    tagged = [random_tags(line, rng) for line in sources]
    escaped = [re.sub("&", "&amp;", line) for line in tagged]  # the corpus is plain text
    timings, outputs = {}, {}
    for name, lines, markup in (("plain", sources, None), ("tagged", escaped, "html")):
        started = time.perf_counter()
        found = (
            translator.translate(lines, markup=markup) if markup else translator.translate(lines)
        )
        timings[name] = time.perf_counter() - started
        outputs[name] = [t.text for t in found]
    stripped = [plain(text, "html") for text in outputs["tagged"]]
    kept = sum(
        sorted(re.findall(r"<[^>]+>", out)) == sorted(re.findall(r"<[^>]+>", line))
        for out, line in zip(outputs["tagged"], escaped, strict=True)
    )
    return {
        "lines": len(sources),
        "bleu_plain": round(sacrebleu.corpus_bleu(outputs["plain"], [references]).score, 2),
        "bleu_tagged_stripped": round(sacrebleu.corpus_bleu(stripped, [references]).score, 2),
        "structure": round(kept / len(sources), 4),
        "sentences_per_s_plain": round(len(sources) / timings["plain"], 1),
        "sentences_per_s_tagged": round(len(sources) / timings["tagged"], 1),
        "speed_ratio": round(timings["plain"] / timings["tagged"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("demo", "corpus"))
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--lines", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20261207)
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--placement", choices=("projection", "model", "both"))
    parser.add_argument("--src")
    parser.add_argument("--ref")
    args = parser.parse_args()
    print(json.dumps(demo(args) if args.mode == "demo" else corpus(args)))


if __name__ == "__main__":
    sys.exit(main())
