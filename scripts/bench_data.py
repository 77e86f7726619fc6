"""Preprocessing throughput and peak memory of the training-data paths, 100k vs 1M pairs.

    python scripts/bench_data.py [--sizes 100000 1000000] [--num-proc 2] [--work DIR]

Writes demo-grammar corpora of each size into --work (once), trains one SentencePiece model
on the first 100k pairs, then measures, each in a fresh process so peak RSS is its own:

- memory: read all pairs, encode in this process, TokenBatcher (the default path)
- cached: datasets.map tokenisation (--num-proc processes) into an Arrow cache, then the
          epoch's batches read back from it; `cached again` is a rerun that reuses the cache
- stream: an IterableDataset tokenised as it is read, batched pool by pool

For each: pairs per second from files to one epoch of token batches, and the peak RSS of
the process (and of its worker processes, for datasets.map). The baseline row is the RSS
of a process that has only imported torch and datasets.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

BATCH_TOKENS = 4000


def write_corpus(directory: Path, size: int) -> None:
    """Demo-grammar pairs in chunks of 100k (distinct seeds), so memory stays small."""
    from nmt.data.demo import generate_pairs

    if (directory / "train.de").exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "train.en").open("w") as en, (directory / "train.de").open("w") as de:
        for chunk in range(0, size, 100_000):
            for english, german in generate_pairs(min(100_000, size - chunk), seed=1000 + chunk):
                en.write(english + "\n")
                de.write(german + "\n")
    for split in ("valid", "test"):
        pairs = generate_pairs(100, seed=7)
        (directory / f"{split}.en").write_text("".join(e + "\n" for e, _ in pairs))
        (directory / f"{split}.de").write_text("".join(g + "\n" for _, g in pairs))


def train_tokenizer(corpus: Path, work: Path) -> Path:
    from itertools import islice

    from nmt.config import TokenizerConfig
    from nmt.data.tokenizer import build_tokenizer

    path = work / "spm.model"
    if not path.exists():
        with (corpus / "train.en").open() as en, (corpus / "train.de").open() as de:
            src = [line.rstrip("\n") for line in islice(en, 100_000)]
            tgt = [line.rstrip("\n") for line in islice(de, 100_000)]
        tokenizer = build_tokenizer(TokenizerConfig(vocab_size=1000), src, tgt, work / "cache")
        path.write_bytes(tokenizer.src.model_proto)
    return path


def measure(mode: str, corpus: Path, spm: Path, num_proc: int, cache: Path) -> dict:
    """Runs in its own process: one path from files to an epoch of batches."""
    import datasets  # noqa: F401 - imported up front so the baseline includes it
    import torch  # noqa: F401

    from nmt.config import DataConfig, Experiment, TrainConfig
    from nmt.data.corpus import StreamSource, arrow_source, memory_source
    from nmt.data.splits import load_split
    from nmt.data.tokenizer import Tokenizer, Vocab

    datasets.disable_progress_bars()
    vocab = Vocab(spm.read_bytes())
    tokenizer = Tokenizer(vocab, vocab)
    data = DataConfig(src_lang="en", tgt_lang="de", path=str(corpus), num_proc=num_proc)
    config = Experiment(data=data, train=TrainConfig(batch_tokens=BATCH_TOKENS))
    baseline = _peak_rss_mb()
    started = time.perf_counter()
    if mode == "baseline":
        source = None
    elif mode == "memory":
        source = memory_source({"train": load_split(data, "train")}, tokenizer, config)
    elif mode.startswith("cached"):
        source = arrow_source(config, tokenizer, cache)
    else:
        source = StreamSource(data, tokenizer, BATCH_TOKENS, seed=42)
    prepared = time.perf_counter() - started
    pairs = batches = 0
    for src, _ in source.batches(0) if source else ():
        pairs += len(src)
        batches += 1
    seconds = time.perf_counter() - started
    return {
        "mode": mode,
        "pairs": pairs,
        "batches": batches,
        "prepare_s": round(prepared, 1),
        "total_s": round(seconds, 1),
        "pairs_per_s": round(pairs / seconds) if pairs else None,
        "baseline_rss_mb": baseline,
        "peak_rss_mb": _peak_rss_mb(),
        "workers_peak_rss_mb": _peak_rss_mb(resource.RUSAGE_CHILDREN),
    }


def _peak_rss_mb(who: int = resource.RUSAGE_SELF) -> int:
    return round(resource.getrusage(who).ru_maxrss / 1024)  # Linux reports KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--num-proc", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/nmt-bench-data"))
    parser.add_argument("--measure", nargs=3, metavar=("MODE", "CORPUS", "CACHE"))
    parser.add_argument(
        "--modes", nargs="+", default=["memory", "cached", "cached again", "stream"]
    )
    args = parser.parse_args()
    spm = args.work / "spm.model"
    if args.measure:
        mode, corpus, cache = args.measure
        print(json.dumps(measure(mode, Path(corpus), spm, args.num_proc, Path(cache))))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    print(
        f"{'pairs':>9} {'path':<13} {'pairs/s':>8} {'total s':>8} {'peak RSS':>9} "
        f"{'workers':>8} {'baseline':>9}"
    )
    for size in args.sizes:
        corpus = args.work / f"corpus-{size}"
        write_corpus(corpus, size)
        train_tokenizer(args.work / f"corpus-{args.sizes[0]}", args.work)
        cache = args.work / f"arrow-{size}"
        subprocess.run(["rm", "-rf", str(cache)], check=True)
        for mode in ["baseline", *args.modes]:
            command = [sys.executable, __file__, "--measure", mode, str(corpus), str(cache)]
            command += ["--work", str(args.work), "--num-proc", str(args.num_proc)]
            output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            row = json.loads(output.strip().splitlines()[-1])
            print(
                f"{size:>9} {mode:<13} {row['pairs_per_s'] or '-':>8} {row['total_s']:>8} "
                f"{row['peak_rss_mb']:>6} MB {row['workers_peak_rss_mb']:>5} MB "
                f"{row['baseline_rss_mb']:>6} MB",
                flush=True,
            )


if __name__ == "__main__":
    main()
