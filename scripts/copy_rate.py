"""How often a model carries over the source words that a translation should keep as they
are (names, numbers): the capitalised words and words with a digit of a test source that its
reference holds verbatim (so not German nouns, which English writes in lower case, nor
words such as "in" that two languages share), and the share of them the model's translation
holds too, overall and for the rare ones (seen fewer
than 5 times in the training target), beside BLEU and chrF. For a copy model also the mean
p_gen of the translations' tokens (how much came from the vocabulary, not from copying).

    python scripts/copy_rate.py --checkpoint runs/copy/best.pt
    python scripts/copy_rate.py --checkpoint runs/plain/best.pt --beam 5

One JSON line.
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
RARE = 5  # training-target occurrences below which a word counts as rare


def kept_words(source: str, reference: str) -> set[str]:
    """Capitalised words and words with a digit that the source and its reference both hold."""
    shared = set(WORD.findall(source)) & set(WORD.findall(reference))
    return {word for word in shared if word[0].isupper() or any(c.isdigit() for c in word)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, action="append", required=True)
    parser.add_argument("--src", type=Path, default=MULTI30K / "test_2016_flickr.de")
    parser.add_argument("--ref", type=Path, default=MULTI30K / "test_2016_flickr.en")
    parser.add_argument("--train-tgt", type=Path, default=MULTI30K / "train.en")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    sources, references = read_lines(args.src), read_lines(args.ref)
    seen = Counter(word for line in read_lines(args.train_tgt) for word in WORD.findall(line))
    translator = Translator.load(args.checkpoint, workers=args.workers, beam=args.beam)
    texts = [t.text for t in translator.translate(sources)]
    counts = Counter()
    for source, reference, text in zip(sources, references, texts, strict=True):
        found = set(WORD.findall(text))
        for word in kept_words(source, reference):
            rare = seen[word] < RARE
            counts["kept"] += 1
            counts["copied"] += word in found
            counts["rare_kept"] += rare
            counts["rare_copied"] += rare and word in found
    result = {
        "checkpoint": [str(path) for path in args.checkpoint],
        "beam": args.beam,
        **{k: v for k, v in score(texts, references).as_dict().items() if "_" not in k},
        "kept_words": counts["kept"],
        "copy_rate": round(counts["copied"] / max(counts["kept"], 1), 4),
        "rare_kept_words": counts["rare_kept"],
        "rare_copy_rate": round(counts["rare_copied"] / max(counts["rare_kept"], 1), 4),
    }
    pairs = translator.score(sources, texts) if getattr(translator.model, "copy", None) else []
    gates = [gate for pair in pairs if pair.p_gen for gate in pair.p_gen]
    if gates:
        result["mean_p_gen"] = round(sum(gates) / len(gates), 4)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
