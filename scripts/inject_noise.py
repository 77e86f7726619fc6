"""Makes a noisy copy of a parallel corpus with every noisy pair labelled, to measure what
`nmt clean` removes or repairs (docs/cleaning.md).

Of the train split's pairs, a share `--rate` of each kind (disjoint, drawn with `--seed`):

  misaligned      the target of another pair of the same kind (the targets shuffled)
  copy            the source copied as the target
  wrong_language  the target in another language: the same sentence's `--wrong` side
  truncated       the target cut to its first 20 to 50% of words (one at least)
  mojibake        both sides' UTF-8 read as Latin-1 or as Windows-1252 ("MÃ¤nner"), half
                  each; a pair this leaves as it was (ASCII on both sides) stays `clean`
  markup          both sides wrapped in HTML with URLs (one of five templates, the text
                  HTML-escaped)
  duplicate       a copy of another pair, inserted at a random place (the later of the two
                  equal pairs is labelled: cleaning keeps the first)

The replacements keep the corpus's size; the duplicates add `--rate` of it. `--kinds` picks
some (the draws of the first four alone are those of the earlier measurements). Written:
OUT's train files, OUT/labels.tsv (line, kind, and for the kinds cleaning can repair the
intact pair, source and target: one row per train pair, `clean` for the others), and the
valid and test files copied as they are.

    python scripts/inject_noise.py --data ../shared/data/multi30k --out noisy \
        --src de --tgt en --wrong cs --splits train val test_2016_flickr
"""

from __future__ import annotations

import argparse
import html
import random
import shutil
from pathlib import Path

import ftfy.bad_codecs  # noqa: F401  (registers sloppy-windows-1252: cp1252 with no holes)

KINDS = ("misaligned", "copy", "wrong_language", "truncated", "mojibake", "markup")
REPAIRABLE = ("mojibake", "markup")  # labels.tsv holds their intact pair
MARKUP = (  # {text}: a side, HTML-escaped; {url}: a link of the side's language
    "<p>{text}</p>",
    '<a href="{url}">{text}</a>',
    '<div class="caption"><span>{text}</span> <a href="{url}">{url}</a></div>',
    "<li><b>{text}</b></li>",
    "{text} {url}",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--src", default="de")
    parser.add_argument("--tgt", default="en")
    parser.add_argument("--wrong", default="cs", help="the language of wrong-language targets")
    parser.add_argument("--splits", nargs=3, default=["train", "val", "test_2016_flickr"])
    parser.add_argument("--rate", type=float, default=0.06)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    args = parser.parse_args()
    train, *held = args.splits
    read = lambda lang: (args.data / f"{train}.{lang}").read_text("utf-8").splitlines()  # noqa: E731
    src, tgt, wrong = read(args.src), read(args.tgt), read(args.wrong)
    kinds = tuple(kind for kind in KINDS if kind in args.kinds)
    languages = (args.src, args.tgt)
    pairs, labels = noisy_pairs(
        src, tgt, wrong, args.rate, random.Random(args.seed), kinds, languages
    )
    args.out.mkdir(parents=True, exist_ok=True)
    for lang, side in ((args.src, 0), (args.tgt, 1)):
        text = "".join(pair[side] + "\n" for pair in pairs)
        (args.out / f"{train}.{lang}").write_text(text, "utf-8")
    rows = "".join(
        f"{number}\t{kind}\t{intact}\n" for number, (kind, intact) in enumerate(labels, 1)
    )
    (args.out / "labels.tsv").write_text("line\tkind\tsource\ttarget\n" + rows, "utf-8")
    for split in held:
        for lang in (args.src, args.tgt):
            shutil.copyfile(args.data / f"{split}.{lang}", args.out / f"{split}.{lang}")
    found = [kind for kind, _ in labels]
    counts = {kind: found.count(kind) for kind in (*kinds, "duplicate", "clean")}
    print(f"wrote {args.out}: {len(pairs)} pairs, {counts}")


def noisy_pairs(
    src: list[str],
    tgt: list[str],
    wrong: list[str],
    rate: float,
    generator: random.Random,
    kinds: tuple[str, ...],
    languages: tuple[str, str],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The pairs with noise of each kind at `rate`, and each pair's kind with, for the
    kinds cleaning can repair, the intact pair as "source\ttarget" ("\t" for the others)."""
    count = round(rate * len(src))
    chosen = generator.sample(range(len(src)), count * len(kinds))
    pairs, labels = list(zip(src, tgt, strict=True)), ["clean"] * len(src)
    for number, kind in enumerate(kinds):
        rows = chosen[number * count : (number + 1) * count]
        others = rows[1:] + rows[:1]  # each misaligned target is the next chosen pair's
        for row, other in zip(rows, others, strict=True):
            noisy = noisy_pair(kind, src[row], tgt, wrong, row, other, generator, languages)
            if noisy != pairs[row]:
                pairs[row], labels[row] = noisy, kind
    intact = [f"{s}\t{t}" for s, t in zip(src, tgt, strict=True)]
    # duplicates: copies of distinct clean pairs, each inserted before a random pair (or
    # at the end); of each two equal pairs the later is labelled
    clean = [i for i, label in enumerate(labels) if label == "clean"]
    originals = generator.sample(clean, count)
    slots: dict[int, list[int]] = {}
    for original in originals:
        slots.setdefault(generator.randrange(len(pairs) + 1), []).append(original)
    merged: list[tuple[int, bool]] = []  # (the pair's index before insertion, is it a copy)
    for index in range(len(pairs) + 1):
        merged += [(original, True) for original in slots.get(index, [])]
        if index < len(pairs):
            merged.append((index, False))
    position = {(index, copied): at for at, (index, copied) in enumerate(merged)}
    later = {max(position[(o, True)], position[(o, False)]) for o in originals}
    labelled = [
        ("duplicate" if at in later else labels[index], intact[index])
        for at, (index, _) in enumerate(merged)
    ]
    labels = [(kind, text if kind in REPAIRABLE else "\t") for kind, text in labelled]
    pairs = [pairs[index] for index, _ in merged]
    return pairs, labels


def noisy_pair(kind, source, tgt, wrong, row, other, generator, languages) -> tuple[str, str]:
    if kind == "mojibake":
        codec = generator.choice(["latin-1", "sloppy-windows-1252"])
        return tuple(side.encode("utf-8").decode(codec) for side in (source, tgt[row]))
    if kind == "markup":
        template, page = generator.choice(MARKUP), generator.randrange(10_000)
        return tuple(
            template.format(text=html.escape(side, quote=False), url=_url(language, page))
            for side, language in zip((source, tgt[row]), languages, strict=True)
        )
    return source, noisy_target(kind, source, tgt, wrong, row, other, generator)


def _url(language: str, page: int) -> str:
    return f"https://www.example.com/{language}/gallery/{page}.html"


def noisy_target(kind, source, tgt, wrong, row, other, generator) -> str:
    if kind == "misaligned":
        return tgt[other]
    if kind == "copy":
        return source
    if kind == "wrong_language":
        return wrong[row]
    words = tgt[row].split()
    return " ".join(words[: max(1, int(len(words) * generator.uniform(0.2, 0.5)))])


if __name__ == "__main__":
    main()
