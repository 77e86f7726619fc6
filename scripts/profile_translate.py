"""Where translation spends its time: Python's profiler over `nmt.Translator.translate` on the
first lines of a file, after a warm-up batch; the functions (torch's operators among them)
with the most time of their own, and the share of the whole each takes. Python's profiler,
not torch's: torch's counts only the operators and misses the Python between them.

    python scripts/profile_translate.py --checkpoint runs/X/best.pt --input test.de --beam 5
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

from nmt import Translator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--input", type=Path, required=True)
    parser.add_argument("--lines", type=int, default=500, help="the first N lines")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--shortlist", type=int, default=0, help="--shortlist K (0: none)")
    parser.add_argument("--top", type=int, default=12, help="functions listed")
    args = parser.parse_args()
    options = {"beam": args.beam, **({"shortlist": args.shortlist} if args.shortlist else {})}
    translator = Translator.load(args.checkpoint, **options)
    lines = args.input.read_text("utf-8").splitlines()[: args.lines]
    translator.translate(lines[:64])  # warm-up
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.runcall(translator.translate, lines)
    seconds = time.perf_counter() - started
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (calls, _, own s, ...)
    rows = sorted(stats.items(), key=lambda item: item[1][2], reverse=True)[: args.top]
    print(f"{len(lines)} lines, beam {args.beam}, shortlist {args.shortlist}: {seconds:.2f} s")
    print(f"{'function':<48} {'own s':>7} {'share':>6} {'calls':>7}")
    for (file, line, name), (_, calls, own, *_) in rows:
        where = name if file == "~" else f"{Path(file).name}:{line}({name})"
        print(f"{where[:48]:<48} {own:>7.2f} {own / seconds:>6.1%} {calls:>7}")


if __name__ == "__main__":
    main()
