"""Each model family and attention normaliser learns the demo corpus through the real command
line: the test BLEU that `nmt train` reports (beam 5 over the 500 unseen test sentences).

The default suite holds the session's shared models to it (conftest's `demo_rnnsearch`, with
softmax attention, and `demo_transformer`, each at the fewest steps that learn the corpus);
the other normalisers, whose maths tests/model/test_normalisers.py checks against
references, learn the corpus under `make test-slow`.
"""

import json

import pytest

from conftest import train_demo

STEPS = "train.max_steps=700"


def reported_test(run_dir) -> dict:
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return records[-1]


def reported_bleu(run_dir) -> float:
    return reported_test(run_dir)["test_bleu"]


def test_the_transformer_learns_the_demo_corpus(demo_transformer):
    assert reported_bleu(demo_transformer) >= 90


def check_attention(test: dict, normaliser: str) -> None:
    entropy, nonzero = test["test_attention_entropy"], test["test_attention_nonzero"]
    print(f"{normaliser}: test BLEU {test['test_bleu']}, entropy {entropy}, non-zero {nonzero}")
    if normaliser == "hard":  # the argmax at inference: exactly one source position
        assert (entropy, nonzero) == (0.0, 1.0)
    else:
        assert entropy > 0 and nonzero > 1


def test_rnnsearch_with_softmax_attention_learns_the_demo_corpus(demo_rnnsearch):
    test = reported_test(demo_rnnsearch)
    assert test["test_bleu"] >= 90
    check_attention(test, "softmax")


@pytest.mark.slow
@pytest.mark.parametrize("normaliser", ["sparsemax", "entmax15", "hard"])
def test_every_other_normaliser_learns_the_demo_corpus(normaliser, tmp_path):
    run_dir = train_demo(tmp_path, f"model.attention.normaliser={normaliser}", STEPS)
    test = reported_test(run_dir)
    assert test["test_bleu"] >= (90 if normaliser != "hard" else 50)  # hard's is reported
    check_attention(test, normaliser)
