"""The learning rate as a pure function of the step: each schedule at hand-computed steps."""

import math

import pytest
import torch

from nmt.config import TrainConfig
from nmt.train.optim import build_optimizer, lr_at, reduces_on_plateau, set_lr


def schedule(name: str, **keys) -> TrainConfig:
    floor = {} if name == "constant" else dict(min_lr=0.1)  # the constant rate has no floor
    settings = dict(lr=1.0, warmup_steps=4, max_steps=14, **floor)
    return TrainConfig(schedule=name, **{**settings, **keys})


def test_warmup_is_linear_then_constant():
    train = schedule("constant")
    # step counts updates done: update 1 gets lr / 4, update 4 the full lr
    assert [lr_at(step, train) for step in (0, 1, 2, 3, 10, 10_000)] == [
        0.25,
        0.5,
        0.75,
        1.0,
        1.0,
        1.0,
    ]
    assert lr_at(0, schedule("constant", warmup_steps=0)) == 1.0


def test_inverse_sqrt_peaks_at_warmup_then_decays_to_the_floor():
    train = schedule("inverse_sqrt")
    assert lr_at(0, train) == 0.25  # min(1/4, sqrt(4/1))
    assert lr_at(3, train) == 1.0  # min(4/4, sqrt(4/4))
    assert lr_at(15, train) == 0.5  # sqrt(4/16)
    assert lr_at(99, train) == pytest.approx(0.2)  # sqrt(4/100)
    assert lr_at(9_999, train) == 0.1  # sqrt(4/10000) = 0.02, floored at min_lr
    assert lr_at(3, schedule("inverse_sqrt", warmup_steps=0)) == 0.5  # 1/sqrt(4)


def test_cosine_goes_from_lr_to_min_lr_at_max_steps():
    train = schedule("cosine")
    assert lr_at(1, train) == 0.5  # warming up
    assert lr_at(3, train) == 1.0  # update 4: progress 0
    assert lr_at(8, train) == pytest.approx(0.55)  # progress 5/10: 0.1 + 0.9 * 0.5
    assert lr_at(5, train) == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi * 0.2)))
    assert lr_at(13, train) == pytest.approx(0.1)  # the last update
    assert lr_at(50, train) == pytest.approx(0.1)  # past max_steps (a resumed run): stays


def test_plateau_halves_per_reduction_down_to_min_lr():
    train = schedule("plateau", plateau_factor=0.5)
    assert [lr_at(10, train, reductions) for reductions in (0, 1, 3, 4, 9)] == [
        1.0,
        0.5,
        0.125,
        0.1,  # 0.0625 floored
        0.1,
    ]
    assert lr_at(1, train, 0) == 0.5  # warmup applies as everywhere


def test_plateau_reduces_after_each_run_of_patience_bad_validations():
    assert [reduces_on_plateau(n, patience=2) for n in range(6)] == [
        False,
        False,
        True,
        False,
        True,
        False,
    ]


def test_optimizer_starts_at_the_first_rate_and_set_lr_reaches_every_group():
    parameters = [torch.nn.Parameter(torch.zeros(2))]
    optimizer = build_optimizer(parameters, schedule("constant"))
    assert optimizer.param_groups[0]["lr"] == 0.25
    optimizer.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1))]})
    set_lr(optimizer, 0.125)
    assert [group["lr"] for group in optimizer.param_groups] == [0.125, 0.125]


def test_cpu_updates_use_the_fused_adam_and_match_the_reference_loop():
    torch.manual_seed(0)
    start = [torch.randn(5, 3), torch.randn(7)]
    fused = [torch.nn.Parameter(p.clone()) for p in start]
    looped = [torch.nn.Parameter(p.clone()) for p in start]
    optimizer = build_optimizer(fused, schedule("constant"))
    reference = torch.optim.Adam(looped, lr=0.25, foreach=False)
    assert optimizer.defaults["fused"] is True
    for _ in range(3):
        gradients = [torch.randn_like(p) for p in start]
        for parameters, step in ((fused, optimizer), (looped, reference)):
            for parameter, gradient in zip(parameters, gradients, strict=True):
                parameter.grad = gradient.clone()
            step.step()
    for a, b in zip(fused, looped, strict=True):
        assert torch.allclose(a, b, atol=1e-6)
