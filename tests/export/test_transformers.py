"""`nmt import` (Marian models of `transformers`, the OPUS-MT layout) and `nmt export --format
transformers`: the models on either side compute the same thing. The models are random
with every weight perturbed, built by `transformers` itself (conftest.write_marian_model) or
by us, so one misplaced weight changes every output; `transformers` is the reference."""

import json
import math
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from conftest import (
    TINY_TRANSFORMER,
    perturbed_checkpoint,
    tiny_experiment,
    two_way_tokenizer,
    write_checkpoint,
    write_marian_model,
)
from nmt.checkpoint import load_checkpoint, restore_model
from nmt.cli import app
from nmt.config import load_config
from nmt.data.batching import pad
from nmt.errors import UserError
from nmt.export.converter import unexportable
from nmt.export.engine import load_ctranslate2_translator
from nmt.export.huggingface import export_transformers, transformers_refusal
from nmt.export.marian import import_marian
from nmt.train.experiment import train_experiment
from nmt.translate.translator import Translator

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed: pip install 'nmt[hub]'"
)
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def marian(tmp_path_factory, corpus_dir):
    """(their directory, our imported checkpoint, their model, their tokenizer)."""
    root = tmp_path_factory.mktemp("marian")
    directory = write_marian_model(root / "opus-mt-en-de", corpus_dir)
    checkpoint = import_marian(str(directory), root / "imported.pt")
    model = transformers.MarianMTModel.from_pretrained(directory).eval()
    return directory, checkpoint, model, transformers.MarianTokenizer.from_pretrained(directory)


def sentences(corpus_dir, split="test", lang="en", count=10):
    return (corpus_dir / f"{split}.{lang}").read_text("utf-8").splitlines()[:count]


def teacher_forced(model, tokenizer, sources, targets):
    """Our log-probabilities [B, T, V], theirs' inputs, and which target positions are real."""
    src_ids = tokenizer.src.encode(sources)
    lengths = torch.tensor([len(ids) for ids in src_ids])
    src = pad(src_ids, tokenizer.src.pad_id)
    tgt_in = pad([[tokenizer.tgt.bos_id, *ids] for ids in tokenizer.tgt.encode(targets)], -1)
    real = tgt_in != -1
    tgt_in = tgt_in.masked_fill(~real, tokenizer.tgt.pad_id)
    with torch.no_grad():
        ours = model.teacher_forcing(src, lengths, tgt_in)[0].log_softmax(-1)
    mask = (torch.arange(src.size(1))[None] < lengths[:, None]).long()
    return ours, dict(input_ids=src, attention_mask=mask, decoder_input_ids=tgt_in), real


# Import


def test_the_imported_tokenizer_splits_and_numbers_as_marians(marian, corpus_dir):
    _, checkpoint, _, theirs = marian
    _, tokenizer, _ = restore_model(load_checkpoint(checkpoint), checkpoint)
    sources, targets = (
        sentences(corpus_dir, "train", "en", 50),
        sentences(corpus_dir, "train", "de", 50),
    )
    assert tokenizer.src.encode(sources) == [theirs(line)["input_ids"] for line in sources]
    assert all(ids[-1] == tokenizer.src.eos_id for ids in tokenizer.src.encode(sources))
    expected = [theirs(text_target=line)["input_ids"][:-1] for line in targets]  # theirs + </s>
    assert tokenizer.tgt.encode(targets) == expected
    for line, ids in zip(targets, expected, strict=True):
        assert tokenizer.tgt.decode(ids) == theirs.decode(ids, skip_special_tokens=True) == line
    assert tokenizer.tgt.bos_id == tokenizer.tgt.pad_id == theirs.pad_token_id


def test_teacher_forced_log_probabilities_equal_transformers(marian, corpus_dir):
    _, checkpoint, their_model, _ = marian
    model, tokenizer, _ = restore_model(load_checkpoint(checkpoint), checkpoint)
    sources, targets = sentences(corpus_dir), sentences(corpus_dir, lang="de")
    ours, inputs, real = teacher_forced(model, tokenizer, sources, targets)
    with torch.no_grad():
        theirs = their_model(**inputs).logits.log_softmax(-1)
    assert (ours - theirs)[real].abs().max() < 1e-4


