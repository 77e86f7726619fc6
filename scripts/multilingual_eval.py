"""BLEU, chrF and the off-target rate of checkpoints on Multi30k's test_2016_flickr, in any
direction between its languages (de, en, cs): the directions a model was trained on and the
zero-shot ones it was not (de-cs, cs-de), into each language its tags allow.

The off-target rate is the share of non-blank translations that a language identifier
(py3langid, restricted to the corpus's languages) does not find in the language asked for:
the failure zero-shot translation is known for, answering in the wrong language.

    python scripts/multilingual_eval.py --checkpoint runs/multilingual/best.pt \
        --directions de-en en-de cs-en en-cs de-cs cs-de
    python scripts/multilingual_eval.py --checkpoint runs/cs_en_5k/best.pt --directions cs-en
    python scripts/multilingual_eval.py --checkpoint runs/multilingual/best.pt \
        --directions de-cs cs-de --restrict-to-target-language --through en

--restrict-to-target-language translates as decode.restrict_to_target_language does;
--through L translates each source into L first and that translation into the target
(pivoting by hand, with the same model); without it a zero-shot direction is translated
directly (`nmt translate` pivots it by default). One JSON line per checkpoint and
direction; --hyp-dir also keeps the translations, as
RUN.SPLIT.DIRECTION[.restricted][.through-L].hyp (RUN: the checkpoint's directory name),
for `nmt eval --hyp`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"
LANGUAGES = ("de", "en", "cs")


def off_target_rate(translations: list[str], language: str) -> float:
    import py3langid

    py3langid.set_languages(list(LANGUAGES))
    written = [line for line in translations if line.strip()]
    wrong = sum(py3langid.classify(line)[0] != language for line in written)
    return round(100 * wrong / max(len(written), 1), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path, nargs="+", required=True)
    parser.add_argument("--directions", nargs="+", required=True, help="e.g. de-en de-cs")
    parser.add_argument("--data", type=Path, default=MULTI30K)
    parser.add_argument("--split", default="test_2016_flickr")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--alpha", type=float, help="length penalty (default: the checkpoint's)")
    parser.add_argument("--hyp-dir", type=Path, help="an existing directory for the translations")
    parser.add_argument("--restrict-to-target-language", action="store_true")
    parser.add_argument("--through", help="a language to pivot through, e.g. en")
    args = parser.parse_args()
    suffix = ".restricted" if args.restrict_to_target_language else ""
    suffix += f".through-{args.through}" if args.through else ""

    from nmt.data.splits import read_lines
    from nmt.scoring import score
    from nmt.translate.translator import Translator

    for checkpoint in args.checkpoint:
        translator = Translator.load(
            checkpoint,
            workers=None,
            beam=args.beam,
            nbest=1,
            restrict_to_target_language=args.restrict_to_target_language,
            zero_shot="direct",  # a zero-shot row is the model's own; --through pivots by hand
            **({} if args.alpha is None else {"alpha": args.alpha}),
        )
        for direction in args.directions:
            source, target = direction.split("-")
            sources = read_lines(args.data / f"{args.split}.{source}")
            references = read_lines(args.data / f"{args.split}.{target}")
            if args.through:
                sources = [t.text for t in translator.translate(sources, tgt_lang=args.through)]
            translations = [t.text for t in translator.translate(sources, tgt_lang=target)]
            scores = score(translations, references)
            if args.hyp_dir:
                name = f"{checkpoint.parent.name}.{args.split}.{direction}{suffix}.hyp"
                hyp_file = args.hyp_dir / name
                hyp_file.write_text("".join(f"{line}\n" for line in translations), "utf-8")
            trained = [f"{s}-{t}" for s, t in translator.config.data.pairs]
            row = {
                "checkpoint": str(checkpoint),
                "direction": direction,
                "zero_shot": direction not in trained,
                "restricted": args.restrict_to_target_language,
                "through": args.through,
                "alpha": translator.decode.alpha,
                "bleu": scores.bleu,
                "chrf": scores.chrf,
                "off_target": off_target_rate(translations, target),
                "reference_off_target": off_target_rate(references, target),
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    sys.exit(main())
