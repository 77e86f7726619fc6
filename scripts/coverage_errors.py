"""The two errors coverage is meant to cut (Tu et al. 2016), measured on a test set, beside
BLEU, chrF and TER:

- over-translation: the share of sentences whose translation repeats a content n-gram
  (n = 1 or 2, holding a word of 4+ letters) more often than the reference does, the
  reference standing in for what the source says twice;
- under-translation: the share of source subwords whose attention, summed over the
  translation's steps (heads averaged), stays below 0.5.

    python scripts/coverage_errors.py --checkpoint runs/rnnsearch/best.pt
    python scripts/coverage_errors.py --checkpoint CKPT --coverage-penalty 0.2 --beam 5

One JSON line per decoding setting.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path

from nmt.data.splits import read_lines
from nmt.scoring import score
from nmt.translate.translator import Translator

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"
WORD = re.compile(r"\w[\w'-]*")


def content_ngrams(text: str) -> Counter:
    """Lower-cased word unigrams and bigrams that hold a word of 4+ letters."""
    words = [word.lower() for word in WORD.findall(text)]
    grams = [tuple(words[i : i + n]) for n in (1, 2) for i in range(len(words) - n + 1)]
    return Counter(gram for gram in grams if any(len(word) >= 4 for word in gram))


def over_translated(hypothesis: str, reference: str) -> bool:
    """Whether the hypothesis repeats a content n-gram more often than the reference."""
    wanted = content_ngrams(reference)
    return any(
        count > 1 and count > wanted[gram] for gram, count in content_ngrams(hypothesis).items()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, action="append", required=True)
    parser.add_argument("--src", type=Path, default=MULTI30K / "test_2016_flickr.de")
    parser.add_argument("--ref", type=Path, default=MULTI30K / "test_2016_flickr.en")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--coverage-penalty", type=float, nargs="+", default=[0.0])
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    sources, references = read_lines(args.src), read_lines(args.ref)
    translator = Translator.load(args.checkpoint, workers=args.workers, beam=args.beam)
    for beta in args.coverage_penalty:
        translations = translator.translate(sources, coverage_penalty=beta, attention=True)
        texts = [t.text for t in translations]
        attended = [
            t.nbest[0].hypothesis.attention.float().mean(1).sum(0)  # [S] per source subword
            for t in translations
            if t.nbest
        ]
        words = sum(received.numel() for received in attended)
        short = sum(int((received < 0.5).sum()) for received in attended)
        repeats = sum(over_translated(h, r) for h, r in zip(texts, references, strict=True))
        result = {
            "checkpoint": [str(path) for path in args.checkpoint],
            "beam": args.beam,
            "coverage_penalty": beta,
            **{k: v for k, v in score(texts, references).as_dict().items() if "_" not in k},
            "over_translated_sentences": round(repeats / len(texts), 4),
            "under_attended_source_subwords": round(short / max(words, 1), 4),
        }
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
