"""Precision: auto resolves from the CPU's flags and CUDA's capability; bf16 trains a bf16
copy against float32 master weights (a step's loss and update near fp32's, resume exact);
search in bf16 writes fp32's text on nearly every line and scores as `nmt score` does."""

import dataclasses
import logging

import pytest
import torch

from conftest import nmt, tiny_experiment
from nmt.data.batching import make_batch
from nmt.data.corpus import Corpus
from nmt.errors import UserError
from nmt.model.device import cpu_has_fast_bf16, resolve_precision
from nmt.model.master_weights import MasterWeights
from nmt.model.normalisers import HardAttention, annealed_temperature
from nmt.model.seq2seq import build_model
from nmt.train.experiment import train_experiment
from nmt.train.precision import Precision
from nmt.train.trainer import Trainer
from nmt.translate.translator import Translator

native = pytest.mark.skipif(not cpu_has_fast_bf16(), reason="this CPU emulates bf16 slowly")


def test_fp16_on_the_cpu_is_a_clear_error():
    with pytest.raises(UserError, match="fp16 needs a CUDA device.*bf16 or fp32"):
        Precision("fp16", torch.device("cpu"), 256)


def test_fast_bf16_is_read_from_the_cpu_flags(tmp_path):
    (tmp_path / "avx2").write_text("processor : 0\nflags : fpu sse avx avx2 fma\n")
    (tmp_path / "amx").write_text("flags : avx2 avx512f amx_bf16 amx_tile\n")
    (tmp_path / "avx512").write_text("flags : avx2 avx512f avx512_bf16\n")
    assert not cpu_has_fast_bf16(tmp_path / "avx2")
    assert cpu_has_fast_bf16(tmp_path / "amx") and cpu_has_fast_bf16(tmp_path / "avx512")
    assert not cpu_has_fast_bf16(tmp_path / "missing")


@pytest.mark.parametrize("fast, expected", [(True, "bf16"), (False, "fp32")])
def test_auto_follows_the_cpu_flags(monkeypatch, fast, expected):
    monkeypatch.setattr("nmt.model.device.cpu_has_fast_bf16", lambda: fast)
    assert resolve_precision("auto", torch.device("cpu"), 256) == expected
    assert resolve_precision("fp32", torch.device("cpu"), 256) == "fp32"  # given: as given
    assert resolve_precision("bf16", torch.device("cpu"), 16) == "bf16"


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_auto_keeps_narrow_models_in_fp32_where_bf16_gains_nothing(monkeypatch, device):
    monkeypatch.setattr("nmt.model.device.cpu_has_fast_bf16", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert resolve_precision("auto", torch.device(device), 127) == "fp32"
    assert resolve_precision("auto", torch.device(device), 128) == "bf16"


@pytest.mark.parametrize("supported, expected", [(True, "bf16"), (False, "fp32")])
def test_auto_follows_the_gpus_capability(monkeypatch, supported, expected):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: supported)
    assert resolve_precision("auto", torch.device("cuda"), 256) == expected


def test_bf16_on_a_slow_cpu_warns(monkeypatch, caplog):
    monkeypatch.setattr("nmt.train.precision.cpu_has_fast_bf16", lambda: False)
    with caplog.at_level(logging.WARNING, logger="nmt"):
        Precision("bf16", torch.device("cpu"), 256)
    assert "hundreds of times slower" in caplog.text


def trainer(config, tokenizer, tmp_path, precision):
    torch.manual_seed(0)
    config = dataclasses.replace(
        config,
        train=dataclasses.replace(config.train, precision=precision),
        model=dataclasses.replace(
            config.model,
            encoder=dataclasses.replace(config.model.encoder, dropout=0.0),
            decoder=dataclasses.replace(config.model.decoder, dropout=0.0),
        ),
    )
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    tmp_path.mkdir()
    return Trainer(config, tmp_path, Corpus(tokenizer, None, None, None), model), model


@pytest.mark.parametrize("switch", [(), ("model.encoder.type=self_attention",)])
def test_a_bf16_step_is_an_fp32_step_to_within_bf16s_precision(
    tmp_path, corpus_dir, tokenizer, monkeypatch, switch
):
    """The same batch from the same weights: the loss within 1%, the update within a few
    percent of fp32's; the master weights stay float32, the computing copy is bfloat16."""
    monkeypatch.setattr("nmt.train.precision.cpu_has_fast_bf16", lambda: True)  # no warning
    config = tiny_experiment(corpus_dir, *switch)
    lines = (corpus_dir / "train.en").read_text("utf-8").splitlines()[:16]
    ids = tokenizer.src.encode(lines)
    batch = make_batch(ids, ids, tokenizer.tgt, 0)
    results = {}
    for precision in ("fp32", "bf16"):
        run, model = trainer(config, tokenizer, tmp_path / precision, precision)
        before = [p.detach().clone() for p in model.parameters()]
        loss, tokens, _ = run.train_step([batch])
        after = [p.detach().clone() for p in model.parameters()]
        results[precision] = (
            float(loss) / tokens,
            [a - b for a, b in zip(after, before, strict=True)],
        )
        assert all(p.dtype == torch.float32 for p in model.parameters())
        if precision == "bf16":
            assert isinstance(run.precision.scaler, MasterWeights)
            assert {p.dtype for p in run.network.parameters()} == {torch.bfloat16}
            copied = [c.float() for c in run.network.parameters()]
            assert all(
                torch.equal(c, m.bfloat16().float()) for c, m in zip(copied, after, strict=True)
            )
    (fp32_loss, fp32_update), (bf16_loss, bf16_update) = results["fp32"], results["bf16"]
    assert bf16_loss == pytest.approx(fp32_loss, rel=0.01)
    flat = [torch.cat([u.flatten() for u in update]) for update in (fp32_update, bf16_update)]
    cosine = torch.nn.functional.cosine_similarity(flat[0], flat[1], dim=0)
    assert cosine > 0.95, cosine


