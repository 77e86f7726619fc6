"""`nmt clean` end to end: the cleaned corpus, removed.tsv and report.json agree; an
interrupted clean starts again and ends as an uninterrupted one; the corpus read is never
written; sentences of valid and test leave train; `data.clean: true` trains on exactly the
pairs `nmt clean` writes; dual cross-entropy is the two models' `nmt score`, combined."""

import json
import math
import subprocess
import sys

import pytest

from conftest import nmt, tiny_experiment, write_checkpoint, write_parallel
from nmt.config import load_config
from nmt.corpus.clean import clean_corpus
from nmt.data.corpus import prepare_corpus
from nmt.data.demo import generate_pairs
from nmt.data.splits import read_lines
from nmt.data.tokenizer import build_tokenizer
from nmt.translate.translator import Translator

LANGUAGES = ("--src-lang", "en", "--tgt-lang", "de")


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    """The demo grammar's pairs with noise of each kind the rules see: empty sides,
    copies, duplicates, truncations, a number-only line, a valid sentence in train."""
    directory = tmp_path_factory.mktemp("noisy")
    pairs = generate_pairs(360, seed=3)
    train, valid, test = pairs[:300], pairs[300:330], pairs[330:]
    train = list(train)
    train[10] = ("", train[10][1])
    train[20] = (train[20][0], train[20][0])  # the source copied as target
    train[30] = train[5]  # a duplicate
    train[40] = (train[40][0] + " " + train[41][0] + " " + train[42][0], "ein Hund.")
    train[50] = ("12 / 34 / 56 / 78", "12 - 34 - 56 - 78")
    train[60] = valid[3]
    write_parallel(directory, "train", train)
    write_parallel(directory, "valid", valid)
    write_parallel(directory, "test", test)
    return directory


def tsv(path):
    rows = path.read_text("utf-8").splitlines()
    header = rows[0].split("\t")
    return [dict(zip(header, row.split("\t"), strict=True)) for row in rows[1:]]


def test_languages_and_directories_are_taken_as_written(noisy, tmp_path):
    """--src-lang no is Norwegian (not YAML's false), --tgt-lang on a language too, and a
    '#' in --data is part of the directory's name (not a YAML comment)."""
    corpus = tmp_path / "corpus #2"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        for old, new in (("en", "no"), ("de", "on")):
            (corpus / f"{split}.{new}").write_bytes((noisy / f"{split}.{old}").read_bytes())
    out = tmp_path / "clean"
    ran = nmt("clean", "--data", corpus, "--src-lang", "no", "--tgt-lang", "on", "--out", out,
              "--workers", "1")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert sorted(p.name for p in out.glob("train.*")) == ["train.no", "train.on"]


