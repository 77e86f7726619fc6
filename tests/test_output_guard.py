"""Every command's output is checked against every file the command reads, not only those
its options list: for each command and each input it reads, --output naming that input (by
its path, through a symlink, or as a hard link) is refused with exit 2, and the input stays
byte for byte what it was. Outputs through a symlink are written to its target, the link
kept; a directory a command replaces never holds an input, nor lies inside one."""

from __future__ import annotations

import os
import shutil

import pytest
from pair_kinds import shared_kinds

from conftest import nmt

SOURCES = "the dog sees the cat.\na small bird sleeps.\n"
GERMAN = "der Hund sieht die Katze.\nein Vogel schläft.\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The pairwise test's models (tests/pair_kinds.py: an RNNsearch, its chain's second
    model, a Transformer with its shortlist and CTranslate2 export, a Marian model to
    import) and the text files the commands read."""
    pytest.importorskip("ctranslate2")
    pytest.importorskip("transformers")
    kinds = shared_kinds(tmp_path_factory)
    directory = tmp_path_factory.mktemp("guarded")
    files = {
        "checkpoint": kinds["rnnsearch"].checkpoint,
        "then": kinds["chain"].then,
        "transformer": kinds["transformer"].checkpoint,
        "shortlist": kinds["transformer"].checkpoint.with_suffix(".shortlist.pt"),
        "ct2": kinds["ctranslate2"].model,
        "marian": kinds["marian"].checkpoint.parent / "opus-mt-en-de",
    }
    for name, text in (("src", SOURCES), ("tgt", GERMAN), ("terms", "\n\n"), ("prefix", "\n\n")):
        files[name] = directory / name
        files[name].write_text(text, "utf-8")
    return files


def translate(made, *extra):
    return ("translate", "--checkpoint", made["checkpoint"], "--input", made["src"], *extra)


def score(made, command="score"):
    return (command, "--checkpoint", made["checkpoint"], "--src", made["src"], "--tgt", made["tgt"])


# (command, the input, its args without --output, the file it reads, what the refusal calls it)
CASES = {
    ("translate", "--input"): lambda m: (translate(m), m["src"], "the file --input reads"),
    ("translate", "--constraints"): lambda m: (
        translate(m, "--constraints", m["terms"]),
        m["terms"],
        "the file --constraints reads",
    ),
    ("translate", "--prefix"): lambda m: (
        translate(m, "--prefix", m["prefix"]),
        m["prefix"],
        "the file --prefix reads",
    ),
    ("translate", "--checkpoint"): lambda m: (
        translate(m),
        m["checkpoint"],
        "the file --checkpoint reads",
    ),
    ("translate", "--then"): lambda m: (
        translate(m, "--then", m["then"]),
        m["then"],
        "the file --then reads",
    ),
    ("translate", "its shortlist"): lambda m: (
        ("translate", "--checkpoint", m["transformer"], "--input", m["src"], "--shortlist", "3"),
        m["shortlist"],
        "the shortlist of",
    ),
    ("translate --engine ctranslate2", "--model"): lambda m: (
        ("translate", "--engine", "ctranslate2", "--model", m["ct2"], "--input", m["src"]),
        m["ct2"] / "model.bin",
        "the file --model reads",
    ),
    ("score", "--src"): lambda m: (score(m), m["src"], "the file --src reads"),
    ("score", "--tgt"): lambda m: (score(m), m["tgt"], "the file --tgt reads"),
    ("score", "--checkpoint"): lambda m: (score(m), m["checkpoint"], "the file --checkpoint reads"),
    ("eval", "--src"): lambda m: (score(m, "eval"), m["src"], "the file --src reads"),
    ("eval", "--ref"): lambda m: (score(m, "eval"), m["tgt"], "the file --ref reads"),
    ("eval", "--checkpoint"): lambda m: (
        score(m, "eval"),
        m["checkpoint"],
        "the file --checkpoint reads",
    ),
    ("average", "PATH"): lambda m: (
        ("average", m["checkpoint"], m["checkpoint"]),
        m["checkpoint"],
        "the file PATH reads",
    ),
    ("import", "--from"): lambda m: (
        ("import", "--from", m["marian"]),
        m["marian"] / "config.json",
        "the file --from reads",
    ),
}
FORMS = ("path", "symlink", "hard link")


def output_naming(file, form, directory):
    """`file` itself, a symlink to it, or a hard link to it."""
    if form == "path":
        return file
    named = directory / form.replace(" ", "-")
    if form == "symlink":
        named.symlink_to(file)
    else:
        os.link(file, named)
    return named


def test_no_command_writes_over_any_file_it_reads(made, tmp_path):
    refused = 0
    for (command, option), case in CASES.items():
        args, file, description = case(made)
        for form in FORMS:
            before = file.read_bytes()
            where = tmp_path / f"{command}{option}".replace(" ", "_")
            where.mkdir(exist_ok=True)
            output = output_naming(file, form, where)
            ran = nmt(*args, "--output", output)
            assert ran.returncode == 2, (command, option, form, ran.stdout, ran.stderr)
            assert f"--output {output} is {description}" in ran.stderr, (command, option, form)
            assert file.read_bytes() == before, (command, option, form)
            assert form != "symlink" or output.is_symlink()
            refused += 1
    assert refused == len(CASES) * len(FORMS) == 45


def test_an_output_through_a_symlink_is_written_to_its_target(made, tmp_path):
    target, link = tmp_path / "translations.txt", tmp_path / "link.txt"
    target.write_text("an earlier translation\n", "utf-8")
    link.symlink_to(target.name)  # relative, as ln -s writes it
    assert nmt(*translate(made), "--output", link).returncode == 0
    assert link.is_symlink() and os.readlink(link) == target.name
    assert len(target.read_text("utf-8").splitlines()) == 2
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "new.txt")
    assert nmt(*translate(made), "--output", dangling).returncode == 0
    assert dangling.is_symlink() and len((tmp_path / "new.txt").read_text().splitlines()) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dangling", "link.txt", "new.txt", "translations.txt"
    ]  # fmt: skip


def test_a_link_to_the_process_output_is_written_into_not_replaced(made, tmp_path):
    """/dev/stdout is a link to /proc/self/fd/1: a rename over it would replace the link
    (for every process, as root) and leave the process's own output empty. Here standard
    output is a regular file, where a rename is otherwise what replacing does."""
    link, captured = tmp_path / "stdout", tmp_path / "captured.txt"
    link.symlink_to("/proc/self/fd/1")
    saved = os.dup(1)
    try:
        with captured.open("w") as stdout:
            os.dup2(stdout.fileno(), 1)  # this process's standard output: the file
            ran = nmt(*translate(made), "--output", link)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    assert ran.returncode == 0, ran.stderr
    assert len(captured.read_text("utf-8").splitlines()) == 2
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"


def test_clean_never_replaces_a_directory_around_its_corpus(corpus_dir, tmp_path):
    outer = tmp_path / "outer"
    shutil.copytree(corpus_dir, outer / "raw")
    (outer / "report.json").write_text("{}\n")  # as an earlier clean into outer left it
    before = {p.name: p.read_bytes() for p in (outer / "raw").iterdir()}
    languages = ("--src-lang", "en", "--tgt-lang", "de")
    ran = nmt("clean", "--data", outer / "raw", *languages, "--out", outer, "--overwrite")
    assert ran.returncode == 2 and f"--out {outer} holds the corpus's train split" in ran.stderr
    assert {p.name: p.read_bytes() for p in (outer / "raw").iterdir()} == before


def test_distill_never_writes_into_a_directory_around_its_corpus(made, corpus_dir, tmp_path):
    outer = tmp_path / "outer"
    shutil.copytree(corpus_dir, outer / "raw")
    before = {p.name: p.read_bytes() for p in (outer / "raw").iterdir()}
    teacher = made["checkpoint"]
    ran = nmt("distill", "--checkpoint", teacher, "--data", outer / "raw", "--out", outer)
    assert ran.returncode == 2 and f"--out {outer} holds the corpus's train split" in ran.stderr
    assert {p.name: p.read_bytes() for p in (outer / "raw").iterdir()} == before
