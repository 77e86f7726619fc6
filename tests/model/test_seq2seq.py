import dataclasses

import pytest
import torch

from conftest import tiny_model
from nmt.config import AttentionConfig, DecoderConfig, EncoderConfig
from nmt.data.batching import pad

# (encoder settings, attention settings) over the tiny config's. Keys a variant does not read
# go back to their defaults (the tiny config sets attn_dim and the encoder's hidden_dim).
SELF_ATTENTION = dict(heads=2, ff_dim=32)
UNSIZED = dict(attn_dim=AttentionConfig.attn_dim)
VARIANTS = {
    "rnnsearch": ({}, dict(type="additive")),
    "keyvalue": ({}, dict(type="additive", kv="separate")),
    "dot": ({}, dict(type="dot", kv="separate", scaled=True, **UNSIZED)),
    "general": ({}, dict(type="general", **UNSIZED)),
    "multihead": ({}, dict(type="multihead", heads=2)),
    "local": ({}, dict(type="general", window=4)),
    "selfattn": (
        dict(type="self_attention", hidden_dim=EncoderConfig.hidden_dim, **SELF_ATTENTION),
        dict(type="additive"),
    ),
    "birnn_selfattn": (
        dict(type="birnn_self_attention", **SELF_ATTENTION),
        dict(type="multihead", heads=2, kv="separate"),
    ),
    "transformer": (
        dict(type="self_attention", hidden_dim=EncoderConfig.hidden_dim, **SELF_ATTENTION),
        dict(type="multihead", heads=2, kv="separate"),
    ),
    "transformer_postnorm_birnn": (
        dict(hidden_dim=8),
        dict(type="multihead", heads=2, kv="separate"),
    ),
    "transformer_additive": (dict(hidden_dim=8), dict(type="additive")),
}
# The Transformer decoders (width 16: the tiny encoders' state size); the rest keep RNNsearch's.
TRANSFORMERS = {
    "transformer": DecoderConfig(type="transformer", emb_dim=16, layers=2, heads=2, ff_dim=32),
    "transformer_postnorm_birnn": DecoderConfig(
        type="transformer", emb_dim=16, layers=2, heads=2, ff_dim=32, norm="post"
    ),
    "transformer_additive": DecoderConfig(
        type="transformer", emb_dim=16, layers=1, heads=2, ff_dim=32, tie_embeddings=True
    ),
}


@pytest.fixture(params=list(VARIANTS))
def variant_config(request, tiny_config):
    encoder, attention = VARIANTS[request.param]
    model = tiny_config.model
    model = dataclasses.replace(
        model,
        encoder=dataclasses.replace(model.encoder, **encoder),
        attention=dataclasses.replace(model.attention, **attention),
        decoder=TRANSFORMERS.get(request.param, model.decoder),
    )
    return dataclasses.replace(tiny_config, model=model)


def batch(lengths, vocab=50, seed=1):
    generator = torch.Generator().manual_seed(seed)
    rows = [torch.randint(4, vocab, (n,), generator=generator).tolist() for n in lengths]
    return pad(rows, 0), torch.tensor(lengths)


def test_shapes(tiny_config):
    model = tiny_model(tiny_config).eval()
    src, lengths = batch([5, 3])
    tgt_in, _ = batch([4, 2], seed=2)
    logits, weights = model.teacher_forcing(src, lengths, tgt_in)
    assert logits.shape == (2, 4, 50) and weights.shape == (2, 4, 1, 5)
    assert (weights[1, ..., 3:] == 0).all()


def test_outputs_do_not_depend_on_other_sentences_in_the_batch(variant_config):
    model = tiny_model(variant_config).eval()
    src, lengths = batch([4, 9, 6])
    tgt_in, _ = batch([3, 7, 5], seed=2)
    logits, _ = model.teacher_forcing(src, lengths, tgt_in)
    alone, _ = model.teacher_forcing(src[:1, :4], lengths[:1], tgt_in[:1, :3])
    assert torch.allclose(logits[0, :3], alone[0], atol=1e-5)


def test_step_by_step_decoding_equals_teacher_forcing(variant_config):
    model = tiny_model(variant_config).eval()
    src, lengths = batch([6, 4])
    tgt_in, _ = batch([5, 5], seed=3)
    forced, forced_weights = model.teacher_forcing(src, lengths, tgt_in)
    state = model.init_state(model.encode(src, lengths))
    for t in range(tgt_in.size(1)):
        logits, state, weights = model.step(state, tgt_in[:, t])
        assert torch.allclose(logits, forced[:, t], atol=1e-5)
        assert torch.allclose(weights, forced_weights[:, t], atol=1e-6)


def test_state_select_reorders_rows(variant_config):
    model = tiny_model(variant_config).eval()
    src, lengths = batch([6, 4])
    prev = torch.tensor([5, 7])
    logits, _, _ = model.step(model.init_state(model.encode(src, lengths)), prev)
    state = model.init_state(model.encode(src, lengths))  # a state is stepped once
    swapped, _, _ = model.step(state.select(torch.tensor([1, 0])), prev.flip(0))
    assert torch.allclose(swapped, logits.flip(0), atol=1e-6)


def test_gradients_reach_every_parameter(variant_config):
    model = tiny_model(variant_config)
    src, lengths = batch([5, 3])
    tgt_in, _ = batch([4, 2], seed=2)
    model(src, lengths, tgt_in, tgt_in).backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_tiny_model_overfits_a_tiny_batch(tiny_config):
    model = tiny_model(tiny_config)
    src, lengths = batch([6, 5, 4])
    tgt, _ = batch([5, 4, 3], seed=4)
    tgt_in = torch.cat([torch.full((3, 1), 2), tgt[:, :-1]], 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(150):
        loss = model(src, lengths, tgt_in, tgt) / (tgt != 0).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    logits, _ = model.teacher_forcing(src, lengths, tgt_in)
    assert loss.item() < 0.05
    assert torch.equal(logits.argmax(-1)[tgt != 0], tgt[tgt != 0])
