import io

import pytest
import torch

from conftest import tiny_model, write_code_running_checkpoint
from nmt.checkpoint import (
    FORMAT_VERSION,
    checkpoint_payload,
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


def test_model_helper_has_all_parameters(tiny_config):
    assert sum(p.numel() for p in tiny_model(tiny_config).parameters()) > 0


def test_a_crash_mid_write_leaves_the_previous_checkpoint_intact(saved, monkeypatch):
    path, model = saved
    before = path.read_bytes()
    real_save = torch.save

    def crash_halfway(obj, handle):
        buffer = io.BytesIO()
        real_save(obj, buffer)
        handle.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        handle.flush()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", crash_halfway)
    with pytest.raises((OSError, UserError), match="No space"):  # UserError once harden wraps it
        save_checkpoint(path, {"model": model.state_dict(), "step": 8})
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]  # no temporary left
    assert load_checkpoint(path)["step"] == 7


def test_leftovers_of_killed_writes_are_removed(saved):
    path, _ = saved
    (path.parent / ".last.pt.x1y2.tmp").write_bytes(b"half")
    remove_temporaries(path.parent)
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]
