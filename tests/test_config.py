"""The config builder: every shipped config parses; an unknown key, a wrong type, a value out
of range, values that do not fit together and a key that would do nothing are each one
ConfigError naming the dotted key, which the CLI prints as one line with exit code 2."""

import dataclasses
import itertools
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from conftest import DEMO_CONFIG, set_options
from nmt.cli import app
from nmt.config import (
    AttentionConfig,
    ConfigError,
    EncoderConfig,
    Experiment,
    TrainConfig,
    checkpoint_config,
    config_from_dict,
    config_to_dict,
    load_config,
    resolve_config,
)
from nmt.errors import UserError
from nmt.model.attention import build_attention
from nmt.model.encoder import build_encoder

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path


def error(tmp_path, *overrides: str, text: str = "") -> ConfigError:
    """The ConfigError of a config of `text` (empty: all defaults) with these overrides."""
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, text), overrides)
    return raised.value


def refused(*args) -> str:
    """Runs `nmt ARGS` in this process and asserts a user error: exit code 2 and one line."""
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    (message,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    return message


# Shipped configs


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_parses(path):
    config = load_config(path)
    assert isinstance(config, Experiment)
    assert config.name == path.stem


@pytest.mark.parametrize(
    "encoder, attention, schedule",
    list(
        itertools.product(
            ("birnn", "self_attention", "birnn_self_attention"),
            ("additive", "dot", "general", "multihead"),
            ("constant", "plateau", "inverse_sqrt", "cosine"),
        )
    ),
)
def test_resolved_configs_with_every_key_load_again(tmp_path, encoder, attention, schedule):
    """A checkpoint stores every key, defaults included: a default never counts as set."""
    config = load_config(
        write(tmp_path, ""),
        [
            f"model.encoder.type={encoder}",
            f"model.attention.type={attention}",
            "model.attention.kv=separate",  # dot with shared keys needs equal sizes
            f"train.schedule={schedule}",
        ],
    )
    assert config_from_dict(config_to_dict(config)) == config


# Unknown keys, types, choices, ranges


def test_unknown_key_names_dotted_path_and_suggests(tmp_path):
    path = write(tmp_path, "model:\n  attention:\n    attn_dimm: 3\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert raised.value.path == "model.attention.attn_dimm"
    message = refused("train", "--config", path)
    assert "model.attention.attn_dimm" in message and "Did you mean 'attn_dim'" in message


def test_unknown_section_suggests(tmp_path):
    with pytest.raises(ConfigError, match="Did you mean 'train'"):
        load_config(write(tmp_path, "trian: {}\n"))


def test_wrong_type_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="train.max_steps.*expected int, got str"):
        load_config(write(tmp_path, "train: {max_steps: many}\n"))
    with pytest.raises(ConfigError, match="expected int, got bool"):
        load_config(write(tmp_path, "train: {max_steps: true}\n"))
    message = refused("train", "--config", DEMO_CONFIG, *set_options("train.max_steps=many"))
    assert "train.max_steps" in message and "expected int, got str 'many'" in message


def test_int_is_accepted_for_float(tmp_path):
    assert load_config(write(tmp_path, "train: {lr: 1}\n")).train.lr == 1.0


def test_exponent_without_dot_is_a_float(tmp_path):
    assert load_config(write(tmp_path, "train: {lr: 2e-4}\n")).train.lr == 2e-4
    assert load_config(write(tmp_path, ""), ["train.lr=1E-3"]).train.lr == 1e-3
    with pytest.raises(ConfigError, match="expected int, got str '1e3'"):
        load_config(write(tmp_path, ""), ["train.max_steps=1e3"])


def test_bad_choice_lists_the_choices_and_suggests(tmp_path):
    raised = error(tmp_path, text="model: {encoder: {rnn: gruu}}\n")
    assert raised.path == "model.encoder.rnn" and "'gru', 'lstm'" in str(raised)
    assert "Did you mean 'cosine'" in str(error(tmp_path, "train.schedule=cosin"))
    message = refused("train", "--config", DEMO_CONFIG, *set_options("model.decoder.output=maxuot"))
    for part in ("model.decoder.output", "'maxout', 'tanh'", "Did you mean 'maxout'"):
        assert part in message


def test_decoder_attention_bias_needs_a_multihead_attention_over_the_source():
    transformer = ["model.encoder.type=self_attention", "model.decoder.type=transformer"]
    transformer += ["model.decoder.emb_dim=64", "model.encoder.emb_dim=64"]
    with pytest.raises(ConfigError, match="Set model.attention.type: multihead") as raised:
        load_config(DEMO_CONFIG, [*transformer, "model.decoder.attention_bias=true"])
    assert raised.value.path == "model.decoder.attention_bias"


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["model.encoder.dropout=1.0"], "model.encoder.dropout"),
        (["model.decoder.hidden_dim=-4"], "model.decoder.hidden_dim"),
        (["train.batch_tokens=0"], "train.batch_tokens"),
        (["train.max_bad_steps=0"], "train.max_bad_steps"),
        (["train.schedule=cosine", "train.min_lr=0.5"], "train.min_lr"),  # above lr
        (["train.schedule=plateau", "train.plateau_factor=1.0"], "train.plateau_factor"),
        (["train.schedule=plateau", "train.plateau_patience=0"], "train.plateau_patience"),
        (["train.warmup_steps=-1"], "train.warmup_steps"),
        (["train.accum_steps=0"], "train.accum_steps"),
        (["train.patience=0"], "train.patience"),
        (["train.keep_last=-1"], "train.keep_last"),
        (["data.num_proc=0"], "data.num_proc"),
        (["decode.max_src_len=0"], "decode.max_src_len"),
        (["decode.beam=0"], "decode.beam"),
        (["decode.alpha=-0.1"], "decode.alpha"),
        (["decode.temperature=0"], "decode.temperature"),
        (["decode.top_k=-1"], "decode.top_k"),
        (["decode.top_p=0"], "decode.top_p"),
        (["decode.top_p=1.5"], "decode.top_p"),
        (["tokenizer.sample_alpha=0"], "tokenizer.sample_alpha"),
        (["tokenizer.sample_alpha=1.5"], "tokenizer.sample_alpha"),
    ],
)
def test_values_out_of_range_name_the_key(overrides, key):
    with pytest.raises(ConfigError, match="must be") as raised:
        load_config(DEMO_CONFIG, overrides)
    assert raised.value.path == key


