"""Shared fixtures: a small parallel corpus on disk, its config, a tokenizer and a tiny model."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from filelock import FileLock
from typer.testing import CliRunner

from nmt.checkpoint import (
    base_reference,
    checkpoint_payload,
    load_checkpoint,
    restore_model,
    save_checkpoint,
)
from nmt.cli import app
from nmt.config import Experiment, load_config
from nmt.cores import available_cores
from nmt.data.demo import generate_pairs
from nmt.data.tokenizer import Tokenizer, Vocab, build_tokenizer
from nmt.model.adapters import add_adapters, trained_state
from nmt.model.seq2seq import Seq2Seq, build_model
from nmt.translate.translator import Translator

ROOT = Path(__file__).resolve().parents[1]
MULTI30K = ROOT.parent / "shared" / "data" / "multi30k"


@dataclasses.dataclass
class Ran:
    """What a run of the `nmt` command gave: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def nmt(*args, input=None, cwd=None) -> Ran:
    """Runs the `nmt` command in this process, as its entry point does (a UserError: exit 2
    and one line on stderr); a bug raises, with its traceback. Seconds faster than a fresh
    process (`nmt_process`), which only tests about the process itself need."""
    previous = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, [str(arg) for arg in args], input=input)
    finally:
        os.chdir(previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def nmt_process(*args, input=None, cwd=None) -> subprocess.CompletedProcess:
    """Runs the real entry point, `python -m nmt`, in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "nmt", *map(str, args)],
        capture_output=True,
        text=True,
        input=input,
        cwd=cwd,
        env={**os.environ},
    )


def write_parallel(directory: Path, split: str, pairs: list[tuple[str, str]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{split}.en").write_text("".join(en + "\n" for en, _ in pairs), "utf-8")
    (directory / f"{split}.de").write_text("".join(de + "\n" for _, de in pairs), "utf-8")


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory) -> Path:
    """300 train / 40 valid / 40 test pairs of the demo grammar, as {split}.{en,de} files."""
    directory = tmp_path_factory.mktemp("corpus")
    pairs = generate_pairs(380, seed=7)
    write_parallel(directory, "train", pairs[:300])
    write_parallel(directory, "valid", pairs[300:340])
    write_parallel(directory, "test", pairs[340:])
    return directory


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """The session's own cache directory (the demo corpus, SentencePiece models)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NMT_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        yield


DEMO_CONFIG = ROOT / "configs" / "demo.yaml"
TINY_CONFIG = ROOT / "tests" / "tiny.yaml"


def tiny_overrides(corpus: Path | str, *extra: str) -> list[str]:
    """Overrides of TINY_CONFIG for the {split}.{en,de} files in `corpus`, then `extra` (a
    later override of the same key wins)."""
    return [f"data.path={corpus}", *extra]


def tiny_experiment(corpus: Path | str, *extra: str) -> Experiment:
    return load_config(TINY_CONFIG, tiny_overrides(corpus, *extra))


def set_options(*overrides: str) -> list[str]:
    """Overrides as command-line options: "a=1", "b=2" -> --set a=1 --set b=2."""
    return [option for override in overrides for option in ("--set", override)]


# A Transformer of 2 + 2 layers with one embedding matrix for both sides and the output: the
# three type keys, then what this Transformer chooses (the keys RNNsearch read drop out).
TRANSFORMER_SWITCH = (
    "model.encoder.type=self_attention",
    "model.decoder.type=transformer",
    "model.attention.type=multihead",
    "model.attention.kv=separate",
    "model.encoder.layers=2",
    "model.decoder.layers=2",
    "model.decoder.tie_embeddings=true",
    "model.share_embeddings=true",
)
# Under pytest-xdist each worker runs on a core of its own (and so do the processes it
# starts): nmt then sees one core, and trains, tokenizes and decodes on one thread, where
# two workers sharing every core would spin-wait on each other's threads.
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if WORKER and hasattr(os, "sched_setaffinity"):
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[int(WORKER.removeprefix("gw")) % len(cores)]})
    torch.set_num_threads(1)
