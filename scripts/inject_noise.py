"""Makes a noisy copy of a parallel corpus with every noisy pair labelled, to measure what
`nmt clean` removes (docs/cleaning.md).

Of the train split's pairs, a share `--rate` of each kind (disjoint, drawn with `--seed`):

  misaligned      the target of another pair of the same kind (the targets shuffled)
  copy            the source copied as the target
  wrong_language  the target in another language: the same sentence's `--wrong` side
  truncated       the target cut to its first 20 to 50% of words (one at least)
  duplicate       a copy of another pair, inserted at a random place (the later of the two
                  equal pairs is labelled: cleaning keeps the first)

The replacements keep the corpus's size; the duplicates add `--rate` of it. Written: OUT's
train files, OUT/labels.tsv (line, kind: one row per train pair, `clean` for the others),
and the valid and test files copied as they are.

    python scripts/inject_noise.py --data ../shared/data/multi30k --out noisy \
        --src de --tgt en --wrong cs --splits train val test_2016_flickr
"""

from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path

KINDS = ("misaligned", "copy", "wrong_language", "truncated")


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
    args = parser.parse_args()
    train, *held = args.splits
    read = lambda lang: (args.data / f"{train}.{lang}").read_text("utf-8").splitlines()  # noqa: E731
    src, tgt, wrong = read(args.src), read(args.tgt), read(args.wrong)
    pairs, labels = noisy_pairs(src, tgt, wrong, args.rate, random.Random(args.seed))
    args.out.mkdir(parents=True, exist_ok=True)
    for lang, side in ((args.src, 0), (args.tgt, 1)):
        text = "".join(pair[side] + "\n" for pair in pairs)
        (args.out / f"{train}.{lang}").write_text(text, "utf-8")
    rows = "".join(f"{number}\t{kind}\n" for number, kind in enumerate(labels, 1))
    (args.out / "labels.tsv").write_text("line\tkind\n" + rows, "utf-8")
    for split in held:
        for lang in (args.src, args.tgt):
            shutil.copyfile(args.data / f"{split}.{lang}", args.out / f"{split}.{lang}")
    counts = {kind: labels.count(kind) for kind in (*KINDS, "duplicate", "clean")}
    print(f"wrote {args.out}: {len(pairs)} pairs, {counts}")


def noisy_pairs(
    src: list[str], tgt: list[str], wrong: list[str], rate: float, generator: random.Random
) -> tuple[list[tuple[str, str]], list[str]]:
    """The pairs with noise of each kind at `rate`, and each pair's kind."""
    count = round(rate * len(src))
    chosen = generator.sample(range(len(src)), count * len(KINDS))
    pairs, labels = list(zip(src, tgt, strict=True)), ["clean"] * len(src)
    for number, kind in enumerate(KINDS):
        rows = chosen[number * count : (number + 1) * count]
        others = rows[1:] + rows[:1]  # each misaligned target is the next chosen pair's
        for row, other in zip(rows, others, strict=True):
            pairs[row] = (src[row], noisy_target(kind, src[row], tgt, wrong, row, other, generator))
            labels[row] = kind
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
    labels = ["duplicate" if at in later else labels[index] for at, (index, _) in enumerate(merged)]
    pairs = [pairs[index] for index, _ in merged]
    return pairs, labels


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
