"""Lexical constraints drawn from the references, as papers on constrained decoding measure
them (Post & Vilar 2018; Hokamp & Liu 2017): for each sentence 1 to 3 reference words or
two-word phrases that the unconstrained translation lacks. Prints, with and without the
constraints: BLEU, chrF and TER, sentences/s, and how many constraints the output meets
(as whole words in the text, and by the search's own subword check).

    python scripts/bench_constraints.py --checkpoint runs/multi30k_de_en_transformer/best.pt
    python scripts/bench_constraints.py --checkpoint CKPT --src test.de --ref test.en --beam 5 1
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

import torch

from nmt.data.splits import read_lines
from nmt.scoring import score
from nmt.translate.translator import Translator

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"
WORD = re.compile(r"\w[\w'-]*")


def words(text: str) -> list[str]:
    return WORD.findall(text)


def holds(text: str, phrase: str) -> bool:
    """Whether `phrase` appears in `text` as whole words."""
    return f" {' '.join(words(phrase))} " in f" {' '.join(words(text))} "


def draw_constraints(hypotheses: list[str], references: list[str], seed: int) -> list[dict]:
    """1-3 phrases per sentence: reference words (3+ letters) or two-word phrases that the
    hypothesis lacks, not overlapping one another."""
    rng = random.Random(seed)
    drawn = []
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        tokens = words(reference)
        spans = [(i, n) for n in (1, 2) for i in range(len(tokens) - n + 1)]
        rng.shuffle(spans)
        wanted, used = [], set()
        count = rng.randint(1, 3)
        for start, length in spans:
            positions = set(range(start, start + length))
            phrase = " ".join(tokens[start : start + length])
            if positions & used or len(tokens[start]) < 3 or holds(hypothesis, phrase):
                continue
            wanted.append(phrase)
            used |= positions
            if len(wanted) == count:
                break
        drawn.append({"include": wanted} if wanted else None)
    return drawn


def run(translator: Translator, sources: list[str], beam: int, **options) -> tuple[list, float]:
    started = time.perf_counter()
    translations = translator.translate(sources, beam=beam, **options)
    return translations, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, action="append", required=True)
    parser.add_argument("--src", type=Path, default=MULTI30K / "test_2016_flickr.de")
    parser.add_argument("--ref", type=Path, default=MULTI30K / "test_2016_flickr.en")
    parser.add_argument("--beam", type=int, nargs="+", default=[5])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--output", type=Path, help="write the constraints and outputs here")
    args = parser.parse_args()
    sources, references = read_lines(args.src), read_lines(args.ref)
    translator = Translator.load(args.checkpoint, workers=args.workers)
    translator.translate(sources[:64])  # warm-up: the first calls pay for allocations
    for beam in args.beam:
        plain, plain_seconds = run(translator, sources, beam)
        constraints = draw_constraints([t.text for t in plain], references, args.seed)
        found, seconds = run(translator, sources, beam, constraints=constraints)
        phrases = [
            (t.text, p) for t, c in zip(found, constraints, strict=True) if c for p in c["include"]
        ]
        constrained = [t for t, c in zip(found, constraints, strict=True) if c]
        result = {
            "checkpoint": [str(path) for path in args.checkpoint],
            "beam": beam,
            "sentences": len(sources),
            "constrained_sentences": len(constrained),
            "phrases": len(phrases),
            "phrases_met_as_words": sum(holds(text, phrase) for text, phrase in phrases),
            "sentences_met_by_subwords": sum(bool(t.constraints_met) for t in constrained),
            "plain": score([t.text for t in plain], references).as_dict(),
            "constrained": score([t.text for t in found], references).as_dict(),
            "plain_sentences_per_s": round(len(sources) / plain_seconds, 2),
            "constrained_sentences_per_s": round(len(sources) / seconds, 2),
            "speed_ratio": round(plain_seconds / seconds, 3),
            "threads": torch.get_num_threads(),
        }
        for key in ("plain", "constrained"):
            result[key] = {k: result[key][k] for k in ("bleu", "chrf", "ter")}
        print(json.dumps(result), flush=True)
        if args.output:
            texts = ([t.text for t in plain], [t.text for t in found])
            rows = zip(sources, constraints, *texts, strict=True)
            with args.output.with_suffix(f".beam{beam}.jsonl").open("w", encoding="utf-8") as sink:
                for src, wanted, before, after in rows:
                    record = {"src": src, "constraints": wanted, "plain": before, "out": after}
                    sink.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