THREADS = available_cores()
# The demo corpus learnt in under a minute: a schedule for a short run.
DEMO_SHORT = (
    "train.max_minutes=null",
    "train.valid_every=100000",
    "train.log_every=100",
    f"train.threads={THREADS}",
)
# A tiny Transformer (width 16, two heads) for the tiny experiment.
TINY_TRANSFORMER = (
    *TRANSFORMER_SWITCH,
    "model.encoder.heads=2",
    "model.decoder.heads=2",
    "model.attention.heads=2",
)
LINES = ["the dog sees the cat.", "", "a very small bird has slept because we sleep."]


def train_demo(run_dir: Path, *overrides: str, config: Path = DEMO_CONFIG) -> Path:
    """Trains on the demo corpus through the command line; returns the run directory."""
    args = ("train", "--config", config, "--run-dir", run_dir)
    result = nmt(*args, *set_options(*DEMO_SHORT, *overrides))
    assert result.returncode == 0, result.stderr
    return run_dir


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models decode faster on one thread than on two competing ones (train.threads=1
    says the same for training); on a busy machine, ten times faster. OMP_NUM_THREADS does
    it for the commands `nmt_process()` runs in a fresh process."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        yield
    torch.set_num_threads(threads)


# The trained models every test that needs *a* trained model shares, each trained once per
# session at the fewest steps that learn the demo corpus (tests/test_demo_quality.py holds
# them to it).
DEMO_STEPS = {"rnnsearch": 400, "transformer": 600}
WANTED: set[str] = set()  # the shared models this session's tests ask for


def shared_run(tmp_path_factory, name: str, *overrides: str, config: Path = DEMO_CONFIG) -> Path:
    """A demo run trained once for the whole session: under pytest-xdist in a directory
    every worker sees, the first worker to ask training it while the others wait."""
    root = tmp_path_factory.getbasetemp()
    run_dir = (root.parent if WORKER else root) / name
    with FileLock(f"{run_dir}.lock"):
        if not (run_dir / "done").is_file():
            shutil.rmtree(run_dir, ignore_errors=True)  # a worker that died midway
            train_demo(run_dir, *overrides, config=config)
            (run_dir / "done").touch()
    return run_dir


@pytest.fixture(scope="session")
def demo_rnnsearch(tmp_path_factory) -> Path:
    """The run directory of configs/demo.yaml (RNNsearch) trained for 400 steps."""
    steps = f"train.max_steps={DEMO_STEPS['rnnsearch']}"
    return shared_run(tmp_path_factory, "demo-rnnsearch", steps)


