"""`nmt export --format ctranslate2` and `nmt translate --engine ctranslate2`: CTranslate2
computes what our Transformer computes. The models are untrained but every weight is
perturbed (biases and layer norms too, which start as zeros and ones), so their arbitrary
outputs are a sharp test: one misplaced weight changes them, and their scores (sums of
log-probabilities over every step) must agree to 1e-3."""

import dataclasses
from types import SimpleNamespace

import pytest
import torch
from typer.testing import CliRunner

from conftest import (
    TINY_TRANSFORMER,
    nmt,
    perturbed_checkpoint,
    tiny_experiment,
    two_way_tokenizer,
    write_checkpoint,
)
from nmt.cli import app
from nmt.data.tokenizer import build_tokenizer
from nmt.errors import UserError
from nmt.export.converter import export_ctranslate2, unexportable
from nmt.export.engine import CTranslate2Translator, load_ctranslate2_translator
from nmt.translate.translator import Translator

pytest.importorskip(
    "ctranslate2", reason="CTranslate2 is not installed: pip install 'nmt[ctranslate2]'"
)

VARIANTS = {
    "pre-norm, one vocabulary": (),
    "post-norm": ("model.encoder.norm=post", "model.decoder.norm=post"),
    "two vocabularies, untied, more encoder heads": (
        "tokenizer.joint=false",
        "model.share_embeddings=false",
        "model.decoder.tie_embeddings=false",
        "model.encoder.heads=4",
    ),
    "swish and gelu, attention biases": (
        "model.encoder.activation=swish",
        "model.decoder.activation=gelu",
        "model.encoder.attention_bias=true",
        "model.decoder.attention_bias=true",
    ),
}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module", params=list(VARIANTS))
def exported(request, tmp_path_factory, corpus_dir, tokenizer):
    """(checkpoint, exported directory) of one variant."""
    directory = tmp_path_factory.mktemp("export")
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, *VARIANTS[request.param])
    if not config.tokenizer.joint:
        src = (corpus_dir / "train.en").read_text("utf-8").splitlines()
        tgt = (corpus_dir / "train.de").read_text("utf-8").splitlines()
        tokenizer = build_tokenizer(config.tokenizer, src, tgt, directory)
        assert not tokenizer.joint
    checkpoint = perturbed_checkpoint(directory / "model.pt", config, tokenizer)
    return checkpoint, export_ctranslate2(checkpoint, directory / "ct2")


@pytest.mark.parametrize("blocking", [0, 2], ids=["plain", "no repeated bigram"])
def test_greedy_search_is_ours(exported, corpus_dir, blocking):
    checkpoint, directory = exported
    lines = (corpus_dir / "test.en").read_text("utf-8").splitlines()
    ours = Translator.load(checkpoint, beam=1, no_repeat_ngram=blocking)
    theirs = load_ctranslate2_translator(directory, beam=1, no_repeat_ngram=blocking)
    expected, found = ours.translate(lines), theirs.translate(lines)
    assert len({t.text for t in expected}) >= len(lines) // 4  # not one output for all
    assert [t.text for t in found] == [t.text for t in expected]
    for mine, its in zip(expected, found, strict=True):
        # CTranslate2 scores a blocked step by the distribution renormalised without the
        # banned tokens; ours keeps the model's own log-probability, so only tokens compare
        assert blocking or abs(mine.hypotheses[0].score - its.hypotheses[0].score) < 1e-3
        assert mine.hypotheses[0].steps == its.hypotheses[0].steps


