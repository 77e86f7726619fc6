import itertools

import pytest
import torch

from nmt.config import AttentionConfig
from nmt.model.attention import (
    ATTENTIONS,
    Memory,
    allowed_positions,
    build_attention,
)

QUERY_DIM = MEMORY_DIM = 8
# Small sizes where a type reads them; keys a type does not read keep their defaults.
SIZES = {
    "additive": dict(attn_dim=8),
    "dot": dict(scaled=True),
    "general": dict(scaled=True),
    "multihead": dict(attn_dim=8, heads=2),
}
VARIANTS = [
    AttentionConfig(type=t, kv=kv, window=window, **SIZES[t])
    for t, kv, window in itertools.product(ATTENTIONS, ("shared", "separate"), (None, 3))
]


def variant_id(config: AttentionConfig) -> str:
    return f"{config.type}-{config.kv}-{'local' if config.window else 'global'}"


def memory_batch(lengths=(5, 3, 1), dim=MEMORY_DIM, seed=0):
    generator = torch.Generator().manual_seed(seed)
    states = torch.randn(len(lengths), max(lengths), dim, generator=generator)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    return states, mask


def build(config):
    torch.manual_seed(0)
    return build_attention(config, QUERY_DIM, MEMORY_DIM)


@pytest.mark.parametrize("normaliser", ["softmax", "sparsemax", "entmax15", "hard"])
@pytest.mark.parametrize("attention_type", list(ATTENTIONS))
@pytest.mark.parametrize("training", [False, True])
def test_every_normaliser_keeps_weights_on_the_simplex_and_padding_zero(
    normaliser, attention_type, training
):
    config = AttentionConfig(type=attention_type, normaliser=normaliser, **SIZES[attention_type])
    attention = build(config).train(training)
    states, mask = memory_batch(lengths=(6, 4, 1))
    query = torch.randn(3, 5, QUERY_DIM, requires_grad=True)
    context, weights = attention(query, attention.prepare(states, mask))
    assert torch.allclose(weights.sum(-1), torch.ones_like(weights[..., 0]), atol=1e-6)
    assert (weights >= 0).all() and (weights[~mask[:, None, None, :].expand_as(weights)] == 0).all()
    if normaliser == "hard":
        assert ((weights == 0) | (weights == 1)).all()
    if context.requires_grad:
        context.sum().backward()
    grad = torch.zeros_like(query) if query.grad is None else query.grad
    assert torch.isfinite(grad).all()
    # an argmax passes no gradient to the scorer; the straight-through estimator does
    assert (grad.abs().sum() > 0) == (training or normaliser != "hard")


def test_causal_positions_see_themselves_and_the_past_only():
    allowed = allowed_positions(None, 3, 5, True, torch.device("cpu"))[0, :, 0]  # last 3 of 5
    expected = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(allowed, expected)


def multihead(dropout=0.0):
    config = AttentionConfig(type="multihead", attn_dim=8, heads=2, kv="separate", dropout=dropout)
    return build(config)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_fused_multihead_attention_equals_the_explicit_weights(causal, padded):
    """Without weights to return, multi-head attention runs scaled_dot_product_attention."""
    attention = multihead()
    states, mask = memory_batch(lengths=(5, 5, 5) if causal else (5, 3, 1))
    memory = attention.prepare(states, mask if padded and not causal else None)
    query = states if causal else torch.randn(3, 4, QUERY_DIM)
    explicit, weights = attention(query, memory, causal=causal)
    fused, none = attention(query, memory, causal=causal, need_weights=False)
    assert none is None and torch.allclose(fused, explicit, atol=1e-6)
    if causal:
        future = torch.ones(5, 5, dtype=torch.bool).triu(1)[None, :, None, :].expand_as(weights)
        assert (weights[future] == 0).all()


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("config", VARIANTS, ids=variant_id)
def test_a_selected_memory_attends_as_its_copied_rows_do(config, need_weights):
    """Search selects memory rows lazily (reordered, repeated, dropped); attention through
    the map equals attention over the copied rows."""
    attention = build(config).eval()
    states, mask = memory_batch(lengths=(5, 3, 1, 4))
    rows = torch.tensor([3, 0, 0, 3, 1, 3])  # memory row 2 read by no query, 3 by three
    prepared = attention.prepare(states, mask)
    selected = prepared.select(rows)
    copied = Memory(prepared.keys[rows], prepared.values[rows], mask[rows])
    query = torch.randn(len(rows), 1, QUERY_DIM)
    context, weights = attention(query, selected, need_weights=need_weights)
    expected, expected_weights = attention(query, copied, need_weights=need_weights)
    assert torch.allclose(context, expected, atol=1e-6)
    if need_weights or not attention.fusable:
        assert torch.allclose(weights, expected_weights, atol=1e-6)
    with pytest.raises(ValueError, match="causal"):
        attention(query, selected, causal=True)


@pytest.mark.parametrize("config", VARIANTS, ids=variant_id)
def test_weights_sum_to_one_over_real_tokens_and_are_zero_on_padding(config):
    attention = build(config)
    states, mask = memory_batch()
    context, weights = attention(torch.randn(3, 2, QUERY_DIM), attention.prepare(states, mask))
    heads = 2 if config.type == "multihead" else 1
    assert context.shape == (3, 2, MEMORY_DIM) and weights.shape == (3, 2, heads, 5)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 2, heads))
    padding = ~mask[:, None, None, :].expand_as(weights)
    assert (weights[padding] == 0).all()


