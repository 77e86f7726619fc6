"""Dropout: the rate, the 1 / (1 - p) scaling, the gradient, eval mode and repeatability."""

import torch

from nmt.model.dropout import Dropout


def test_drops_about_p_and_scales_what_it_keeps():
    dropout = Dropout(0.3).train()
    x = torch.ones(1000, 1000)
    y = dropout(x)
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - 0.3) < 0.003  # 1e6 draws: the standard error is under 0.0005
    assert torch.allclose(y[y != 0], torch.tensor(1 / 0.7))


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
