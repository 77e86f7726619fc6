import signal
import subprocess
import sys

import pytest
import torch

from conftest import write_code_running_checkpoint
from nmt.checkpoint import (
    FORMAT_VERSION,
    checkpoint_payload,
    half_precision,
    load_checkpoint,
    remove_temporaries,
    restore_model,
    save_checkpoint,
)
from nmt.errors import UserError
from nmt.model.seq2seq import build_model


@pytest.fixture
def saved(tmp_path, tiny_config, tokenizer):
    torch.manual_seed(0)
    model = build_model(tiny_config.model, tokenizer.src, tokenizer.tgt).eval()
    path = tmp_path / "model.pt"
    save_checkpoint(path, checkpoint_payload(model, tiny_config, tokenizer, 7, {"valid_bleu": 1.0}))
    return path, model


def test_round_trip_gives_identical_logits(saved, tokenizer):
    path, model = saved
    restored, restored_tokenizer, config = restore_model(load_checkpoint(path), path)
    src = torch.tensor([tokenizer.src.encode(["the dog sees the cat."])[0]])
    tgt = torch.tensor([[tokenizer.tgt.bos_id, 5, 6]])
    lengths = torch.tensor([src.size(1)])
    assert torch.equal(
        model.teacher_forcing(src, lengths, tgt)[0], restored.teacher_forcing(src, lengths, tgt)[0]
    )
    assert restored_tokenizer.src.model_proto == tokenizer.src.model_proto
    assert load_checkpoint(path)["step"] == 7


def test_no_temporary_files_are_left(saved):
    path, _ = saved
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]


def test_code_in_a_pickle_is_refused(tmp_path):
    marker = tmp_path / "marker"

    path = tmp_path / "evil.pt"
    write_code_running_checkpoint(path, marker)
    with pytest.raises(UserError, match="refused"):
        load_checkpoint(path)
    assert not marker.exists()


def test_truncated_file_is_a_clear_error(saved):
    path, _ = saved
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="truncated or corrupt"):
        load_checkpoint(path)


def test_newer_format_is_refused(tmp_path):
    path = tmp_path / "new.pt"
    torch.save({"format_version": FORMAT_VERSION + 1}, path)
    with pytest.raises(UserError, match="newer"):
        load_checkpoint(path)


def test_weights_not_matching_config(saved, tiny_config):
    path, _ = saved
    payload = load_checkpoint(path)
    payload["config"]["model"]["decoder"]["hidden_dim"] = 40
    with pytest.raises(UserError, match="do not match its own config"):
        restore_model(payload, path)


# Runs in its own process, which dies by SIGKILL halfway through writing the temporary file:
# no except or finally clause runs, as with kill -9 or a power cut in the middle of the write.
TORN_WRITER = """
import os, signal, sys, tempfile

import torch

from nmt.checkpoint import save_checkpoint

open_temporary = tempfile.NamedTemporaryFile


def temporary_that_dies_midway(*args, **kwargs):
    handle = open_temporary(*args, **kwargs)

    def write_half_then_die(data):
        data = memoryview(data).cast("B")
        handle.file.write(data[: len(data) // 2])
        handle.file.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    handle.write = write_half_then_die
    return handle


tempfile.NamedTemporaryFile = temporary_that_dies_midway
weights = {"weight": torch.ones(512, 1024)}
save_checkpoint(sys.argv[1], {"config": {}, "tokenizer": {}, "model": weights, "step": 8})
"""


def test_a_write_killed_midway_leaves_the_previous_checkpoint_intact(saved):
    path, model = saved
    before = path.read_bytes()
    writer = subprocess.run(
        [sys.executable, "-c", TORN_WRITER, str(path)], capture_output=True, text=True
    )
    assert writer.returncode == -signal.SIGKILL, writer.stderr  # it died inside the write
    assert path.read_bytes() == before
    payload = load_checkpoint(path)
    assert payload["step"] == 7
    assert payload["model"].keys() == model.state_dict().keys()
    assert all(torch.equal(payload["model"][k], v) for k, v in model.state_dict().items())
    (leftover,) = [p for p in path.parent.iterdir() if p != path]
    assert leftover.stat().st_size > 0
    with pytest.raises(UserError, match="truncated or corrupt"):  # the write really was torn
        load_checkpoint(leftover)
    remove_temporaries(path.parent)
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]


def test_leftovers_of_killed_writes_are_removed(saved):
    path, _ = saved
    (path.parent / ".last.pt.x1y2.tmp").write_bytes(b"half")
    remove_temporaries(path.parent)
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]


def test_a_key_that_never_took_effect_is_reset_on_load(saved):
    """Checkpoints written before pointless keys were refused may hold one: it loads, at its
    default, since it never did anything."""
    path, model = saved
    payload = load_checkpoint(path)
    assert payload["config"]["model"]["attention"]["type"] == "additive"
    payload["config"]["model"]["attention"]["heads"] = 8  # only multihead reads it
    payload["config"]["train"]["plateau_factor"] = 0.3  # only schedule: plateau reads it
    restored, _, config = restore_model(payload, path)
    assert config.model.attention.heads == 4 and config.train.plateau_factor == 0.5
    for name, tensor in model.state_dict().items():
        assert torch.equal(restored.state_dict()[name], tensor)


def test_half_precision_halves_what_float16_holds_and_keeps_the_rest():
    weights = {
        "small": torch.tensor([1e-3, -0.25, 3.0]),
        "huge": torch.tensor([1.0, 1e6]),  # beyond float16's 65504
        "infinite": torch.tensor([float("inf"), 1.0]),  # stays infinite either way
        "ids": torch.tensor([1, 2]),
    }
    halved = half_precision(weights)
    assert halved["small"].dtype == torch.float16 == halved["infinite"].dtype
    assert torch.allclose(halved["small"].float(), weights["small"], rtol=2**-11)
    assert halved["huge"] is weights["huge"] and halved["ids"] is weights["ids"]


def test_half_precision_keeps_a_tied_tensor_one():
    tied = torch.randn(4, 3)
    halved = half_precision({"embeddings": tied, "output": tied, "other": tied.clone()})
    assert halved["embeddings"] is halved["output"]
    assert halved["other"] is not halved["output"]
    assert torch.equal(halved["other"], halved["output"])