@native
def test_resume_is_bit_identical_in_bf16(tmp_path, corpus_dir):
    keys = ["train.precision=bf16", "train.valid_every=5", "train.batch_tokens=400"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_experiment(tiny_experiment(corpus_dir, *keys, "train.max_steps=10"), straight)
    train_experiment(tiny_experiment(corpus_dir, *keys, "train.max_steps=5"), split)
    again = tiny_experiment(corpus_dir, *keys, "train.max_steps=10")
    train_experiment(again, split, resume=True)
    from nmt.checkpoint import load_checkpoint

    a, b = load_checkpoint(straight / "last.pt"), load_checkpoint(split / "last.pt")
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert a["config"]["train"]["precision"] == "bf16"


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_hard_attention_anneals_in_the_network_that_trains(
    tmp_path, corpus_dir, monkeypatch, precision
):
    """Each update's Gumbel-softmax temperature is the schedule's in the model that computes
    the gradients: under bf16 the copy, which never sees the master's attributes."""
    monkeypatch.setattr("nmt.train.precision.cpu_has_fast_bf16", lambda: True)  # no warning
    seen = []
    step = Trainer.train_step

    def recording(trainer, batches):
        hard = [m for m in trainer.network.modules() if isinstance(m, HardAttention)]
        seen.append({m.temperature for m in hard})
        return step(trainer, batches)

    monkeypatch.setattr(Trainer, "train_step", recording)
    keys = ["model.attention.normaliser=hard", "model.attention.temperature_steps=4"]
    config = tiny_experiment(corpus_dir, *keys, f"train.precision={precision}", "train.max_steps=4")
    train_experiment(config, tmp_path / "run")
    schedule = [annealed_temperature(step, 4, 1.0, 0.5) for step in range(4)]
    assert seen == [{temperature} for temperature in schedule] and schedule[-1] < 0.6


@pytest.mark.parametrize(
    "width, bf16_seconds, expected",
    [(16, 0.5, "fp32"), (128, 0.5, "bf16"), (128, 0.99, "fp32")],
    ids=["narrow", "bf16 faster", "bf16 no faster"],
)
def test_auto_is_the_default_and_the_run_says_what_it_chose(
    tmp_path, corpus_dir, monkeypatch, probe_finds, width, bf16_seconds, expected
):
    """tests/tiny.yaml leaves train.precision at its default; on a CPU with native bf16,
    auto trains in what a probe of the model's step finds faster (here faked)."""
    for module in ("nmt.model.device", "nmt.train.precision"):
        monkeypatch.setattr(f"{module}.cpu_has_fast_bf16", lambda: True)
    probe_finds(fp32=1.0, bf16=bf16_seconds)
    run = tmp_path / "run"
    ran = nmt("train", "--config", "tests/tiny.yaml", "--run-dir", run,
              "--set", f"data.path={corpus_dir}", "--set", f"model.decoder.emb_dim={width}",
              "--set", "train.max_steps=3")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert f"precision: {expected}\n" in (run / "config.yaml").read_text()
    assert f'"precision": "{expected}"' in (run / "metrics.jsonl").read_text()
    assert f", {expected}, run dir" in (run / "train.log").read_text()


@native
@pytest.mark.parametrize("kind", ["demo_rnnsearch", "demo_transformer"])
def test_bf16_search_writes_fp32s_text_and_scores_as_nmt_score(request, kind):
    """On 95% of the demo test lines at least, naming those that differ; a hypothesis's
    score is what `Translator.score` gives its tokens under bf16, to bf16's precision."""
    run = request.getfixturevalue(kind)
    source = _test_sources(run)
    fp32 = Translator.load(run, workers=1, beam=4).translate(source)
    bf16 = Translator.load(run, workers=1, beam=4, precision="bf16")
    found = bf16.translate(source)
    differ = [s for s, a, b in zip(source, fp32, found, strict=True) if a.text != b.text]
    assert len(differ) <= 0.05 * len(source), differ
    assert {p.dtype for p in bf16.model.parameters()} == {torch.bfloat16}
    pairs = [(t.source, t.nbest[0].hypothesis) for t in found if t.nbest][:20]
    scored = bf16.score([s for s, _ in pairs], [h.tokens for _, h in pairs])
    for (_, hypothesis), pair in zip(pairs, scored, strict=True):
        # the same sums in float32 of bf16 logits, which a batch's shape rounds differently
        assert pair.total == pytest.approx(hypothesis.score, rel=0.02, abs=0.01)


def _test_sources(run):
    from nmt.checkpoint import load_checkpoint
    from nmt.config import checkpoint_config
    from nmt.data.splits import load_split

    config = checkpoint_config(load_checkpoint(run / "best.pt")["config"])
    return load_split(config.data, "test").src


def test_search_precision_is_checked(tmp_path, corpus_dir, tokenizer):
    from conftest import write_checkpoint

    checkpoint = write_checkpoint(tmp_path / "m.pt", tiny_experiment(corpus_dir), tokenizer)
    ran = nmt("translate", "--checkpoint", checkpoint, "--precision", "fp16", input="a dog.\n")
    assert ran.returncode == 2 and "'--precision'" in ran.stderr and "fp16" in ran.stderr
    ran = nmt("translate", "--checkpoint", checkpoint, "--precision", "bf16", "--quantize",
              "int8", input="a dog.\n")  # fmt: skip
    assert ran.returncode == 2 and "choose one" in ran.stderr
