import dataclasses
from types import SimpleNamespace

import pytest
import torch

from conftest import tiny_model
from nmt.config import AttentionConfig, ConfigError, DecoderConfig, EncoderConfig, ModelConfig
from nmt.data.batching import pad
from nmt.model.layers import TransformerLayer
from nmt.model.seq2seq import build_model

TRANSFORMER = ModelConfig(
    encoder=EncoderConfig(type="self_attention", emb_dim=16, layers=2, heads=2, ff_dim=32),
    decoder=DecoderConfig(type="transformer", emb_dim=16, layers=3, heads=2, ff_dim=32),
    attention=AttentionConfig(type="multihead", attn_dim=16, heads=2, kv="separate"),
)


POSITIONS = ["sinusoidal", "learned", "relative", "rotary", "alibi"]


def transformer(tiny_config, positions="sinusoidal", **model):
    """A tiny Transformer with `positions` on both sides (relative ones clipped at 3)."""
    config = dataclasses.replace(TRANSFORMER, **model)
    keys = {"positions": positions}
    if positions == "relative":
        keys["max_relative_position"] = 3
    config = dataclasses.replace(
        config,
        encoder=dataclasses.replace(config.encoder, **keys),
        decoder=dataclasses.replace(config.decoder, **keys),
    )
    return tiny_model(dataclasses.replace(tiny_config, model=config)).eval()


def batch(lengths, seed):
    generator = torch.Generator().manual_seed(seed)
    rows = [torch.randint(4, 50, (n,), generator=generator).tolist() for n in lengths]
    return pad(rows, 0), torch.tensor(lengths)


@pytest.mark.parametrize("positions", POSITIONS)
def test_no_position_sees_a_later_one(tiny_config, positions):
    model = transformer(tiny_config, positions)
    src, lengths = batch([6, 4], seed=1)
    tgt_in, _ = batch([7, 7], seed=2)
    changed = tgt_in.clone()
    changed[:, 4:] = torch.randint(4, 50, (2, 3))
    logits, weights = model.teacher_forcing(src, lengths, tgt_in)
    other_logits, other_weights = model.teacher_forcing(src, lengths, changed)
    assert torch.equal(logits[:, :4], other_logits[:, :4])
    assert torch.equal(weights[:, :4], other_weights[:, :4])
    assert not torch.allclose(logits[:, 4:], other_logits[:, 4:])


@pytest.mark.parametrize("positions", POSITIONS)
def test_step_by_step_log_probabilities_equal_the_teacher_forced_ones(tiny_config, positions):
    model = transformer(tiny_config, positions)
    src, lengths = batch([5, 8, 3], seed=3)
    tgt_in, _ = batch([9, 9, 9], seed=4)
    forced = model.teacher_forcing(src, lengths, tgt_in)[0].log_softmax(-1)
    state = model.init_state(model.encode(src, lengths))
    for t in range(tgt_in.size(1)):
        logits, state, _ = model.step(state, tgt_in[:, t])
        assert torch.allclose(logits.log_softmax(-1), forced[:, t], atol=1e-5)
    assert all(cache.length == tgt_in.size(1) for cache in state.decoder.caches)


def test_the_weights_come_from_the_chosen_layer(tiny_config):
    model = transformer(tiny_config)
    src, lengths = batch([5, 3], seed=5)
    tgt_in, _ = batch([4, 4], seed=6)
    last = model.teacher_forcing(src, lengths, tgt_in)[1]
    model.decoder.choose_attention_layer(1)
    first = model.teacher_forcing(src, lengths, tgt_in)[1]
    assert first.shape == last.shape == (2, 4, 2, 5) and not torch.allclose(first, last)
    state = model.init_state(model.encode(src, lengths))
    assert torch.allclose(model.step(state, tgt_in[:, 0])[2], first[:, 0], atol=1e-6)
    with pytest.raises(ValueError, match="layers 1 to 3"):
        model.choose_attention_layer(4)
    assert model.attention_layers == 3


def test_shared_embeddings_are_one_matrix_with_the_output_projection(tiny_config):
    decoder = dataclasses.replace(TRANSFORMER.decoder, tie_embeddings=True)
    model = transformer(tiny_config, decoder=decoder, share_embeddings=True)
    embeddings = model.encoder.embed.weight
    assert embeddings is model.decoder.embed.weight is model.output_layer.weight
    names = [name for name, _ in model.named_parameters()]
    assert sum("embed" in name or "generator.weight" in name for name in names) == 1


def test_shared_embeddings_need_one_vocabulary(tiny_config):
    config = dataclasses.replace(TRANSFORMER, share_embeddings=True)
    experiment = dataclasses.replace(tiny_config, model=config)
    with pytest.raises(ConfigError, match="share_embeddings.*one vocabulary"):
        build_model(config, SimpleNamespace(size=50, pad_id=0), SimpleNamespace(size=60, pad_id=0))
    with pytest.raises(ConfigError, match="tokenizer.joint: true"):
        dataclasses.replace(
            experiment, tokenizer=dataclasses.replace(tiny_config.tokenizer, joint=False)
        )


def test_the_width_must_match_the_encoder_states():
    with pytest.raises(ConfigError, match="decoder.emb_dim.*state size 16, got 32"):
        dataclasses.replace(TRANSFORMER, decoder=DecoderConfig(type="transformer", emb_dim=32))


@pytest.mark.parametrize(
    ("key", "value"), [("hidden_dim", 64), ("out_dim", 64), ("output", "tanh")]
)
def test_rnnsearch_keys_are_refused_on_a_transformer(key, value):
    with pytest.raises(ConfigError, match=f"'decoder.{key}'|'{key}'.*only type rnnsearch"):
        DecoderConfig(type="transformer", **{key: value})


@pytest.mark.parametrize(("key", "value"), [("layers", 2), ("norm", "post"), ("ff_dim", 64)])
def test_transformer_keys_are_refused_on_rnnsearch(key, value):
    with pytest.raises(ConfigError, match="only type transformer"):
        DecoderConfig(**{key: value})


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_a_layer_normalises_where_its_norm_says(norm):
    torch.manual_seed(0)
    layer = TransformerLayer(8, 2, 16, 0.0, 0.0, norm).eval()
    x = torch.randn(2, 3, 8) * 5 + 3
    out = layer(x, None)[0]
    normalised = torch.allclose(out.mean(-1), torch.zeros(2, 3), atol=1e-5)
    assert normalised == (norm == "post")  # pre-norm leaves the residual stream unnormalised
