"""Every bad input gets exit code 2 and a message naming the file, line or key; hostile files
run no code; faults lose no checkpoint.

Commands run through the real Typer app: in-process (typer's CliRunner) where that shows the
property, as `python -m nmt` where the process itself matters (stderr, code that must not run).
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import stat
import zipfile

import pytest
import torch
from typer.testing import CliRunner

from conftest import (
    DEMO_CONFIG,
    nmt,
    tiny_experiment,
    tiny_train_args,
    write_code_running_checkpoint,
)
from nmt.checkpoint import FORMAT_VERSION, load_checkpoint, save_checkpoint
from nmt.cli import app
from nmt.config import DataConfig
from nmt.data.splits import load_split
from nmt.errors import UserError
from nmt.train.experiment import train_experiment

FAST = ["data.splits.test=null"]


def cli(*args, input: str | bytes | None = None):
    """The `nmt` command in this process; exceptions other than exits are kept, not raised."""
    return CliRunner().invoke(app, [str(arg) for arg in args], input=input)


def train_on(corpus, run_dir, *overrides: str):
    return cli(*tiny_train_args(run_dir, corpus, *FAST, *overrides))


def refused(result, *names) -> str:
    """Asserts a user error: exit code 2 and one error line, naming every one of `names`."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    (message,) = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    for name in names:
        assert str(name) in message, (name, message)
    return message


@pytest.fixture(scope="module")
def run(tmp_path_factory, corpus_dir):
    """One tiny trained run (6 steps, checkpoints at steps 3 and 6) shared by this module."""
    run_dir = tmp_path_factory.mktemp("run")
    cache = tmp_path_factory.getbasetemp() / "cache"
    train_experiment(tiny_experiment(corpus_dir, f"data.cache_dir={cache}", *FAST), run_dir)
    return run_dir


@pytest.fixture
def corpus(tmp_path, corpus_dir):
    """A private copy of the small corpus, to break."""
    return shutil.copytree(corpus_dir, tmp_path / "corpus")


# Corpus


def test_missing_data_path_is_named_and_nothing_is_written(tmp_path):
    result = train_on(tmp_path / "nowhere", tmp_path / "run")
    refused(result, "data.path", tmp_path / "nowhere", "does not exist")
    assert not (tmp_path / "run").exists()


def test_line_counts_that_differ_name_both_files(corpus, tmp_path):
    lines = (corpus / "train.de").read_text().splitlines(keepends=True)
    (corpus / "train.de").write_text("".join(lines[:-2]))
    result = train_on(corpus, tmp_path / "run")
    refused(result, corpus / "train.en", "has 300 lines", corpus / "train.de", "has 298")
    assert not (tmp_path / "run").exists()


def test_invalid_utf8_names_file_line_and_offset(corpus, tmp_path):
    (corpus / "valid.de").write_bytes(b"gut\nnicht \xff gut\n")
    result = train_on(corpus, tmp_path / "run")
    refused(
        result,
        corpus / "valid.de",
        "not valid UTF-8",
        "line 2, byte 7 of the line, offset 10",
        "iconv",
    )


def test_bom_and_crlf_give_the_same_data_as_clean_files(corpus, tmp_path):
    dirty = tmp_path / "dirty"
    dirty.mkdir()
    for name in ("train.en", "train.de"):
        clean = (corpus / name).read_bytes()
        (dirty / name).write_bytes(b"\xef\xbb\xbf" + clean.replace(b"\n", b"\r\n"))
    text = (corpus / "train.en").read_text().splitlines()[:3]
    other = (corpus / "train.de").read_text().splitlines()[:3]
    tsv = "".join(f"{s}\t{t}\r\n" for s, t in zip(text, other, strict=True))
    (dirty / "valid.tsv").write_bytes(b"\xef\xbb\xbf" + tsv.encode())
    config = DataConfig(src_lang="en", tgt_lang="de", path=str(dirty))
    clean = load_split(DataConfig(src_lang="en", tgt_lang="de", path=str(corpus)), "train")
    train = load_split(config, "train")
    assert (train.src, train.tgt) == (clean.src, clean.tgt)
    valid = load_split(config, "valid")
    assert (valid.src, valid.tgt) == (text, other)


def test_empty_file_is_named(corpus, tmp_path):
    (corpus / "test.de").write_bytes(b"")
    result = train_on(corpus, tmp_path / "run", "data.splits.test=test")
    refused(result, f"{corpus / 'test.de'} is empty")