def test_a_target_prefix_gives_our_greedy_continuation(exported, corpus_dir):
    """CTranslate2's target_prefix forces the prefix as our search does; greedy search then
    continues alike. Lexical constraints it cannot decode are refused."""
    checkpoint, directory = exported
    lines = (corpus_dir / "test.en").read_text("utf-8").splitlines()[:8]
    prefixes = ["der hund", None, "die", ""] * 2
    ours = Translator.load(checkpoint, beam=1).translate(lines, prefix=prefixes)
    theirs = load_ctranslate2_translator(directory, beam=1)
    found = theirs.translate(lines, prefix=prefixes)
    assert [t.text for t in found] == [t.text for t in ours]
    assert all(t.text.startswith(p) for t, p in zip(found, prefixes, strict=True) if p)
    with pytest.raises(UserError, match="CTranslate2 decodes no lexical constraints"):
        theirs.translate(lines[:1], constraints=[{"include": ["hund"]}])
    penalised = load_ctranslate2_translator(directory, coverage_penalty=0.2)
    with pytest.raises(UserError, match="--coverage-penalty 0"):
        penalised.translate(lines[:1])
    restricted = load_ctranslate2_translator(directory, restrict_to_target_language=True)
    with pytest.raises(UserError, match="--any-target-piece"):
        restricted.translate(lines[:1])


def test_beam_hypotheses_carry_their_own_scores_and_our_ranking(exported, corpus_dir):
    """CTranslate2 normalises by length ** alpha; the engine undoes that, so each score is
    the hypothesis's log-probability under our model, and ranks by our GNMT penalty."""
    checkpoint, directory = exported
    lines = (corpus_dir / "test.en").read_text("utf-8").splitlines()[:12]
    theirs = load_ctranslate2_translator(directory, beam=4, nbest=3, alpha=0.6)
    ours = Translator.load(checkpoint)
    model, eos = ours.model, ours.tokenizer.tgt.eos_id
    for translation in theirs.translate(lines):
        src = torch.tensor([translation.src_ids])
        ranked = [h.normalised_score(0.6) for h in translation.hypotheses]
        assert len(ranked) == 3 and ranked == sorted(ranked, reverse=True)
        for hypothesis in translation.hypotheses:
            ended = hypothesis.ended
            target = torch.tensor([[2, *hypothesis.tokens, *([eos] if ended else [])]])
            logits = model.teacher_forcing(src, torch.tensor([src.size(1)]), target[:, :-1])[0]
            expected = logits.log_softmax(-1).gather(2, target[:, 1:, None]).sum().item()
            assert abs(hypothesis.score - expected) < 1e-3


def test_the_exported_model_translates_in_a_fresh_process(exported):
    checkpoint, directory = exported
    text = "the dog sees the cat.\n\n  \na very small bird has slept because we sleep.\n"
    result = nmt(
        "translate", "--engine", "ctranslate2", "--model", directory, "--beam", 1, input=text
    )
    assert result.returncode == 0, result.stderr
    expected = nmt("translate", "--checkpoint", checkpoint, "--beam", 1, input=text)
    lines = result.stdout.split("\n")
    assert len(lines) == 5 and lines[1] == lines[2] == "" and lines[0] and lines[3]
    assert result.stdout == expected.stdout


def test_the_directory_says_how_to_use_it(exported):
    _, directory = exported
    names = {path.name for path in directory.iterdir()}
    assert {"model.bin", "config.json", "nmt.json", "README.txt"} <= names
    assert "spm.model" in names or {"spm.src.model", "spm.tgt.model"} <= names
    readme = (directory / "README.txt").read_text("utf-8")
    assert f"nmt translate --engine ctranslate2 --model {directory}" in readme
    assert "ctranslate2.Translator" in readme


def test_int8_runs_with_ctranslate2s_int8_compute_type(exported, corpus_dir):
    _, directory = exported
    lines = (corpus_dir / "test.en").read_text("utf-8").splitlines()
    fp32 = load_ctranslate2_translator(directory, beam=1)
    int8 = load_ctranslate2_translator(directory, quantize="int8", beam=1)
    assert int8.model.compute_type.startswith("int8") and fp32.model.compute_type == "float32"
    assert len(int8.translate(lines)) == len(lines)


# a Transformer wide enough that train.precision auto chooses bf16 where it is native
WIDE = ("model.encoder.emb_dim=128", "model.decoder.emb_dim=128", "model.attention.attn_dim=128")


@pytest.fixture(scope="module")
def wide(tmp_path_factory, corpus_dir, tokenizer):
    """(checkpoint, exported directory) of a 128-wide Transformer whose own decode.precision
    is bf16."""
    directory = tmp_path_factory.mktemp("wide")
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, *WIDE, "decode.precision=bf16")
    checkpoint = perturbed_checkpoint(directory / "model.pt", config, tokenizer)
    return checkpoint, export_ctranslate2(checkpoint, directory / "ct2")


