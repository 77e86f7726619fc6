"""The fused vocabulary loss equals projection + torch's cross_entropy: value and gradients."""

import pytest
import torch
import torch.nn.functional as F

from nmt.model import loss as loss_module
from nmt.model.loss import vocabulary_loss

PAD = 0


def reference(features, projection, targets, smoothing):
    logits = projection(features)
    return F.cross_entropy(
        logits.flatten(0, 1),
        targets.flatten(),
        ignore_index=PAD,
        label_smoothing=smoothing,
        reduction="sum",
    )


def case(vocab, seed=0):
    torch.manual_seed(seed)
    projection = torch.nn.Linear(16, vocab)
    features = torch.randn(3, 7, 16, requires_grad=True)
    targets = torch.randint(1, vocab, (3, 7))
    targets[0, 5:] = PAD
    targets[2, 2:] = PAD
    return features, projection, targets


@pytest.mark.parametrize("vocab", [64, 37, 130])  # aligned, padded to 64, padded to 192
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_value_and_gradients_equal_projection_then_cross_entropy(vocab, smoothing):
    features, projection, targets = case(vocab)
    parameters = (features, projection.weight, projection.bias)
    expected = reference(features, projection, targets, smoothing)
    expected_grads = torch.autograd.grad(3 * expected, parameters)
    fused = vocabulary_loss(features, projection, targets, PAD, smoothing)
    grads = torch.autograd.grad(3 * fused, parameters)
    assert torch.allclose(fused, expected, atol=1e-4)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        assert grad.shape == expected_grad.shape
        assert torch.allclose(grad, expected_grad, atol=1e-5)


def test_padding_targets_get_no_gradient_and_no_loss():
    features, projection, targets = case(37)
    grad = torch.autograd.grad(vocabulary_loss(features, projection, targets, PAD, 0.1), features)[
        0
    ]
    assert (grad[0, 5:] == 0).all() and (grad[2, 2:] == 0).all()
    assert (grad[1] != 0).all()
    everything_padding = torch.full_like(targets, PAD)
    assert vocabulary_loss(features, projection, everything_padding, PAD, 0.1) == 0


def test_without_gradients_the_same_value():
    features, projection, targets = case(130)
    with_grad = vocabulary_loss(features, projection, targets, PAD, 0.1)
    with torch.no_grad():
        without = vocabulary_loss(features, projection, targets, PAD, 0.1)
    assert not without.requires_grad
    assert torch.allclose(with_grad, without)


def test_chunks_add_up_to_the_whole(monkeypatch):
    features, projection, targets = case(37)
    parameters = (features, projection.weight, projection.bias)
    whole = vocabulary_loss(features, projection, targets, PAD, 0.1)
    whole_grads = torch.autograd.grad(whole, parameters)
    monkeypatch.setattr(loss_module, "CHUNK_ROWS", 4)  # 21 rows: 6 chunks, the last short
    chunked = vocabulary_loss(features, projection, targets, PAD, 0.1)
    for grad, expected in zip(torch.autograd.grad(chunked, parameters), whole_grads, strict=True):
        assert torch.allclose(grad, expected, atol=1e-6)
    assert torch.allclose(chunked, whole, atol=1e-5)


def test_under_bf16_autocast_gradients_keep_the_parameter_dtypes():
    features, projection, targets = case(37)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        hidden = torch.nn.functional.linear(features, torch.eye(16))  # bf16, like a readout
        fused = vocabulary_loss(hidden, projection, targets, PAD, 0.1)
    grads = torch.autograd.grad(fused, (features, projection.weight, projection.bias))
    assert [grad.dtype for grad in grads] == [torch.float32] * 3
    expected = reference(features, projection, targets, 0.1)
    assert torch.allclose(fused, expected, rtol=2e-2)


def test_bf16_features_give_the_float32_gradients_within_bf16s_rounding():
    """The bf16 path sums its chunks in float32 and rounds them once: every gradient stays
    within a few bf16 roundings (2^-8 relative) of float32's on the same rounded inputs."""
    torch.manual_seed(1)
    projection = torch.nn.Linear(64, 3000).bfloat16()  # a real vocabulary's spread of logits
    features = (3 * torch.randn(40, 64)).bfloat16().requires_grad_()
    targets = torch.randint(1, 3000, (40,))
    targets[30:] = PAD
    parameters = (features, projection.weight, projection.bias)
    fused = vocabulary_loss(features, projection, targets, PAD, 0.1)
    grads = torch.autograd.grad(fused, parameters)
    exact = [tensor.detach().float().requires_grad_() for tensor in parameters]
    logits = F.linear(exact[0], exact[1], exact[2])
    expected = F.cross_entropy(
        logits, targets, ignore_index=PAD, label_smoothing=0.1, reduction="sum"
    )
    assert abs(fused.item() - expected.item()) < 1e-2 * expected.item()
    for grad, expected_grad in zip(grads, torch.autograd.grad(expected, exact), strict=True):
        error = (grad.float() - expected_grad).norm() / expected_grad.norm()
        assert grad.dtype == torch.bfloat16 and error < 1e-2


def test_a_batch_without_rows_gives_zero_loss_and_zero_gradients():
    _, projection, _ = case(37)
    features = torch.zeros(0, 16, requires_grad=True)
    loss = vocabulary_loss(features, projection, torch.zeros(0, dtype=torch.long), PAD, 0.1)
    weight_grad, bias_grad = torch.autograd.grad(loss, (projection.weight, projection.bias))
    assert loss == 0 and not weight_grad.any() and not bias_grad.any()
