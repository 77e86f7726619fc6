"""`precision: auto` on a CPU with native bf16: measured, not presumed. The probe's timings
decide (bf16 only where faster by the margin), its answer is kept per CPU and model shape,
nothing is probed where the answer is no question, the probe leaves the random state as
it was, and search under --precision auto follows training's answer."""

import pytest
import torch

from conftest import tiny_experiment, write_checkpoint
from nmt.translate.auto_precision import MARGIN, PROBE_FILE, StepTimes, auto_precision, time_steps
from nmt.translate.translator import Translator

WIDE = "model.decoder.emb_dim=128"  # a candidate for bf16 (nmt/model/device.py)
CPU = torch.device("cpu")


@pytest.fixture
def native(monkeypatch):
    monkeypatch.setattr("nmt.model.device.cpu_has_fast_bf16", lambda: True)


@pytest.mark.parametrize(
    "fp32, bf16, expected",
    [(1.0, 0.5, "bf16"), (1.0, 1.0 / MARGIN * 0.99, "bf16"), (1.0, 1.0 / MARGIN, "fp32"),
     (1.0, 1.2, "fp32")],
)  # fmt: skip
def test_bf16_is_chosen_only_where_it_is_faster_by_the_margin(fp32, bf16, expected):
    assert StepTimes(fp32, bf16).choice == expected


@pytest.mark.parametrize("bf16, expected", [(0.5, "bf16"), (1.3, "fp32")])
def test_the_probe_decides_and_is_asked_once(
    native, probe_finds, corpus_dir, tokenizer, bf16, expected
):
    """A model where bf16 loses trains in fp32; a second run of the same model and CPU
    reuses the answer, a model of another shape is probed again."""
    probed = probe_finds(fp32=1.0, bf16=bf16)
    config = tiny_experiment(corpus_dir, WIDE)
    assert auto_precision(config, tokenizer, CPU) == expected
    assert auto_precision(config, tokenizer, CPU) == expected
    assert len(probed) == 1 and probed[0][1:] == (
        config.train.batch_tokens,
        (tokenizer.src.size, tokenizer.tgt.size),
    )
    other = tiny_experiment(corpus_dir, WIDE, "model.encoder.hidden_dim=48")
    auto_precision(other, tokenizer, CPU)
    assert len(probed) == 2


def test_the_answer_is_kept_in_the_cache_directory(
    native, monkeypatch, probe_finds, corpus_dir, tokenizer
):
    probe_finds(fp32=1.0, bf16=0.5)
    config = tiny_experiment(corpus_dir, WIDE)
    cache = corpus_dir.parent / "probe-cache"
    monkeypatch.setenv("NMT_CACHE", str(cache))
    auto_precision(config, tokenizer, CPU)
    assert '"bf16"' in (cache / PROBE_FILE).read_text()


@pytest.mark.parametrize("flags, width", [(False, "128"), (True, "64")], ids=["emulated", "narrow"])
def test_nothing_is_probed_where_fp32_is_no_question(
    monkeypatch, probe_finds, corpus_dir, tokenizer, flags, width
):
    monkeypatch.setattr("nmt.model.device.cpu_has_fast_bf16", lambda: flags)
    probed = probe_finds(fp32=1.0, bf16=0.1)
    config = tiny_experiment(corpus_dir, f"model.decoder.emb_dim={width}")
    assert auto_precision(config, tokenizer, CPU) == "fp32" and probed == []


def test_the_probe_times_both_precisions_and_leaves_the_random_state(
    native, monkeypatch, corpus_dir, tokenizer, tmp_path
):
    monkeypatch.setenv("NMT_CACHE", str(tmp_path))
    config = tiny_experiment(corpus_dir, WIDE, "train.batch_tokens=96")
    torch.manual_seed(5)
    state = torch.random.get_rng_state()
    chosen = auto_precision(config, tokenizer, CPU)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert chosen in ("fp32", "bf16")
    from nmt.model.seq2seq import build_model

    times = time_steps(build_model(config.model, tokenizer.src, tokenizer.tgt), 96, (40, 40))
    assert times.fp32 > 0 and times.bf16 > 0


@pytest.mark.parametrize("bf16, dtype", [(0.5, torch.bfloat16), (2.0, torch.float32)])
def test_search_under_auto_follows_the_probe(
    native, probe_finds, corpus_dir, tokenizer, tmp_path, bf16, dtype
):
    probe_finds(fp32=1.0, bf16=bf16)
    checkpoint = write_checkpoint(tmp_path / "m.pt", tiny_experiment(corpus_dir, WIDE), tokenizer)
    translator = Translator.load(checkpoint, precision="auto", workers=1)
    assert next(translator.model.parameters()).dtype == dtype
    assert Translator.load(checkpoint, workers=1).model.output_layer.weight.dtype == torch.float32