@pytest.fixture(scope="session")
def demo_transformer(tmp_path_factory) -> Path:
    """The run directory of configs/demo_transformer.yaml trained for 600 steps at twice its
    learning rate (which learns the corpus as its 1000 steps do)."""
    steps = (f"train.max_steps={DEMO_STEPS['transformer']}", "train.lr=0.004")
    config = ROOT / "configs" / "demo_transformer.yaml"
    return shared_run(tmp_path_factory, "demo-transformer", *steps, config=config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        WANTED.update({"demo_rnnsearch", "demo_transformer"} & set(item.fixturenames))


@pytest.fixture(scope="session", autouse=True)
def _train_ahead(request, _isolated_cache):
    """Under pytest-xdist, worker gw0 trains the shared RNNsearch and gw1 the Transformer
    before their first test (when the session asks for them), so that each trains on a core
    of its own while the other worker's tests go on."""
    ahead = {"gw0": "demo_rnnsearch", "gw1": "demo_transformer"}.get(WORKER or "")
    if ahead in WANTED:
        request.getfixturevalue(ahead)


def tiny_train_args(run_dir: Path, corpus: Path | str, *extra: str) -> list[str]:
    """The arguments of `nmt train` for the tiny experiment on `corpus`, run in `run_dir`."""
    args = ["train", "--config", TINY_CONFIG, "--run-dir", run_dir]
    return [*map(str, args), *set_options(*tiny_overrides(corpus, *extra))]


@pytest.fixture(scope="session")
def memory_file(corpus_dir, tmp_path_factory) -> Path:
    """A translation memory (nmt tm build) of the tiny corpus's train split, en-de."""
    path = tmp_path_factory.mktemp("tm") / "tm.npz"
    ran = nmt("tm", "build", "--data", corpus_dir, "--src-lang", "en", "--tgt-lang", "de",
              "--out", path)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return path


@pytest.fixture
def tiny_config(corpus_dir) -> Experiment:
    return tiny_experiment(corpus_dir)


@pytest.fixture(scope="session")
def tokenizer(corpus_dir, tmp_path_factory) -> Tokenizer:
    config = load_config(TINY_CONFIG).tokenizer
    src = (corpus_dir / "train.en").read_text("utf-8").splitlines()
    tgt = (corpus_dir / "train.de").read_text("utf-8").splitlines()
    return build_tokenizer(config, src, tgt, tmp_path_factory.mktemp("spm"))


@pytest.fixture(scope="session")
def separate_tokenizer(corpus_dir, tmp_path_factory) -> Tokenizer:
    """Source and target SentencePiece models of their own: English pieces German lacks."""
    config = dataclasses.replace(load_config(TINY_CONFIG).tokenizer, joint=False)
    src = (corpus_dir / "train.en").read_text("utf-8").splitlines()
    tgt = (corpus_dir / "train.de").read_text("utf-8").splitlines()
    return build_tokenizer(config, src, tgt, tmp_path_factory.mktemp("spm-separate"))


def copy_model(
    corpus: Path, tokenizer: Tokenizer, *extra: str, gate: float | None = None
) -> Seq2Seq:
    """An untrained copy model of the tiny experiment in eval mode; `gate` fixes the logit
    of p_gen (60: it never copies, -60: it only copies)."""
    torch.manual_seed(0)
    config = tiny_experiment(corpus, "model.copy=true", *extra)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt).eval()
    if gate is not None:
        model.copy.gate.weight.data.zero_()
        model.copy.gate.bias.data.fill_(gate)
    return model


def write_code_running_checkpoint(path: Path, marker: Path) -> None:
    """A checkpoint whose unpickling would create `marker`: loading it must be refused."""

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    torch.save({"format_version": 1, "x": Exploit()}, path)


def tiny_model(config: Experiment, vocab_size: int = 50, seed: int = 0) -> Seq2Seq:
    torch.manual_seed(seed)
    vocab = SimpleNamespace(size=vocab_size, pad_id=0)
    return build_model(config.model, vocab, vocab)


def write_checkpoint(path: Path, config: Experiment, tokenizer: Tokenizer, seed: int = 0) -> Path:
    """An untrained model of `config`: enough to check what translate and serve answer."""
    torch.manual_seed(seed)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    save_checkpoint(path, checkpoint_payload(model, config, tokenizer, step=0, metrics={}))
    return path


def write_adapter(path: Path, base: Path, config: Experiment) -> Path:
    """An adapter checkpoint of `config` (its train.adapters) on the checkpoint `base`, its
    adapters drawn at random, as if trained."""
    payload = load_checkpoint(base)
    model, tokenizer, _ = restore_model(payload, base)
    add_adapters(model, config.train.adapters)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for tensor in trained_state(model).values():
            tensor.copy_(0.1 * torch.randn(tensor.shape, generator=generator))
    reference = base_reference(payload, base)
    save_checkpoint(path, checkpoint_payload(model, config, tokenizer, 0, {}, reference))
    return path


def perturbed_checkpoint(path: Path, config: Experiment, tokenizer: Tokenizer) -> Path:
    """An untrained model of `config` with every weight perturbed (biases and layer norms
    too, which start as zeros and ones), so that an export that misplaces one weight changes
    its outputs."""
    torch.manual_seed(0)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    save_checkpoint(path, checkpoint_payload(model, config, tokenizer, step=0, metrics={}))
    return path


def two_way_tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    """`tokenizer` with the tags of a model that writes German and English."""
    vocab = Vocab(tokenizer.src.model_proto, ["de", "en"])
    return Tokenizer(vocab, vocab)


