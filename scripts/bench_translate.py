"""How fast `nmt translate` is as a whole process, and whether batching costs BLEU.

Each setting (beam size x batch size x workers) runs `python -m nmt translate --input FILE` in
a child process, so interpreter start, imports and checkpoint loading count, and prints one
JSON line: sentences/s, wall seconds, the child's peak resident memory, a digest of the
translations (equal digests: identical output) and, with a reference, BLEU.
An "unbatched reference" run first (greedy, one sentence per batch) gives the BLEU that
batching must not lower: greedy at any batch size should match it.

    python scripts/bench_translate.py --checkpoint /tmp/demo1/best.pt \\
        --input ~/.cache/nmt/demo/v2/test.en --ref ~/.cache/nmt/demo/v2/test.de --beam 1 5
    python scripts/bench_translate.py --checkpoint runs/X/best.pt --quantize int8
    python scripts/bench_translate.py --checkpoint runs/X/best.pt --precision fp32 bf16
    python scripts/bench_translate.py --model exported/X --quantize int8   # CTranslate2
    python scripts/bench_translate.py --checkpoint runs/X/best.pt --workers 1 2 --no-reference
    python scripts/bench_translate.py --checkpoint runs/X/best.pt --shortlist 0 50   # after
        nmt shortlist --checkpoint runs/X/best.pt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkpoint",
        type=Path,
        action="append",
        help="repeat for an ensemble (default: runs/multi30k_de_en_rnnsearch/best.pt)",
    )
    parser.add_argument(
        "--model", type=Path, help="a directory from nmt export, run with --engine ctranslate2"
    )
    parser.add_argument("--quantize", choices=["int8"], help="translate with int8 weights")
    parser.add_argument("--input", type=Path, default=MULTI30K / "test_2016_flickr.de")
    parser.add_argument(
        "--ref", type=Path, help="reference translations for BLEU (default: beside --input)"
    )
    parser.add_argument("--beam", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--alpha", type=float, help="length penalty (default: the model's)")
    parser.add_argument("--batch-size", type=int, nargs="+", default=[64])
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[None],
        help="batches decoded side by side (default: nmt translate's, one per core)",
    )
    parser.add_argument(
        "--shortlist",
        type=int,
        nargs="+",
        default=[0],
        help="--shortlist K of each run (0: none; needs nmt shortlist, or an export with one; "
        "by default the option is not passed)",
    )
    parser.add_argument(
        "--precision",
        nargs="+",
        default=[None],
        choices=["fp32", "bf16", "auto"],
        help="--precision of each run (by default the option is not passed: the model's)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="OMP_NUM_THREADS for the child (on a busy machine, 1 avoids thread contention)",
    )
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="skip the unbatched greedy reference run (one sentence per batch, the slowest)",
    )
    args = parser.parse_args()
    checkpoints = args.checkpoint or [ROOT / "runs" / "multi30k_de_en_rnnsearch" / "best.pt"]
    if args.model:
        model = ["--engine", "ctranslate2", "--model", str(args.model)]
    else:
        model = [arg for c in checkpoints for arg in ("--checkpoint", str(c))]
    model += ["--quantize", args.quantize] if args.quantize else []
    model += ["--alpha", str(args.alpha)] if args.alpha is not None else []
    ref = args.ref or _default_reference(args.input)
    sentences = len(args.input.read_text(encoding="utf-8").splitlines())
    settings = [] if args.no_reference else [("unbatched reference", 1, 1, 1, 0, None)]
    settings += [
        (
            f"beam {beam}, batch {batch}, workers {workers or 'default'}, shortlist {shortlist}"
            + (f", {precision}" if precision else ""),
            beam,
            batch,
            workers,
            shortlist,
            precision,
        )
        for beam in args.beam
        for batch in args.batch_size
        for workers in args.workers
        for shortlist in args.shortlist
        for precision in args.precision
    ]
    for name, beam, batch_size, workers, shortlist, precision in settings:
        options = model + (["--workers", str(workers)] if workers else [])
        # a 0 asked for is passed too: an export's own default may be a shortlist
        options += ["--shortlist", str(shortlist)] if args.shortlist != [0] else []
        options += ["--precision", precision] if precision else []
        result = run_translate(options, args.input, ref, beam, batch_size, args.threads)
        seconds = result.pop("seconds")
        record = {
            "setting": name,
            "model": str(args.model) if args.model else [str(c) for c in checkpoints],
            "quantize": args.quantize,
            "beam": beam,
            "alpha": args.alpha,
            "batch_size": batch_size,
            "workers": workers,
            "shortlist": shortlist,
            "precision": precision,
            "threads": args.threads,
            "sentences": sentences,
            "seconds": round(seconds, 2),
            "sentences_per_s": round(sentences / seconds, 1),
            **result,
        }
        print(json.dumps(record), flush=True)


def run_translate(
    model: list[str],
    input: Path,
    ref: Path | None,
    beam: int,
    batch_size: int,
    threads: int | None,
) -> dict:
    """Wall seconds, peak RSS (MB) of the child alone (os.wait4), and BLEU when `ref` is set.
    `model`: the options naming what translates (checkpoints, or an exported model)."""
    with tempfile.TemporaryDirectory() as scratch:
        output, log = Path(scratch) / "hyp.txt", Path(scratch) / "stderr.txt"
        command = [sys.executable, "-m", "nmt", "translate", "--input", str(input)]
        command += [*model, "--output", str(output), "--beam", str(beam)]
        command += ["--batch-size", str(batch_size), "--nbest", "1", "--no-sample"]
        with log.open("w") as stderr:
            started = time.perf_counter()
            env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
            process = subprocess.Popen(command, stderr=stderr, env=env)
            _, status, usage = os.wait4(process.pid, 0)  # this child's own peak memory
            seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{log.read_text()}")
        result = {"seconds": seconds, "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}
        result["output_sha256"] = hashlib.sha256(output.read_bytes()).hexdigest()[:12]
        if ref is not None:
            from nmt.scoring import score

            hypotheses = output.read_text(encoding="utf-8").splitlines()
            result["bleu"] = score(hypotheses, ref.read_text(encoding="utf-8").splitlines()).bleu
        return result


def _default_reference(input: Path) -> Path | None:
    """test.en -> test.de style: the other file of the same split, if exactly one exists."""
    others = [p for p in input.parent.glob(f"{input.stem}.*") if p != input]
    return others[0] if len(others) == 1 else None


if __name__ == "__main__":
    main()
