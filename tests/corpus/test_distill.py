"""`nmt distill`: a teacher's translations of the train split, as a corpus that training
reads; an ensemble's; every direction of a multilingual teacher; finished after a kill
exactly as an uninterrupted run writes it; other settings and bad arguments refused."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import LINES, nmt, tiny_experiment, tiny_train_args
from nmt.corpus.distill import distil
from nmt.data.splits import load_split
from nmt.errors import UserError
from nmt.translate.translator import Translator
from nmt.version import __version__ as nmt_version

pytestmark = pytest.mark.usefixtures("one_thread")

SPLITS = ("valid.en", "valid.de", "test.en", "test.de")
TWO_WAY = ("data.directions=[en-de,de-en]",)


def trained(directory_for, corpus_dir, name: str, *overrides: str):
    """The best.pt of the tiny experiment on `corpus_dir`, trained in directory_for(name)."""
    run = directory_for(name)
    result = nmt(*tiny_train_args(run, corpus_dir, *overrides))
    assert result.returncode == 0, result.stderr
    return run / "best.pt"


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, corpus_dir):
    return trained(tmp_path_factory.mktemp, corpus_dir, "teacher")


@pytest.fixture(scope="module")
def other_teacher(tmp_path_factory, corpus_dir):
    """Another seed, the same tokenizer: an ensemble's second member."""
    return trained(tmp_path_factory.mktemp, corpus_dir, "other-teacher", "train.seed=7")


@pytest.fixture(scope="module")
def distilled(tmp_path_factory, teacher):
    """The corpus `nmt distill` writes from the teacher's own corpus, at beam 2."""
    out = tmp_path_factory.mktemp("distilled") / "corpus"
    result = nmt("distill", "--checkpoint", teacher, "--out", out, "--beam", 2)
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}: en-de 300 pairs (train.en, train.de)" in result.stdout
    assert f"--set data.path={out}" in result.stdout
    return out


def manifest(directory) -> dict:
    return json.loads((directory / "manifest.json").read_text("utf-8"))


def files(directory) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def test_the_targets_are_what_nmt_translate_writes_and_valid_and_test_are_copies(
    distilled, teacher, corpus_dir, tmp_path
):
    assert set(files(distilled)) == {"train.en", "train.de", *SPLITS, "manifest.json"}
    assert (distilled / "train.en").read_bytes() == (corpus_dir / "train.en").read_bytes()
    hypotheses = tmp_path / "train.hyp"
    args = ("--input", distilled / "train.en", "--output", hypotheses, "--beam", 2)
    assert nmt("translate", "--checkpoint", teacher, *args).returncode == 0
    assert (distilled / "train.de").read_bytes() == hypotheses.read_bytes()
    for name in SPLITS:
        assert (distilled / name).read_bytes() == (corpus_dir / name).read_bytes(), name
    written = manifest(distilled)
    assert written["complete"] and written["nmt_version"] == nmt_version
    (only,) = written["settings"]["teachers"]
    assert only == {
        "path": str(teacher),
        "sha256": hashlib.sha256(teacher.read_bytes()).hexdigest(),
    }
    assert written["settings"]["decode"]["beam"] == 2
    assert written["settings"]["corpus"] == str(corpus_dir.resolve())
    (direction,) = written["directions"]
    assert direction["lines"] == direction["translated"] == 300
    assert direction["target_bytes"] == (distilled / "train.de").stat().st_size
    again = nmt("distill", "--checkpoint", teacher, "--out", distilled, "--beam", 2)
    assert again.returncode == 0 and "is complete already" in again.stdout


