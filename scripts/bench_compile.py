"""torch.compile on nmt's own steps, measured against eager: one variant per run, one JSON line.

Training (`--what train`): the trainer's `train_step` on real batches, with the model (or
each Transformer layer: "regional") compiled; warm-up steps cover compilation, then steps/s
over timed steps, the compile time (the warm-up's wall time beyond eager's), recompilations
and graph breaks. Translation (`--what translate`): greedy or beam search over the first
sentences of the test split with the decoder's incremental step compiled.

Run each variant twice with the same `--cache DIR` to see a cold and a warm on-disk cache:

    python scripts/bench_compile.py --what train --variant eager
    python scripts/bench_compile.py --what train --variant whole --dynamic auto --cache /tmp/c1
    python scripts/bench_compile.py --what train --variant regional --pad 16 --cache /tmp/c2
    python scripts/bench_compile.py --what translate --variant step --beam 5 --cache /tmp/c3

Variants: eager; whole (torch.compile of the model's forward, the loss included); regional
(each Transformer layer compiled on its own, the rest eager); step (translate only: the
decoder's incremental step). `--pad N` rounds every batch's source and target lengths up to
a multiple of N (static shapes for the compiler, at the cost of padding); `--dynamic` is
torch.compile's: auto (static first, dynamic after a recompile), true or false; `--mode` is
inductor's (default, max-autotune-no-cudagraphs, ...).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--what", choices=["train", "translate"], default="train")
    parser.add_argument("--variant", choices=["eager", "whole", "regional", "step"])
    parser.add_argument("--config", default=str(ROOT / "configs/multi30k_de_en_transformer.yaml"))
    parser.add_argument("--checkpoint", type=Path, help="translate: the model (default: train's)")
    parser.add_argument("--dynamic", choices=["auto", "true", "false"], default="auto")
    parser.add_argument("--mode", default="default")
    parser.add_argument("--pad", type=int, default=1, help="round lengths up to a multiple of N")
    parser.add_argument("--precision", help="train: train.precision (default: the config's)")
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--sentences", type=int, default=500, help="translate: how many")
    parser.add_argument("--beam", type=int, default=1)
    parser.add_argument("--cache", type=Path, help="inductor's on-disk cache (default: fresh)")
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="inductor-"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    warm_cache = cache.is_dir() and any(cache.iterdir())

    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    record = {
        "what": args.what,
        "variant": args.variant,
        "dynamic": args.dynamic,
        "mode": args.mode,
        "pad": args.pad,
        "precision": args.precision,
        "cache": "warm" if warm_cache else "cold",
        "threads": torch.get_num_threads(),
    }
    run = train if args.what == "train" else translate
    record.update(run(args))
    counters = torch._dynamo.utils.counters
    record["graph_breaks"] = sum(counters["graph_break"].values())
    record["recompiles"] = sum(counters["recompiles"].values())
    record["frames_compiled"] = counters["stats"].get("unique_graphs", 0)
    print(json.dumps(record), flush=True)


def compiled(function, args):
    import torch

    dynamic = {"auto": None, "true": True, "false": False}[args.dynamic]
    return torch.compile(function, dynamic=dynamic, mode=args.mode)


def compile_model(model, args) -> None:
    """The chosen variant, in place, on the model whose passes compute the gradients (under
    bf16 the trainer's bf16 copy, not the float32 master): `whole` wraps the forward (the
    loss included), `regional` each Transformer layer."""
    from nmt.model.layers import TransformerLayer

    if args.variant == "whole":
        model.forward = compiled(model.forward, args)
    elif args.variant == "regional":
        for module in model.modules():
            if isinstance(module, TransformerLayer):
                module.forward = compiled(module.forward, args)


def padded(batch, multiple: int, pad_id: int):
    """The batch with source and target lengths rounded up to a multiple (pad tokens are
    masked and carry no loss, so the maths is the same)."""
    import dataclasses

    import torch.nn.functional as F

    def grow(tensor):
        extra = -tensor.size(1) % multiple
        return F.pad(tensor, (0, extra), value=pad_id) if extra else tensor

    return dataclasses.replace(
        batch, src=grow(batch.src), tgt_in=grow(batch.tgt_in), tgt_out=grow(batch.tgt_out)
    )


def config_and_corpus(args, run_dir: Path):
    from nmt.config import load_config
    from nmt.data.corpus import prepare_corpus

    precision = [f"train.precision={args.precision}"] if args.precision else []
    config = load_config(args.config, [f"data.path={MULTI30K}", *precision])
    return config, prepare_corpus(config, run_dir)


def train(args) -> dict:
    import torch

    from nmt.model.seq2seq import build_model
    from nmt.train.experiment import seed_everything
    from nmt.train.trainer import Trainer

    with tempfile.TemporaryDirectory() as run_dir:
        config, corpus = config_and_corpus(args, Path(run_dir))
        seed_everything(config.train.seed)
        model = build_model(config.model, corpus.tokenizer.src, corpus.tokenizer.tgt)
        trainer = Trainer(config, Path(run_dir), corpus, model)
        compile_model(trainer.network, args)
        record_precision = trainer.precision.name
        pad_id = corpus.tokenizer.tgt.pad_id
        batches = trainer.batches()
        drawn = [padded(next(batches), args.pad, pad_id) for _ in range(args.warmup + args.steps)]
        warmup, timed = drawn[: args.warmup], drawn[args.warmup :]
        started = time.perf_counter()
        first = None
        for batch in warmup:
            trainer.train_step([batch])
            first = first or time.perf_counter() - started
        warm_seconds = time.perf_counter() - started
        recompiles_before = sum(torch._dynamo.utils.counters["recompiles"].values())
        started = time.perf_counter()
        losses = [float(trainer.train_step([batch])[0]) for batch in timed]
        seconds = time.perf_counter() - started
        trainer.report.close()
    tokens = sum(batch.num_tgt_tokens for batch in timed)
    return {
        "trained_in": record_precision,
        "first_step_s": round(first, 2),
        "warmup_s": round(warm_seconds, 1),
        "steps_per_s": round(len(timed) / seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1),
        "recompiles_while_timed": (
            sum(torch._dynamo.utils.counters["recompiles"].values()) - recompiles_before
        ),
        "mean_loss_per_token": round(sum(losses) / tokens, 4),
    }


def translate(args) -> dict:
    from nmt.translate.evaluation import checkpoint_split
    from nmt.translate.translator import Translator

    checkpoint = args.checkpoint or ROOT / "runs" / "multi30k_de_en_transformer" / "best.pt"
    translator = Translator.load(checkpoint, device="cpu", workers=1, beam=args.beam)
    test = checkpoint_split(translator.config, "test", [f"data.path={MULTI30K}"])
    sources = test.src[: args.sentences]
    if args.variant == "step":
        decoder = translator.model.decoder
        decoder.step = compiled(decoder.step, args)
    warm = sources[:64]
    started = time.perf_counter()
    translator.translate(warm)
    warm_seconds = time.perf_counter() - started
    started = time.perf_counter()
    texts = [t.text for t in translator.translate(sources)]
    seconds = time.perf_counter() - started
    return {
        "beam": args.beam,
        "warmup_s": round(warm_seconds, 1),
        "sentences_per_s": round(len(sources) / seconds, 1),
        "output_chars": sum(map(len, texts)),
    }


if __name__ == "__main__":
    sys.exit(main())
