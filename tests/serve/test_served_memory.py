"""A served model with a translation memory (nmt serve --tm): an exact match's answer is the
memory's target, flagged in tm_match, and what a memory cannot go with is a 422 naming the
field."""

import pytest
from serving import serving_app

from conftest import make_translator, tiny_experiment
from nmt.data.memory import TranslationMemory
from nmt.errors import UserError
from nmt.serve.catalog import ServedModel
from nmt.serve.loading import load_models
from nmt.serve.server import create_app


def test_the_server_flags_exact_matches_and_refuses_what_a_memory_cannot_go_with(
    corpus_dir, tokenizer, memory_file
):
    translator = make_translator(tiny_experiment(corpus_dir), tokenizer, beam=2)
    translator.memory = TranslationMemory.load(memory_file)
    app = create_app({"m": ServedModel("m", translator)}, workers=1)
    exact = (corpus_dir / "train.en").read_text("utf-8").splitlines()[3]
    other = (corpus_dir / "test.en").read_text("utf-8").splitlines()[0]
    with serving_app(app) as client:
        status, answer = client.translate([{"src": exact, "id": "m"}, {"src": other, "id": "m"}])
        assert status == 200, answer
        first, second = answer[0]
        assert first["tm_match"] == {"score": 1.0, "exact": True}
        assert first["tgt"] == translator.memory.exact(exact).target
        assert "tm_match" not in second
        status, answer = client.translate([{"src": other, "id": "m", "alignments": True}])
        assert status == 422 and answer["detail"][0]["loc"] == ["body", 0, "alignments"]
        status, listed = client.request("GET", "/translator/models")
        assert listed[0]["memory"] is True


def test_a_memory_no_served_model_translates_is_refused_before_serving(
    corpus_dir, tokenizer, memory_file, tmp_path
):
    from conftest import write_checkpoint

    german = tiny_experiment(corpus_dir, "data.src_lang=de", "data.tgt_lang=en")
    checkpoint = write_checkpoint(tmp_path / "de-en.pt", german, tokenizer)
    with pytest.raises(UserError, match="no served model translates en-de"):
        load_models([str(checkpoint)], memories=[memory_file])


def test_a_second_memory_for_a_model_is_refused_not_put_over_the_first(
    corpus_dir, tokenizer, memory_file, tmp_path
):
    from conftest import write_checkpoint

    checkpoint = write_checkpoint(tmp_path / "en-de.pt", tiny_experiment(corpus_dir), tokenizer)
    with pytest.raises(UserError, match="already reads an earlier --tm .*one memory"):
        load_models([str(checkpoint)], memories=[memory_file, memory_file])


def test_a_request_into_a_language_the_memory_lacks_goes_without_it(
    corpus_dir, tokenizer, memory_file
):
    from conftest import two_way_tokenizer

    config = tiny_experiment(corpus_dir, "data.directions=[en-de,de-en]")
    translator = make_translator(config, two_way_tokenizer(tokenizer), beam=2)
    models = {"two": ServedModel("two", translator)}
    translator.memory = TranslationMemory.load(memory_file)
    exact = (corpus_dir / "train.en").read_text("utf-8").splitlines()[3]
    german = (corpus_dir / "train.de").read_text("utf-8").splitlines()[3]
    with serving_app(create_app(models, workers=1)) as client:
        status, answer = client.translate([{"src": exact, "id": "two", "tgt_lang": "de"}])
        assert status == 200 and answer[0][0]["tgt"] == german and answer[0][0]["tm_match"]
        item = {"src": german, "id": "two", "tgt_lang": "en", "alignments": True}
        status, answer = client.translate([item])
        assert status == 200 and "tm_match" not in answer[0][0] and "align" in answer[0][0]


def uploaded(translator, page: bytes):
    """The status and answer of POST /translate_file with `page` as page.html."""
    from test_files import multipart

    body, headers = multipart({"id": "m"}, ("page.html", page))
    with serving_app(create_app({"m": ServedModel("m", translator)}, workers=1)) as client:
        return client.request("POST", "/translate_file", body, headers=headers)


def test_a_file_is_translated_by_a_model_with_a_memory_as_without_it(
    corpus_dir, tokenizer, memory_file
):
    """A file's tags are placed through alignments, which a memory's lines cannot give: a
    served model with --tm translates a file as it would without (no 422 the client could
    do nothing about), its memory's exact match not taken."""
    translator = make_translator(tiny_experiment(corpus_dir), tokenizer, beam=2)
    exact = (corpus_dir / "train.en").read_text("utf-8").splitlines()[3]
    page = f"<p>{exact}</p>".encode()
    without = uploaded(translator, page)
    translator.memory = TranslationMemory.load(memory_file)
    assert uploaded(translator, page) == without and without[0] == 200, without