def test_a_student_trains_on_the_distilled_corpus_alone_or_added_and_translates(
    distilled, corpus_dir, tmp_path
):
    for name, corpus, extra, pairs in (
        ("alone", distilled, (), 300),
        ("added", corpus_dir, (f"data.extra_train=[{distilled}]",), 600),
    ):
        student = tmp_path / name
        result = nmt(*tiny_train_args(student, corpus, "train.max_steps=2", *extra))
        assert result.returncode == 0, result.stderr
        log = (student / "train.log").read_text("utf-8")
        counts = re.search(r"(\d+) pairs kept, (\d+) empty dropped, (\d+) longer", log)
        assert sum(map(int, counts.groups())) == pairs
        found = nmt("translate", "--checkpoint", student, input="\n".join(LINES) + "\n")
        assert found.returncode == 0 and len(found.stdout.splitlines()) == len(LINES)


def test_an_ensemble_distils_as_it_translates_and_the_manifest_names_both(
    teacher, other_teacher, corpus_dir, tmp_path
):
    done = distil([teacher, other_teacher], tmp_path / "out", workers=1, beam=2)
    sources = (corpus_dir / "train.en").read_text("utf-8").splitlines()
    ensemble = Translator.load([teacher, other_teacher], workers=1, beam=2)
    expected = [translation.text for translation in ensemble.translate(sources)]
    assert (tmp_path / "out" / "train.de").read_text("utf-8").splitlines() == expected
    teachers = manifest(tmp_path / "out")["settings"]["teachers"]
    assert [t["path"] for t in teachers] == [str(teacher), str(other_teacher)]
    assert teachers[0]["sha256"] != teachers[1]["sha256"]
    assert done.translated == 300 and done.earlier == 0


# Run in a fresh process: killed (SIGKILL, no clean-up of any kind) as its third chunk of
# `chunk_lines` starts, when two chunks are on disk.
KILLED_AT_THE_THIRD_CHUNK = """
import os, signal, sys
from nmt.corpus.distill import distil
from nmt.translate.translator import Translator

stream, calls = Translator.stream, []

def dying(self, *args, **kwargs):
    calls.append(1)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return stream(self, *args, **kwargs)

Translator.stream = dying
distil(sys.argv[1], sys.argv[2], workers=1, chunk_lines=int(sys.argv[3]), beam=2)
"""