# Overrides and files


def test_overrides_are_parsed_as_yaml_and_validated(tmp_path):
    path = write(tmp_path, "train: {max_steps: 10}\n")
    config = load_config(path, ["train.max_steps=20", "train.max_minutes=1.5", "data.path=null"])
    assert config.train.max_steps == 20
    assert config.train.max_minutes == 1.5
    assert config.data.path is None
    with pytest.raises(ConfigError, match="Did you mean 'max_steps'"):
        load_config(path, ["train.max_step=3"])


@pytest.mark.parametrize("pair", ["train.max_steps", "=3", "train..lr=1"])
def test_malformed_set_pair(tmp_path, pair):
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        load_config(write(tmp_path, ""), [pair])
    message = refused("train", "--config", DEMO_CONFIG, "--set", pair)
    assert "--set expects KEY=VALUE" in message and pair in message


def test_invalid_yaml_names_file_line_and_column(tmp_path):
    path = write(tmp_path, "train:\n  max_steps: 1: 2\n")
    with pytest.raises(UserError, match="line 2"):
        load_config(path)
    message = refused("train", "--config", path)
    assert str(path) in message and "line 2, column 15" in message


def test_yaml_alias_bomb_is_rejected_quickly(tmp_path):
    """Nine levels of nine aliases: 9**9 items if expanded; the message must not expand them."""
    value = "[lol, lol, lol, lol, lol, lol, lol, lol, lol]"
    for level in range(8):
        value = f"[&a{level} {value}" + f", *a{level}" * 8 + "]"
    path = write(tmp_path, f"train:\n  max_steps: {value}\n")
    message = refused("train", "--config", path)
    assert "train.max_steps" in message and "a list of 9 items" in message
    assert len(message) < 300


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