@pytest.fixture(scope="module")
def pad_loving_marian(tmp_path_factory, corpus_dir):
    """A Marian model whose most likely piece is often <pad>, which its generation config
    bans: (our imported checkpoint, their model, their tokenizer)."""
    root = tmp_path_factory.mktemp("pad-loving")
    directory = write_marian_model(root / "opus-mt-en-de", corpus_dir, seed=1, pad_bias=4.0)
    checkpoint = import_marian(str(directory), root / "imported.pt")
    model = transformers.MarianMTModel.from_pretrained(directory).eval()
    return checkpoint, model, transformers.MarianTokenizer.from_pretrained(directory)


@pytest.mark.parametrize("beam", [1, 4])
@pytest.mark.parametrize("model", ["marian", "pad_loving_marian"])
def test_search_writes_what_generate_writes(request, corpus_dir, model, beam):
    """Greedy, and beam 4 with no length penalty on either side (alpha 0, length_penalty 0:
    both rank by the log-probability), under the model's own generation config (OPUS-MT's:
    <pad> banned, which our search never writes either). Each sentence goes to our length
    limit, where generate's forced_eos_token_id ends a translation with eos and ours ends
    without it (ended: false): there the tokens before the last are compared."""
    *_, checkpoint, their_model, their_tokenizer = request.getfixturevalue(model)
    translator = Translator.load(checkpoint)
    config = load_checkpoint(checkpoint)["config"]["decode"]
    pad_id, eos_id = their_model.config.pad_token_id, their_model.config.eos_token_id
    unbanned = []
    for line in sentences(corpus_dir):
        found = translator.translate(line, beam=beam, alpha=0.0).nbest[0].hypothesis
        limit = math.ceil(len(found_src(translator, line)) * config["max_len_ratio"])
        limit += config["max_len_extra"]
        inputs = their_tokenizer(line, return_tensors="pt")
        options = dict(num_beams=beam, length_penalty=0.0, max_new_tokens=limit, do_sample=False)
        generated = their_model.generate(**inputs, **options)[0].tolist()[1:]
        unbanned.append(their_model.generate(**inputs, **options, bad_words_ids=None)[0])
        assert pad_id not in found.tokens, line
        if found.ended:
            assert generated == [*found.tokens, eos_id], line
        else:
            assert len(found.tokens) == limit and generated[-1] == eos_id, line
            if beam == 1:
                assert generated[:-1] == found.tokens[:-1], line
    if model == "pad_loving_marian":  # what the ban kept out
        assert any(pad_id in ids[1:].tolist() for ids in unbanned)


def found_src(translator, line):
    return translator.tokenizer.src.encode([line])[0]


def test_every_command_takes_an_imported_model(marian, corpus_dir, tmp_path):
    directory, checkpoint, _, _ = marian
    runner = CliRunner()
    source, reference = corpus_dir / "test.en", corpus_dir / "test.de"
    translated = tmp_path / "out.de"
    for args in (
        ["translate", "--checkpoint", checkpoint, "--input", source, "--output", translated],
        ["translate", "--checkpoint", checkpoint, "--checkpoint", checkpoint, "--input", source],
        ["eval", "--checkpoint", checkpoint, "--src", source, "--ref", reference, "--beam", "2"],
        ["score", "--checkpoint", checkpoint, "--src", source, "--tgt", reference],
        ["export", "--checkpoint", checkpoint, "--output", tmp_path / "ct2"],
    ):
        result = runner.invoke(app, list(map(str, args)))
        assert result.exit_code == 0, (args, result.output)
    ours = translated.read_text("utf-8").splitlines()
    engine = load_ctranslate2_translator(tmp_path / "ct2")
    assert [t.text for t in engine.translate(sentences(corpus_dir, count=40))] == ours
    word = reference.read_text("utf-8").split()[1]
    constrained = Translator.load(checkpoint).translate(
        sentences(corpus_dir)[1], constraints={"include": [word]}
    )
    assert word in constrained.text and constrained.constraints_met