def test_a_killed_distillation_finishes_byte_for_byte_as_an_uninterrupted_one(
    teacher, tmp_path, monkeypatch
):
    out, chunk = tmp_path / "resumed", 40
    args = [sys.executable, "-c", KILLED_AT_THE_THIRD_CHUNK, str(teacher), str(out), str(chunk)]
    killed = subprocess.run(args, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    (direction,) = manifest(out)["directions"]
    assert direction["translated"] == 2 * chunk and not manifest(out)["complete"]
    with (out / "train.de").open("ab") as torn:  # a chunk cut off midway by the kill
        torn.write(b"der hund sieht\ndie katze")

    stream, chunks = Translator.stream, []

    def counted(self, lines, **options):
        chunks.append(len(lines))
        return stream(self, lines, **options)

    monkeypatch.setattr(Translator, "stream", counted)
    done = distil(teacher, out, workers=1, chunk_lines=chunk, beam=2)
    assert done.earlier == 2 * chunk and done.translated == 300 - 2 * chunk
    assert chunks == [chunk] * 5 + [300 - 7 * chunk]  # from the third chunk on, not afresh
    uninterrupted = distil(teacher, tmp_path / "straight", workers=1, chunk_lines=chunk, beam=2)
    assert uninterrupted.earlier == 0
    assert files(out) == files(tmp_path / "straight")


def test_ctrl_c_says_how_to_finish_and_a_changed_corpus_is_not_finished(
    teacher, tmp_path, monkeypatch, caplog
):
    out, stream = tmp_path / "out", Translator.stream

    def interrupted(self, lines, **options):
        if (out / "train.de").stat().st_size:  # the first chunk is in
            raise KeyboardInterrupt
        return stream(self, lines, **options)

    monkeypatch.setattr(Translator, "stream", interrupted)
    with pytest.raises(KeyboardInterrupt):
        distil(teacher, out, workers=1, chunk_lines=100, beam=2)
    assert f"{out} is unfinished; run the same command again to finish it" in caplog.text
    (direction,) = manifest(out)["directions"]
    assert direction["translated"] == 100
    monkeypatch.setattr(Translator, "stream", stream)
    with (out / "train.de").open("r+b") as target:
        target.truncate(direction["target_bytes"] - 1)
    with pytest.raises(UserError, match="train.de holds fewer bytes than the .* manifest.json"):
        distil(teacher, out, workers=1, chunk_lines=100, beam=2)
    done = distil(teacher, out, workers=1, chunk_lines=100, beam=2, overwrite=True)
    assert done.earlier == 0 and done.translated == 300


def test_other_settings_are_refused_naming_what_differs_unless_overwritten(
    teacher, other_teacher, tmp_path
):
    out = tmp_path / "out"
    distil(teacher, out, workers=1, chunk_lines=100, beam=2)
    cases = {
        "decode.beam: 2 -> 3": dict(checkpoints=teacher, chunk_lines=100, beam=3),
        "chunk_lines: 100 -> 50": dict(checkpoints=teacher, chunk_lines=50, beam=2),
        f"teachers: {teacher} (sha256 ": dict(checkpoints=other_teacher, chunk_lines=100, beam=2),
    }
    for difference, settings in cases.items():
        with pytest.raises(UserError) as refused:
            distil(out=out, workers=1, **settings)
        message = str(refused.value)
        assert difference in message and "pass --overwrite to start afresh" in message
    refused = nmt("distill", "--checkpoint", teacher, "--out", out, "--beam", 3)
    assert refused.returncode == 2 and "decode.beam: 2 -> 3" in refused.stderr
    again = distil(other_teacher, out, workers=1, overwrite=True, beam=3)
    assert again.earlier == 0 and again.translated == 300
    written = manifest(out)["settings"]
    assert written["decode"]["beam"] == 3 and written["chunk_lines"] == 5000
    assert written["teachers"][0]["path"] == str(other_teacher)


def test_bad_arguments_are_one_paragraph_errors_naming_the_option(teacher, corpus_dir, tmp_path):
    (tmp_path / "file").write_text("x\n")
    unrelated = shutil.copytree(corpus_dir, tmp_path / "corpus")
    (tmp_path / "edited").mkdir()
    (tmp_path / "edited" / "manifest.json").write_text("{}")
    cases = {
        ("--out", tmp_path / "new"): "nmt distill needs --checkpoint FILE",
        ("--checkpoint", teacher): "nmt distill needs --out DIR",
        ("--checkpoint", teacher, "--out", tmp_path / "file"): f"--out {tmp_path / 'file'} is "
        "a file; nmt distill writes a corpus directory",
        ("--checkpoint", teacher, "--out", unrelated): f"--out {unrelated} holds files "
        "(test.de, test.en, train.de, train.en, valid.de, valid.en) but no manifest.json",
        ("--checkpoint", teacher, "--out", corpus_dir): f"--out {corpus_dir} holds the "
        "corpus's train split",
        ("--checkpoint", teacher, "--out", tmp_path / "new", "--data", tmp_path / "none"): (
            f"--data {tmp_path / 'none'} does not exist"
        ),
        ("--checkpoint", teacher, "--out", tmp_path / "edited"): "manifest.json is not a "
        "manifest nmt distill wrote",
        ("--checkpoint", tmp_path / "none.pt", "--out", tmp_path / "new"): "checkpoint "
        f"{tmp_path / 'none.pt'} does not exist",
    }
    for args, message in cases.items():
        result = nmt("distill", *args)
        assert result.returncode == 2, (args, result.stdout)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "new").exists()
    with pytest.raises(UserError, match="drop sample and nbest"):
        distil(teacher, tmp_path / "new", sample=True)