def test_all_pairs_filtered_out_says_why(corpus, tmp_path):
    result = train_on(corpus, tmp_path / "run", "data.max_len=1")
    refused(result, "train.en", "no training pairs left", "longer than data.max_len=1")


def test_language_missing_from_jsonl_lists_columns(corpus, tmp_path):
    (corpus / "train.de").unlink()
    (corpus / "train.jsonl").write_text('{"en": "a dog", "fr": "un chien"}\n')
    result = train_on(corpus, tmp_path / "run")
    refused(result, corpus / "train.jsonl", "no column 'de'", "columns found: en, fr")


def test_unreachable_hub_suggests_data_path(monkeypatch, tmp_path):
    def unreachable(*args, **kwargs):
        raise OSError(errno.ENETUNREACH, "network is unreachable")

    monkeypatch.setattr("socket.create_connection", unreachable)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    result = train_on("null", tmp_path / "run", "data.hub_id=nmt-tests/no-such-corpus")
    refused(result, "data.hub_id nmt-tests/no-such-corpus", "Hugging Face hub", "set data.path")


# Checkpoints


def test_pickle_that_runs_code_is_refused(tmp_path):
    marker = tmp_path / "marker"

    path = tmp_path / "evil.pt"
    write_code_running_checkpoint(path, marker)
    result = nmt("translate", "--checkpoint", path, input="hello\n")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "refused" in result.stderr and "open" in result.stderr and str(path) in result.stderr
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncated", "random bytes", "empty", "foreign zip"])
def test_corrupt_checkpoint_is_named(run, tmp_path, damage):
    data = (run / "best.pt").read_bytes()
    path = tmp_path / "damaged.pt"
    path.write_bytes(
        {
            "truncated": data[: len(data) // 2],
            "random bytes": bytes(range(256)) * 20,
            "empty": b"",
            "foreign zip": b"",
        }[damage]
    )
    if damage == "foreign zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("notes.txt", "not a checkpoint")
    refused(cli("translate", "--checkpoint", path, input="a dog\n"), path, "truncated or corrupt")


def test_weights_that_do_not_match_the_config(run, tmp_path):
    payload = load_checkpoint(run / "best.pt")
    payload["config"]["model"]["decoder"]["hidden_dim"] += 8
    path = tmp_path / "mixed.pt"
    torch.save(payload, path)
    result = cli("eval", "--checkpoint", path)
    refused(result, path, "do not match its own config", "decoder")


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda p: {"format_version": 1}, "is not an nmt checkpoint"),
        (lambda p: p["config"]["decode"].update(beam_size=5), "decode.beam_size"),
        (lambda p: p["tokenizer"].update(src=b"not a model"), "its tokenizer cannot be read"),
    ],
    ids=["no weights", "unknown config key", "broken tokenizer"],
)
def test_checkpoint_contents_nmt_cannot_use(run, tmp_path, change, expected):
    payload = load_checkpoint(run / "best.pt")
    path = tmp_path / "odd.pt"
    torch.save(change(payload) or payload, path)
    refused(cli("translate", "--checkpoint", path, input="a dog\n"), path, expected)


@pytest.mark.parametrize("command", ["translate", "eval"])
def test_newer_checkpoint_format_is_refused(run, tmp_path, command):
    payload = load_checkpoint(run / "best.pt")
    payload["format_version"] = FORMAT_VERSION + 1
    path = tmp_path / "future.pt"
    torch.save(payload, path)
    result = cli(command, "--checkpoint", path, input="a dog\n")
    refused(result, path, f"format version {FORMAT_VERSION + 1}", "Upgrade nmt")


# Evaluate