# Values that must fit together


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["model.attention.type=multihead", "model.attention.heads=7"], "model.attention.heads"),
        (["model.encoder.type=self_attention", "model.encoder.heads=5"], "model.encoder.heads"),
        (["model.attention.type=dot", "model.decoder.hidden_dim=100"], "model.attention.type"),
        (
            ["model.decoder.tie_embeddings=true", "model.decoder.out_dim=128"],
            "model.decoder.tie_embeddings",
        ),
        (["decode.beam=2", "decode.nbest=3"], "decode.nbest"),
        (["data.streaming=true", "data.num_proc=2"], "data.num_proc"),
        (["data.tgt_lang=de"], "data.tgt_lang"),
    ],
)
def test_values_that_do_not_fit_together(tmp_path, overrides, key):
    assert error(tmp_path, *overrides).path == key


def test_extra_train_lists_directories_once_for_the_train_split_in_memory(tmp_path):
    config = load_config(write(tmp_path, "data: {extra_train: [distilled, more]}\n"))
    assert config.data.extra_train == ["distilled", "more"]
    cases = {
        "data.extra_train=[]": ("data.extra_train", "needs a directory"),
        "data.extra_train=[a, '']": ("data.extra_train[1]", "must name a directory"),
        "data.extra_train=[a, a]": ("data.extra_train", "lists a twice"),
        "data.extra_train=a": ("data.extra_train", "expected a list"),
    }
    for override, (key, message) in cases.items():
        found = error(tmp_path, override)
        assert (found.path, message in found.detail) == (key, True), found
    for large in ("data.streaming=true", "data.num_proc=2"):
        found = error(tmp_path, "data.extra_train=[distilled]", large)
        assert found.path == "data.extra_train" and "in memory only" in found.detail
    message = refused(
        "train", "--config", DEMO_CONFIG, *set_options("data.extra_train=[a]", "data.num_proc=2")
    )
    assert "error: config key 'data.extra_train': works on the train split in memory" in message


@pytest.mark.parametrize("through", ["de", "fr"])
def test_a_training_config_sets_no_default_pivot(tmp_path, through):
    """decode.through pivots every line, so a checkpoint that kept it would pivot the very
    direction into that language; refused when the config is read, not at the first
    validation, and naming the key, not --through."""
    found = error(tmp_path, f"decode.through={through}")
    assert found.path == "decode.through" and "--through" in found.detail, found
    run = tmp_path / "run"
    message = refused(
        "train",
        "--config",
        DEMO_CONFIG,
        "--run-dir",
        run,
        *set_options(f"decode.through={through}"),
    )
    assert message.startswith("error: config key 'decode.through':"), message
    assert not run.exists()


def test_sampling_allows_more_draws_than_the_beam(tmp_path):
    config = load_config(write(tmp_path, ""), ["decode.sample=true", "decode.nbest=8"])
    assert config.decode.nbest == 8 and config.decode.greedy().nbest == 1


# Keys that would do nothing

