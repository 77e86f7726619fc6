from pathlib import Path

import pytest

from nmt.config import ConfigError, Experiment, load_config
from nmt.errors import UserError

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_parses(path):
    config = load_config(path)
    assert isinstance(config, Experiment)
    assert config.name == path.stem


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path


def test_unknown_key_names_dotted_path_and_suggests(tmp_path):
    path = write(tmp_path, "model:\n  attention:\n    attn_dimm: 3\n")
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert error.value.path == "model.attention.attn_dimm"
    assert "Did you mean 'attn_dim'" in str(error.value)


def test_unknown_section_suggests(tmp_path):
    with pytest.raises(ConfigError, match="Did you mean 'train'"):
        load_config(write(tmp_path, "trian: {}\n"))


def test_wrong_type_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="train.max_steps.*expected int, got str"):
        load_config(write(tmp_path, "train: {max_steps: many}\n"))
    with pytest.raises(ConfigError, match="expected int, got bool"):
        load_config(write(tmp_path, "train: {max_steps: true}\n"))


def test_int_is_accepted_for_float(tmp_path):
    assert load_config(write(tmp_path, "train: {lr: 1}\n")).train.lr == 1.0


def test_exponent_without_dot_is_a_float(tmp_path):
    assert load_config(write(tmp_path, "train: {lr: 2e-4}\n")).train.lr == 2e-4
    assert load_config(write(tmp_path, ""), ["train.lr=1E-3"]).train.lr == 1e-3
    with pytest.raises(ConfigError, match="expected int, got str '1e3'"):
        load_config(write(tmp_path, ""), ["train.max_steps=1e3"])


def test_bad_enum_lists_choices(tmp_path):
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, "model: {encoder: {rnn: gruu}}\n"))
    assert error.value.path == "model.encoder.rnn"
    assert "'gru', 'lstm'" in str(error.value)


@pytest.mark.parametrize(
    "override, key",
    [
        ("model.encoder.dropout=1.0", "model.encoder.dropout"),
        ("model.decoder.hidden_dim=-4", "model.decoder.hidden_dim"),
        ("train.batch_tokens=0", "train.batch_tokens"),
    ],
)
def test_out_of_range_values(tmp_path, override, key):
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, ""), [override])
    assert error.value.path == key


def test_overrides_are_parsed_as_yaml_and_validated(tmp_path):
    path = write(tmp_path, "train: {max_steps: 10}\n")
    config = load_config(path, ["train.max_steps=20", "train.max_minutes=1.5", "data.path=null"])
    assert config.train.max_steps == 20
    assert config.train.max_minutes == 1.5
    assert config.data.path is None
    with pytest.raises(ConfigError, match="Did you mean 'max_steps'"):
        load_config(path, ["train.max_step=3"])


@pytest.mark.parametrize("override", ["train.max_steps", "=3", "train..x=1"])
def test_malformed_override(tmp_path, override):
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        load_config(write(tmp_path, ""), [override])


def test_invalid_yaml_names_line(tmp_path):
    with pytest.raises(UserError, match="line 2"):
        load_config(write(tmp_path, "train:\n  max_steps: 1: 2\n"))


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["decode.beam=0"], "decode.beam"),
        (["decode.beam=2", "decode.nbest=3"], "decode.nbest"),
        (["decode.alpha=-0.1"], "decode.alpha"),
        (["decode.temperature=0"], "decode.temperature"),
        (["decode.top_k=-1"], "decode.top_k"),
        (["decode.top_p=0"], "decode.top_p"),
        (["decode.top_p=1.5"], "decode.top_p"),
    ],
)
def test_decode_settings_are_checked(tmp_path, overrides, key):
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, ""), overrides)
    assert error.value.path == key


def test_sampling_allows_more_draws_than_the_beam(tmp_path):
    config = load_config(write(tmp_path, ""), ["decode.sample=true", "decode.nbest=8"])
    assert config.decode.nbest == 8 and config.decode.greedy().nbest == 1


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["model.attention.type=multihead", "model.attention.heads=7"], "model.attention.heads"),
        (["model.encoder.type=self_attention", "model.encoder.heads=5"], "model.encoder.heads"),
        (["model.attention.type=dot", "model.decoder.hidden_dim=100"], "model.attention.type"),
    ],
)
def test_sizes_that_do_not_fit_together(tmp_path, overrides, key):
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, ""), overrides)
    assert error.value.path == key
