"""Type switches that just work: `--set model.X.type=...` drops the keys of the file that the
new type does not read (one notice names them), keeps a key the command line sets itself
strict, and where sizes cannot fit names the size keys to change."""

import itertools
import logging

import pytest
import torch

from conftest import DEMO_CONFIG
from nmt.config import ConfigError, UnusedKeyError, load_config
from nmt.data.corpus import prepare_corpus
from nmt.model.seq2seq import build_model
from nmt.train.trainer import Trainer

ENCODERS = ("birnn", "self_attention", "birnn_self_attention")
DECODERS = ("rnnsearch", "transformer")
ATTENTIONS = ("additive", "dot", "general", "multihead")
# configs/demo.yaml's sizes: a BiRNN of 128 per direction, embeddings of 64, an RNNsearch
# decoder state of 128; a Transformer decoder's state is its width, the embeddings' 64.
ENCODER_WIDTH = {"birnn": 256, "self_attention": 64, "birnn_self_attention": 256}
DECODER_STATE = {"rnnsearch": 128, "transformer": 64}


def switch(encoder, decoder, attention):
    return [
        f"model.encoder.type={encoder}",
        f"model.decoder.type={decoder}",
        f"model.attention.type={attention}",
    ]


def test_a_switch_drops_what_the_new_types_do_not_read_with_one_notice(caplog):
    with caplog.at_level(logging.WARNING, logger="nmt"):
        config = load_config(DEMO_CONFIG, switch("self_attention", "transformer", "additive"))
    assert config.model.decoder.type == "transformer" and config.model.encoder.emb_dim == 64
    assert config.model.encoder.hidden_dim == 256 and config.model.decoder.out_dim == 256
    (notice,) = caplog.messages
    assert notice == (
        "notice: dropped model.encoder.hidden_dim, model.decoder.hidden_dim, "
        f"model.decoder.out_dim from {DEMO_CONFIG}: the types set with --set "
        "(model.decoder.type=transformer, model.encoder.type=self_attention) do not read them."
    )


def test_a_key_the_command_line_sets_beside_the_switch_stays_an_error():
    overrides = [*switch("self_attention", "transformer", "additive"), "model.decoder.out_dim=64"]
    with pytest.raises(UnusedKeyError) as raised:
        load_config(DEMO_CONFIG, overrides)
    assert raised.value.path == "model.decoder.out_dim"


def test_setting_the_type_the_file_has_or_defaults_to_drops_nothing(tmp_path):
    path = tmp_path / "transformer.yaml"
    path.write_text("model:\n  decoder: {type: transformer, emb_dim: 512, hidden_dim: 100}\n")
    with pytest.raises(UnusedKeyError, match="model.decoder.hidden_dim"):
        load_config(path, ["model.decoder.type=transformer"])
    path.write_text("model:\n  decoder: {layers: 3}\n")  # the default type, rnnsearch
    with pytest.raises(UnusedKeyError, match="model.decoder.layers"):
        load_config(path, ["model.decoder.type=rnnsearch"])


def test_no_notice_without_a_switch(caplog):
    with caplog.at_level(logging.WARNING, logger="nmt"):
        load_config(DEMO_CONFIG, ["model.attention.type=additive", "train.max_steps=5"])
    assert not caplog.messages


@pytest.fixture(scope="module")
def demo_tokenizer(corpus_dir, tmp_path_factory):
    config = load_config(DEMO_CONFIG, [f"data.path={corpus_dir}"])
    return prepare_corpus(config, tmp_path_factory.mktemp("corpus")).tokenizer


@pytest.mark.parametrize(
    "encoder, decoder, attention", list(itertools.product(ENCODERS, DECODERS, ATTENTIONS))
)
def test_every_combination_trains_or_names_the_sizes_to_change(
    encoder, decoder, attention, corpus_dir, demo_tokenizer, tmp_path, one_thread
):
    overrides = [f"data.path={corpus_dir}", *switch(encoder, decoder, attention)]
    width, state = ENCODER_WIDTH[encoder], DECODER_STATE[decoder]
    if decoder == "transformer" and width != state:
        with pytest.raises(ConfigError) as raised:
            load_config(DEMO_CONFIG, overrides)
        assert raised.value.path == "model.decoder.emb_dim"
        assert f"Set model.decoder.emb_dim: {width}, or model.encoder.hidden_dim: 32" in str(
            raised.value
        )
        return
    if attention == "dot" and width != state:
        with pytest.raises(ConfigError) as raised:
            load_config(DEMO_CONFIG, overrides)
        resize = (
            f"model.encoder.hidden_dim: {state // 2}"
            if encoder != "self_attention"
            else f"model.encoder.emb_dim: {state}"
        )
        assert raised.value.path == "model.attention.type"
        assert f"Set model.decoder.hidden_dim: {width}, or {resize}" in str(raised.value)
        return
    config = load_config(DEMO_CONFIG, overrides)
    corpus = prepare_corpus(config, tmp_path, demo_tokenizer)
    model = build_model(config.model, demo_tokenizer.src, demo_tokenizer.tgt)
    trainer = Trainer(config, tmp_path, corpus, model)
    batch = next(trainer.batches())
    before = {name: value.detach().clone() for name, value in model.named_parameters()}
    losses = []
    for _ in range(8):  # the same batch again and again: a model that trains fits it
        loss, tokens, _ = trainer.train_step([batch])
        losses.append(float(loss) / tokens)
    assert losses[-1] < losses[0] - 0.5, losses  # nats per token
    unchanged = [n for n, v in model.named_parameters() if torch.equal(v.detach(), before[n])]
    assert not unchanged  # every parameter takes part
