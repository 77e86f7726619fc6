"""What a translation memory buys: models trained with data.fuzzy_matches (Neural Fuzzy
Repair; augmented sources in place of the originals, or added to them: keep_originals) and
one without, the same config and steps, each translating valid and test with and without
the memory of the train split; BLEU overall (a paired bootstrap p-value against the model
without matches translating without the memory) and per band of each source's best match
(exact, 90-100, 70-90, 50-70, no match), and sentences/s (the median of --repeats).

    python scripts/memory_eval.py --data DIR [--src-lang de --tgt-lang en] [--steps 1750]
        [--config configs/multi30k_de_en_best.yaml] [--runs DIR] [--repeats 3]
        [--set KEY=VALUE ...]

The memory is built from the train split (nmt tm build); the runs train one after another
and are kept (run it again to reuse them). Prints one JSON line per run and setting.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def nmt(*args: str) -> None:
    print("+ nmt", " ".join(args), file=sys.stderr, flush=True)
    subprocess.run(["nmt", *args], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--src-lang", default="de")
    parser.add_argument("--tgt-lang", default="en")
    parser.add_argument("--config", default="configs/multi30k_de_en_best.yaml")
    parser.add_argument("--steps", type=int, default=1750)
    parser.add_argument("--runs", type=Path, default=Path("runs/memory_eval"))
    parser.add_argument("--repeats", type=int, default=3, help="timed translations, median")
    parser.add_argument("--set", action="append", default=[], dest="amend")
    args = parser.parse_args()
    data, runs = args.data.resolve(), args.runs
    runs.mkdir(parents=True, exist_ok=True)
    memory_file = runs / "train.tm.npz"
    if not memory_file.exists():
        nmt("tm", "build", "--data", str(data), "--src-lang", args.src_lang,
            "--tgt-lang", args.tgt_lang, "--out", str(memory_file))  # fmt: skip
    common = [f"data.path={data}", f"data.src_lang={args.src_lang}",
              f"data.tgt_lang={args.tgt_lang}", f"train.max_steps={args.steps}",
              "train.max_minutes=null", *args.amend]  # fmt: skip
    fuzzy = [*common, "data.fuzzy_matches.threshold=0.5"]
    systems = {
        "plain": common,
        "fuzzy": fuzzy,
        "fuzzy_originals": [*fuzzy, "data.fuzzy_matches.keep_originals=true"],
    }
    for name, sets in systems.items():
        run_dir = runs / name
        if not (run_dir / "done").exists():
            resume = ["--resume"] if (run_dir / "last.pt").exists() else ["--overwrite"]
            options = [option for value in sets for option in ("--set", value)]
            nmt("train", "--config", args.config, *options, "--run-dir", str(run_dir), *resume)
            (run_dir / "done").touch()
    from nmt.data.memory import TranslationMemory
    from nmt.scoring import compare
    from nmt.translate.memory import band_scores
    from nmt.translate.translator import Translator

    memory = TranslationMemory.load(memory_file)
    splits = {}  # split -> (sources, references)
    for split, stem in {"valid": "val", "test": "test_2016_flickr"}.items():
        sources = (data / f"{stem}.{args.src_lang}").read_text("utf-8").splitlines()
        references = (data / f"{stem}.{args.tgt_lang}").read_text("utf-8").splitlines()
        splits[split] = sources, references
    outputs = {split: {} for split in splits}  # split -> (run, memory) -> hypotheses
    speeds = {split: {} for split in splits}  # split -> (run, memory) -> sentences/s
    for name in systems:
        for with_memory in (False, True):
            translator = Translator.load(
                runs / name, memory=memory_file if with_memory else None, beam=5
            )
            for split, (sources, _) in splits.items():
                seconds = []
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    hypotheses = [t.text for t in translator.translate(sources)]
                    seconds.append(time.perf_counter() - started)
                outputs[split][name, with_memory] = hypotheses
                speeds[split][name, with_memory] = len(sources) / statistics.median(seconds)
    for split, (sources, references) in splits.items():
        found = outputs[split]
        rows, _ = compare([(str(key), hyps) for key, hyps in found.items()], references)
        for (name, with_memory), row in zip(found, rows, strict=True):
            print(json.dumps({
                "run": name, "memory": with_memory, "split": split, "bleu": row.bleu,
                "bleu_p_against_plain": row.bleu_p,
                "sentences_per_s": round(speeds[split][name, with_memory], 1),
                "bands": band_scores(memory, sources, found[name, with_memory], references),
            }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