def test_the_imported_model_fine_tunes_and_resumes_exactly(marian, corpus_dir, tmp_path):
    """The config written beside the checkpoint trains (train.init_from), and 6 steps straight
    equal 3 steps, a stop, and 3 more."""
    _, checkpoint, _, _ = marian
    written = checkpoint.with_suffix(".yaml")
    keys = [f"data.path={corpus_dir}", "train.valid_every=3", "train.batch_tokens=300"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_experiment(load_config(written, [*keys, "train.max_steps=6"]), straight)
    train_experiment(load_config(written, [*keys, "train.max_steps=3"]), split)
    train_experiment(load_config(written, [*keys, "train.max_steps=6"]), split, resume=True)
    a, b = load_checkpoint(straight / "last.pt"), load_checkpoint(split / "last.pt")
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    start = load_checkpoint(checkpoint)["model"]
    assert any(not torch.equal(start[k], a["model"][k]) for k in start)  # it learnt


def test_import_then_export_gives_back_the_same_model(marian, tmp_path):
    directory, checkpoint, their_model, _ = marian
    exported = export_transformers(checkpoint, tmp_path / "again")
    again = transformers.MarianMTModel.from_pretrained(exported)
    assert (
        again.config.to_diff_dict().items()
        >= {
            key: value
            for key, value in their_model.config.to_diff_dict().items()
            if key
            in ("d_model", "encoder_layers", "decoder_attention_heads", "activation_function")
        }.items()
    )
    # the fixed sinusoid tables are left out: ours reach as far as our output limit needs
    theirs, back = (
        {k: v for k, v in model.state_dict().items() if "embed_positions" not in k}
        for model in (their_model, again)
    )
    assert theirs.keys() == back.keys()
    for name, tensor in theirs.items():
        assert torch.allclose(tensor, back[name], atol=1e-6), name
    for name in ("source.spm", "target.spm"):
        assert (exported / name).read_bytes() == (directory / name).read_bytes()
    assert json.loads((exported / "vocab.json").read_text()) == json.loads(
        (directory / "vocab.json").read_text()
    )


def test_a_hub_id_comes_through_huggingface_hub(marian, tmp_path, monkeypatch):
    """The real download path, offline: huggingface_hub finds the id in its cache, laid out
    as a download leaves it."""
    import shutil

    from huggingface_hub import constants

    directory, checkpoint, _, _ = marian
    repo = tmp_path / "hub" / "models--Helsinki-NLP--opus-mt-en-de"
    shutil.copytree(directory, repo / "snapshots" / ("0" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.chdir(tmp_path)
    imported = import_marian("Helsinki-NLP/opus-mt-en-de", tmp_path / "from-hub.pt")
    ours, theirs = load_checkpoint(imported)["model"], load_checkpoint(checkpoint)["model"]
    assert all(torch.equal(ours[name], theirs[name]) for name in theirs)
    assert load_checkpoint(imported)["config"]["name"] == "opus-mt-en-de"


def test_what_cannot_be_imported_is_refused_with_the_reason(marian, tmp_path):
    directory, _, _, _ = marian
    runner = CliRunner()
    lacking = tmp_path / "lacking"
    lacking.mkdir()
    (lacking / "config.json").write_text("{}")
    result = runner.invoke(app, ["import", "--from", str(lacking), "--output", "x.pt"])
    assert result.exit_code == 2 and "lacks source.spm, target.spm, vocab.json" in result.output
    pegasus = tmp_path / "pegasus"
    pegasus.mkdir()
    for name in ("source.spm", "target.spm", "vocab.json"):
        (pegasus / name).write_bytes((directory / name).read_bytes())
    transformers.PegasusConfig(d_model=16).save_pretrained(pegasus)
    result = runner.invoke(app, ["import", "--from", str(pegasus), "--output", "x.pt"])
    assert result.exit_code == 2 and "it is a 'pegasus' model" in result.output
    own = tmp_path / "model.yaml"  # its fine-tuning config would be written over it
    result = runner.invoke(app, ["import", "--from", str(directory), "--output", str(own)])
    assert result.exit_code == 2 and "another suffix" in result.output
    assert "model.pt" in result.output
    assert not own.exists()


def test_without_the_extra_both_commands_name_the_pip_line(monkeypatch, tmp_path):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "transformers" else find_spec(name, *a),
    )
    with pytest.raises(UserError, match=r"pip install 'nmt\[hub\]'"):
        import_marian("Helsinki-NLP/opus-mt-en-de", tmp_path / "x.pt")
    with pytest.raises(UserError, match=r"pip install 'nmt\[hub\]'"):
        export_transformers(tmp_path / "x.pt", tmp_path / "out")


# Export


KINDS = {  # what our model is -> the architecture it leaves as
    "post-norm": (("model.encoder.norm=post", "model.decoder.norm=post"), "MarianMTModel"),
    "pre-norm": ((), "PegasusForConditionalGeneration"),
    "post-norm, swish, biases, untied": (
        (
            "model.encoder.norm=post",
            "model.decoder.norm=post",
            "model.encoder.activation=swish",
            "model.decoder.activation=swish",
            "model.encoder.attention_bias=true",
            "model.decoder.attention_bias=true",
            "model.decoder.tie_embeddings=false",
            "model.share_embeddings=false",
        ),
        "MarianMTModel",
    ),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_exported_model_computes_ours_in_transformers(kind, tmp_path, corpus_dir, tokenizer):
    overrides, architecture = KINDS[kind]
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, *overrides)
    checkpoint = perturbed_checkpoint(tmp_path / "model.pt", config, tokenizer)
    exported = export_transformers(checkpoint, tmp_path / "hf")
    their_model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported).eval()
    their_tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    assert type(their_model).__name__ == architecture
    model, _, _ = restore_model(load_checkpoint(checkpoint), checkpoint)
    sources, targets = sentences(corpus_dir), sentences(corpus_dir, lang="de")
    assert [their_tokenizer(line)["input_ids"] for line in sources] == tokenizer.src.encode(sources)
    ours, inputs, real = teacher_forced(model, tokenizer, sources, targets)
    with torch.no_grad():
        theirs = their_model(**inputs).logits.log_softmax(-1)
    assert (ours - theirs)[real].abs().max() < 1e-4
    translator, decode = Translator.load(checkpoint), config.decode
    for line in sources[:5]:
        found = translator.translate(line, beam=1)
        limit = math.ceil(len(found.src_ids) * decode.max_len_ratio) + decode.max_len_extra
        generated = their_model.generate(
            **their_tokenizer(line, return_tensors="pt"), num_beams=1, max_new_tokens=limit
        )[0].tolist()[1:]
        assert found.nbest[0].hypothesis.tokens == [
            t for t in generated if t != tokenizer.tgt.eos_id
        ]


@pytest.fixture(scope="module")
def post_norm_run(tmp_path_factory, corpus_dir) -> Path:
    """A tiny post-norm Transformer trained until it translates the demo corpus somewhat."""
    import nmt

    overrides = ["model.encoder.norm=post", "model.decoder.norm=post", "train.max_steps=300"]
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, *overrides, "train.lr=0.005")
    directory = tmp_path_factory.mktemp("post-norm")
    return nmt.train_run(config, ["train.valid_every=300"], run_dir=directory).run_dir


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_a_trained_model_translates_the_same_in_transformers(norm, request, tmp_path, corpus_dir):
    """Text in, text out, as a transformers user writes it (transformers 5 has no
    translation pipeline: generate and batch_decode are what it runs); the pre-norm model
    is the demo Transformer."""
    run = request.getfixturevalue("demo_transformer" if norm == "pre" else "post_norm_run")
    exported = export_transformers(run / "best.pt", tmp_path / "hf")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(exported)
    tokenizer = transformers.AutoTokenizer.from_pretrained(exported)
    lines = sentences(corpus_dir, count=8)
    ours = Translator.load(run / "best.pt").translate(lines, beam=1)
    decode = load_checkpoint(run / "best.pt")["config"]["decode"]
    theirs = []
    for found in ours:  # one at a time: nmt's length limit is relative to the source's
        limit = math.ceil(len(found.src_ids) * decode["max_len_ratio"]) + decode["max_len_extra"]
        inputs = tokenizer(found.source, return_tensors="pt")
        generated = model.generate(**inputs, num_beams=1, max_new_tokens=limit)
        theirs += tokenizer.batch_decode(generated, skip_special_tokens=True)
    assert theirs == [t.text for t in ours] and len(set(theirs)) > 1
    card = (exported / "README.md").read_text("utf-8")
    assert "pipeline_tag: translation" in card and "| valid_bleu |" in card