@pytest.mark.parametrize("asked", ["--precision bf16", "--precision auto", "the model's"])
def test_bf16_computes_in_a_type_ctranslate2_has_on_this_cpu(wide, monkeypatch, asked):
    """bfloat16 where CTranslate2 has it for the CPU, else float32 with a notice naming
    where bf16 came from (none for auto, which asks only for what is fast here)."""
    import ctranslate2

    monkeypatch.setattr("nmt.model.device.cpu_has_fast_bf16", lambda: True)  # auto: bf16
    _, directory = wide
    options = asked.split()[:2] if asked.startswith("--") else []
    has_bf16 = "bfloat16" in ctranslate2.get_supported_compute_types("cpu")
    ran = nmt("translate", "--engine", "ctranslate2", "--model", directory, "--beam", "1",
              "--workers", "1", *options, input="a dog\n")  # fmt: skip
    assert ran.returncode == 0 and len(ran.stdout.splitlines()) == 1, ran.stderr
    notices = [line for line in ran.stderr.splitlines() if "bfloat16" in line]
    if has_bf16 or asked == "--precision auto":
        assert notices == [], notices
    else:
        (notice,) = notices
        named = "--precision bf16" if options else "the model's decode.precision bf16"
        assert notice.startswith(f"notice: {named}:") and "float32" in notice, notice
    loaded = load_ctranslate2_translator(directory, precision="bf16", beam=1)
    assert loaded.model.compute_type == ("bfloat16" if has_bf16 else "float32")


def test_int8_and_bf16_name_where_bf16_came_from(wide):
    """--quantize int8 with the model's own decode.precision bf16 does not blame an option
    never given."""
    checkpoint, directory = wide
    for engine in (["--engine", "ctranslate2", "--model", directory], ["--checkpoint", checkpoint]):
        for given, named in (
            (["--precision", "bf16"], "--precision bf16"),
            ([], "decode.precision bf16"),
        ):
            ran = nmt("translate", *engine, "--quantize", "int8", *given, input="a dog\n")
            assert ran.returncode == 2, ran.stderr
            assert named in ran.stderr and ("--precision" in ran.stderr), ran.stderr
            if not given:
                assert "--precision bf16" not in ran.stderr, ran.stderr


POSITIONS = {  # both sides' positions: every kind CTranslate2 computes
    "learned": ("learned", "learned"),
    "relative": ("relative", "relative"),
    "rotary": ("rotary", "rotary"),
    "alibi decoder": ("relative", "alibi"),
}


@pytest.mark.parametrize("sides", list(POSITIONS.values()), ids=list(POSITIONS))
def test_positions_export_as_ctranslate2_computes_them(sides, tmp_path, corpus_dir, tokenizer):
    encoder, decoder = sides
    overrides = [f"model.encoder.positions={encoder}", f"model.decoder.positions={decoder}"]
    overrides += [
        f"model.{side}.max_{key}={limit}"
        for side, kind in zip(("encoder", "decoder"), sides, strict=True)
        for key, limit in (("positions", 12), ("relative_position", 3))
        if (kind, key) in (("learned", "positions"), ("relative", "relative_position"))
    ]
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, *overrides)
    checkpoint = perturbed_checkpoint(tmp_path / "model.pt", config, tokenizer)
    directory = export_ctranslate2(checkpoint, tmp_path / "ct2")
    lines = (corpus_dir / "test.en").read_text("utf-8").splitlines()
    expected = Translator.load(checkpoint, beam=1).translate(lines)
    found = load_ctranslate2_translator(directory, beam=1).translate(lines)
    assert len({t.text for t in expected}) >= len(lines) // 4
    assert [t.text for t in found] == [t.text for t in expected]
    for mine, its in zip(expected, found, strict=True):
        assert abs(mine.hypotheses[0].score - its.hypotheses[0].score) < 1e-3


