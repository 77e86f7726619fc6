"""Adapter runs end to end (train.adapters): the base's file is left byte for byte, the run
keeps the adapters alone under its base's digest, every way of loading them translates
alike, and whatever cannot take an adapter checkpoint says so and what to do."""

import hashlib
from pathlib import Path

import pytest
import torch

from conftest import TINY_TRANSFORMER, nmt, set_options, tiny_train_args
from nmt.checkpoint import load_checkpoint
from nmt.data.tokenizer import BORROWED, VOCABULARY_KEYS, with_vocabularies
from nmt.translate.translator import Translator

LINES = "the dog sees the cat.\na small bird sleeps.\n"
LORA = ("train.adapters.targets=[attention,feed_forward,output]", "train.adapters.rank=4")
BOTTLENECK = ("train.adapters.type=bottleneck", "train.adapters.size=8")


def train(run_dir: Path, corpus: Path, *extra: str) -> Path:
    ran = nmt(*tiny_train_args(run_dir, corpus, *TINY_TRANSFORMER, *extra))
    assert ran.returncode == 0, ran.stderr
    return run_dir


def adapter_run(run_dir: Path, corpus: Path, base: Path, *extra: str) -> Path:
    """An adapter run on `base`, without the final test (these tests translate themselves)."""
    sets = (f"train.init_from={base}", "train.lr=0.02", "data.splits.test=null")
    return train(run_dir, corpus, *sets, *extra)


@pytest.fixture(scope="module")
def base(tmp_path_factory, corpus_dir) -> Path:
    return train(tmp_path_factory.mktemp("adapters") / "base", corpus_dir)


def numel(state: dict) -> int:
    """Parameters in a state dict, a tied matrix (listed under each name) once."""
    return sum({t.data_ptr(): t.numel() for t in state.values()}.values())


@pytest.fixture(scope="module")
def lora(tmp_path_factory, corpus_dir, base) -> Path:
    """A LoRA run on `base` that the tests only read (its two step checkpoints kept)."""
    run_dir = tmp_path_factory.mktemp("lora") / "run"
    return adapter_run(run_dir, corpus_dir, base, *LORA, "train.keep_last=2")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def translate(*args: object) -> str:
    ran = nmt("translate", *args, "--beam", "2", input=LINES)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_an_adapter_run_leaves_its_base_as_it_was_and_keeps_its_adapters_alone(
    tmp_path, corpus_dir, base
):
    before = {path.name: digest(path) for path in base.iterdir()}
    run = adapter_run(tmp_path / "lora", corpus_dir, base, *LORA)
    assert {path.name: digest(path) for path in base.iterdir()} == before
    payload = torch.load(run / "best.pt", weights_only=True)  # plain tensors and data
    assert payload["model"] and all(".lora_" in name for name in payload["model"])
    assert payload["base"]["path"] == str((base / "best.pt").resolve())
    whole = load_checkpoint(base / "best.pt")["model"]
    assert 0 < numel(payload["model"]) < 0.5 * numel(whole)  # rank 4 of a 16-wide model
    assert "learning" in (run / "train.log").read_text()  # the share is logged
    # to translate with: float16, the vocabularies left to the base; to resume: float32
    assert {t.dtype for t in payload["model"].values()} == {torch.float16}
    assert payload["tokenizer"][BORROWED] and not VOCABULARY_KEYS & set(payload["tokenizer"])
    assert payload["format_version"] == 2
    last = load_checkpoint(run / "last.pt")
    assert {t.dtype for t in last["model"].values()} == {torch.float32}


def test_an_adapter_checkpoint_of_the_first_format_translates_as_todays(tmp_path, base, lora):
    """Written before adapters left their vocabularies to the base: a copy of them, float32
    weights, format version 1."""
    today = load_checkpoint(lora / "best.pt")
    first = {
        **today,
        "format_version": 1,
        "tokenizer": with_vocabularies(today["tokenizer"], load_checkpoint(base)["tokenizer"]),
        "model": {name: t.float() for name, t in today["model"].items()},
    }
    torch.save(first, tmp_path / "first.pt")
    assert translate("--checkpoint", base, "--adapter", tmp_path / "first.pt") == translate(
        "--checkpoint", lora
    )


def test_every_way_of_loading_an_adapter_translates_alike_and_merging_changes_nothing(
    tmp_path, corpus_dir, base, lora
):
    run = lora
    by_run = translate("--checkpoint", run)
    assert by_run == translate("--checkpoint", base, "--adapter", run / "best.pt")
    assert by_run != translate("--checkpoint", base)  # it learnt something
    merged = tmp_path / "merged.pt"
    ran = nmt("adapter", "merge", run, "--output", merged)
    assert ran.returncode == 0, ran.stderr
    assert "base" not in load_checkpoint(merged)
    assert translate("--checkpoint", merged) == by_run
    ran = nmt("eval", "--checkpoint", base, "--adapter", run, "--split", "valid", "--json")
    assert ran.returncode == 0, ran.stderr


def test_a_bottleneck_run_translates_on_its_base_and_cannot_be_merged(tmp_path, corpus_dir, base):
    run = adapter_run(tmp_path / "bottleneck", corpus_dir, base, *BOTTLENECK)
    assert translate("--checkpoint", run) == translate("--checkpoint", base, "--adapter", run)
    ran = nmt("adapter", "merge", run, "--output", tmp_path / "merged.pt")
    assert ran.returncode == 2 and "bottleneck adapters" in ran.stderr
    assert not (tmp_path / "merged.pt").exists()