NO_EFFECT = {  # id: (overrides, the key named, what the message suggests)
    "attention heads, additive": (
        ["model.attention.heads=8"],
        "model.attention.heads",
        "set type: multihead",
    ),
    "attention scaled, additive": (
        ["model.attention.scaled=true"],
        "model.attention.scaled",
        "set type: dot or general",
    ),
    "attention scaled, multihead": (
        ["model.attention.type=multihead", "model.attention.scaled=true"],
        "model.attention.scaled",
        "multihead is always scaled",
    ),
    "attn_dim, general without window": (
        ["model.attention.type=general", "model.attention.attn_dim=64"],
        "model.attention.attn_dim",
        "set a window",
    ),
    "encoder heads, birnn": (["model.encoder.heads=8"], "model.encoder.heads", "change the type"),
    "encoder ff_dim, birnn": (
        ["model.encoder.ff_dim=512"],
        "model.encoder.ff_dim",
        "only types self_attention and birnn_self_attention",
    ),
    "encoder rnn, self-attention": (
        ["model.encoder.type=self_attention", "model.encoder.rnn=lstm"],
        "model.encoder.rnn",
        "only types birnn and birnn_self_attention",
    ),
    "encoder hidden_dim, self-attention": (
        ["model.encoder.type=self_attention", "model.encoder.hidden_dim=128"],
        "model.encoder.hidden_dim",
        "change the type",
    ),
    "encoder activation, birnn": (
        ["model.encoder.activation=swish"],
        "model.encoder.activation",
        "only types self_attention and birnn_self_attention",
    ),
    "decoder attention_bias, rnnsearch": (
        ["model.decoder.attention_bias=true"],
        "model.decoder.attention_bias",
        "only type transformer uses it",
    ),
    "min_lr, constant": (["train.min_lr=1e-5"], "train.min_lr", "Remove it (default 0.0)"),
    "plateau_factor, cosine": (
        ["train.schedule=cosine", "train.plateau_factor=0.3"],
        "train.plateau_factor",
        "set schedule: plateau",
    ),
    "plateau_patience, constant": (
        ["train.plateau_patience=5"],
        "train.plateau_patience",
        "set schedule: plateau",
    ),
    "hub_config without hub_id": (["data.hub_config=de-en"], "data.hub_config", "set hub_id"),
    "hub_splits without hub_id": (["data.hub_splits.valid=dev"], "data.hub_splits", "set hub_id"),
    "hub_id with demo": (
        ["data.demo=true", "data.hub_id=bentrevett/multi30k"],
        "data.hub_id",
        "set demo: false",
    ),
    "vocab_size with a model": (
        ["tokenizer.model=spm.model", "tokenizer.vocab_size=4000"],
        "tokenizer.vocab_size",
        "set model: null",
    ),
    "joint with a model": (
        ["tokenizer.model=spm.model", "tokenizer.joint=false"],
        "tokenizer.joint",
        "only training SentencePiece uses it, not a given tokenizer.model",
    ),
    "character_coverage with a model": (
        ["tokenizer.model=spm.model", "tokenizer.character_coverage=0.9995"],
        "tokenizer.character_coverage",
        "Remove it (default 1.0)",
    ),
    "sample_alpha, streamed": (
        ["data.streaming=true", "tokenizer.sample_alpha=0.1"],
        "tokenizer.sample_alpha",
        "only the in-memory train split samples segmentations",
    ),
    "cache_dir with a model": (
        ["tokenizer.model=spm.model", "data.path=corpus", "data.cache_dir=cache"],
        "data.cache_dir",
        "set tokenizer.model: null",
    ),
}


@pytest.mark.parametrize("case", NO_EFFECT)
def test_a_key_that_would_do_nothing_is_an_error(tmp_path, case):
    overrides, key, suggestion = NO_EFFECT[case]
    raised = error(tmp_path, *overrides)
    assert raised.path == key
    assert "would do nothing here. Remove it (default" in str(raised)
    assert suggestion in str(raised)


def test_a_key_that_would_do_nothing_is_one_line_from_the_cli():
    message = refused("train", "--config", DEMO_CONFIG, *set_options("model.attention.scaled=true"))
    assert message == (
        "error: config key 'model.attention.scaled': only types dot and general use it "
        "(multihead is always scaled), not 'additive', so it would do nothing here. Remove it "
        f"(default false) or set type: dot or general (in {DEMO_CONFIG})"
    )


@pytest.mark.parametrize(
    "overrides",
    [
        ["model.attention.type=multihead", "model.attention.heads=8"],
        ["model.attention.type=dot", "model.attention.kv=separate", "model.attention.scaled=true"],
        ["model.attention.type=general", "model.attention.window=4", "model.attention.attn_dim=64"],
        ["model.attention.type=additive", "model.attention.dropout=0.1"],
        ["model.encoder.type=self_attention", "model.encoder.heads=8", "model.encoder.ff_dim=512"],
        ["model.encoder.type=birnn_self_attention", "model.encoder.rnn=lstm"],
        ["model.encoder.type=birnn_self_attention", "model.encoder.hidden_dim=128"],
        ["train.schedule=plateau", "train.min_lr=1e-5", "train.plateau_patience=5"],
        ["train.schedule=inverse_sqrt", "train.min_lr=1e-5", "train.warmup_steps=100"],
        ["train.schedule=cosine", "train.min_lr=1e-5"],
        ["data.hub_id=bentrevett/multi30k", "data.hub_config=de-en", "data.hub_splits.valid=dev"],
        ["data.hub_id=bentrevett/multi30k", "data.path=corpus"],  # local files, hub as fallback
        ["data.demo=true", "data.path=corpus"],  # e.g. a demo checkpoint's corpus moved
        ["tokenizer.model=spm.model", "data.demo=true", "data.cache_dir=cache"],
        ["tokenizer.vocab_size=4000", "tokenizer.joint=false", "data.cache_dir=cache"],
        ["tokenizer.model=spm.model", "tokenizer.sample_alpha=0.1"],  # any model samples
    ],
    ids=lambda overrides: ", ".join(overrides),
)
def test_the_same_keys_are_accepted_where_they_take_effect(tmp_path, overrides):
    assert isinstance(load_config(write(tmp_path, ""), overrides), Experiment)


