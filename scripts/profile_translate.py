"""Where translation spends its time: torch's profiler over `nmt.Translator.translate` on a
file, the operators with the most self CPU time, and the share of the whole each takes.

    python scripts/profile_translate.py --checkpoint runs/X/best.pt --input test.de --beam 5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from nmt import Translator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--input", type=Path, required=True)
    parser.add_argument("--lines", type=int, default=500, help="the first N lines")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--shortlist", type=int, default=0)
    parser.add_argument("--top", type=int, default=15, help="operators listed")
    args = parser.parse_args()
    options = {"beam": args.beam, **({"shortlist": args.shortlist} if args.shortlist else {})}
    translator = Translator.load(args.checkpoint, **options)
    lines = args.input.read_text("utf-8").splitlines()[: args.lines]
    translator.translate(lines[:64])  # warm-up
    started = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        translator.translate(lines)
    seconds = time.perf_counter() - started
    events = [event for event in profiler.key_averages() if event.self_cpu_time_total > 0]
    total = sum(event.self_cpu_time_total for event in events)
    events.sort(key=lambda event: event.self_cpu_time_total, reverse=True)
    print(f"{len(lines)} lines, beam {args.beam}: {seconds:.2f} s under the profiler")
    print(f"{'operator':<36} {'self ms':>9} {'share':>6} {'calls':>8}")
    for event in events[: args.top]:
        share = event.self_cpu_time_total / total
        milliseconds = event.self_cpu_time_total / 1000
        print(f"{event.key:<36} {milliseconds:>9.1f} {share:>6.1%} {event.count:>8}")


if __name__ == "__main__":
    torch.set_num_threads(torch.get_num_threads())
    main()
