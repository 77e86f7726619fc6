"""A copy model copies names it never saw in training, where the same model without copying
cannot: short sentences of the demo grammar addressed to someone ("the dog sleeps, Tovaki.").
The held-out names of the valid and test splits hold a y, a letter that only the English
side of training has, so no German training sentence ever wrote the pieces they need."""

from __future__ import annotations

import json
import random
import subprocess
import sys

from conftest import TINY_CONFIG, nmt, set_options, write_parallel
from nmt.data.demo import generate_pairs

SYLLABLES = [consonant + vowel for consonant in "bdfgklmnprstvz" for vowel in "aeiou"]
FOREIGN = [f"y{vowel}" for vowel in "aeiou"]  # y: in English words, in no German one
MODEL = (  # the tiny experiment at a width that learns this corpus in a minute
    "tokenizer.vocab_size=300",
    "model.encoder.emb_dim=32",
    "model.encoder.hidden_dim=64",
    "model.attention.attn_dim=64",
    "model.decoder.emb_dim=32",
    "model.decoder.hidden_dim=64",
    "model.decoder.out_dim=32",
    "train.batch_tokens=800",
    "train.lr=0.005",
    "train.log_every=100",
    "data.splits.test=null",
)


def invented_names(rng: random.Random, count: int, foreign: bool) -> list[str]:
    """`count` names of two or three syllables; `foreign`: one of them with a y."""
    names: list[str] = []
    while len(names) < count:
        syllables = [rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))]
        if foreign:
            syllables[rng.randrange(1, len(syllables))] = rng.choice(FOREIGN)
        name = "".join(syllables).capitalize()
        if name not in names:
            names.append(name)
    return names


def addressed(pairs, names, rng):
    """Each pair addressed to a name, the same on both sides: ("..., Tovaki.", "..., Tovaki.")."""
    return [
        (f"{en[:-1]}, {name}.", f"{de[:-1]}, {name}.")
        for (en, de), name in zip(pairs, (rng.choice(names) for _ in pairs), strict=True)
    ]


def test_a_copy_model_copies_names_it_never_saw(tmp_path):
    rng = random.Random(5)
    short = [pair for pair in generate_pairs(30_000, seed=11) if len(pair[0].split()) <= 6]
    unseen = invented_names(rng, 200, foreign=True)
    corpus = tmp_path / "names"
    write_parallel(corpus, "train", addressed(short[:4000], invented_names(rng, 300, False), rng))
    write_parallel(corpus, "valid", addressed(short[4000:4100], unseen[100:], rng))
    test = [f"{en[:-1]}, {name}." for (en, _), name in zip(short[4100:4200], unseen, strict=False)]
    (corpus / "names.en").write_text("".join(line + "\n" for line in test), "utf-8")
    # the two runs train side by side, one thread each (tests/tiny.yaml), 150 steps each:
    # copying shows from step 150 on (89, 72, 96, 75, 100 and 100 names at steps 150 to 900,
    # on one machine), and the control without copying shows its nothing as early.
    runs = {copy: tmp_path / f"copy-{copy}" for copy in ("true", "false")}
    training = {
        copy: subprocess.Popen(
            [sys.executable, "-m", "nmt", "train", "--config", str(TINY_CONFIG)]
            + ["--run-dir", str(run_dir)]
            + set_options(f"data.path={corpus}", *MODEL, f"model.copy={copy}")
            + set_options("train.max_steps=150", "train.valid_every=150")
            + set_options("train.valid_max_sentences=100"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for copy, run_dir in runs.items()
    }
    copied = {}
    for copy, run_dir in runs.items():
        _, stderr = training[copy].communicate(timeout=600)
        assert training[copy].returncode == 0, stderr
        output = run_dir / "names.hyp"
        translated = nmt(
            "translate",
            "--checkpoint",
            run_dir / "best.pt",
            "--input",
            corpus / "names.en",
            "--output",
            output,
            "--beam",
            "1",
        )
        assert translated.returncode == 0, translated.stderr
        lines = output.read_text("utf-8").splitlines()
        copied[copy] = sum(f", {name}." in line for name, line in zip(unseen, lines, strict=False))
    print(
        f"held-out names copied of {len(test)}: {copied['true']} with copying, "
        f"{copied['false']} without"
    )
    assert copied["true"] >= 0.6 * len(test) and copied["false"] <= 0.1 * len(test)

    scored = nmt(
        "score",
        "--checkpoint",
        tmp_path / "copy-true" / "best.pt",
        "--src",
        corpus / "names.en",
        "--tgt",
        tmp_path / "copy-true" / "names.hyp",
        "--json",
    )
    assert scored.returncode == 0, scored.stderr
    first = json.loads(scored.stdout.splitlines()[0])
    assert len(first["p_gen"]) == len(first["tokens"])
    assert min(first["p_gen"]) < 0.5  # the name's pieces were copied