def test_a_model_of_several_target_languages_exports_with_its_tags(tmp_path, corpus_dir, tokenizer):
    """The engine puts the tag of --tgt-lang in front as a piece: greedy output and scores
    are ours in both directions, and a missing language is refused as ours refuses it."""
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, "data.directions=[en-de,de-en]")
    checkpoint = perturbed_checkpoint(tmp_path / "model.pt", config, two_way_tokenizer(tokenizer))
    directory = export_ctranslate2(checkpoint, tmp_path / "ct2")
    assert "<2de>, <2en>" in (directory / "README.txt").read_text("utf-8")
    lines = (corpus_dir / "test.en").read_text("utf-8").splitlines()[:16]
    ours = Translator.load(checkpoint, beam=1)
    theirs = load_ctranslate2_translator(directory, beam=1)
    for language in ("de", "en"):
        expected = ours.translate(lines, tgt_lang=language)
        found = theirs.translate(lines, tgt_lang=language)
        assert [t.text for t in found] == [t.text for t in expected]
        for mine, its in zip(expected, found, strict=True):
            assert abs(mine.hypotheses[0].score - its.hypotheses[0].score) < 1e-3
    assert {t.text for t in ours.translate(lines, tgt_lang="de")} != {
        t.text for t in ours.translate(lines, tgt_lang="en")
    }
    with pytest.raises(UserError, match="this model writes de, en"):
        theirs.translate(lines)
    pivoted = theirs.translate(lines, tgt_lang="en", through="de")  # both legs CTranslate2's
    expected = ours.translate(lines, tgt_lang="en", through="de")
    assert [t.text for t in pivoted] == [t.text for t in expected]
    assert [t.pivot.text for t in pivoted] == [t.pivot.text for t in expected]
    restricted = dataclasses.replace(
        config, decode=dataclasses.replace(config.decode, restrict_to_target_language=True)
    )
    checkpoint = write_checkpoint(tmp_path / "r.pt", restricted, two_way_tokenizer(tokenizer))
    exported = load_ctranslate2_translator(export_ctranslate2(checkpoint, tmp_path / "r"))
    assert not exported.decode.restrict_to_target_language  # CTranslate2 cannot: dropped
    assert len(exported.translate(lines[:4], tgt_lang="de")) == 4  # restriction refused not
    result = nmt(
        "translate",
        "--engine",
        "ctranslate2",
        "--model",
        directory,
        "--tgt-lang",
        "en",
        "--beam",
        1,
        input=lines[0] + "\n",
    )
    assert result.returncode == 0 and result.stdout.strip() == found[0].text
    result = nmt("translate", "--engine", "ctranslate2", "--model", directory, "--tgt-lang",
                 "en", "--through", "de", "--beam", 1, input=lines[0] + "\n")  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip() == pivoted[0].text, result.stderr


def test_a_model_whose_decoder_starts_from_the_tag_is_refused(tmp_path, corpus_dir, tokenizer):
    keys = (*TINY_TRANSFORMER, "data.directions=[en-de,de-en]", "data.tags=decoder_bos")
    tagged = dataclasses.replace(two_way_tokenizer(tokenizer), tag_place="decoder_bos")
    checkpoint = write_checkpoint(tmp_path / "m.pt", tiny_experiment(corpus_dir, *keys), tagged)
    output = tmp_path / "out"
    reasons = {
        "ctranslate2": "its decoder starts from the target language's tag (data.tags: decoder_bos)",
        "transformers": "it reads target-language tags",
    }
    for kind, reason in reasons.items():
        result = nmt("export", "--format", kind, "--checkpoint", checkpoint, "--output", output)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert reason in result.stderr and not output.exists()


def test_an_alibi_encoder_is_refused_with_the_reason(corpus_dir):
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, "model.encoder.positions=alibi")
    assert "CTranslate2's Transformer encoder has none" in unexportable(config.model)


@pytest.fixture(scope="module")
def rnn_checkpoint(tmp_path_factory, corpus_dir, tokenizer):
    path = tmp_path_factory.mktemp("rnn") / "rnn.pt"
    return write_checkpoint(path, tiny_experiment(corpus_dir), tokenizer)