def test_the_encoder_is_built_to_the_config_output_size():
    for config in (
        EncoderConfig(type="birnn", emb_dim=8, hidden_dim=6),
        EncoderConfig(type="self_attention", emb_dim=8, heads=2),
        EncoderConfig(type="birnn_self_attention", emb_dim=8, hidden_dim=6, heads=3),
    ):
        assert build_encoder(config, vocab_size=10, pad_id=0).output_dim == config.output_dim


def test_configs_built_in_code_follow_the_same_rules():
    """The rule lives in the dataclasses, so configs built in code are checked too."""
    with pytest.raises(ConfigError) as raised:
        TrainConfig(min_lr=0.1)
    assert raised.value.path == "min_lr"
    with pytest.raises(ConfigError):
        dataclasses.replace(AttentionConfig(type="multihead", heads=8), type="additive")


# model.attention.dropout takes effect for every type


@pytest.mark.parametrize("attention_type", ["additive", "dot", "general", "multihead"])
def test_attention_dropout_acts_in_training_only(attention_type):
    config = AttentionConfig(type=attention_type, dropout=0.5)
    torch.manual_seed(0)
    attention = build_attention(config, 8, 8)
    torch.manual_seed(0)
    plain = build_attention(dataclasses.replace(config, dropout=0.0), 8, 8)
    states, query = torch.randn(2, 5, 8), torch.randn(2, 3, 8)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])

    def context_and_weights(module, training: bool):
        module.train(training)
        return module(query, module.prepare(states, mask))

    context, weights = context_and_weights(attention, training=True)
    plain_context, plain_weights = context_and_weights(plain, training=True)
    assert not torch.allclose(context, plain_context)  # the weights that averaged were dropped
    assert torch.equal(weights, plain_weights)  # the weights returned (plots, alignments) are not
    evaluated = context_and_weights(attention, training=False)
    assert all(map(torch.equal, evaluated, context_and_weights(plain, training=False)))


def test_a_null_section_takes_keys_set_into_it():
    """A checkpoint's config holds train.adapters: null; --set train.adapters.rank=4 on it
    (or on an Experiment in Python) makes the section, with its other keys at defaults."""
    stored = config_to_dict(load_config(DEMO_CONFIG))
    assert stored["train"]["adapters"] is None
    amended = resolve_config(stored, ["train.init_from=x", "train.adapters.rank=4"], "test")
    assert amended.train.adapters.rank == 4 and amended.train.adapters.type == "lora"


def test_an_adapter_checkpoint_from_before_ranks_keeps_one_rank_for_every_target():
    """A checkpoint stores every key; one written before train.adapters.ranks existed gave
    every target its rank, so its config reads back with ranks {} rather than today's
    default, and its adapter weights fit the model rebuilt from it."""
    config = load_config(DEMO_CONFIG, ["train.init_from=x", "train.adapters.rank=16"])
    stored = config_to_dict(config)
    del stored["train"]["adapters"]["ranks"]
    restored = checkpoint_config(stored)
    assert restored.train.adapters.ranks == {}
    assert restored.train.adapters.rank == 16 and restored.train == dataclasses.replace(
        config.train, adapters=dataclasses.replace(config.train.adapters, ranks={})
    )
