"""No command writes over one of its inputs, and none leaves a half-written output: refused
with exit 2 before anything is opened for writing, and written through a temporary file
renamed into place only once complete."""

import os
import stat
import threading

import pytest

from conftest import nmt, tiny_experiment, write_checkpoint
from nmt.errors import UserError
from nmt.outputs import (
    TEMPORARY_SUFFIX,
    check_new_directory,
    check_output,
    replacing,
    staged,
    write_atomically,
)

SOURCES = "the dog sees the cat.\na small bird sleeps.\n"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, corpus_dir, tokenizer):
    directory = tmp_path_factory.mktemp("outputs")
    return write_checkpoint(directory / "model.pt", tiny_experiment(corpus_dir), tokenizer)


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(TEMPORARY_SUFFIX))


def test_a_file_translated_onto_itself_is_refused_and_kept(checkpoint, tmp_path):
    text = tmp_path / "f"
    text.write_text(SOURCES, "utf-8")
    (tmp_path / "link").symlink_to(text)
    for output in (text, tmp_path / "link", tmp_path / "." / "f"):
        ran = nmt("translate", "--checkpoint", checkpoint, "--input", text, "--output", output)
        assert ran.returncode == 2, ran.stderr
        assert f"--output {output} is the file --input reads" in ran.stderr
        assert text.read_text("utf-8") == SOURCES
    assert leftovers(tmp_path) == []


def test_every_input_of_translate_and_score_is_guarded(checkpoint, tmp_path):
    source, target = tmp_path / "src", tmp_path / "tgt"
    source.write_text(SOURCES, "utf-8")
    target.write_text("der Hund.\nein Vogel.\n", "utf-8")
    constraints, prefix = tmp_path / "terms.jsonl", tmp_path / "prefix.txt"
    constraints.write_text("\n\n", "utf-8")
    prefix.write_text("\n\n", "utf-8")
    translate = ("translate", "--checkpoint", checkpoint, "--input", source)
    pair = ("--checkpoint", checkpoint, "--src", source, "--tgt", target)
    cases = {
        "--constraints": (*translate, "--constraints", constraints, "--output", constraints),
        "--prefix": (*translate, "--prefix", prefix, "--output", prefix),
        "--checkpoint": (*translate, "--output", checkpoint),
        "--src": ("score", *pair, "--output", source),
        "--tgt": ("score", *pair, "--output", target),
        "--ref": ("eval", *pair, "--output", target),  # --tgt is --ref's other name
    }
    before = {path: path.read_bytes() for path in (source, target, constraints, prefix, checkpoint)}
    for option, args in cases.items():
        ran = nmt(*args)
        assert ran.returncode == 2 and f"is the file {option} reads" in ran.stderr, (option, ran)
    assert {path: path.read_bytes() for path in before} == before


def test_standard_input_read_from_the_output_file_is_refused(checkpoint, tmp_path):
    text = tmp_path / "f"
    text.write_text(SOURCES, "utf-8")
    with text.open("rb") as stdin:
        ran = nmt_with_stdin(stdin, "translate", "--checkpoint", checkpoint, "--output", text)
    assert ran.returncode == 2 and "is the file standard input reads" in ran.stderr
    assert text.read_text("utf-8") == SOURCES