def test_a_wrong_base_is_refused_naming_both(tmp_path, corpus_dir, base, lora):
    run = lora
    other = train(tmp_path / "other", corpus_dir, "train.seed=7")
    ran = nmt("translate", "--checkpoint", other, "--adapter", run, input=LINES)
    assert ran.returncode == 2
    assert str((base / "best.pt").resolve()) in ran.stderr and str(other) in ran.stderr
    ran = nmt("translate", "--checkpoint", base, "--adapter", other, input=LINES)
    assert ran.returncode == 2 and "not an adapter checkpoint" in ran.stderr


def test_a_base_moved_away_is_asked_for_and_found_by_its_digest(tmp_path, corpus_dir, base):
    copied = tmp_path / "base"
    copied.mkdir()
    (copied / "best.pt").write_bytes((base / "best.pt").read_bytes())
    run = adapter_run(tmp_path / "lora", corpus_dir, copied, *LORA)
    expected = translate("--checkpoint", run)
    (copied / "best.pt").unlink()
    ran = nmt("translate", "--checkpoint", run, input=LINES)
    assert ran.returncode == 2 and "no longer exists" in ran.stderr
    assert translate("--checkpoint", base, "--adapter", run) == expected


def test_an_adapter_run_resumes_exactly_with_ema_and_bf16(tmp_path, corpus_dir, base):
    extra = (*LORA, "train.ema_decay=0.9", "train.precision=bf16", "train.valid_every=3")
    straight = adapter_run(tmp_path / "straight", corpus_dir, base, *extra)
    cut = adapter_run(tmp_path / "cut", corpus_dir, base, *extra, "train.max_steps=3")
    ran = nmt(
        *tiny_train_args(cut, corpus_dir, *TINY_TRANSFORMER, f"train.init_from={base}"),
        *set_options("train.lr=0.02", "data.splits.test=null", *extra, "train.max_steps=6"),
        "--resume",
    )
    assert ran.returncode == 0, ran.stderr
    for name in ("last.pt", "best.pt"):
        one, two = load_checkpoint(straight / name), load_checkpoint(cut / name)
        assert one["model"].keys() == two["model"].keys()
        assert all(torch.equal(one["model"][n], two["model"][n]) for n in one["model"])
    assert set(load_checkpoint(cut / "last.pt")["ema"]) == set(one["model"])


def test_adapter_checkpoints_of_one_run_average_into_one_that_translates(tmp_path, lora):
    run = lora
    averaged = tmp_path / "averaged.pt"
    ran = nmt("average", "--output", averaged, "--last", "2", run)
    assert ran.returncode == 0, ran.stderr
    assert load_checkpoint(averaged)["base"] == load_checkpoint(run / "best.pt")["base"]
    translate("--checkpoint", averaged)


def test_what_reads_whole_models_refuses_an_adapter_checkpoint(tmp_path, corpus_dir, base, lora):
    run = lora
    ran = nmt(*tiny_train_args(tmp_path / "child", corpus_dir, *TINY_TRANSFORMER,
                               f"train.init_from={run}"))  # fmt: skip
    assert ran.returncode == 2 and "nmt adapter merge" in ran.stderr
    ran = nmt("export", "--checkpoint", run, "--format", "ctranslate2", "-o", tmp_path / "ct2")
    assert ran.returncode == 2 and "nmt adapter merge" in ran.stderr
    ran = nmt("adapter", "merge", base, "--output", tmp_path / "merged.pt")
    assert ran.returncode == 2 and "not an adapter checkpoint" in ran.stderr


def test_adapters_train_on_an_imported_marian_model_and_merge_back(tmp_path, corpus_dir):
    """The path works on a model we did not train: the config nmt import writes, with
    adapters added, trains them on the frozen import, and the merge translates alike."""
    pytest.importorskip("transformers", reason="pip install 'nmt[hub]'")
    from conftest import write_marian_model

    directory = write_marian_model(tmp_path / "opus-mt-en-de", corpus_dir)
    imported = tmp_path / "opus.pt"
    assert nmt("import", "--from", directory, "--output", imported).returncode == 0
    before = digest(imported)
    sets = set_options(f"data.path={corpus_dir}", *LORA, "train.max_steps=4", "train.lr=0.01",
                       "train.valid_every=2", "decode.beam=2")  # fmt: skip
    config = imported.with_suffix(".yaml")
    ran = nmt("train", "--config", config, "--run-dir", tmp_path / "run", *sets)
    assert ran.returncode == 0, ran.stderr
    assert digest(imported) == before
    merged = tmp_path / "merged.pt"
    assert nmt("adapter", "merge", tmp_path / "run", "-o", merged).returncode == 0
    assert translate("--checkpoint", merged) == translate("--checkpoint", tmp_path / "run")


def test_an_adapter_run_teaches_a_student_as_any_checkpoint_does(tmp_path, corpus_dir, lora):
    run = lora
    out = tmp_path / "distilled"
    ran = nmt("distill", "--checkpoint", run, "--out", out, "--beam", "1")
    assert ran.returncode == 0, ran.stderr
    sources = (corpus_dir / "train.en").read_text("utf-8").splitlines()
    translated = (out / "train.de").read_text("utf-8").splitlines()
    assert len(translated) == len(sources)
    expected = Translator.load(run, beam=1).translate(sources[:5])
    assert translated[:5] == [t.text for t in expected]
