"""int8 models (`--quantize int8`): every family keeps its interface and nearly its
predictions; ensembles, the Translator, `nmt translate` and `nmt serve` take the option."""

import warnings

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from conftest import LINES, TINY_TRANSFORMER, tiny_experiment, tiny_model, write_checkpoint
from nmt.cli import app
from nmt.data.batching import pad
from nmt.errors import UserError
from nmt.search import greedy_search
from nmt.search.beam import beam_search
from nmt.search.ensemble import Ensemble
from nmt.serve.loading import load_models
from nmt.translate.quantize import quantize
from nmt.translate.translator import Translator

BOS, EOS = 2, 3
FAMILIES = {
    "rnnsearch": (),
    "lstm-encoder": ("model.encoder.rnn=lstm",),
    "multihead": ("model.attention.type=multihead", "model.attention.heads=2"),
    "transformer": TINY_TRANSFORMER,
}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def batch():
    generator = torch.Generator().manual_seed(3)
    lengths = [6, 2, 4]
    src = pad([torch.randint(4, 50, (n,), generator=generator).tolist() for n in lengths], 0)
    tgt_in = torch.randint(4, 50, (3, 5), generator=generator)
    tgt_in[:, 0] = BOS
    return src, torch.tensor(lengths), tgt_in


def float_linears(model: nn.Module) -> list[str]:
    return [
        name
        for name, module in model.named_modules()
        if type(module) in (nn.Linear, nn.GRU, nn.LSTM)
    ]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_int8_keeps_shapes_and_nearly_the_log_probabilities(family, corpus_dir):
    config = tiny_experiment(corpus_dir, *FAMILIES[family])
    src, lengths, tgt_in = batch()
    reference, weights = tiny_model(config).eval().teacher_forcing(src, lengths, tgt_in)
    model = quantize(tiny_model(config))
    assert float_linears(model) == [] and not model.training
    logits, int8_weights = model.teacher_forcing(src, lengths, tgt_in)
    assert logits.shape == reference.shape and int8_weights.shape == weights.shape
    # small against how widely the log-probabilities spread over the vocabulary
    error = (logits.log_softmax(-1) - reference.log_softmax(-1)).abs()
    spread = reference.log_softmax(-1).std()
    assert error.mean() < 0.05 * spread and error.max() < 0.25 * spread
    limits = torch.tensor([8, 4, 6])
    greedy = greedy_search(model, src, lengths, BOS, EOS, limits)
    beam = beam_search(model, src, lengths, BOS, EOS, limits, beam=1, alpha=0.6)
    assert [h.tokens for (h,) in beam] == [h.tokens for h in greedy]  # beam 1 is still greedy


def test_an_ensemble_is_quantised_member_by_member(corpus_dir):
    def members():
        rnn = tiny_model(tiny_experiment(corpus_dir))
        return [rnn, tiny_model(tiny_experiment(corpus_dir, *TINY_TRANSFORMER), seed=1)]

    ensemble = quantize(Ensemble(members()))
    assert float_linears(ensemble) == []
    src, lengths, _ = batch()
    limits = torch.tensor([7, 3, 5])
    found = greedy_search(ensemble, src, lengths, BOS, EOS, limits)
    one_by_one = Ensemble([quantize(member) for member in members()])
    expected = greedy_search(one_by_one, src, lengths, BOS, EOS, limits)
    assert [h.tokens for h in found] == [h.tokens for h in expected]


def test_quantising_shows_no_deprecation_warnings(corpus_dir):
    model = tiny_model(tiny_experiment(corpus_dir))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quantize(model)
    assert [str(w.message) for w in caught] == []


def test_only_int8_is_offered(corpus_dir):
    with pytest.raises(UserError, match="--quantize int4: choose one of int8"):
        quantize(tiny_model(tiny_experiment(corpus_dir)), "int4")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, corpus_dir, tokenizer):
    config = tiny_experiment(corpus_dir)
    return write_checkpoint(tmp_path_factory.mktemp("ckpt") / "rnn.pt", config, tokenizer)


def test_translate_and_serve_load_int8_models(checkpoint):
    translator = Translator.load(checkpoint, quantize="int8", beam=2)
    assert float_linears(translator.model) == []
    translations = translator.translate(LINES)
    assert len(translations) == 3 and translations[1].text == ""
    (served,) = load_models([f"int8={checkpoint}"], quantize="int8").values()
    assert (
        served.describe({})["quantize"] == "int8" and float_linears(served.translator.model) == []
    )


def test_the_command_line_option(checkpoint, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in LINES))
    args = ["translate", "--checkpoint", str(checkpoint), "--input", str(source), "--beam", "1"]
    result = CliRunner().invoke(app, [*args, "--quantize", "int8"])
    assert result.exit_code == 0, result.output
    translator = Translator.load(checkpoint, quantize="int8", beam=1)
    assert result.stdout == "".join(t.text + "\n" for t in translator.translate(LINES))
    refused = CliRunner().invoke(app, [*args, "--quantize", "int4"])
    assert refused.exit_code == 2 and "int4" in refused.output