def test_what_transformers_cannot_compute_is_refused_with_the_reason(
    tmp_path, corpus_dir, tokenizer
):
    cases = {
        "model.decoder.positions=relative": "model.decoder.positions is 'relative'",
        "model.share_embeddings=false": "share one embedding matrix",
        "model.decoder.activation=gelu": "model.encoder.activation and model.decoder.activation",
    }
    runner = CliRunner()
    for override, reason in cases.items():
        config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, override)
        checkpoint = perturbed_checkpoint(tmp_path / "model.pt", config, tokenizer)
        args = ["export", "--format", "transformers", "--checkpoint", str(checkpoint)]
        result = runner.invoke(app, [*args, "--output", str(tmp_path / "out")])
        assert result.exit_code == 2 and reason in result.output, result.output
        assert "nmt export --format ctranslate2" in result.output
    tagged = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, "data.directions=[en-de,de-en]")
    checkpoint = perturbed_checkpoint(tmp_path / "tagged.pt", tagged, two_way_tokenizer(tokenizer))
    with pytest.raises(UserError, match="target-language tags"):
        export_transformers(checkpoint, tmp_path / "out")
    rnn = write_checkpoint(tmp_path / "rnn.pt", tiny_experiment(corpus_dir), tokenizer)
    args = ["export", "--format", "transformers", "--checkpoint", str(rnn)]
    result = runner.invoke(app, [*args, "--output", str(tmp_path / "out")])
    # what CTranslate2 cannot run either is not sent there
    assert result.exit_code == 2 and "RNN model" in result.output, result.output
    assert "transformers (Marian, Pegasus) runs Transformers only" in result.output
    assert "Neither can CTranslate2 run it" in result.output
    assert "--format ctranslate2" not in result.output
    assert not (tmp_path / "out").exists()


# which export each shipped config with a Transformer decoder leaves through (docs/transformers.md)
SHIPPED = {
    "demo_transformer.yaml": "transformers (Pegasus) and ctranslate2",
    "multi30k_de_en_best.yaml": "ctranslate2",  # relative positions: Pegasus adds sinusoids
    "multi30k_de_en_transformer.yaml": "transformers (Pegasus) and ctranslate2",
    "multi30k_en_de_best.yaml": "ctranslate2",  # relative positions
    "multi30k_multilingual.yaml": "ctranslate2",  # tags: transformers' tokenizer has none
}


def test_every_shipped_transformer_config_leaves_through_an_export(tokenizer):
    found = {}
    for path in sorted((Path(__file__).parents[2] / "configs").glob("*.yaml")):
        config = load_config(path)
        if config.model.decoder.type != "transformer":
            continue
        assert unexportable(config.model) is None, path.name
        tagged = two_way_tokenizer(tokenizer) if len(config.data.pairs) > 1 else tokenizer
        refusal = transformers_refusal(config, tagged)
        found[path.name] = "ctranslate2" if refusal else "transformers (Pegasus) and ctranslate2"
    assert found == SHIPPED