@pytest.mark.parametrize(
    "args, names",
    [
        (["--hyp", "h", "--ref", "r", "--beam", "1"], ["--hyp", "nothing is decoded", "--beam"]),
        (["--hyp", "h", "--ref", "r", "--split", "test"], ["--hyp", "drop --split"]),
        (["--hyp", "h", "--ref", "r", "--ensemble"], ["--hyp", "drop --ensemble"]),
        (["--hyp", "h", "--ref", "r", "--tm", "m", "--adapter", "a"], ["drop --adapter and --tm"]),
        (["--hyp", "h", "--src", "s", "--ref", "r"], ["--hyp", "--checkpoint", "one or the other"]),
        (["--hyp", "h"], ["--hyp needs --ref"]),
        (["--checkpoint", "m.pt", "--src", "s"], ["--src s needs --ref"]),
        (["--checkpoint", "m.pt", "--ref", "r"], ["--ref needs --src", "or --hyp"]),
        (["--checkpoint", "m.pt", "--src", "s", "--ref", "r", "--split", "test"], ["--split"]),
        (["--checkpoint", "m.pt", "--src", "s", "--ref", "r", "--set", "data.path=d"], ["--set"]),
        (["--src", "s", "--ref", "r"], ["needs --checkpoint"]),
        ([], ["needs --checkpoint", "--hyp and --ref"]),
        (["--hyp", "h", "--ref", "r", "--output", "o"], ["--output o", "made elsewhere"]),
        (["--checkpoint", "m.pt", "--beam", "1", "--beam", "2", "--output", "o"], ["a grid of"]),
        (["--checkpoint", "m.pt", "--checkpoint", "n.pt", "--output", "o"], ["add --ensemble"]),
        (["--checkpoint", "m.pt", "--output", "nowhere/o"], ["nowhere does not exist"]),
    ],
    ids=[
        "hyp with beam",
        "hyp with split",
        "hyp with ensemble",
        "hyp with a memory and an adapter",
        "hyp with src",
        "hyp without ref",
        "src without ref",
        "ref without src",
        "src with split",
        "src with set",
        "src without checkpoint",
        "nothing",
        "output of hyp files",
        "output of a grid",
        "output of two systems",
        "output in a missing directory",
    ],
)
def test_eval_options_that_do_not_go_together(args, names):
    refused(cli("eval", *args), *names)


def test_eval_test_set_of_own_files_must_align(run, corpus):
    src, ref = corpus / "test.en", corpus / "test.de"
    ref.write_text("".join(ref.read_text().splitlines(keepends=True)[:-1]))
    result = cli("eval", "--checkpoint", run / "best.pt", "--src", src, "--ref", ref)
    refused(result, f"--src {src} has 40 lines", f"--ref {ref} has 39", "line by line")
    missing = cli("eval", "--checkpoint", run / "best.pt", "--src", corpus / "no.en", "--ref", ref)
    refused(missing, corpus / "no.en", "cannot read")
    empty = corpus / "empty.de"
    empty.write_bytes(b"\xef\xbb\xbf")  # a byte order mark, and no line
    refused(cli("eval", "--hyp", empty, "--ref", empty), f"--ref {empty} has no lines")


# Translate


def test_empty_input_gives_no_output(run):
    result = cli("translate", "--checkpoint", run / "best.pt", input="")
    assert result.exit_code == 0 and result.stdout == ""


