"""Dropout: the rate, the 1 / (1 - p) scaling, the gradient, eval mode and repeatability."""

import torch

from nmt.model.dropout import Dropout


def test_drops_about_p_and_scales_what_it_keeps():
    dropout = Dropout(0.3).train()
    x = torch.ones(1000, 1000)
    y = dropout(x)
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - 0.3) < 0.003  # 1e6 draws: the standard error is under 0.0005
    rounded = round(0.3 * 2**16) / 2**16  # the rate as a multiple of 2^-16
    assert abs(rounded - 0.3) < 2**-17
    assert torch.allclose(y[y != 0], torch.tensor(1 / (1 - rounded)), rtol=1e-6)
    assert abs(y.mean().item() - 1) < 0.005  # unbiased: the expectation is x


def test_every_element_of_a_random_word_is_dropped_alike():
    """One 64-bit draw makes the numbers of four neighbouring elements: none is skewed."""
    y = Dropout(0.5).train()(torch.ones(250_000, 4))
    for lane in range(4):
        assert abs((y[:, lane] == 0).float().mean().item() - 0.5) < 0.005


def test_any_shape_gets_a_mask_of_its_own_shape():
    x = torch.ones(3, 7, 5)  # 105 elements: not a multiple of four
    y = Dropout(0.5).train()(x)
    assert y.shape == x.shape and set(y.unique().tolist()) <= {0.0, 2.0}


def test_gradient_is_the_mask():
    dropout = Dropout(0.5).train()
    x = torch.randn(50, 40, requires_grad=True)
    y = dropout(x)
    y.sum().backward()
    assert torch.equal(x.grad, torch.where(y == 0, 0.0, 2.0))


def test_eval_and_zero_rate_are_the_identity():
    x = torch.randn(8, 8)
    assert Dropout(0.5).eval()(x) is x
    assert Dropout(0.0).train()(x) is x


def test_the_same_seed_gives_the_same_mask():
    dropout = Dropout(0.2).train()
    x = torch.randn(64, 64)
    torch.manual_seed(7)
    first = dropout(x)
    torch.manual_seed(7)
    assert torch.equal(dropout(x), first)


def test_under_torch_compile_dropout_traces_without_a_graph_break():
    """torch.compile cannot trace the 64-bit draw (a graph break at every dropout, 47 in the
    recipe Transformer's layers); compiled, dropout is torch's, which inductor fuses."""
    dropout = Dropout(0.25).train()
    explained = torch._dynamo.explain(dropout)(torch.ones(64, 64))
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    torch._dynamo.reset()
