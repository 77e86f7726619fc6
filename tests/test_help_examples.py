"""Every command's --help ends with examples that work as printed: run here in a directory laid
out as `make train` and `nmt train --config configs/demo_transformer.yaml` leave it (tiny
models in runs/demo and runs/demo_transformer, step checkpoints, test.en and test.de, and
runs/demo_legal, a LoRA adapter run on runs/demo, as the adapter example of nmt train
leaves it), corpus (a corpus directory), plus
terms.jsonl, the constraints file a user writes for the translate example that reads one,
and opus-mt-en-de, a (tiny, random) Marian model directory as a download leaves it."""

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import nmt
from conftest import ROOT, TINY_TRANSFORMER, tiny_experiment, write_marian_model
from nmt.checkpoint import load_checkpoint
from nmt.cli import app

# The commands whose examples run here, in an order that makes what the next ones read (the
# shortlist and the export before translating with them); training and serving are tested
# elsewhere.
COMMANDS = (
    "shortlist",
    "export",
    "import",
    "tm build",
    "translate",
    "eval",
    "score",
    "distill",
    "clean",
    "average",
    "adapter merge",
    "plot",
)


def examples(command: str) -> list[str]:
    """The example lines of a command's --help, continuation lines joined."""
    text = CliRunner().invoke(app, [*command.split(), "--help"], terminal_width=200).output
    block = text.split("Examples:", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in re.sub(r"\\\n\s*", "", block).splitlines() if line.strip()]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, corpus_dir):
    root = tmp_path_factory.mktemp("examples")
    for name, switch in (("demo", ()), ("demo_transformer", TINY_TRANSFORMER)):
        config = tiny_experiment(corpus_dir, *switch, "train.keep_last=2", "train.max_steps=4")
        nmt.train_run(config, ["train.valid_every=2"], run_dir=root / "runs" / name)
    demo = root / "runs" / "demo"
    adapters = ["train.max_steps=4", f"train.init_from={demo}", "train.adapters.type=lora"]
    nmt.train_run(tiny_experiment(corpus_dir), adapters, run_dir=root / "runs" / "demo_legal")
    for step in (500, 1000):  # what `make train` leaves: its validations at 500 and 1000
        shutil.copy(demo / "step-000004.pt", demo / f"step-{step:06d}.pt")
    for lang in ("en", "de"):
        shutil.copy(corpus_dir / f"test.{lang}", root / f"test.{lang}")
    lines = len((root / "test.en").read_text("utf-8").splitlines())
    terms = ['{"include": ["hund"]}', "", '{"exclude": ["der"]}'] * lines
    (root / "terms.jsonl").write_text("\n".join(terms[:lines]) + "\n", "utf-8")
    write_marian_model(root / "opus-mt-en-de", corpus_dir)  # as a download leaves it
    source = (root / "test.en").read_text("utf-8").splitlines()[:3]
    (root / "lines.html").write_text("".join(f"<p><b>{line}</b></p>\n" for line in source))
    cues = [f"{n}\n00:00:0{n},000 --> 00:00:0{n},500\n{line}\n" for n, line in enumerate(source, 1)]
    (root / "film.srt").write_text("\n".join(cues), "utf-8")
    (root / "configs").symlink_to(ROOT / "configs")  # the shipped configs, as in a clone
    (root / "corpus").symlink_to(corpus_dir)  # a corpus directory of the user's
    return root


# the commands whose examples ran in the worker's directory: a command's examples read what
# the earlier commands' wrote, so every test runs on one worker (its xdist group), and the
# first to run there runs the ones before it
RAN: dict[Path, set[str]] = {}


@pytest.mark.xdist_group("help_examples")
@pytest.mark.parametrize("command", COMMANDS)
def test_every_example_works_as_printed(command, workdir, monkeypatch, one_thread):
    monkeypatch.chdir(workdir)
    ran = RAN.setdefault(workdir, set())
    for earlier in COMMANDS[: COMMANDS.index(command) + 1]:
        if earlier not in ran:
            ran.add(earlier)
            run_examples(earlier)


def run_examples(command: str) -> None:
    """Runs each example of `command`'s --help in the current directory, checking its output."""
    found = examples(command)
    assert found, f"nmt {command} --help shows no examples"
    for example in found:
        stdin = None
        if example.startswith("echo "):
            echo, _, example = example.partition(" | ")
            stdin = shlex.split(echo)[1] + "\n"
        words = shlex.split(example)
        assert words[0] == "nmt", example
        if words[1 : 1 + len(command.split())] != command.split():
            continue  # another command's example (a workflow): run in its own test
        result = CliRunner().invoke(app, words[1:], input=stdin)
        assert result.exit_code == 0, (example, result.output, result.exception)
        check_output(words[1:], result.stdout, stdin)