def test_blank_lines_are_kept_in_place(run):
    result = cli("translate", "--checkpoint", run / "best.pt", input="the dog.\n\n  \nthe cat.\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("\n")
    assert len(lines) == 5 and lines[1] == lines[2] == lines[4] == ""


def test_huge_line_is_cut_with_a_warning_and_output_stays_bounded(run):
    line = "the dog sees the small cat because we sleep. " * 220  # ~10,000 characters
    result = nmt("translate", "--checkpoint", run / "best.pt", input=f"a dog.\n{line}\n")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "line 2" in result.stderr and "decode.max_src_len=250" in result.stderr
    config = load_checkpoint(run / "best.pt")["config"]["decode"]
    bound = math.ceil(250 * config["max_len_ratio"]) + config["max_len_extra"]
    first, second = result.stdout.split("\n")[:2]
    assert result.stdout.count("\n") == 2 and len(second.split()) <= bound
    shorter = nmt("translate", "--checkpoint", run / "best.pt", "--max-src-len", 20, input=line)
    assert shorter.returncode == 0 and "decode.max_src_len=20 " in shorter.stderr
    assert (
        len(shorter.stdout.split())
        <= math.ceil(20 * config["max_len_ratio"]) + config["max_len_extra"]
    )


def test_characters_never_seen_in_training(run):
    result = cli("translate", "--checkpoint", run / "best.pt", input="日本語 ☃ ∑ Ωμέγα\n🙂\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 2


def test_binary_garbage_gives_one_line_per_input_line(run):
    garbage = bytes(range(256)) * 4 + b"\n\x00\xff\xfe\r\x85\xe2\x80\xa8\n\n\x1b[2J"
    result = cli("translate", "--checkpoint", run / "best.pt", input=garbage)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes.count(b"\n") == garbage.count(b"\n") + 1


def test_output_in_missing_directory_fails_before_any_work(tmp_path):
    target = tmp_path / "missing" / "out.txt"
    result = cli("translate", "--checkpoint", tmp_path / "none.pt", "--output", target, input="")
    refused(result, tmp_path / "missing", "does not exist", "Create it first")


# Training faults


def poison_loss(monkeypatch, bad_calls):
    """Makes the training loss NaN (or inf) on the given calls, gradients included."""
    import nmt.model.seq2seq

    real, calls = nmt.model.seq2seq.vocabulary_loss, []

    def vocabulary_loss(*args, **kwargs):
        loss = real(*args, **kwargs)
        if not torch.is_grad_enabled():  # validation
            return loss
        calls.append(len(calls) + 1)
        if calls[-1] in bad_calls:
            return loss * (math.inf if calls[-1] % 2 else math.nan)
        return loss

    monkeypatch.setattr(nmt.model.seq2seq, "vocabulary_loss", vocabulary_loss)


def test_non_finite_loss_skips_the_batch_then_aborts(monkeypatch, corpus_dir, tmp_path):
    # batch 2 is bad once; from batch 6 on every batch is bad. Checkpoints come at step 3.
    poison_loss(monkeypatch, {2, *range(6, 100)})
    result = train_on(corpus_dir, tmp_path, "train.max_bad_steps=3")
    refused(result, "training diverged", "train.max_bad_steps=3", "after step 4", "train.lr")
    log = (tmp_path / "train.log").read_text()
    assert log.count("batch skipped") == 4 and "after step 1 (epoch 0, batch 2)" in log
    for name in ("best.pt", "last.pt"):
        payload = load_checkpoint(tmp_path / name)
        assert payload["step"] == 3
        assert all(torch.isfinite(w).all() for w in payload["model"].values())
    again = tiny_train_args(tmp_path, corpus_dir, *FAST, "train.max_bad_steps=3")
    resumed = cli(*again, "--resume")  # and diverges again at once: last.pt knows its step
    refused(resumed, "training diverged", "last.pt (step 3) and best.pt are untouched")


def test_disk_full_at_checkpoint_keeps_the_previous_one(monkeypatch, corpus_dir, tmp_path):
    import nmt.outputs

    real_fsync, files_synced = nmt.outputs.os.fsync, []

    def fsync(fd):
        checkpoint = ".pt." in os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        if checkpoint and stat.S_ISREG(os.fstat(fd).st_mode):  # not config.yaml, a directory
            if len(files_synced) == 2:  # best.pt and last.pt at step 3 are written
                raise OSError(errno.ENOSPC, "No space left on device")
            files_synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(nmt.outputs.os, "fsync", fsync)
    result = train_on(corpus_dir, tmp_path)
    refused(result, "cannot write checkpoint", tmp_path, "No space left on device")
    assert sorted(p.name for p in tmp_path.glob("*.pt*")) == ["best.pt", "last.pt"]
    assert {load_checkpoint(tmp_path / n)["step"] for n in ("best.pt", "last.pt")} == {3}


def test_read_only_run_dir_keeps_the_previous_checkpoint(run, monkeypatch, tmp_path):
    path = tmp_path / "last.pt"
    shutil.copy(run / "last.pt", path)

    def read_only(*args):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr("os.replace", read_only)
    with pytest.raises(UserError, match=f"cannot write checkpoint {path}: Read-only file system"):
        save_checkpoint(path, {"step": 99})
    assert [p.name for p in tmp_path.iterdir()] == ["last.pt"]
    assert load_checkpoint(path)["step"] == 6


def test_run_dir_holding_another_run_is_refused(run):
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    result = cli("train", "--config", DEMO_CONFIG, "--run-dir", run)
    refused(result, run, "already holds a run", "last.pt", "--overwrite")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_unwritable_run_dir_is_named(corpus_dir, tmp_path):
    (tmp_path / "file").write_text("not a directory")
    result = train_on(corpus_dir, tmp_path / "file" / "run")
    refused(result, f"cannot write {tmp_path / 'file' / 'run'}", "--run-dir")


def test_overwrite_with_a_bad_corpus_keeps_the_old_run(run, corpus, tmp_path):
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    (corpus / "train.de").write_text("ein Hund\n")
    result = cli(*tiny_train_args(run, corpus, *FAST), "--overwrite")
    refused(result, corpus / "train.de", "has 1.")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_train_log_keeps_what_was_logged_before_the_run_dir_existed(run):
    log = (run / "train.log").read_text()
    assert log.index("pairs kept") < log.index("training pairs, vocab")


def test_unexpected_exception_is_an_internal_error(monkeypatch, run):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("nmt.translate.translator.Translator.load", broken)
    result = cli("translate", "--checkpoint", run / "best.pt", input="a dog\n")
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)
