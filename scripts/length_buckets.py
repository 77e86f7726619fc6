"""BLEU and chrF of each checkpoint by source length, in subwords of its own SentencePiece
model: <= 10, 11-20, 21-30 and > 30. Positions that depend on distances only (relative,
rotary, ALiBi: nmt/model/positions.py) are meant to help most on the longest buckets,
above all for a model trained on short pairs only (`--set data.max_len=20`).

    python scripts/length_buckets.py --checkpoint runs/sinusoidal/best.pt runs/rotary/best.pt
    python scripts/length_buckets.py --checkpoint runs/a/best.pt runs/b/best.pt --alpha 2.5 1.5

One JSON line per checkpoint. `--alpha`: the length penalty, one for all checkpoints or one
each (as chosen on valid for each model); default: each checkpoint's decode.alpha.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmt.data.splits import read_lines
from nmt.scoring import score
from nmt.translate.translator import Translator

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"
BUCKETS = ((1, 10), (11, 20), (21, 30), (31, None))


def bucket_name(low: int, high: int | None) -> str:
    return f"{low}-{high}" if high else f">{low - 1}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, nargs="+", required=True)
    parser.add_argument("--src", type=Path, default=MULTI30K / "test_2016_flickr.de")
    parser.add_argument("--ref", type=Path, default=MULTI30K / "test_2016_flickr.en")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--alpha", type=float, nargs="+", default=None)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    alphas = args.alpha or [None]
    if len(alphas) not in (1, len(args.checkpoint)):
        parser.error(f"--alpha: give one value or one per checkpoint ({len(args.checkpoint)})")
    alphas = alphas * len(args.checkpoint) if len(alphas) == 1 else alphas
    sources, references = read_lines(args.src), read_lines(args.ref)
    for checkpoint, alpha in zip(args.checkpoint, alphas, strict=True):
        penalty = {} if alpha is None else {"alpha": alpha}
        translator = Translator.load(checkpoint, workers=args.workers, beam=args.beam, **penalty)
        translations = translator.translate(sources)
        result = {"checkpoint": str(checkpoint), "beam": args.beam, **penalty}
        overall = score([t.text for t in translations], references)
        result["all"] = {"sentences": len(sources), "bleu": overall.bleu, "chrf": overall.chrf}
        for low, high in BUCKETS:
            chosen = [
                i
                for i, t in enumerate(translations)
                if low <= len(t.src_ids) and (high is None or len(t.src_ids) <= high)
            ]
            if not chosen:
                continue
            found = score([translations[i].text for i in chosen], [references[i] for i in chosen])
            result[bucket_name(low, high)] = {
                "sentences": len(chosen),
                "bleu": found.bleu,
                "chrf": found.chrf,
            }
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