@pytest.mark.parametrize("config", VARIANTS, ids=variant_id)
def test_extra_padding_changes_nothing(config):
    attention = build(config).eval()
    states, mask = memory_batch(lengths=(3,))
    padded_states = torch.cat([states, torch.randn(1, 4, MEMORY_DIM)], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(1, 4, dtype=torch.bool)], dim=1)
    query = torch.randn(1, 2, QUERY_DIM)
    context, weights = attention(query, attention.prepare(states, mask))
    padded_context, padded_weights = attention(query, attention.prepare(padded_states, padded_mask))
    assert torch.allclose(context, padded_context, atol=1e-6)
    assert torch.allclose(weights, padded_weights[..., :3], atol=1e-6)


@pytest.mark.parametrize("config", VARIANTS, ids=variant_id)
def test_gradients_reach_every_parameter(config):
    attention = build(config)
    states, mask = memory_batch()
    states.requires_grad_()
    query = torch.randn(3, 2, QUERY_DIM, requires_grad=True)
    context, _ = attention(query, attention.prepare(states, mask))
    context.pow(2).sum().backward()
    assert query.grad.abs().sum() > 0 and states.grad.abs().sum() > 0
    for name, parameter in attention.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@torch.no_grad()
def naive_scores(attention, config, query, states):
    """Per-position formulas written out, one source word j at a time: [H, S]."""
    scorer = attention.scorer
    rows = []
    for h_j in states:
        if config.type == "additive":
            W, U, v = scorer.query_proj.weight, scorer.key_proj, scorer.energy.weight[0]
            rows.append([v @ torch.tanh(W @ query + U(h_j))])
        elif config.type == "multihead":
            q = (scorer.query_proj.weight @ query).view(config.heads, -1)
            k = (scorer.key_proj.weight @ h_j).view(config.heads, -1)
            rows.append([(q[i] @ k[i]) / q.size(1) ** 0.5 for i in range(config.heads)])
        else:
            k = (
                h_j
                if isinstance(scorer.key_proj, torch.nn.Identity)
                else scorer.key_proj.weight @ h_j
            )
            rows.append([(query @ k) / (QUERY_DIM**0.5 if config.scaled else 1.0)])
    return torch.tensor(rows).T


@pytest.mark.parametrize("config", [c for c in VARIANTS if not c.window], ids=variant_id)
def test_vectorised_scores_and_context_equal_a_naive_loop(config):
    attention = build(config)
    states, mask = memory_batch()
    query = torch.randn(3, 1, QUERY_DIM)
    context, weights = attention(query, attention.prepare(states, mask))
    for b in range(3):
        real = int(mask[b].sum())
        expected = naive_scores(attention, config, query[b, 0], states[b, :real]).softmax(-1)
        assert torch.allclose(weights[b, 0, :, :real], expected, atol=1e-5)
        values = attention.value_proj(states[b, :real]).view(real, expected.size(0), -1)
        heads = torch.stack([expected[i] @ values[:, i] for i in range(expected.size(0))])
        assert torch.allclose(context[b, 0], attention.output_proj(heads.flatten()), atol=1e-5)


@pytest.mark.parametrize("attention_type", list(ATTENTIONS))
def test_local_window_multiplies_by_a_gaussian_and_renormalises(attention_type):
    config = AttentionConfig(type=attention_type, window=2, **SIZES[attention_type])
    local = build(config)
    states, mask = memory_batch()
    query = torch.randn(3, 2, QUERY_DIM)
    _, weights = local(query, local.prepare(states, mask))
    local.window = None  # the same scorer without the window: global weights
    _, global_weights = local(query, local.prepare(states, mask))
    local.window = build(config).window
    centre = local.window.centre(query, mask)  # [B, T]
    for b, t in itertools.product(range(3), range(2)):
        real = int(mask[b].sum())
        assert 0 <= centre[b, t] <= real - 1
        gauss = torch.exp(-((torch.arange(real) - centre[b, t]) ** 2) / (2 * 1.0**2))
        expected = global_weights[b, t, :, :real] * gauss
        expected = expected / expected.sum(-1, keepdim=True)
        assert torch.allclose(weights[b, t, :, :real], expected, atol=1e-5)


def test_multihead_with_one_head_and_identity_projections_equals_scaled_dot():
    multihead = build(AttentionConfig(type="multihead", attn_dim=8, heads=1, kv="separate"))
    with torch.no_grad():
        for projection in (
            multihead.scorer.query_proj,
            multihead.scorer.key_proj,
            multihead.value_proj,
            multihead.output_proj,
        ):
            projection.weight.copy_(torch.eye(8))
    dot = build(AttentionConfig(type="dot", scaled=True))
    states, mask = memory_batch()
    query = torch.randn(3, 2, QUERY_DIM)
    expected = dot(query, dot.prepare(states, mask))
    actual = multihead(query, multihead.prepare(states, mask))
    assert torch.allclose(actual[0], expected[0], atol=1e-6)
    assert torch.allclose(actual[1], expected[1], atol=1e-6)


def test_multihead_shared_ties_keys_and_values():
    attention = build(AttentionConfig(type="multihead", attn_dim=8, heads=2, kv="shared"))
    assert attention.value_proj is attention.scorer.key_proj
    separate = build(AttentionConfig(type="multihead", attn_dim=8, heads=2, kv="separate"))
    assert separate.value_proj is not separate.scorer.key_proj
