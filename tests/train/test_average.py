"""Checkpoint averaging: the mean of the weights, one config required, the result translates."""

import pytest
import torch
from typer.testing import CliRunner

from nmt.checkpoint import checkpoint_payload, load_checkpoint, save_checkpoint
from nmt.cli import app
from nmt.errors import UserError
from nmt.model.seq2seq import build_model
from nmt.train.average import average_checkpoints
from nmt.translate.translator import Translator


def write(path, config, tokenizer, seed, step):
    torch.manual_seed(seed)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    save_checkpoint(path, checkpoint_payload(model, config, tokenizer, step, {}))
    return load_checkpoint(path)


def test_average_of_identical_checkpoints_is_the_checkpoint(tmp_path, tiny_config, tokenizer):
    original = write(tmp_path / "a.pt", tiny_config, tokenizer, seed=0, step=5)
    (tmp_path / "b.pt").write_bytes((tmp_path / "a.pt").read_bytes())
    average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"], tmp_path / "avg.pt")
    averaged = load_checkpoint(tmp_path / "avg.pt")
    assert averaged["model"].keys() == original["model"].keys()
    assert all(torch.equal(averaged["model"][k], original["model"][k]) for k in averaged["model"])
    translator = Translator.load(tmp_path / "avg.pt")
    assert len(translator.translate(["the dog sees the cat."])) == 1


def test_average_is_the_mean_and_keeps_the_newest_step(tmp_path, tiny_config, tokenizer):
    a = write(tmp_path / "step-000002.pt", tiny_config, tokenizer, seed=0, step=2)
    b = write(tmp_path / "step-000010.pt", tiny_config, tokenizer, seed=1, step=10)
    write(tmp_path / "step-000001.pt", tiny_config, tokenizer, seed=2, step=1)
    result = CliRunner().invoke(
        app, ["average", "--output", str(tmp_path / "avg.pt"), "--last", "2", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    averaged = load_checkpoint(tmp_path / "avg.pt")
    for name, tensor in averaged["model"].items():
        assert torch.allclose(tensor, (a["model"][name] + b["model"][name]) / 2, atol=1e-7)
    assert averaged["step"] == 10 and "training" not in averaged


def test_checkpoints_of_different_configs_are_refused(tmp_path, tiny_config, tokenizer):
    import dataclasses

    write(tmp_path / "a.pt", tiny_config, tokenizer, seed=0, step=1)
    wider = dataclasses.replace(
        tiny_config,
        model=dataclasses.replace(
            tiny_config.model,
            decoder=dataclasses.replace(tiny_config.model.decoder, hidden_dim=32),
        ),
    )
    write(tmp_path / "b.pt", wider, tokenizer, seed=0, step=2)
    with pytest.raises(UserError, match="configs differ.*model.decoder.hidden_dim"):
        average_checkpoints([tmp_path / "a.pt", tmp_path / "b.pt"], tmp_path / "avg.pt")
    result = CliRunner().invoke(
        app, ["average", "--output", str(tmp_path / "x.pt"), "--last", "3", str(tmp_path)]
    )
    assert result.exit_code == 2 and "train.keep_last >= 3" in result.output


def test_checkpoints_from_before_a_key_was_added_average_with_newer_ones(
    tmp_path, tiny_config, tokenizer
):
    """Keys added since (read as their defaults) and what a run records of its corpus are no
    difference: a run that spans an upgrade still averages."""
    write(tmp_path / "new.pt", tiny_config, tokenizer, seed=0, step=2)
    old = write(tmp_path / "old.pt", tiny_config, tokenizer, seed=1, step=1)
    del old["config"]["decode"]["restrict_to_target_language"]
    del old["config"]["train"]["online_backtranslation"]
    save_checkpoint(tmp_path / "old.pt", old)
    new = load_checkpoint(tmp_path / "new.pt")
    new["tokenizer"]["target_pieces"] = {"de": [1] * tokenizer.tgt.size}
    save_checkpoint(tmp_path / "new.pt", new)
    average_checkpoints([tmp_path / "old.pt", tmp_path / "new.pt"], tmp_path / "avg.pt")
    assert load_checkpoint(tmp_path / "avg.pt")["step"] == 2
