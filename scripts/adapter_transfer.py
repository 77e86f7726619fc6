"""Adapters against full fine-tuning for a low-resource pair: Czech→English from 5,000 pairs
on a German→English parent, the setting of docs/results.md's "transfer to a low-resource
pair" (full fine-tuning at lr 0.0005: 31.0 test BLEU there).

    python scripts/adapter_transfer.py --data DIR [--runs DIR] [--children "full lora4 ..."]

1. tokenizer: a joint BPE of the 5,000 Czech pairs and the German and English sides (one
   step of the two-way config writes it);
2. parent: configs/multi30k_de_en_transformer.yaml, --parent-steps (1750) on 29k de-en;
3. children on the first 5,000 cs-en pairs, --child-steps (580) each, one after another:
   full (every weight, lr 0.0005), lora4, lora8, lora16, lora64 (attention and feed-forward,
   alpha 2r, lr 0.002), bottleneck (64 units, lr 0.002), and lora8_embeddings and
   lora16_embeddings (the embeddings and output layer adapted too; the latter at lr 0.004
   too), and lora8_embeddings48, lora8_embeddings56 and lora4_embeddings64 (rank 48, 56 or
   64 on the embeddings and output, 8 or 4 on the layers);
4. each child's valid BLEU at beam 5 and alpha 0.6, 1.0 and 1.5, the best alpha on test.

Prints one JSON line per child: minutes of training, peak RSS of its training process,
best.pt bytes, the share of parameters that learn, valid and test BLEU. Finished runs are
kept and reused: run it again to go on.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import torch

# each child's adapters spelt out in full, whatever the defaults are
LAYERS = ["train.adapters.targets=[attention,feed_forward]", "train.adapters.ranks={}"]
LORA = ["train.lr=0.002", "train.adapters.type=lora", *LAYERS]
CHILDREN = {
    "full": ["train.lr=0.0005"],
    "lora4": [*LORA, "train.adapters.rank=4", "train.adapters.alpha=8"],
    "lora8": [*LORA, "train.adapters.rank=8", "train.adapters.alpha=16"],
    "lora16": [*LORA, "train.adapters.rank=16", "train.adapters.alpha=32"],
    "lora64": [*LORA, "train.adapters.rank=64", "train.adapters.alpha=128"],
    "bottleneck": ["train.lr=0.002", "train.adapters.type=bottleneck", "train.adapters.size=64"],
}
# A new source language's pieces have embeddings the parent never trained: these adapt them too
WITH_EMBEDDINGS = "train.adapters.targets=[attention,feed_forward,embeddings,output]"
CHILDREN["lora8_embeddings"] = [*CHILDREN["lora8"], WITH_EMBEDDINGS]
CHILDREN["lora16_embeddings"] = [*CHILDREN["lora16"], WITH_EMBEDDINGS]
# LoRA's learning rate, on valid: twice the one above
CHILDREN["lora16_embeddings_lr0.004"] = [*CHILDREN["lora16_embeddings"], "train.lr=0.004"]
# about the same share of the parameters (8.8%; 9.7% for r56), the embeddings' rank wider
# than the layers' (lora4_embeddings64: the defaults val chose)
for layers, wide in ((8, 48), (8, 56), (4, 64)):
    CHILDREN[f"lora{layers}_embeddings{wide}"] = [
        *CHILDREN[f"lora{layers}"],
        WITH_EMBEDDINGS,
        f"train.adapters.ranks={{embeddings: {wide}, output: {wide}}}",
    ]
ALPHAS = ("0.6", "1.0", "1.5")
CONFIG = "configs/multi30k_de_en_transformer.yaml"


def run(command: list[str]) -> tuple[float, float]:
    """Runs `command` to its end; (minutes, peak RSS in MB of that process)."""
    print("+", " ".join(command), file=sys.stderr, flush=True)
    started = time.perf_counter()
    process = subprocess.Popen(command)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(command)}")
    return (time.perf_counter() - started) / 60, usage.ru_maxrss / 1024


def train(run_dir: Path, sets: list[str]) -> tuple[float, float] | None:
    """Trains into `run_dir` unless it holds a finished run (best.pt and no last.pt step
    short of the budget); None when reused."""
    if (run_dir / "done").exists():
        return None
    options = [option for value in sets for option in ("--set", value)]
    resume = ["--resume"] if (run_dir / "last.pt").exists() else ["--overwrite"]
    measured = run(
        ["nmt", "train", "--config", CONFIG, *options, "--run-dir", str(run_dir), *resume]
    )
    (run_dir / "done").write_text(json.dumps(measured))
    return measured


def bleu(checkpoint: Path, src: Path, ref: Path, alpha: str) -> float:
    out = subprocess.run(
        ["nmt", "eval", "--checkpoint", str(checkpoint), "--src", str(src), "--ref", str(ref),
         "--tgt-lang", "en", "--beam", "5", "--alpha", alpha, "--json"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return json.loads(out)["bleu"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--runs", type=Path, default=Path("runs/adapter_transfer"))
    parser.add_argument("--children", default=" ".join(CHILDREN))
    parser.add_argument("--parent-steps", type=int, default=1750)
    parser.add_argument("--child-steps", type=int, default=580)
    args = parser.parse_args()
    data, runs = args.data.resolve(), args.runs
    runs.mkdir(parents=True, exist_ok=True)
    common = [f"data.path={data}", "train.max_minutes=null"]
    two_way = runs / "tokenizer"
    train(two_way, [*common, "train.max_steps=1", "data.directions=[cs-en,de-en]",
                    "data.max_pairs={cs-en: 5000}", "data.splits.test=null",
                    "train.valid_max_sentences=10"])  # fmt: skip
    spm = two_way / "spm.model"
    parent = runs / "parent"
    measured = train(parent, [*common, f"train.max_steps={args.parent_steps}",
                              f"tokenizer.model={spm}"])  # fmt: skip
    if measured:
        print(json.dumps({"run": "parent", "minutes": round(measured[0], 1)}), flush=True)
    child_data = [
        *common,
        "data.src_lang=cs",
        "data.max_pairs={cs-en: 5000}",
        f"train.max_steps={args.child_steps}",
        f"train.init_from={parent / 'best.pt'}",
    ]
    weights = torch.load(parent / "best.pt", weights_only=True)["model"]
    base_parameters = sum({t.data_ptr(): t.numel() for t in weights.values()}.values())
    for name in args.children.split():
        run_dir = runs / name
        train(run_dir, [*child_data, *CHILDREN[name]])
        minutes, rss = json.loads((run_dir / "done").read_text())
        best = run_dir / "best.pt"
        log = (run_dir / "train.log").read_text("utf-8")
        share = re.search(r"([0-9.]+)% of the base's", log)
        valid = {alpha: bleu(best, data / "val.cs", data / "val.en", alpha) for alpha in ALPHAS}
        chosen = max(valid, key=valid.get)
        test = bleu(best, data / "test_2016_flickr.cs", data / "test_2016_flickr.en", chosen)
        print(json.dumps({
            "run": name, "minutes": round(minutes, 1), "peak_rss_mb": round(rss),
            "best_pt_mb": round(best.stat().st_size / 2**20, 2),
            "base_parameters": base_parameters,
            "learning_share_percent": float(share.group(1)) if share else 100.0,
            "valid_bleu": valid, "alpha": chosen, "test_bleu": test,
        }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
