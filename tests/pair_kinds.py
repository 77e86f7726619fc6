"""The model kinds the pairwise test (tests/test_option_pairs.py) translates with: untrained
tiny checkpoints of every architecture, attention and language layout, each beside its
shortlist and a second model of its kind (its weights perturbed) for ensembles; a chain of
two; a bf16-trained run; a CTranslate2 export; a LoRA adapter checkpoint on the
Transformer, which finds its base itself (a model that reads fuzzy matches:
tests/translate/test_memory_translation.py). Built once per session, under pytest-xdist by
the first worker to ask, in a directory every worker reads.

Each kind carries one more feature where it costs no case of its own: the copy RNN attends
with coverage, the two-way models with sparsemax and hard attention, the pivoting one with
a local window.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from filelock import FileLock

from conftest import (
    TINY_TRANSFORMER,
    WORKER,
    nmt,
    tiny_experiment,
    write_adapter,
    write_checkpoint,
    write_marian_model,
    write_parallel,
)
from nmt.checkpoint import checkpoint_payload, load_checkpoint, restore_model, save_checkpoint
from nmt.data.corpus import target_piece_counts
from nmt.data.demo import generate_pairs
from nmt.data.splits import ParallelText
from nmt.data.tokenizer import Tokenizer, Vocab, build_tokenizer


@dataclasses.dataclass(frozen=True)
class Kind:
    """What a kind of model writes and reads. `tgt_lang`: the language a request names (a
    model that writes several), `pivot`: a language `--through` may name (neither the
    source's nor the target's), `several`: it writes several languages, `copies`: a copy
    model (no shortlist), `engine`: ctranslate2 for an export, `chain`: `--then`."""

    tgt_lang: str | None = None
    pivot: str | None = None
    several: bool = False
    copies: bool = False
    engine: str = "torch"
    chain: bool = False


KINDS = {
    "rnnsearch": Kind(),
    "transformer": Kind(),
    "copy": Kind(copies=True),  # with coverage attention
    "copy_transformer": Kind(copies=True),
    "tagged": Kind(tgt_lang="de", several=True),  # en-de and de-en, sparsemax attention
    "decoder_bos": Kind(tgt_lang="de", several=True),  # the same, hard attention
    # en-de, de-en, de-xx, xx-de: English into xx was never trained, so it goes through de
    "pivoting": Kind(tgt_lang="xx", pivot="de", several=True),  # windowed attention
    "multi_transformer": Kind(tgt_lang="xx", pivot="de", several=True),
    "marian": Kind(),
    "bf16_trained": Kind(),
    "chain": Kind(pivot="de", chain=True),  # rnnsearch (en-de), then a de-xx model
    "ctranslate2": Kind(engine="ctranslate2"),  # the Transformer, exported
    "lora": Kind(),  # adapters on the Transformer: its embeddings and output too
}

TWO_WAY = ("data.directions=[en-de,de-en]",)
THREE_WAY = ("data.directions=[en-de,de-en,de-xx,xx-de]",)
# several batches of the test's lines; an untrained model writes to its length limit, so
# a short one (the source's length and 3) keeps its searches and heatmaps small
SPEED = (
    "decode.beam=2",
    "decode.batch_size=2",
    "decode.max_len_ratio=1.0",
    "decode.max_len_extra=3",
)
CONFIGS = {
    "rnnsearch": (),
    "transformer": TINY_TRANSFORMER,
    "copy": ("model.copy=true", "model.attention.coverage=vector"),
    "copy_transformer": (*TINY_TRANSFORMER, "model.copy=true"),
    "tagged": (*TWO_WAY, "model.attention.normaliser=sparsemax"),
    "decoder_bos": (*TWO_WAY, "data.tags=decoder_bos", "model.attention.normaliser=hard"),
    "pivoting": (*THREE_WAY, "model.attention.window=2"),
    "multi_transformer": (*THREE_WAY, *TINY_TRANSFORMER),
}
# on the Transformer (bottlenecks: tests/train/test_adapter_runs.py, tests/serve)
ADAPTERS = {"lora": ("train.adapters.targets=[attention,feed_forward,embeddings,output]",)}


@dataclasses.dataclass(frozen=True)
class Built:
    """A kind's files: `checkpoint` (for ctranslate2, the exported `model` directory's
    source), `partner` (another model of the kind, for ensembles), `then` (a chain's
    second model)."""

    checkpoint: Path
    partner: Path
    then: Path | None = None
    model: Path | None = None


def shared_kinds(tmp_path_factory) -> dict[str, Built]:
    """Every kind, built once for the session (every xdist worker reads the same files)."""
    root = tmp_path_factory.getbasetemp()
    directory = (root.parent if WORKER else root) / "pair-kinds"
    with FileLock(f"{directory}.lock"):
        built = _layout(directory)
        if not (directory / "done").is_file():
            _build(directory, built)
            (directory / "done").touch()
    return built


def corpus_of(directory: Path) -> Path:
    return directory / "corpus"


def _layout(directory: Path) -> dict[str, Built]:
    built = {name: Built(directory / f"{name}.pt", directory / f"{name}.2.pt") for name in KINDS}
    built["chain"] = dataclasses.replace(built["rnnsearch"], then=directory / "de-xx.pt")
    built["ctranslate2"] = dataclasses.replace(built["transformer"], model=directory / "ct2")
    built["bf16_trained"] = Built(directory / "bf16" / "best.pt", directory / "bf16_trained.2.pt")
    return built


def _build(directory: Path, built: dict[str, Built]) -> None:
    corpus = _write_corpus(corpus_of(directory))
    config = tiny_experiment(corpus)
    english, german, reversed_german = (
        (corpus / f"train.{lang}").read_text("utf-8").splitlines() for lang in ("en", "de", "xx")
    )
    plain = build_tokenizer(config.tokenizer, english, german, directory)
    for name, overrides in CONFIGS.items():
        languages = ["de", "en"] if name in ("tagged", "decoder_bos") else ["de", "en", "xx"]
        tokenizer = plain
        if any(o.startswith("data.directions") for o in overrides):
            experiment = tiny_experiment(corpus, *overrides)
            texts = {"de": german, "en": english, "xx": reversed_german}
            tokenizer = _tagged(plain, languages, experiment.data.pairs, texts)
            if "data.tags=decoder_bos" in overrides:
                tokenizer = dataclasses.replace(tokenizer, tag_place="decoder_bos")
        write_checkpoint(
            built[name].checkpoint, tiny_experiment(corpus, *overrides, *SPEED), tokenizer
        )
    base = built["transformer"].checkpoint
    for name, overrides in ADAPTERS.items():
        adapted = (*TINY_TRANSFORMER, *SPEED, f"train.init_from={base}", *overrides)
        write_adapter(built[name].checkpoint, base, tiny_experiment(corpus, *adapted))
    second = tiny_experiment(corpus, "data.src_lang=de", "data.tgt_lang=xx", *SPEED)
    write_checkpoint(built["chain"].then, second, plain, seed=2)
    strict = tiny_experiment(corpus, "data.src_lang=de", "data.tgt_lang=xx", *SPEED)
    strict = dataclasses.replace(
        strict, decode=dataclasses.replace(strict.decode, max_constraints=1)
    )
    write_checkpoint(built["chain"].then.with_suffix(".strict.pt"), strict, plain, seed=2)
    from nmt.export.marian import import_marian

    marian = write_marian_model(directory / "opus-mt-en-de", corpus)
    import_marian(str(marian), built["marian"].checkpoint)
    _train_in_bf16(built["bf16_trained"].checkpoint.parent, corpus)
    for name, files in built.items():
        if name not in ("chain", "ctranslate2"):
            _perturbed(files.checkpoint, files.partner)
        shortlisted = [files.checkpoint, files.then] if name == "chain" else [files.checkpoint]
        for path in shortlisted:
            if not path.with_suffix(".shortlist.pt").exists():
                ran = nmt("shortlist", "--checkpoint", path, "--data", corpus, "--depth", "8")
                assert ran.returncode == 0, (name, ran.stderr)
    files = built["ctranslate2"]
    ran = nmt("export", "--format", "ctranslate2", "--checkpoint", files.checkpoint,
              "--output", files.model, "--shortlist", "3")  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def _write_corpus(corpus: Path) -> Path:
    """60 pairs of the demo grammar in each split, English, German and xx (German's words
    reversed)."""
    pairs = generate_pairs(60, seed=7)
    for split in ("train", "valid", "test"):
        write_parallel(corpus, split, pairs)
        xx = "".join(" ".join(reversed(de.split())) + "\n" for _, de in pairs)
        (corpus / f"{split}.xx").write_text(xx, "utf-8")
    return corpus


def _tagged(plain: Tokenizer, languages: list[str], pairs, texts: dict) -> Tokenizer:
    """`plain` with the languages' tags, recording their pieces as training does."""
    vocab = Vocab(plain.src.model_proto, languages)
    tagged = Tokenizer(vocab, vocab)
    parallel = {f"{s}-{t}": ParallelText(texts[s], texts[t], f"{s}-{t}") for s, t in pairs}
    pieces = target_piece_counts(tagged, pairs, parallel)
    return dataclasses.replace(tagged, target_pieces=pieces)


def _train_in_bf16(run_dir: Path, corpus: Path) -> None:
    """Two steps of the tiny RNNsearch, trained in bf16 (train.precision)."""
    overrides = [f"data.path={corpus}", "train.precision=bf16", "train.max_steps=2"]
    overrides += ["train.valid_every=2", *SPEED]
    sets = [option for override in overrides for option in ("--set", override)]
    ran = nmt("train", "--config", Path(__file__).parent / "tiny.yaml", "--run-dir", run_dir,
              *sets)  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def _perturbed(path: Path, partner: Path) -> None:
    """Another model of the same kind: `path`'s weights, each moved at random (an adapter
    checkpoint's adapters, on the same base)."""
    payload = load_checkpoint(path)
    model, tokenizer, config = restore_model(payload, path)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
    partnered = checkpoint_payload(model, config, tokenizer, 0, {}, payload.get("base"))
    save_checkpoint(partner, partnered)
