"""A translation memory's own cost: building it, and looking sentences up (exact and fuzzy),
in seconds and peak memory, for a corpus's train split and for the demo generator's pairs
scaled up (1M by default).

    python scripts/bench_memory.py --data DIR --src-lang de --tgt-lang en [--queries 1000]
    python scripts/bench_memory.py --demo 1000000 [--queries 1000]

Queries are the corpus's valid sources (or, for the demo, fresh sentences of its grammar);
the memory is built in this process, so peak RSS covers reading, building and searching.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path)
    parser.add_argument("--src-lang", default="de")
    parser.add_argument("--tgt-lang", default="en")
    parser.add_argument("--demo", type=int, help="pairs of the demo grammar instead of --data")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--threshold", type=float, default=0.5)
    args = parser.parse_args()

    from nmt.data.memory import TranslationMemory, band_of

    started_rss = peak_rss_mb()
    if args.demo:
        from nmt.data.demo import generate_pairs

        pairs = generate_pairs(args.demo + args.queries, seed=11)
        sources, targets = [s for s, _ in pairs[: args.demo]], [t for _, t in pairs[: args.demo]]
        queries = [s for s, _ in pairs[args.demo :]]
        languages = ("en", "de")
    else:

        def read(split: str, lang: str) -> list[str]:
            return (args.data / f"{split}.{lang}").read_text("utf-8").splitlines()

        sources, targets = read("train", args.src_lang), read("train", args.tgt_lang)
        queries = read("val", args.src_lang)[: args.queries]
        languages = (args.src_lang, args.tgt_lang)
    read_rss = peak_rss_mb()
    started = time.perf_counter()
    memory = TranslationMemory.build(sources, targets, *languages)
    build_seconds = time.perf_counter() - started
    built_rss = peak_rss_mb()
    started = time.perf_counter()
    found = [memory.best(query, args.threshold) for query in queries]
    search_seconds = time.perf_counter() - started
    started = time.perf_counter()
    for query in queries:
        memory.exact(query)
    exact_seconds = time.perf_counter() - started
    bands: dict[str, int] = {}
    for match in found:
        bands[band_of(match)] = bands.get(band_of(match), 0) + 1
    print(json.dumps({
        "pairs": len(memory),
        "queries": len(queries),
        "build_s": round(build_seconds, 2),
        "ms_per_fuzzy_query": round(1000 * search_seconds / len(queries), 3),
        "ms_per_exact_query": round(1000 * exact_seconds / len(queries), 4),
        "rss_mb_before": round(started_rss), "rss_mb_read": round(read_rss),
        "rss_mb_built": round(built_rss), "rss_mb_peak": round(peak_rss_mb()),
        "index_mb": round(sum(a.nbytes for a in memory.arrays.values()) / 2**20, 1),
        "bands": bands,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