def option(words: list[str], *names: str) -> str | None:
    """The value of the first of `names` in a command line, or None."""
    for index, word in enumerate(words):
        if word in names:
            return words[index + 1]
    return None


def lines_of(path: str) -> list[str]:
    return Path(path).read_text("utf-8").splitlines()


def check_output(words: list[str], stdout: str, stdin: str | None) -> None:
    """What each example prints or writes, read back: the files it names exist and hold
    what the command promises."""
    command = words[0]
    if command == "export" and option(words, "--format") == "transformers":
        directory = Path(option(words, "--output", "-o"))
        assert {"config.json", "model.safetensors", "tokenizer.json", "README.md"} <= {
            path.name for path in directory.iterdir()
        }
    elif command == "export":
        directory = Path(option(words, "--output", "-o"))
        assert (directory / "model.bin").is_file() and (directory / "nmt.json").is_file()
        assert f"translate with: nmt translate --engine ctranslate2 --model {directory}" in stdout
    elif command == "import":
        checkpoint = Path(option(words, "--output", "-o"))
        assert load_checkpoint(checkpoint)["config"]["model"]["decoder"]["norm"] == "post"
        assert "init_from" in checkpoint.with_suffix(".yaml").read_text("utf-8")
    elif command == "translate" and (option(words, "--input", "--src", "-i") or "").endswith(
        ".srt"
    ):
        before, after = lines_of(option(words, "--input")), lines_of(option(words, "--output"))
        cues = [line for line in before if " --> " in line]
        assert [line for line in after if " --> " in line] == cues and cues
    elif command == "translate":
        source = option(words, "--input", "--src", "-i")
        expected = len(lines_of(source)) if source else stdin.count("\n")
        output = option(words, "--output", "-o")
        written = lines_of(output) if output else stdout.splitlines()
        assert len(written) == expected and any(written)
        if "--alignments" in words:
            assert all(re.fullmatch(r".* \|\|\| (\d+-\d+ ?)*", line) for line in written)
    elif command == "eval":
        if "--json" in words:
            assert 0 <= json.loads(stdout)["bleu"] <= 100
        else:
            assert "BLEU" in stdout and "chrF" in stdout and "nrefs:1" in stdout
        if words.count("--hyp") + words.count("--checkpoint") > 1 and "--ensemble" not in words:
            header, *rows = stdout.splitlines()
            assert "p(BLEU)" in header and len(rows) >= 2  # a table with p-values
    elif command == "score":
        rows = stdout.splitlines()
        assert len(rows) == len(lines_of(option(words, "--src")))
        for row in rows:
            total = json.loads(row)["total"] if "--json" in words else float(row.split("\t")[0])
            assert total < 0
    elif command == "distill":
        directory = Path(option(words, "--out"))
        manifest = json.loads((directory / "manifest.json").read_text("utf-8"))
        assert manifest["complete"] and f"--set data.path={directory}" in stdout
        for direction in manifest["directions"]:
            sources = lines_of(str(directory / direction["source"]))
            assert len(sources) == len(lines_of(str(directory / direction["target"])))
            assert len(sources) == direction["lines"] > 0
    elif command == "clean":
        directory = Path(option(words, "--out"))
        report = json.loads((directory / "report.json").read_text("utf-8"))
        kept = lines_of(str(directory / "train.en"))
        assert len(kept) == len(lines_of(str(directory / "train.de"))) == report["pairs_out"] > 0
        removed = lines_of(str(directory / "removed.tsv"))[1:]
        assert report["pairs_in"] == report["pairs_out"] + len(removed)
        assert f"wrote {directory}: {report['pairs_out']:,} of" in stdout
    elif command == "average":
        averaged = load_checkpoint(Path(option(words, "--output")))
        assert set(averaged["model"]) == set(load_checkpoint(Path("runs/demo/best.pt"))["model"])
    elif command == "plot":
        directory = Path(option(words, "--output") or words[1])
        names = (
            {"loss.png", "bleu.png"}
            if len(words) == 2 + 2 * ("--output" in words)
            else {"compare_loss.png", "compare_bleu.png"}
        )
        assert names <= {path.name for path in directory.iterdir()}
