"""Precision: fp16 needs CUDA, bf16 on a CPU without bf16 units warns, bf16 trains."""

import logging

import pytest
import torch

from nmt.errors import UserError
from nmt.train.precision import Precision, cpu_has_fast_bf16


def test_fp16_on_the_cpu_is_a_clear_error():
    with pytest.raises(UserError, match="fp16 needs a CUDA device.*bf16 or fp32"):
        Precision("fp16", torch.device("cpu"))


def test_fast_bf16_is_read_from_the_cpu_flags(tmp_path):
    (tmp_path / "avx2").write_text("processor : 0\nflags : fpu sse avx avx2 fma\n")
    (tmp_path / "amx").write_text("flags : avx2 avx512f amx_bf16 amx_tile\n")
    assert not cpu_has_fast_bf16(tmp_path / "avx2")
    assert cpu_has_fast_bf16(tmp_path / "amx")
    assert not cpu_has_fast_bf16(tmp_path / "missing")


def test_bf16_warns_on_a_slow_cpu_and_autocasts(monkeypatch, caplog):
    monkeypatch.setattr("nmt.train.precision.cpu_has_fast_bf16", lambda: False)
    with caplog.at_level(logging.WARNING, logger="nmt"):
        precision = Precision("bf16", torch.device("cpu"))
    assert "hundreds of times slower" in caplog.text
    layer = torch.nn.Linear(4, 4)
    with precision.autocast():
        assert layer(torch.ones(2, 4)).dtype == torch.bfloat16
    assert layer.weight.dtype == torch.float32  # parameters stay fp32
    assert not precision.scaler.is_enabled()
    with Precision("fp32", torch.device("cpu")).autocast():
        assert layer(torch.ones(2, 4)).dtype == torch.float32


def test_a_bf16_training_step_runs_on_the_cpu(tmp_path, tiny_config, tokenizer, monkeypatch):
    import dataclasses

    from nmt.data.batching import make_batch
    from nmt.data.corpus import Corpus
    from nmt.model.seq2seq import build_model
    from nmt.train.trainer import Trainer

    monkeypatch.setattr("nmt.train.precision.cpu_has_fast_bf16", lambda: True)  # no warning noise
    config = dataclasses.replace(
        tiny_config, train=dataclasses.replace(tiny_config.train, precision="bf16")
    )
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    trainer = Trainer(config, tmp_path, Corpus(tokenizer, None, None, None), model)
    ids = tokenizer.src.encode(["the dog sees the cat.", "a bird sleeps."])
    before = [p.detach().clone() for p in model.parameters()]
    loss, tokens, _ = trainer.train_step([make_batch(ids, ids, tokenizer.tgt, 0)])
    assert torch.isfinite(loss) and tokens == sum(len(i) + 1 for i in ids)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
