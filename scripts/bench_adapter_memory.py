"""What serving adapters side by side costs in memory: the resident memory of a process that
loads a base as `nmt serve` does, alone, with N adapters on it (`--adapter`, sharing its
weights), and with N merged copies served as models of their own.

    python scripts/bench_adapter_memory.py --checkpoint RUN [--adapters 10] [--rank 4]

The adapters are LoRA (train.adapters at its defaults, the layers' rank `--rank`) or bottlenecks
(`--bottleneck 64`), with weights drawn at random: memory does not depend on training. Each
setting loads in a fresh process; prints one JSON line with each one's resident memory (MB)
and its ratio to the base's alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

LOADER = """
import gc, json, sys
from pathlib import Path
from nmt.serve.loading import load_models
specs, adapters = json.loads(sys.argv[1]), json.loads(sys.argv[2])
models = load_models(specs, device="cpu", adapters=adapters)
gc.collect()
rss = next(int(l.split()[1]) for l in Path("/proc/self/status").read_text().splitlines()
           if l.startswith("VmRSS:"))
print(rss / 1024)
"""


def resident_mb(specs: list[str], adapters: list[str]) -> float:
    out = subprocess.run(
        [sys.executable, "-c", LOADER, json.dumps(specs), json.dumps(adapters)],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return float(out.strip().splitlines()[-1])


def write_adapters(base: Path, directory: Path, count: int, sets: list[str]) -> list[Path]:
    """`count` adapter checkpoints on `base`, their weights drawn at random, each merged too
    (ADAPTER.merged.pt) where LoRA merges."""
    import torch

    from nmt.checkpoint import (
        base_reference,
        checkpoint_file,
        checkpoint_payload,
        load_checkpoint,
        restore_model,
        save_checkpoint,
    )
    from nmt.config import checkpoint_config, config_to_dict, resolve_config
    from nmt.model.adapters import add_adapters, has_adapters, merged, trained_state

    base = checkpoint_file(base)
    payload = load_checkpoint(base)
    config = checkpoint_config(payload["config"])
    adapted = resolve_config(config_to_dict(config), [f"train.init_from={base}", *sets], "bench")
    paths = []
    for number in range(count):
        model, tokenizer, _ = restore_model(payload, base)
        add_adapters(model, adapted.train.adapters)
        generator = torch.Generator().manual_seed(number)
        with torch.no_grad():
            for tensor in trained_state(model).values():
                tensor.copy_(0.02 * torch.randn(tensor.shape, generator=generator))
        path = directory / f"adapter{number}.pt"
        reference = base_reference(payload, base)
        save_checkpoint(path, checkpoint_payload(model, adapted, tokenizer, 0, {}, reference))
        merged(model)
        if not has_adapters(model):
            save_checkpoint(
                path.with_suffix(".merged.pt"), checkpoint_payload(model, config, tokenizer, 0, {})
            )
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--adapters", type=int, default=10)
    parser.add_argument("--rank", type=int, default=4)
    parser.add_argument("--bottleneck", type=int, help="bottleneck units instead of LoRA")
    args = parser.parse_args()
    if args.bottleneck:
        sets = ["train.adapters.type=bottleneck", f"train.adapters.size={args.bottleneck}"]
    else:
        sets = [f"train.adapters.rank={args.rank}", f"train.adapters.alpha={2 * args.rank}"]
    with tempfile.TemporaryDirectory() as directory:
        paths = write_adapters(args.checkpoint, Path(directory), args.adapters, sets)
        base = [f"base={args.checkpoint}"]
        alone = resident_mb(base, [])
        shared = resident_mb(base, [f"a{n}={path}" for n, path in enumerate(paths)])
        found = {"base_mb": round(alone), "with_adapters_mb": round(shared),
                 "adapters": args.adapters, "ratio": round(shared / alone, 3)}  # fmt: skip
        copies = [path.with_suffix(".merged.pt") for path in paths]
        if all(copy.exists() for copy in copies):
            full = resident_mb([*base, *(f"m{n}={copy}" for n, copy in enumerate(copies))], [])
            found.update(merged_copies_mb=round(full), merged_ratio=round(full / alone, 3))
        print(json.dumps({"adapter": sets, **found}))


if __name__ == "__main__":
    main()