def test_an_rnn_checkpoint_is_refused_with_the_reason(rnn_checkpoint, tmp_path):
    output = tmp_path / "out"
    result = nmt(
        "export", "--format", "ctranslate2", "--checkpoint", rnn_checkpoint, "--output", output
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "RNN model (encoder birnn, decoder rnnsearch)" in result.stderr
    assert "Transformers only" in result.stderr and not output.exists()


def test_a_copy_model_is_refused_with_the_reason(tmp_path, corpus_dir, tokenizer):
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER, "model.copy=true")
    checkpoint = write_checkpoint(tmp_path / "copy.pt", config, tokenizer)
    output = tmp_path / "out"
    result = nmt(
        "export", "--format", "ctranslate2", "--checkpoint", checkpoint, "--output", output
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "copies from the source (model.copy: true)" in result.stderr and not output.exists()


@pytest.mark.parametrize(
    "key, value",
    [("normaliser", "sparsemax"), ("kv", "shared"), ("window", 3), ("heads", 1)],
)
def test_cross_attention_ctranslate2_cannot_compute_is_named(corpus_dir, key, value):
    model = tiny_experiment(corpus_dir, *TINY_TRANSFORMER).model
    attention = dataclasses.replace(model.attention, **{key: value})
    reason = unexportable(dataclasses.replace(model, attention=attention))
    assert reason is not None and f"model.attention.{key} is {value!r}" in reason


def test_an_existing_output_is_never_overwritten(exported, tmp_path):
    checkpoint, _ = exported
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="already exists"):
        export_ctranslate2(checkpoint, tmp_path / "taken")
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["keep.txt"]
    (tmp_path / "empty").mkdir()
    assert (export_ctranslate2(checkpoint, tmp_path / "empty") / "model.bin").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_each_engine_takes_its_own_model(exported):
    checkpoint, directory = exported

    def translate(*args):
        return CliRunner().invoke(app, ["translate", *map(str, args)], input="a dog\n")

    cases = [
        (["--engine", "ctranslate2", "--checkpoint", checkpoint], "export the checkpoint first"),
        (["--engine", "ctranslate2"], "needs --model DIR"),
        (["--model", directory], "add --engine ctranslate2"),
        ([], "needs --checkpoint FILE"),
        (["--engine", "ctranslate2", "--model", directory, "--alignments"], "--alignments need"),
        (["--engine", "ctranslate2", "--model", checkpoint.parent], "not a directory written"),
    ]
    for args, message in cases:
        result = translate(*args)
        assert result.exit_code == 2 and message in result.output, (args, result.output)


def test_decode_defaults_are_the_checkpoints(exported):
    checkpoint, directory = exported
    theirs = load_ctranslate2_translator(directory)
    ours = Translator.load(checkpoint)
    assert theirs.decode == ours.decode and theirs.decode.beam == 5


class RecordingCTranslate2:
    """Stands in for a ctranslate2.Translator: answers a source of n pieces with 2n target
    pieces (up to the call's limit), and records each call's batch size and limit."""

    def __init__(self, piece: str):
        self.piece, self.calls = piece, []

    def translate_batch(self, source, max_decoding_length, **options):
        self.calls.append((len(source), max_decoding_length))
        lengths = [min(2 * len(pieces), max_decoding_length) for pieces in source]
        return [SimpleNamespace(hypotheses=[[self.piece] * n], scores=[-1.0]) for n in lengths]


def test_a_batch_goes_in_one_call_and_only_overruns_go_again(corpus_dir, tokenizer):
    """One call under the batch's longest limit; a sentence whose output ran past its own
    limit (ceil(1.5 n) here) is translated again under it, so none is longer than its own."""
    config = tiny_experiment(corpus_dir)
    decode = dataclasses.replace(config.decode, beam=1, max_len_ratio=1.5, max_len_extra=0)
    model = RecordingCTranslate2(tokenizer.tgt.pieces([5])[0])
    translator = CTranslate2Translator(model, tokenizer, config, decode)
    sources = [[7] * n for n in range(1, 7)]  # limits 2, 3, 5, 6, 8, 9
    found = translator.search(sources, decode)
    assert model.calls == [(6, 9), (1, 3), (1, 5), (1, 6), (1, 8)]
    assert [len(hypotheses[0].tokens) for hypotheses in found] == [2, 3, 5, 6, 8, 9]


