"""What `nmt clean` removed from a corpus that scripts/inject_noise.py labelled, filter by
filter: precision (the share of a filter's removals that are injected noise) and recall of
the noise kind it is for (the share of that kind it removed); each noise kind's share
handled, removed or, for the kinds cleaning repairs (mojibake, markup), kept as the intact
pair (up to spacing); and, given a clean of the original corpus, the share of real pairs
each filter removes (its false positives).

    python scripts/measure_cleaning.py --labels noisy/labels.tsv --cleaned cleaned \
        [--src de --tgt en] [--original-cleaned cleaned_original]
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
from pathlib import Path

# the noise kind each filter is for; the others are judged by precision alone
AIMED = {
    "length_ratio": "truncated",
    "copy": "copy",
    "language": "wrong_language",
    "duplicate": "duplicate",
    "dual_cross_entropy": "misaligned",
    "markup": "markup",
}


def removed_lines(directory: Path) -> dict[int, str]:
    """Line -> the filter that removed it, from a clean's removed.tsv."""
    with (directory / "removed.tsv").open(encoding="utf-8") as handle:
        rows = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return {int(row["line"]): row["filter"] for row in rows}


def kept_pairs(directory: Path, src: str, tgt: str, lines: int, removed) -> dict:
    """Line -> the pair a clean kept there (its train files hold the kept pairs in order)."""
    read = lambda lang: (directory / f"train.{lang}").read_text("utf-8").splitlines()  # noqa: E731
    kept = [line for line in range(1, lines + 1) if line not in removed]
    return dict(zip(kept, zip(read(src), read(tgt), strict=True), strict=True))


def spaced(pair: tuple[str, str] | None) -> tuple[str, ...] | None:
    """A pair with its spaces collapsed, as stripping markup leaves them ("am  Strand", a
    double space of Multi30k's own, is "am Strand" then)."""
    return pair and tuple(" ".join(side.split()) for side in pair)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--cleaned", type=Path, required=True)
    parser.add_argument("--original-cleaned", type=Path)
    parser.add_argument("--src", default="de")
    parser.add_argument("--tgt", default="en")
    args = parser.parse_args()
    with args.labels.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    labels = {int(row["line"]): row["kind"] for row in rows}
    intact = {
        int(row["line"]): spaced((row["source"], row["target"])) for row in rows if row["source"]
    }
    removed = removed_lines(args.cleaned)
    kept = kept_pairs(args.cleaned, args.src, args.tgt, len(labels), removed)
    kinds = collections.Counter(labels.values())
    print("| filter | removed | noise among them | precision | aimed at | recall |")
    print("|---|---|---|---|---|---|")
    by_filter: dict[str, list[int]] = collections.defaultdict(list)
    for line, name in removed.items():
        by_filter[name].append(line)
    for name, lines in sorted(by_filter.items()):
        noise = sum(labels[line] != "clean" for line in lines)
        aimed = AIMED.get(name)
        recall = ""
        if aimed:
            caught = sum(labels[line] == aimed for line in lines)
            recall = f"{caught / kinds[aimed]:.1%} ({caught}/{kinds[aimed]})"
        print(
            f"| {name} | {len(lines)} | {noise} | {noise / len(lines):.1%} | {aimed or '-'} "
            f"| {recall or '-'} |"
        )
    print(
        "\n| noise kind | pairs | removed by any filter | repaired to the intact pair | handled |"
    )
    print("|---|---|---|---|---|")
    for kind, count in sorted(kinds.items()):
        if kind != "clean":
            lines = [line for line, k in labels.items() if k == kind]
            caught = sum(line in removed for line in lines)
            repaired = sum(
                line in intact and spaced(kept.get(line)) == intact[line] for line in lines
            )
            print(
                f"| {kind} | {count} | {caught / count:.1%} | {repaired / count:.1%} "
                f"| {(caught + repaired) / count:.1%} |"
            )
    clean_removed = sum(1 for line, k in labels.items() if k == "clean" and line in removed)
    print(f"\nclean pairs removed: {clean_removed} of {kinds['clean']}")
    if args.original_cleaned:
        report = json.loads((args.original_cleaned / "report.json").read_text("utf-8"))
        total = report["pairs_in"]
        print("\n| filter | original pairs removed | share |")
        print("|---|---|---|")
        for name, count in report["removed"].items():
            print(f"| {name} | {count} | {count / total:.2%} |")
        gone = total - report["pairs_out"]
        print(f"| all | {gone} | {gone / total:.2%} |")


if __name__ == "__main__":
    main()
