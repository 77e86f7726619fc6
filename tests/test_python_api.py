"""The Python API (`import nmt`): what docs/python.md shows runs as shown, and the entry
points take the types they promise and refuse others with a UserError."""

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import nmt
from conftest import LINES, ROOT, TINY_CONFIG, tiny_experiment, write_checkpoint

DOCS = ROOT / "docs" / "python.md"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, corpus_dir, tokenizer):
    path = tmp_path_factory.mktemp("api") / "model.pt"
    return write_checkpoint(path, tiny_experiment(corpus_dir), tokenizer)


def test_the_examples_of_docs_python_md_run(tmp_path, monkeypatch, capsys):
    """Every python block, in order, in one namespace, from a directory holding configs/."""
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text("utf-8"), re.DOTALL)
    assert len(blocks) >= 5
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "stopped at step 100: train.max_steps (100) reached" in printed
    assert "['de']" in printed
    assert "checkpoint runs/missing/best.pt does not exist: name a .pt file" in printed
    assert "config key 'decode.nbest': must be <= beam (2) unless sampling, got 3" in printed
    translation = namespace["translation"]
    assert len(translation.nbest) == 3 and translation.text == translation.nbest[0].text
    steps, heads, sources = translation.attention.weights.shape
    assert (steps, heads) == (len(translation.attention.tgt_tokens), 1)
    assert sources == len(translation.attention.src_tokens)
    constrained = namespace["constrained"]
    assert constrained.constraints_met is True
    assert "Katze" in constrained.text and "Hund" not in constrained.text.split()
    assert (
        namespace["translator"]
        .translate("the small dog sees a bird.", prefix="ein kleiner")
        .text.startswith("ein kleiner")
    )
    best, by_text, by_ids = namespace["best"], namespace["by_text"], namespace["by_ids"]
    assert by_ids.total == pytest.approx(best.hypothesis.score, abs=1e-4) and by_ids.ended
    assert by_text.tokens[-1] == "</s>" and by_text.total == pytest.approx(by_ids.total, abs=1e-4)
    translator = namespace["translator"]
    streamed = [
        t.text for t in translator.translate(["we sleep.", "the cat sees the dog."], beam=1)
    ]
    assert "\n".join(streamed) in printed


def test_import_nmt_is_light_and_names_its_api():
    code = "import sys, nmt; print('torch' in sys.modules, sorted(nmt.__all__))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.startswith("False "), result.stderr
    for name in nmt.__all__:
        assert getattr(nmt, name) is not None, name
    assert nmt.__version__ == importlib.metadata.version("nmt")
    assert (Path(nmt.__file__).parent / "py.typed").is_file()
    with pytest.raises(AttributeError):
        nmt.no_such_name  # noqa: B018


SET_BY_IMPORT = ("LRU_CACHE_CAPACITY", "ONEDNN_PRIMITIVE_CACHE_CAPACITY", "GOMP_SPINCOUNT")


@pytest.mark.parametrize(
    ("given", "expected"),
    [({}, "16 64 1000"), ({"LRU_CACHE_CAPACITY": "3", "GOMP_SPINCOUNT": "5"}, "3 64 5")],
)
def test_import_nmt_bounds_onednns_caches_and_openmps_spinning_unless_told(given, expected):
    """Each cache holds megabytes per matrix shape, as a bf16 run meets hundreds of shapes;
    threads that spin long take the cores another process's threads wait for."""
    code = f"import os, nmt; print(*(os.environ[key] for key in {SET_BY_IMPORT}))"
    environment = {key: value for key, value in os.environ.items() if key not in SET_BY_IMPORT}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment | given
    )
    assert result.stdout.split() == expected.split(), result.stderr


def test_a_checkpoint_path_may_be_a_str_a_path_or_a_list_of_them(checkpoint):
    texts = {
        repr(kind): nmt.Translator.load(kind).translate(LINES[0]).text
        for kind in (str(checkpoint), checkpoint, os.fspath(checkpoint), [str(checkpoint)])
    }
    assert len(set(texts.values())) == 1
    pair = nmt.Translator.load([str(checkpoint), checkpoint])
    assert pair.translate(LINES[0]).text == texts[repr(str(checkpoint))]


def test_the_translator_runs_where_training_would_and_names_its_languages(checkpoint):
    translator = nmt.Translator.load(checkpoint)
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert translator.device.type == expected
    assert nmt.Translator.load(checkpoint, quantize="int8").device.type == "cpu"
    assert translator.source_languages == ["en"] and translator.target_languages == ["de"]
    assert translator.config.name == "tiny" and translator.decode == translator.config.decode


def test_one_sentence_gives_one_translation_and_a_list_a_list(checkpoint):
    translator = nmt.Translator.load(checkpoint, beam=2)
    one = translator.translate(LINES[0], nbest=2)
    listed = translator.translate(LINES, nbest=2)
    assert isinstance(one, nmt.Translation)
    assert [(c.text, c.score) for c in one.nbest] == [(c.text, c.score) for c in listed[0].nbest]
    assert [t.source for t in listed] == LINES and listed[1].nbest == []
    assert translator.decode.nbest == 1  # options apply to their call only


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: nmt.Translator.load(3), "expected a checkpoint path .* got int"),
        (lambda: nmt.Translator.load([]), "no checkpoint given"),
        (lambda: nmt.Translator.load("missing.pt"), "checkpoint missing.pt does not exist"),
        (lambda: nmt.Translator.load("x.pt", device="tpu"), "device 'tpu': choose auto"),
        (lambda: nmt.train_run(42), "expects a config file path or an nmt.config.Experiment"),
        (lambda: nmt.train_run(TINY_CONFIG, "train.max_steps=5"), "a list of KEY=VALUE"),
        (lambda: nmt.train_run("missing.yaml"), "config file missing.yaml does not exist"),
        (lambda: nmt.evaluate_run("x.pt", src="a.txt"), "src and ref go together"),
    ],
)
def test_wrong_input_is_a_user_error(call, message):
    with pytest.raises(nmt.UserError, match=message):
        call()


@pytest.mark.parametrize("sentences", [b"bytes", 3, ["fine", 4]])
def test_translate_refuses_what_is_not_text(checkpoint, sentences):
    with pytest.raises(nmt.UserError, match="translate expects"):
        nmt.Translator.load(checkpoint).translate(sentences)


def test_train_run_takes_an_experiment_and_overrides(corpus_dir, tmp_path):
    config = tiny_experiment(corpus_dir)
    outcome = nmt.train_run(config, ["train.max_steps=2"], run_dir=tmp_path)
    assert (outcome.reason, outcome.step, outcome.run_dir) == ("max_steps", 2, tmp_path)
    assert outcome.summary.startswith("stopped at step 2: train.max_steps (2) reached")
    scores = nmt.evaluate_run(
        tmp_path / "best.pt", src=corpus_dir / "test.en", ref=corpus_dir / "test.de"
    )
    assert scores.bleu == outcome.scores["bleu"]  # the same test split, the same settings