def make_translator(config: Experiment, tokenizer: Tokenizer, **decode) -> Translator:
    """An untrained model of `config` in a Translator, with `decode` settings replaced."""
    torch.manual_seed(0)
    model = build_model(config.model, tokenizer.src, tokenizer.tgt)
    return Translator(model, tokenizer, config, dataclasses.replace(config.decode, **decode))


def write_marian_model(directory: Path, corpus: Path, seed: int = 0, pad_bias: float = 0.0) -> Path:
    """A tiny random Marian model of `transformers` in OPUS-MT's layout, English -> German:
    source.spm and target.spm trained on `corpus`, one vocab.json numbering their pieces
    after </s> and <unk> and before <pad> (no <s>: the decoder starts from <pad>), swish,
    every weight perturbed so that one misplaced weight changes its outputs, and OPUS-MT's
    generation config (pad banned by bad_words_ids, eos forced at max_length). `pad_bias`
    is added to pad's output bias: a model that would write pad where nothing banned it."""
    import io
    import json

    import sentencepiece as spm
    from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    processors = []
    for name, lang in (("source.spm", "en"), ("target.spm", "de")):
        model = io.BytesIO()
        lines = (corpus / f"train.{lang}").read_text("utf-8").splitlines()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=model,
            vocab_size=120,
            hard_vocab_limit=False,
            minloglevel=2,
            num_threads=1,
        )
        (directory / name).write_bytes(model.getvalue())
        processors.append(spm.SentencePieceProcessor(model_proto=model.getvalue()))
    pieces = ["</s>", "<unk>"]
    for processor in processors:
        for index in range(processor.get_piece_size()):
            piece = processor.id_to_piece(index)
            ordinary = not (processor.is_control(index) or processor.is_unknown(index))
            if ordinary and piece not in pieces:
                pieces.append(piece)
    pieces.append("<pad>")
    vocab = directory / "vocab.json"
    vocab.write_text(json.dumps({piece: i for i, piece in enumerate(pieces)}), "utf-8")
    size = len(pieces)
    config = MarianConfig(
        vocab_size=size,
        d_model=16,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=4,
        encoder_ffn_dim=32,
        decoder_ffn_dim=24,
        activation_function="swish",
        scale_embedding=True,
        pad_token_id=size - 1,
        eos_token_id=0,
        decoder_start_token_id=size - 1,
        max_position_embeddings=256,
    )
    torch.manual_seed(seed)
    model = MarianMTModel(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "embed_positions" not in name:
                parameter.add_(0.3 * torch.randn_like(parameter))
        model.final_logits_bias.add_(0.3 * torch.randn_like(model.final_logits_bias))
        model.final_logits_bias[0, size - 1] += pad_bias
    model.generation_config = GenerationConfig(  # as OPUS-MT's models ship it
        bad_words_ids=[[size - 1]],
        bos_token_id=0,
        decoder_start_token_id=size - 1,
        eos_token_id=0,
        forced_eos_token_id=0,
        max_length=512,
        num_beams=4,
        pad_token_id=size - 1,
    )
    model.save_pretrained(directory)
    tokenizer = MarianTokenizer(
        source_spm=str(directory / "source.spm"),
        target_spm=str(directory / "target.spm"),
        vocab=str(vocab),
        source_lang="en",
        target_lang="de",
    )
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture
def probe_finds(monkeypatch, tmp_path):
    """A function that fakes the precision probe's timings (seconds a step in each
    precision), its answers kept in a cache of their own (no other test's); the list it
    returns grows by one entry each time the probe runs."""
    from nmt.translate.auto_precision import StepTimes

    def finds(fp32: float, bf16: float) -> list:
        probed: list = []

        def timed(model, batch_tokens, sizes):
            probed.append((model, batch_tokens, sizes))
            return StepTimes(fp32, bf16)

        monkeypatch.setenv("NMT_CACHE", str(tmp_path / f"probe-{fp32}-{bf16}"))
        monkeypatch.setattr("nmt.translate.auto_precision.time_steps", timed)
        return probed

    return finds
