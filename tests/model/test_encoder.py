import pytest
import torch

from nmt.config import EncoderConfig
from nmt.model.encoder import ENCODERS, build_encoder

SIZES = {  # what each type reads besides emb_dim, layers and dropout
    "birnn": dict(hidden_dim=6),
    "self_attention": dict(heads=2, ff_dim=16),
    "birnn_self_attention": dict(hidden_dim=6, heads=2, ff_dim=16),
}
CONFIGS = [EncoderConfig(type=t, emb_dim=8, layers=2, dropout=0.0, **SIZES[t]) for t in ENCODERS]


def encoder(config):
    torch.manual_seed(0)
    return build_encoder(config, vocab_size=30, pad_id=0).eval()


def batch(lengths, seed=0):
    generator = torch.Generator().manual_seed(seed)
    src = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for row, length in enumerate(lengths):
        src[row, :length] = torch.randint(1, 30, (length,), generator=generator)
    return src, torch.tensor(lengths)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.type)
def test_shapes_and_mask(config):
    model = encoder(config)
    src, lengths = batch([5, 2])
    out = model(src, lengths)
    assert out.states.shape == (2, 5, config.output_dim) == (2, 5, model.output_dim)
    assert out.final.shape == (2, model.final_dim)
    assert out.mask.tolist() == [[True] * 5, [True, True, False, False, False]]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.type)
def test_a_sentence_does_not_depend_on_the_rest_of_the_batch(config):
    model = encoder(config)
    src, lengths = batch([4, 9, 6])
    together = model(src, lengths)
    alone = model(src[:1, :4], lengths[:1])
    assert torch.allclose(together.states[0, :4], alone.states[0], atol=1e-5)
    assert torch.allclose(together.final[0], alone.final[0], atol=1e-5)


def test_self_attention_sees_word_order():
    model = encoder(CONFIGS[1])
    src, lengths = batch([5])
    flipped = model(src.flip(1), lengths).states.flip(1)
    assert not torch.allclose(model(src, lengths).states, flipped, atol=1e-3)
