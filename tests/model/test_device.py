import pytest
import torch

from nmt.errors import UserError
from nmt.model.device import resolve_device


def test_cuda_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UserError, match="train.device: cpu"):
        resolve_device("cuda")
    with pytest.raises(UserError, match="^device is cuda.*Set device: cpu, or auto"):
        resolve_device("cuda", setting="device")
    assert resolve_device("auto") == torch.device("cpu")


def test_an_unknown_device_names_the_choices():
    with pytest.raises(UserError, match="device 'gpu': choose auto, cpu or cuda"):
        resolve_device("gpu", setting="device")