def test_a_directory_in_a_corpus_files_place_is_named(noisy, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("train.en", "valid.en", "valid.de", "test.en", "test.de"):
        (corpus / name).write_bytes((noisy / name).read_bytes())
    (corpus / "train.de").mkdir()
    ran = nmt("clean", "--data", corpus, *LANGUAGES, "--out", tmp_path / "out", "--workers", "1")
    assert ran.returncode == 2, ran.stderr
    assert f"cannot read {corpus / 'train.de'}: Is a directory" in " ".join(ran.stderr.split())
    assert not (tmp_path / "out").exists()


def test_the_report_counts_what_the_files_hold(noisy, tmp_path):
    out = tmp_path / "clean"
    ran = nmt("clean", "--data", noisy, *LANGUAGES, "--out", out, "--workers", "1")
    assert ran.returncode == 0, ran.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    removed = tsv(out / "removed.tsv")
    kept_src, kept_tgt = read_lines(out / "train.en"), read_lines(out / "train.de")
    assert len(kept_src) == len(kept_tgt) == report["pairs_out"]
    assert report["pairs_in"] == 300 == report["pairs_out"] + len(removed)
    counts = {name: count for name, count in report["removed"].items() if count}
    assert counts == {
        name: sum(row["filter"] == name for row in removed)
        for name in {r["filter"] for r in removed}
    }
    by_line = {int(row["line"]): row["filter"] for row in removed}
    injected = {11: "empty", 21: "copy", 31: "duplicate", 41: "length_ratio", 51: "letters"}
    assert injected | {61: "held_out"} == {k: by_line.get(k) for k in [*injected, 61]}
    others = {line: name for line, name in by_line.items() if line not in (*injected, 61)}
    assert set(others.values()) <= {"length_ratio"} and len(others) <= 3  # the grammar's own
    source = read_lines(noisy / "train.en")
    assert kept_src == [line for number, line in enumerate(source, 1) if number not in by_line]
    for name in ("valid.en", "valid.de", "test.en", "test.de"):
        assert (out / name).read_bytes() == (noisy / name).read_bytes()
    assert f"wrote {out}: {report['pairs_out']} of 300 pairs kept" in ran.stdout


KILLED = """
import os, signal, sys
import nmt.data.cleaning as cleaning

judged, real = [], cleaning.Cleaner._counted

def dying(self, one):
    judged.append(one)
    if len(judged) == 150:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, one)

cleaning.Cleaner._counted = dying
from nmt.cli import main
sys.argv = ["nmt", "clean", *sys.argv[1:]]
main()
"""


def test_a_killed_clean_starts_again_and_ends_as_an_uninterrupted_one(noisy, tmp_path):
    out, args = tmp_path / "clean", ["--data", str(noisy), *LANGUAGES, "--workers", "1"]
    killed = subprocess.run(
        [sys.executable, "-c", KILLED, *args, "--out", str(out)], capture_output=True, text=True
    )
    assert killed.returncode < 0, killed.stderr
    assert not out.exists()  # nothing half-cleaned where the corpus goes
    assert [p.name for p in tmp_path.iterdir()] != []  # the staging directory it left
    assert nmt("clean", *args, "--out", out).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean"]  # leftovers removed
    straight = tmp_path.parent / f"{tmp_path.name}-straight"
    assert nmt("clean", *args, "--out", straight).returncode == 0
    for name in ("train.en", "train.de", "removed.tsv"):
        assert (out / name).read_bytes() == (straight / name).read_bytes()


def test_the_corpus_read_is_never_written(noisy, tmp_path):
    before = {path.name: path.read_bytes() for path in noisy.iterdir()}
    for out in (noisy, noisy / "."):
        ran = nmt("clean", "--data", noisy, *LANGUAGES, "--out", out)
        assert ran.returncode == 2 and "holds the corpus's train split" in ran.stderr
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    ran = nmt("clean", "--data", noisy, *LANGUAGES, "--out", other)
    assert ran.returncode == 2 and "holds files (notes.txt) but no report.json" in ran.stderr
    out = tmp_path / "clean"
    assert nmt("clean", "--data", noisy, *LANGUAGES, "--out", out).returncode == 0
    again = nmt("clean", "--data", noisy, *LANGUAGES, "--out", out)
    assert again.returncode == 2 and "--overwrite" in again.stderr
    assert nmt("clean", "--data", noisy, *LANGUAGES, "--out", out, "--overwrite").returncode == 0
    assert {path.name: path.read_bytes() for path in noisy.iterdir()} == before


def test_data_clean_trains_on_the_pairs_nmt_clean_writes(noisy, tmp_path):
    out = tmp_path / "clean"
    assert nmt("clean", "--data", noisy, *LANGUAGES, "--out", out).returncode == 0
    expected = list(zip(read_lines(out / "train.en"), read_lines(out / "train.de"), strict=True))
    config = tiny_experiment(noisy, "data.clean=true")
    corpus = prepare_corpus(config, tmp_path / "run")
    for source in (corpus.train, prepare_corpus(streamed(config), tmp_path / "run2").train):
        assert training_pairs(source, corpus.tokenizer) == sorted(
            (tuple(corpus.tokenizer.src.encode([s])[0]), tuple(corpus.tokenizer.tgt.encode([t])[0]))
            for s, t in expected
        )


def streamed(config):
    import dataclasses

    return dataclasses.replace(config, data=dataclasses.replace(config.data, streaming=True))


def training_pairs(source, tokenizer):
    """Every pair one epoch of `source` trains on, as sorted id tuples."""
    pairs = []
    for src, tgt in source.batches(epoch=0):
        pairs += [(tuple(s), tuple(t)) for s, t in zip(src, tgt, strict=True)]
    return sorted(pairs)


def test_a_config_s_clean_section_sets_the_thresholds(noisy, tmp_path):
    config = tmp_path / "loose.yaml"
    config.write_text(
        f"data: {{src_lang: en, tgt_lang: de, path: {noisy}}}\n"
        "clean: {max_copy_overlap: null, held_out: false}\n"
    )
    out = tmp_path / "clean"
    assert nmt("clean", "--config", config, "--out", out).returncode == 0
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["removed"]["copy"] == report["removed"]["held_out"] == 0
    assert report["settings"]["max_copy_overlap"] is None
    assert load_config(config).clean.held_out is False


@pytest.fixture(scope="module")
def two_ways(tmp_path_factory, noisy):
    """Untrained tiny models, English->German and German->English, on the noisy corpus."""
    directory = tmp_path_factory.mktemp("scorers")
    forward = tiny_experiment(noisy)
    backward = tiny_experiment(noisy, "data.src_lang=de", "data.tgt_lang=en")
    text = [read_lines(noisy / f"train.{lang}") for lang in ("en", "de")]
    tokenizer = build_tokenizer(forward.tokenizer, *text, directory)
    reverse = build_tokenizer(backward.tokenizer, *reversed(text), directory)
    return (
        write_checkpoint(directory / "en-de.pt", forward, tokenizer),
        write_checkpoint(directory / "de-en.pt", backward, reverse, seed=1),
    )


def test_dual_cross_entropy_is_both_models_scores_combined(noisy, two_ways, tmp_path):
    forward, backward = two_ways
    out = tmp_path / "clean"
    ran = nmt(
        "clean", "--data", noisy, *LANGUAGES, "--out", out, "--score-with", forward,
        "--score-with-backward", backward, "--keep-best", "0.8", "--workers", "1",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    rows = tsv(out / "scores.tsv")
    ruled = clean_corpus(*settings(noisy), tmp_path / "rules", workers=1).report["pairs_out"]
    assert len(rows) == ruled  # every pair the rules kept
    src, tgt = read_lines(noisy / "train.en"), read_lines(noisy / "train.de")
    lines = [int(row["line"]) - 1 for row in rows]
    there = Translator.load(forward).score([src[i] for i in lines], [tgt[i] for i in lines])
    back = Translator.load(backward).score([tgt[i] for i in lines], [src[i] for i in lines])
    for row, f, b in zip(rows, there, back, strict=True):
        h_f, h_b = -f.mean, -b.mean
        assert float(row["forward"]) == pytest.approx(h_f, abs=1e-4)
        assert float(row["dual_cross_entropy"]) == pytest.approx(
            abs(h_f - h_b) + (h_f + h_b) / 2, abs=2e-4
        )
    kept = [row for row in rows if row["kept"] == "1"]
    assert len(kept) == math.ceil(0.8 * ruled) == len(read_lines(out / "train.en"))
    worst_kept = max(float(row["dual_cross_entropy"]) for row in kept)
    assert all(float(r["dual_cross_entropy"]) >= worst_kept for r in rows if r["kept"] == "0")
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert report["removed"]["dual_cross_entropy"] == ruled - len(kept)
    assert report["pairs_out"] == len(kept)
    removed = [row for row in tsv(out / "removed.tsv") if row["filter"] == "dual_cross_entropy"]
    assert {int(row["line"]) for row in removed} == {
        int(row["line"]) for row in rows if row["kept"] == "0"
    }


def test_dual_scoring_refuses_what_cannot_work_before_any_cleaning(
    noisy, two_ways, tmp_path, monkeypatch
):
    forward, backward = two_ways
    monkeypatch.setattr(
        "nmt.corpus.clean._clean_direction", lambda *_: pytest.fail("the rules ran first")
    )
    base = ("clean", "--data", noisy, *LANGUAGES, "--out", tmp_path / "x")
    for args, words in (
        (("--score-with", forward), "both models"),
        (("--score-with", forward, "--score-with-backward", backward), "--keep-best F"),
        (("--keep-best", "0.5"), "give --score-with"),
        (
            ("--score-with", backward, "--score-with-backward", forward, "--max-score", "9"),
            "--score-with",
        ),
    ):
        ran = nmt(*base, *args)
        assert ran.returncode == 2 and words in ran.stderr, (args, ran.stderr)


def settings(corpus):
    config = tiny_experiment(corpus)
    return config.data, config.clean


def test_clean_corpus_from_python_returns_the_report(noisy, tmp_path):
    done = clean_corpus(*settings(noisy), tmp_path / "clean", workers=1)
    assert done.directory == tmp_path / "clean"
    assert done.report["pairs_out"] == len(read_lines(tmp_path / "clean" / "train.en"))


def test_repairs_are_written_and_counted(tmp_path):
    """A pair of mojibake and one of markup are kept repaired, counted under `repaired` in
    report.json (the corpus's and the direction's) and in the summary line."""
    corpus = tmp_path / "corpus"
    pairs = generate_pairs(200, seed=4)
    train = pairs[:160]
    train[10] = (train[10][0], "Größe: " + train[10][1])  # not ASCII, so mojibake can show
    intact = [train[10], train[20]]
    train[10] = tuple(side.encode("utf-8").decode("cp1252") for side in train[10])
    train[20] = (f"<p>{train[20][0]}</p>", f'<a href="https://example.com/de">{train[20][1]}</a>')
    write_parallel(corpus, "train", train)
    write_parallel(corpus, "valid", pairs[160:180])
    write_parallel(corpus, "test", pairs[180:])
    out = tmp_path / "clean"
    ran = nmt("clean", "--data", corpus, *LANGUAGES, "--out", out, "--workers", "1",
              "--set", "clean.language_rank=null")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    report = json.loads((out / "report.json").read_text("utf-8"))
    assert (
        report["repaired"]
        == {"fix_text": 1, "markup": 1}
        == report["directions"]["en-de"]["repaired"]
    )
    assert "repaired: fix_text 1, markup 1; removed:" in ran.stdout
    kept = set(zip(read_lines(out / "train.en"), read_lines(out / "train.de"), strict=True))
    assert set(intact) <= kept
