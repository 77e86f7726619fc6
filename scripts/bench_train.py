"""Training throughput of a config: target tokens/s, peak RSS and model FLOP utilisation.

Warms up, then times real training steps (the trainer's own `update`, online
back-translation included where the config turns it on) on real data and prints one JSON
line. Utilisation = analytic forward+backward FLOPs per real target token
× tokens/s ÷ the matmul FLOP/s of this machine in the precision trained in (both fp32's and
bf16's are measured here with a large torch.mm, and printed).

    python scripts/bench_train.py                                  # Multi30k rnnsearch if present
    python scripts/bench_train.py --config configs/multi30k_de_en_multihead.yaml --steps 100
    python scripts/bench_train.py --config configs/demo.yaml --set train.batch_tokens=2000
    python scripts/bench_train.py --config configs/multi30k_de_en_transformer.yaml --profile 10
    python scripts/bench_train.py --config configs/multi30k_multilingual.yaml --set data.path=DIR \
        --set train.init_from=RUN/best.pt --set train.online_backtranslation=0.25

With train.init_from the timed model starts from that checkpoint's weights: what online
back-translation costs depends on how long the model's translations are, and an untrained
model's run to the length limit.

`--profile N` then profiles N more steps with torch.profiler and adds where a step's time
goes: matrix products against everything else, operators per step, and the operators that
take the most time, to stderr as a table and to the JSON line as `profile`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import nmt  # noqa: F401 - before torch, as the command does: nmt/__init__.py's settings for it

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"


def matmul_flops(dtype_name: str = "fp32", size: int = 2048, repeats: int = 10) -> float:
    """FLOP/s of a large square torch.mm in fp32 or bf16 on this machine (best of
    `repeats`)."""
    import torch

    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - started)
    return 2 * size**3 / best


def sentence_macs(model, src_len: int, tgt_steps: int, vocab_size: int) -> int:
    """Multiply-accumulates of one forward pass over one sentence, counted from the config.

    Only matrix products count (as in the usual MFU definition); padding is not counted, so
    padded work shows up as lower utilisation.
    """
    enc, att, dec = model.encoder, model.attention, model.decoder
    macs = 0
    memory = enc.output_dim
    if enc.type in ("birnn", "birnn_self_attention"):
        gates = 3 if enc.rnn == "gru" else 4
        rnn_layers = enc.layers if enc.type == "birnn" else 1
        for layer in range(rnn_layers):
            inputs = enc.emb_dim if layer == 0 else 2 * enc.hidden_dim
            macs += 2 * src_len * gates * enc.hidden_dim * (inputs + enc.hidden_dim)
    if enc.type in ("self_attention", "birnn_self_attention"):
        per_token = 4 * memory * memory + 2 * src_len * memory + 2 * memory * enc.ff_dim
        macs += enc.layers * src_len * per_token
    if dec.type == "transformer":
        return macs + transformer_decoder_macs(model, src_len, tgt_steps, vocab_size)
    hidden, emb = dec.hidden_dim, dec.emb_dim
    final = enc.hidden_dim if enc.type != "self_attention" else memory
    macs += final * hidden  # s_0
    keys_dim = {
        "additive": att.attn_dim,
        "dot": hidden,
        "general": hidden,
        "multihead": att.attn_dim,
    }[att.type]
    has_key_proj = not (att.type == "dot" and att.kv == "shared")
    macs += src_len * memory * keys_dim * has_key_proj  # prepared keys
    value_dim = att.attn_dim if att.type == "multihead" else memory
    macs += src_len * memory * value_dim * (att.kv == "separate")  # prepared values
    per_step = {
        "additive": hidden * att.attn_dim + src_len * att.attn_dim + src_len * memory,
        "dot": src_len * hidden + src_len * memory,
        "general": src_len * hidden + src_len * memory,
        "multihead": hidden * att.attn_dim + 2 * src_len * att.attn_dim + att.attn_dim * memory,
    }[att.type]
    if att.window is not None:
        per_step += hidden * att.attn_dim + att.attn_dim
    per_step += 3 * hidden * (emb + memory + hidden)  # GRU gates
    pieces = 2 if dec.output == "maxout" else 1
    per_step += (hidden + emb + memory) * pieces * dec.out_dim + dec.out_dim * vocab_size
    return macs + tgt_steps * per_step


def transformer_decoder_macs(model, src_len: int, tgt_steps: int, vocab_size: int) -> int:
    """A Transformer decoder's products: per layer and target token the self-attention's four
    projections and its causal scores and average (position i sees i + 1 positions), the
    attention over the source (query and output projections, scores and average over S; keys
    and values prepared once per sentence) and the feed-forward block; then the vocabulary."""
    att, dec = model.attention, model.decoder
    d, memory = dec.emb_dim, model.encoder.output_dim
    causal_positions = (tgt_steps + 1) / 2  # the mean of 1..T
    per_token = 4 * d * d + 2 * causal_positions * d
    per_token += d * att.attn_dim + 2 * src_len * att.attn_dim + att.attn_dim * d
    per_token += 2 * d * dec.ff_dim
    prepared = 2 * src_len * memory * att.attn_dim
    return int(dec.layers * (tgt_steps * per_token + prepared) + tgt_steps * d * vocab_size)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs/multi30k_de_en_rnnsearch.yaml"))
    parser.add_argument(
        "--data",
        help="corpus directory (default: ../shared/data/multi30k if "
        "present, else the demo corpus, with the model of --config)",
    )
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    args = parser.parse_args()

    import torch

    from nmt.config import load_config
    from nmt.data.corpus import prepare_corpus
    from nmt.model.device import cpu_has_fast_bf16
    from nmt.model.seq2seq import build_model
    from nmt.train.experiment import seed_everything
    from nmt.train.trainer import Trainer
    from nmt.train.transfer import load_parent_weights, parent_checkpoint
    from nmt.translate.auto_precision import auto_precision

    config_path, overrides = args.config, list(args.overrides)
    data = args.data
    if data is None and (MULTI30K / "train.de").exists():
        # Multi30k stands in for the hub corpus a config names, never for the demo corpus.
        data = None if load_config(config_path, overrides).data.demo else str(MULTI30K)
    if data:
        overrides.insert(0, f"data.path={data}")
    config = load_config(config_path, overrides)
    if not data and not config.data.path and not config.data.demo:
        # No corpus at hand: the same model and training settings on the demo corpus.
        demo = load_config(ROOT / "configs/demo.yaml")
        config = dataclasses.replace(config, data=demo.data, tokenizer=demo.tokenizer)
    torch.set_num_threads(config.train.threads or os.cpu_count() or 1)
    seed_everything(config.train.seed)
    with tempfile.TemporaryDirectory() as run_dir:
        parent, tokenizer = parent_checkpoint(config) if config.train.init_from else (None, None)
        corpus = prepare_corpus(config, Path(run_dir), tokenizer)
        tokenizer = corpus.tokenizer
        if config.train.precision == "auto":  # as nmt train resolves it: the probe's answer
            chosen = auto_precision(config, tokenizer, torch.device("cpu"))
            config = dataclasses.replace(
                config, train=dataclasses.replace(config.train, precision=chosen)
            )
        model = build_model(config.model, tokenizer.src, tokenizer.tgt)
        if parent is not None:  # a trained model: its back-translations stop where they end
            load_parent_weights(model, parent, config.train.init_from)
        trainer = Trainer(config, Path(run_dir), corpus, model)
        batches = trainer.batches()
        step = config.train.online_backtranslation_after  # so that back-translation applies
        for _ in range(args.warmup):
            trainer.update([next(batches)], step)
        timed = [next(batches) for _ in range(args.steps)]
        trained_in = trainer.precision.name  # what `auto` resolved to
        # bf16's peak where it is native: emulated, one product takes minutes
        measured = ("fp32", "bf16") if cpu_has_fast_bf16() or trained_in == "bf16" else ("fp32",)
        peaks_before = {name: matmul_flops(name) for name in measured}
        started = time.perf_counter()
        for number, batch in enumerate(timed):
            trainer.update([batch], step + number)
        seconds = time.perf_counter() - started
        profile = profile_steps(trainer, [next(batches) for _ in range(args.profile)])
        trainer.report.close()

    tokens = sum(batch.num_tgt_tokens for batch in timed)
    macs = sum(
        sentence_macs(config.model, int(length), int(steps), tokenizer.tgt.size)
        for batch in timed
        for length, steps in zip(
            batch.src_lengths, (batch.tgt_out != tokenizer.tgt.pad_id).sum(1), strict=True
        )
    )
    flops_per_token = 6 * macs / tokens  # forward 2 FLOPs per MAC, backward twice the forward
    tokens_per_s = tokens / seconds
    # Peaks: the best of a measurement before and after the timed steps (the machine drifts);
    # utilisation is against the peak of the precision trained in
    peaks = {name: max(before, matmul_flops(name)) for name, before in peaks_before.items()}
    peak = peaks["bf16" if trained_in == "bf16" else "fp32"]
    padded = sum(batch.tgt_out.numel() for batch in timed)
    print(
        json.dumps(
            {
                "config": Path(config_path).name,
                "overrides": args.overrides,
                "data": data or "demo",
                "steps": args.steps,
                "threads": torch.get_num_threads(),
                "tokens_per_s": round(tokens_per_s, 1),
                "tgt_tokens_per_batch": round(tokens / len(timed), 1),
                "padded_tgt_tokens_per_batch": round(padded / len(timed), 1),
                "steps_per_s": round(len(timed) / seconds, 3),
                "peak_rss_mb": round(peak_rss_mb(), 1),
                "flops_per_token": round(flops_per_token),
                "precision": trained_in,
                "matmul_flops": {name: round(value) for name, value in peaks.items()},
                "utilisation": round(flops_per_token * tokens_per_s / peak, 3),
                **({"profile": profile} if profile else {}),
            }
        )
    )


MATMULS = {"aten::mm", "aten::addmm", "aten::addmm_", "aten::bmm", "aten::baddbmm"}
# Each operator's class by its name without "aten::" (exactly, or by a prefix ending in
# "*"); the rest are "other": where a step's time goes beside the products.
OP_CLASSES = {
    "products": {"mm", "addmm", "addmm_", "bmm", "baddbmm", "linear", "matmul", "mkldnn*"},
    "fused attention": {"_scaled_dot_product*"},
    "casts and copies": {"copy_", "_to_copy", "to", "clone", "contiguous", "cat", "stack"},
    "dropout masks": {"random_", "bernoulli_", "uniform_", "rand", "ge", "lt", "native_dropout"},
    "normalisation, softmax, loss": {"native_layer_norm*", "layer_norm", "_softmax*",
                                     "_log_softmax*", "nll_loss*", "logsumexp"},
    "optimizer": {"_fused_adam*", "_foreach*"},
    "reductions and indexing": {"sum", "mean", "max", "gather", "scatter_add_", "index*",
                                "embedding*", "masked_fill_", "where"},
    "elementwise": {"mul", "mul_", "add", "add_", "sub", "rsub", "div", "div_", "sigmoid*",
                    "tanh*", "relu", "threshold_backward", "gelu*", "silu*", "exp*", "fill_",
                    "zero_", "neg", "pow", "clamp*"},
}  # fmt: skip


def op_class(name: str) -> str:
    base = name.removeprefix("aten::")
    for kind, names in OP_CLASSES.items():
        if base in names or any(n.endswith("*") and base.startswith(n[:-1]) for n in names):
            return kind
    return "other"


def profile_steps(trainer, batches) -> dict:
    """Where `len(batches)` training steps spend their time, by operator (self CPU time)."""
    if not batches:
        return {}
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        for batch in batches:
            trainer.train_step([batch])
    events = [e for e in profiler.key_averages() if not e.key.startswith("ProfilerStep")]
    print(
        profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=25),
        file=sys.stderr,
    )
    total = sum(e.self_cpu_time_total for e in events)
    matmul = sum(e.self_cpu_time_total for e in events if e.key in MATMULS)
    top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:12]
    classes: dict[str, float] = {}
    for event in events:
        name = op_class(event.key)
        classes[name] = classes.get(name, 0.0) + event.self_cpu_time_total / 1000 / len(batches)
    return {
        "matmul_share": round(matmul / total, 3),
        "ms_per_step_by_class": {k: round(v, 1) for k, v in sorted(classes.items())},
        "ops_per_step": round(sum(e.count for e in events) / len(batches)),
        "top_ops_ms_per_step": {
            e.key: round(e.self_cpu_time_total / 1000 / len(batches), 2) for e in top
        },
    }


if __name__ == "__main__":
    sys.exit(main())
