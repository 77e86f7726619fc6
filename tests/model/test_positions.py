import copy
import dataclasses
import math

import pytest
import torch

from conftest import tiny_model
from nmt.config import (
    AttentionConfig,
    ConfigError,
    DecoderConfig,
    EncoderConfig,
    checkpoint_config,
    config_to_dict,
)
from nmt.model.attention import allowed_positions
from nmt.model.encoder import build_encoder
from nmt.model.layers import self_attention
from nmt.model.positions import (
    AlibiPositions,
    LearnedPositions,
    RelativePositions,
    RotaryPositions,
    alibi_slopes,
    relative_distances,
    sinusoid_positions,
)

CPU = torch.device("cpu")


def test_sinusoid_positions_are_bounded_and_distinct():
    table = sinusoid_positions(50, 8, CPU)
    assert table.shape == (50, 8) and table.abs().max() <= 1
    assert torch.cdist(table, table).add(torch.eye(50)).min() > 0


def test_rotary_turns_each_pair_by_its_angle():
    """The closed form, through complex numbers: pair i at position p is multiplied by
    exp(i p θ_i), θ_i = 10000^(-2i/d)."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 8, dtype=torch.float64)  # [B, H, L, d]
    rotated = RotaryPositions(8).rotate(x, start=4)
    pairs = torch.view_as_complex(x.unflatten(-1, (4, 2)).contiguous())
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    angle = torch.arange(4, 9, dtype=torch.float64)[:, None] * theta
    expected = torch.view_as_real(pairs * torch.polar(torch.ones_like(angle), angle)).flatten(-2)
    assert torch.allclose(rotated, expected, atol=1e-6)


def test_rotary_turns_a_bf16_model_by_float32_angles():
    """A bf16 copy of the model (training's, or decode.precision: bf16) rotates by the
    angles float32 computes: bf16 angles of ~100 radians are off by up to a quarter."""
    torch.manual_seed(2)
    x = torch.randn(1, 2, 6, 16)
    rotary = RotaryPositions(16)
    expected = rotary.rotate(x, start=100)
    got = copy.deepcopy(rotary).to(torch.bfloat16).rotate(x.bfloat16(), start=100)
    torch.testing.assert_close(got.float(), expected, atol=0.03, rtol=0.02)


def test_rotary_scores_depend_on_the_distance_only():
    torch.manual_seed(1)
    rotary = RotaryPositions(16)
    q, k = torch.randn(1, 1, 1, 16), torch.randn(1, 1, 1, 16)

    def score(m, n):
        return (rotary.queries(q, m) * rotary.keys(k, n)).sum().item()

    assert score(7, 3) == pytest.approx(score(20, 16), abs=1e-4)
    assert score(3, 7) == pytest.approx(score(0, 4), abs=1e-4)
    assert score(7, 3) != pytest.approx(score(7, 4), abs=1e-3)


def test_relative_bias_is_the_query_times_the_clipped_distance_vector():
    torch.manual_seed(2)
    relative = RelativePositions(head_dim=4, max_distance=2)
    queries = torch.randn(2, 3, 4, 4)  # the last 4 of 6 positions
    bias = relative.bias(queries, positions=6)
    assert bias.shape == (2, 3, 4, 6)
    for i in range(4):
        for j in range(6):
            distance = max(-2, min(2, j - (2 + i)))
            vector = relative.table.weight[distance + 2]
            expected = queries[:, :, i] @ vector / 2  # / sqrt(d)
            assert torch.allclose(bias[:, :, i, j], expected, atol=1e-6)


def test_relative_scores_depend_on_the_distance_only_and_clip_at_k():
    torch.manual_seed(3)
    relative = RelativePositions(head_dim=4, max_distance=2)
    query = torch.randn(4).expand(1, 1, 7, 4)  # one query vector at every position
    bias = relative.bias(query, positions=7)[0, 0]
    for i in range(7):
        for j in range(7):
            clipped = max(-2, min(2, j - i))
            assert bias[i, j] == bias[3, 3 + clipped]  # exactly: the same product
    assert len({round(v, 6) for v in bias.flatten().tolist()}) == 5  # 2k + 1 distances


@pytest.mark.parametrize(
    ("heads", "slopes"),
    [
        (8, [2**-1, 2**-2, 2**-3, 2**-4, 2**-5, 2**-6, 2**-7, 2**-8]),
        (4, [2**-2, 2**-4, 2**-6, 2**-8]),
        (6, [2**-2, 2**-4, 2**-6, 2**-8, 2**-1, 2**-3]),  # 4 heads', then every other of 8's
    ],
)
def test_alibi_slopes_are_the_papers(heads, slopes):
    assert alibi_slopes(heads) == pytest.approx(slopes)


def test_alibi_bias_is_minus_slope_times_distance():
    alibi = AlibiPositions(heads=4)
    bias = alibi.bias(torch.zeros(1, 4, 3, 8), positions=5)  # the last 3 of 5 positions
    for h, slope in enumerate(alibi_slopes(4)):
        for i in range(3):
            for j in range(5):
                assert bias[0, h, i, j].item() == pytest.approx(-slope * abs(j - (2 + i)))


def test_relative_distances_place_the_queries_last():
    assert relative_distances(2, 4, CPU).tolist() == [[-2, -1, 0, 1], [-3, -2, -1, 0]]


def test_learned_positions_past_the_table_share_its_last_vector():
    learned = LearnedPositions(dim=4, max_positions=5)
    vectors = learned(3, 4, CPU)
    table = learned.table.weight
    assert torch.equal(vectors, torch.stack([table[3], table[4], table[4], table[4]]))


@pytest.mark.parametrize("positions", ["relative", "rotary", "alibi"])
@pytest.mark.parametrize("causal", [False, True])
def test_the_fused_path_equals_the_one_that_returns_weights(positions, causal):
    """Without weights the attention runs as one fused kernel with the positions' bias as its
    mask; it must compute what the explicit scores and normaliser do."""
    torch.manual_seed(4)
    attention = self_attention(8, 2, 0.0, positions, 2).eval()
    states = torch.randn(2, 5, 8)
    mask = None if causal else torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    memory = attention.prepare(states, mask)
    fused, none = attention(states[:, 2:], memory, causal=causal, need_weights=False)
    explicit, weights = attention(states[:, 2:], memory, causal=causal)
    assert none is None and torch.allclose(fused, explicit, atol=1e-5)
    allowed = allowed_positions(mask, 3, 5, causal, CPU)
    if allowed is not None:
        assert torch.all(weights.masked_select(~allowed.expand_as(weights)) == 0)


def positional_encoder(positions):
    config = EncoderConfig(
        type="self_attention",
        emb_dim=8,
        layers=1,
        heads=2,
        ff_dim=16,
        dropout=0.0,
        positions=positions,
    )
    torch.manual_seed(0)
    return build_encoder(config, vocab_size=30, pad_id=0).eval()


@pytest.mark.parametrize("positions", ["relative", "rotary", "alibi"])
def test_an_encoder_with_positions_in_its_attention_sees_word_order(positions):
    encoder = positional_encoder(positions)
    src, lengths = torch.tensor([[5, 9, 3, 7, 2]]), torch.tensor([5])
    swapped = encoder(src[:, [1, 0, 2, 3, 4]], lengths).states[:, [1, 0, 2, 3, 4]]
    assert not torch.allclose(encoder(src, lengths).states, swapped, atol=1e-3)


def test_alibi_in_an_encoder_cannot_tell_a_sentence_from_its_mirror_image():
    """The documented cost of the symmetric form: distances have no direction."""
    encoder = positional_encoder("alibi")
    src, lengths = torch.tensor([[5, 9, 3, 7, 2]]), torch.tensor([5])
    flipped = encoder(src.flip(1), lengths).states.flip(1)
    assert torch.allclose(encoder(src, lengths).states, flipped, atol=1e-5)


def test_a_birnn_self_attention_encoder_takes_positions_in_its_attention():
    config = EncoderConfig(
        type="birnn_self_attention",
        emb_dim=8,
        hidden_dim=4,
        heads=2,
        ff_dim=16,
        positions="rotary",
    )
    encoder = build_encoder(config, vocab_size=30, pad_id=0)
    layer = encoder.stages[1].layers[0]
    assert isinstance(layer.attention.positions, RotaryPositions) and encoder.positions is None


@pytest.mark.parametrize(
    ("make", "key", "message"),
    [
        (
            lambda: DecoderConfig(type="transformer", emb_dim=12, heads=4, positions="rotary"),
            "positions",
            "head size .* must be even",
        ),
        (
            lambda: DecoderConfig(type="rnnsearch", positions="alibi"),
            "positions",
            "only type transformer",
        ),
        (
            lambda: DecoderConfig(type="transformer", emb_dim=16, max_positions=64),
            "max_positions",
            "only positions: learned",
        ),
        (
            lambda: DecoderConfig(
                type="transformer", emb_dim=16, positions="rotary", max_relative_position=4
            ),
            "max_relative_position",
            "only positions: relative",
        ),
        (
            lambda: EncoderConfig(type="birnn", positions="relative"),
            "positions",
            "only types self_attention and birnn_self_attention",
        ),
        (
            lambda: EncoderConfig(type="birnn_self_attention", positions="sinusoidal"),
            "positions",
            "below the BiRNN",
        ),
        (
            lambda: EncoderConfig(type="self_attention", max_relative_position=4),
            "max_relative_position",
            "not sinusoidal",
        ),
    ],
)
def test_position_keys_that_make_no_sense_are_refused(make, key, message):
    with pytest.raises(ConfigError, match=message) as caught:
        make()
    assert caught.value.path == key


def test_an_old_checkpoint_config_loads_with_todays_positions(tiny_config):
    """Checkpoints written before `positions` existed hold no such keys: they build the
    same model, sinusoids and no new parameters."""
    transformer = dataclasses.replace(
        tiny_config.model,
        encoder=EncoderConfig(type="self_attention", emb_dim=16, heads=2, ff_dim=32),
        decoder=DecoderConfig(type="transformer", emb_dim=16, layers=2, heads=2, ff_dim=32),
        attention=AttentionConfig(type="multihead", attn_dim=16, heads=2, kv="separate"),
    )
    raw = config_to_dict(dataclasses.replace(tiny_config, model=transformer))
    for side in ("encoder", "decoder"):
        for key in ("positions", "max_positions", "max_relative_position"):
            del raw["model"][side][key]
    config = checkpoint_config(raw)
    assert config.model.encoder.position_kind == config.model.decoder.positions == "sinusoidal"
    names = [name for name, _ in tiny_model(config).named_parameters()]
    assert not any("position" in name for name in names)


def test_learned_and_relative_positions_are_parameters(tiny_config):
    model_config = dataclasses.replace(
        tiny_config.model,
        encoder=EncoderConfig(
            type="self_attention",
            emb_dim=16,
            heads=2,
            ff_dim=32,
            positions="learned",
            max_positions=40,
        ),
        decoder=DecoderConfig(
            type="transformer",
            emb_dim=16,
            layers=2,
            heads=2,
            ff_dim=32,
            positions="relative",
            max_relative_position=3,
        ),
        attention=AttentionConfig(type="multihead", attn_dim=16, heads=2, kv="separate"),
    )
    model = tiny_model(dataclasses.replace(tiny_config, model=model_config))
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters() if "position" in name}
    assert shapes == {
        "encoder.positions.table.weight": (40, 16),
        "decoder.layers.0.attention.positions.table.weight": (7, 8),
        "decoder.layers.1.attention.positions.table.weight": (7, 8),
    }
    assert not math.isclose(model.encoder.positions.table.weight.std().item(), 0)