def test_the_shortlist_exports_as_the_vocabulary_map_ctranslate2_decodes_with(
    tmp_path, corpus_dir, tokenizer
):
    """`--shortlist K` writes vmap.txt (the always-allowed pieces first, then each source
    piece's K best) and makes it the exported default; CTranslate2's engine then writes only
    a sentence's allowed pieces, as our own search does with the same shortlist."""
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    checkpoint = perturbed_checkpoint(tmp_path / "model.pt", config, tokenizer)
    assert nmt("shortlist", "--checkpoint", checkpoint, "--frequent", "2").returncode == 0
    plain = export_ctranslate2(checkpoint, tmp_path / "plain")
    directory = export_ctranslate2(checkpoint, tmp_path / "ct2", shortlist=2)
    rows = [line.split("\t") for line in (directory / "vmap.txt").read_text("utf-8").splitlines()]
    assert rows[0][0] == "" and len(rows[0][1].split()) == 2
    assert all(source and 1 <= len(targets.split()) <= 2 for source, targets in rows[1:])
    allowed = {source: set(targets.split()) for source, targets in rows}
    theirs = load_ctranslate2_translator(directory, beam=2)
    assert theirs.decode.shortlist == 2
    ours = Translator.load(checkpoint, beam=2, shortlist=2)
    unrestricted = load_ctranslate2_translator(plain, beam=2)
    lines = (corpus_dir / "test.en").read_text("utf-8").splitlines()[:6]
    changed = 0
    for line in lines:
        found = theirs.translate([line])[0]
        pieces = tokenizer.src.pieces(found.src_ids)
        may = set().union(allowed[""], *(allowed.get(piece, set()) for piece in pieces))
        written = tokenizer.tgt.pieces(found.nbest[0].hypothesis.tokens)
        assert set(written) <= may
        assert found.text == ours.translate(line).text
        changed += found.text != unrestricted.translate([line])[0].text
    assert changed
    with pytest.raises(UserError, match="no vocabulary map"):
        load_ctranslate2_translator(plain, shortlist=2)
    # the map holds K = 2: another K is refused, not ignored; 0 decodes without it
    for other in (1, 50):
        with pytest.raises(UserError, match="exported with the shortlist's 2 best pieces"):
            load_ctranslate2_translator(directory, shortlist=other)
    without = load_ctranslate2_translator(directory, beam=2, shortlist=0)
    assert [t.text for t in without.translate(lines)] == [
        t.text for t in unrestricted.translate(lines)
    ]


def test_a_prefix_is_kept_under_the_vocabulary_map(tmp_path, corpus_dir, tokenizer):
    """CTranslate2 forces a prefix through the vocabulary map's pieces only: a line with a
    prefix decodes with the whole vocabulary (and starts with its prefix), the lines beside
    it in its batch with the map."""
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    checkpoint = perturbed_checkpoint(tmp_path / "model.pt", config, tokenizer)
    assert nmt("shortlist", "--checkpoint", checkpoint, "--depth", "8").returncode == 0
    directory = export_ctranslate2(checkpoint, tmp_path / "ct2", shortlist=3)
    mapped = load_ctranslate2_translator(directory, beam=2, batch_size=8, workers=1)
    whole = load_ctranslate2_translator(directory, beam=2, shortlist=0, workers=1)
    lines = (corpus_dir / "test.en").read_text("utf-8").splitlines()[:6]
    prefixes = ["der", None, "ein", "wir", None, "die"]
    together = mapped.translate(lines, prefix=prefixes)
    # the map allows what any source of a batch allows: the others, as a batch of their own
    kept = [line for line, prefix in zip(lines, prefixes, strict=True) if prefix is None]
    others = iter(mapped.translate(kept))
    for line, prefix, found in zip(lines, prefixes, together, strict=True):
        if prefix is None:
            assert found.text == next(others).text
        else:
            assert found.text.startswith(prefix), (prefix, found.text)
            assert found.text == whole.translate([line], prefix=[prefix])[0].text