def nmt_with_stdin(stdin, *args):
    """`nmt` in a fresh process whose standard input is the open file `stdin`."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "nmt", *map(str, args)], stdin=stdin, capture_output=True, text=True
    )


def test_eval_keeps_the_split_it_scores(demo_rnnsearch, tmp_path):
    """`nmt eval --output` onto a file of the split it translates is refused before any work."""
    from nmt.checkpoint import load_checkpoint
    from nmt.data.splits import locate

    config = tiny_config_of(load_checkpoint(demo_rnnsearch / "best.pt"))
    reference = locate(config.data, "test").files[1]
    before = reference.read_bytes()
    ran = nmt("eval", "--checkpoint", demo_rnnsearch, "--beam", "1", "--output", reference)
    assert ran.returncode == 2 and "is the test split" in ran.stderr, ran.stderr
    assert reference.read_bytes() == before


def tiny_config_of(payload):
    from nmt.config import checkpoint_config

    return checkpoint_config(payload["config"])


def test_average_refuses_to_write_over_a_checkpoint_it_averages(checkpoint, tmp_path):
    before = checkpoint.read_bytes()
    ran = nmt("average", "--output", checkpoint, checkpoint, checkpoint)
    assert ran.returncode == 2 and "is the file PATH reads" in ran.stderr
    assert checkpoint.read_bytes() == before


def test_a_directory_as_output_is_named(checkpoint, tmp_path):
    source = tmp_path / "src"
    source.write_text(SOURCES, "utf-8")
    for command in (
        ("translate", "--checkpoint", checkpoint, "--input", source),
        ("score", "--checkpoint", checkpoint, "--src", source, "--tgt", source),
    ):
        ran = nmt(*command, "--output", tmp_path)
        assert ran.returncode == 2, ran.stderr
        assert f"--output {tmp_path} is a directory; give the path of a file" in ran.stderr


def test_a_run_that_fails_midway_leaves_the_previous_output_whole(checkpoint, tmp_path):
    """Constraints that end at the second of three lines fail the run once --output was
    opened: the previous output stays, and no temporary file (replacing() is tested with a
    write cut off midway below)."""
    source, terms, output = tmp_path / "src", tmp_path / "terms.jsonl", tmp_path / "out"
    source.write_text(SOURCES + "we sleep.\n", "utf-8")
    terms.write_text("\n\n", "utf-8")
    output.write_text("an earlier translation\n", "utf-8")
    os.chmod(output, 0o640)
    args = ("translate", "--checkpoint", checkpoint, "--input", source, "--batch-size", "1")
    ran = nmt(*args, "--constraints", terms, "--output", output)
    assert ran.returncode == 2 and "at line 3" in ran.stderr, ran.stderr
    assert output.read_text("utf-8") == "an earlier translation\n"
    assert leftovers(tmp_path) == []
    assert nmt(*args, "--output", output).returncode == 0
    assert len(output.read_text("utf-8").splitlines()) == 3
    assert oct(output.stat().st_mode & 0o777) == oct(0o640)  # the file's own permissions


def test_replacing_writes_all_or_nothing(tmp_path):
    path = tmp_path / "kept.txt"
    path.write_text("old\n", "utf-8")
    with pytest.raises(KeyboardInterrupt), replacing(path) as handle:
        handle.write("half of the new\n")
        raise KeyboardInterrupt
    assert path.read_text("utf-8") == "old\n" and leftovers(tmp_path) == []
    with replacing(path) as handle:
        handle.write("new\n")
    assert path.read_text("utf-8") == "new\n" and leftovers(tmp_path) == []
    new = tmp_path / "new.txt"
    with replacing(new) as handle:
        handle.write("x\n")
    umask = os.umask(0)
    os.umask(umask)
    assert new.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_device_is_written_directly(tmp_path):
    with replacing(type(tmp_path)(os.devnull)) as handle:
        handle.write("gone\n")
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)


def test_a_pipe_is_written_into_not_replaced_and_so_through_a_link_to_one(tmp_path):
    """What write_atomically writes (checkpoints, --output of eval, memories) goes into a
    named pipe or device as replacing()'s lines do: a rename would replace it."""
    pipe, link = tmp_path / "pipe", tmp_path / "link"
    os.mkfifo(pipe)
    link.symlink_to(pipe)
    received = []
    for path in (pipe, link):
        reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
        reader.start()
        write_atomically(path, b"through\n")
        reader.join(timeout=10)
    assert received == [b"through\n", b"through\n"]
    assert stat.S_ISFIFO(pipe.stat().st_mode) and link.is_symlink()


def test_a_directory_written_through_a_symlink_replaces_the_directory_it_names(tmp_path):
    target, link = tmp_path / "target", tmp_path / "out"
    target.mkdir()
    link.symlink_to(target)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "made" / "here")
    for output, written in ((link, target), (dangling, tmp_path / "made" / "here")):
        check_new_directory(output, "--out")
        with staged(output, "--out") as staging:
            (staging / "a.txt").write_text("new")
        assert output.is_symlink() and (written / "a.txt").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "made", "out", "target"]


def test_check_output_names_a_missing_directory(tmp_path):
    with pytest.raises(UserError, match="directory .*nowhere does not exist. Create it first"):
        check_output(tmp_path / "nowhere" / "out.txt", "--output")
