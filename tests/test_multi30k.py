"""Training on the real Multi30k corpus when it lies beside the project (slow; `make test-slow`)."""

import json

import pytest

from conftest import MULTI30K, ROOT, set_options

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (MULTI30K / "train.de").exists(), reason="no ../shared/data/multi30k"),
]


def test_rnnsearch_learns_multi30k(tmp_path):
    from typer.testing import CliRunner

    from nmt.cli import app

    overrides = [
        f"data.path={MULTI30K}",
        "train.max_steps=400",
        "train.valid_every=400",
        "train.valid_max_sentences=200",
        "tokenizer.vocab_size=4000",
    ]
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--config",
            str(ROOT / "configs/multi30k_de_en_rnnsearch.yaml"),
            "--run-dir",
            str(tmp_path),
            *set_options(*overrides),
        ],
    )
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in records if "loss" in r]
    assert losses[-1] < losses[0] - 1.5
    assert records[-1]["test_bleu"] > 1.0
