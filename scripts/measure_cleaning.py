"""What `nmt clean` removed from a corpus that scripts/inject_noise.py labelled, filter by
filter: precision (the share of a filter's removals that are injected noise) and recall of
the noise kind it is for (the share of that kind it removed); and, given a clean of the
original corpus, the share of real pairs each filter removes (its false positives).

    python scripts/measure_cleaning.py --labels noisy/labels.tsv --cleaned cleaned \
        [--original-cleaned cleaned_original]
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
}


def removed_lines(directory: Path) -> dict[int, str]:
    """Line -> the filter that removed it, from a clean's removed.tsv."""
    with (directory / "removed.tsv").open(encoding="utf-8") as handle:
        rows = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return {int(row["line"]): row["filter"] for row in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--cleaned", type=Path, required=True)
    parser.add_argument("--original-cleaned", type=Path)
    args = parser.parse_args()
    with args.labels.open(encoding="utf-8") as handle:
        labels = {int(row["line"]): row["kind"] for row in csv.DictReader(handle, delimiter="\t")}
    removed = removed_lines(args.cleaned)
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
    print("\n| noise kind | pairs | removed by any filter |")
    print("|---|---|---|")
    for kind, count in sorted(kinds.items()):
        if kind != "clean":
            caught = sum(1 for line, k in labels.items() if k == kind and line in removed)
            print(f"| {kind} | {count} | {caught / count:.1%} |")
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