def test_a_table_corpus_is_written_as_text_files(teacher, corpus_dir, tmp_path):
    """--data names a corpus of tables; sentences holding a line break keep to one line."""
    tables = tmp_path / "tables"
    tables.mkdir()
    english = (corpus_dir / "train.en").read_text("utf-8").splitlines()[:20]
    german = (corpus_dir / "train.de").read_text("utf-8").splitlines()[:20]
    rows = "".join(f"{en}\t{de}\n" for en, de in zip(english, german, strict=True))
    (tables / "train.tsv").write_text(rows, "utf-8")
    pairs = [{"en": "the dog\nsleeps.", "de": "der hund schlaeft."}, {"en": "a cat.", "de": ""}]
    for split in ("valid", "test"):
        (tables / f"{split}.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    done = distil(teacher, tmp_path / "out", data=tables, workers=1, beam=1)
    out = tmp_path / "out"
    assert done.manifest.settings.corpus == str(tables.resolve())
    assert (out / "train.en").read_text("utf-8").splitlines() == english
    assert len((out / "train.de").read_text("utf-8").splitlines()) == 20
    for split in ("valid", "test"):
        assert (out / f"{split}.en").read_text("utf-8") == "the dog sleeps.\na cat.\n"
        assert (out / f"{split}.de").read_text("utf-8") == "der hund schlaeft.\n\n"


@pytest.fixture(scope="module")
def two_way_teacher(tmp_path_factory, corpus_dir):
    return trained(tmp_path_factory.mktemp, corpus_dir, "two-way", *TWO_WAY, "train.max_steps=9")


def test_every_direction_of_a_multilingual_teacher_gets_a_pair_of_its_own(
    two_way_teacher, corpus_dir, tmp_path
):
    """en-de's German targets are not de-en's German sources, so each direction writes its
    own pair of files, which a multilingual config reads from the same directory."""
    out = tmp_path / "out"
    distil(two_way_teacher, out, workers=1, beam=1)
    pairs = ("train.en-de.en", "train.en-de.de", "train.de-en.de", "train.de-en.en")
    assert set(files(out)) == {*pairs, *SPLITS, "manifest.json"}
    translator = Translator.load(two_way_teacher, workers=1, beam=1)
    data = tiny_experiment(out, *TWO_WAY).data
    for source, target in data.pairs:
        original = (corpus_dir / f"train.{source}").read_text("utf-8").splitlines()
        expected = [t.text for t in translator.translate(original, tgt_lang=target)]
        text = load_split(data.direction(source, target), "train")
        assert text.src == original and text.tgt == expected
        assert load_split(data.direction(source, target), "valid").origin.endswith(
            f"valid.{source} / valid.{target}"
        )
    assert [d["name"] for d in manifest(out)["directions"]] == ["en-de", "de-en"]


def test_two_directions_into_one_language_each_get_the_translations_of_their_sources(
    corpus_dir, tmp_path
):
    """A multi-way corpus, en-de and fr-de: German targets of each direction's own
    sources, never one shared German file."""
    corpus = tmp_path / "multi-way"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        english = (corpus_dir / f"{split}.en").read_text("utf-8").splitlines()[:60]
        french = [line.replace("e", "é").replace("c", "ç") for line in english]
        (corpus / f"{split}.en").write_text("".join(f"{line}\n" for line in english), "utf-8")
        (corpus / f"{split}.fr").write_text("".join(f"{line}\n" for line in french), "utf-8")
        shutil.copy(corpus_dir / f"{split}.de", corpus / f"{split}.de")
    german = (corpus_dir / "train.de").read_text("utf-8").splitlines()[:60]
    (corpus / "train.de").write_text("".join(f"{line}\n" for line in german), "utf-8")
    into_german = ("data.directions=[en-de,fr-de]", "train.max_steps=3")
    teacher = trained(lambda name: tmp_path / name, corpus, "many-to-one", *into_german)
    out = tmp_path / "out"
    distil(teacher, out, workers=1, beam=1)
    translator = Translator.load(teacher, workers=1, beam=1)
    for source in ("en", "fr"):
        sources = (corpus / f"train.{source}").read_text("utf-8").splitlines()
        expected = [t.text for t in translator.translate(sources)]
        assert (out / f"train.{source}-de.de").read_text("utf-8").splitlines() == expected
    assert not (out / "train.de").exists()
