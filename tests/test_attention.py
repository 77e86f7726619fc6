import torch

from nmt.attention import AdditiveAttention, masked_softmax


def memory_batch(attention, lengths=(5, 3, 1), dim=6):
    torch.manual_seed(0)
    states = torch.randn(len(lengths), max(lengths), dim)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    return states, mask, attention.prepare(states, mask)


def test_masked_softmax_sums_to_one_and_is_zero_on_padding():
    scores = torch.randn(2, 3, 4)
    mask = torch.tensor([[True, True, False, False], [True, True, True, True]])
    weights = masked_softmax(scores, mask)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3))
    assert (weights[0, :, 2:] == 0).all()


def test_additive_weights_sum_to_one_and_vanish_on_padding():
    attention = AdditiveAttention(query_dim=4, memory_dim=6, attn_dim=5)
    states, mask, memory = memory_batch(attention)
    context, weights = attention(torch.randn(3, 2, 4), memory)
    assert context.shape == (3, 2, 6) and weights.shape == (3, 2, 1, 5)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 2, 1))
    assert (weights.masked_select(~mask[:, None, None, :].expand_as(weights)) == 0).all()


def test_additive_scores_equal_a_naive_loop():
    attention = AdditiveAttention(query_dim=4, memory_dim=6, attn_dim=5)
    states, mask, memory = memory_batch(attention)
    query = torch.randn(3, 1, 4)
    context, weights = attention(query, memory)
    W, U, v = attention.query_proj.weight, attention.key_proj, attention.energy.weight[0]
    for b in range(3):
        real = int(mask[b].sum())
        scores = torch.stack(
            [v @ torch.tanh(W @ query[b, 0] + U(states[b, j])) for j in range(real)]
        )
        expected = scores.softmax(0)
        assert torch.allclose(weights[b, 0, 0, :real], expected, atol=1e-6)
        assert torch.allclose(context[b, 0], expected @ states[b, :real], atol=1e-6)


def test_extra_padding_changes_nothing():
    attention = AdditiveAttention(query_dim=4, memory_dim=6, attn_dim=5)
    states, mask, memory = memory_batch(attention, lengths=(3,))
    padded_states = torch.cat([states, torch.randn(1, 4, 6)], dim=1)
    padded_mask = torch.cat([mask, torch.zeros(1, 4, dtype=torch.bool)], dim=1)
    query = torch.randn(1, 1, 4)
    context, weights = attention(query, memory)
    padded_context, padded_weights = attention(query, attention.prepare(padded_states, padded_mask))
    assert torch.allclose(context, padded_context, atol=1e-6)
    assert torch.allclose(weights, padded_weights[..., :3], atol=1e-6)
