"""The rules of pivoting, checked once for every caller: a pivot is neither a line's source
nor its target, --src-lang names a language the model reads, two chained models meet in
one language and the second accepts the request; the command line, Python and the server
refuse alike (exit 2, UserError, 422) and the server keeps serving."""

import dataclasses

import pytest
from test_pivot import GERMAN, pivot_models

from conftest import nmt, write_checkpoint
from nmt.errors import UserError
from nmt.translate.translator import Translator

ENGLISH = "the dog sees the cat."


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return pivot_models(tmp_path_factory.mktemp("pivot"))


def served(*specs):
    from serve.serving import serving_app

    from nmt.serve.loading import load_models
    from nmt.serve.server import create_app

    return serving_app(create_app(load_models(list(specs)), workers=1))


def refused(client, item, field):
    """The detail of the 422 the server answers `item` with, at body[0].`field`."""
    status, answer = client.translate([item])
    assert status == 422 and answer["detail"][0]["loc"] == ["body", 0, field], answer
    return answer["detail"][0]["msg"]


def test_a_pivot_that_is_the_source_or_the_target_is_refused(models):
    translator = Translator.load(models["tagged"], beam=2, workers=1)
    for options, problem in (
        ({"through": "xx"}, "--through xx: xx is the language translated into"),
        ({"through": "de", "src_lang": "de"}, "--through de: de is the source's language"),
    ):
        with pytest.raises(UserError, match=problem):
            translator.translate(GERMAN, tgt_lang="xx", **options)
        with pytest.raises(UserError, match=problem):
            translator.score(GERMAN[:1], ["x"], tgt_lang="xx", **options)
    with pytest.raises(UserError, match="cannot translate into that pivot; pivot through en, or"):
        translator.translate(GERMAN, tgt_lang="xx", through="fr", src_lang="de")
    ran = nmt("translate", "--checkpoint", models["tagged"], "--tgt-lang", "xx", "--through",
              "xx", input="der Hund.\n")  # fmt: skip
    assert ran.returncode == 2 and ran.stderr.startswith("error: --through xx:"), ran.stderr
    with served(f"m={models['tagged']}") as client:
        item = {"src": GERMAN[0], "id": "m", "tgt_lang": "xx", "src_lang": "de", "beam": 2}
        assert "de is the source's language" in refused(
            client, {**item, "through": "de"}, "through"
        )
        assert "xx is the language translated into" in refused(
            client, {**item, "through": "xx"}, "through"
        )
        assert client.request("GET", "/translator/health")[0] == 200


def test_a_line_already_in_the_pivot_language_goes_on_from_it(models):
    translator = Translator.load(models["tagged"], beam=2, workers=1)
    (found,) = translator.translate([ENGLISH], tgt_lang="xx", through="en")  # read as English
    direct = translator.translate(ENGLISH, tgt_lang="xx", src_lang="en")
    assert found.text == direct.text and found.pivot is None


def test_a_line_in_the_pivot_language_is_refused_where_it_would_go_on_untrained(models):
    """de -> xx was never trained: a German line through de would take that leg alone."""
    translator = Translator.load(models["tagged"], beam=2, workers=1)
    with pytest.raises(UserError, match="--through de: a line of this input reads as de"):
        translator.translate(GERMAN, tgt_lang="xx", through="de")
    ran = nmt("translate", "--checkpoint", models["tagged"], "--tgt-lang", "xx", "--through",
              "de", input=GERMAN[0] + "\n")  # fmt: skip
    assert ran.returncode == 2 and "never learned de -> xx" in ran.stderr, ran.stderr


def test_a_source_language_the_model_does_not_read_is_refused(models):
    translator = Translator.load(models["tagged"], beam=2, workers=1)
    problem = "--src-lang fr: this model reads de, en, xx"
    with pytest.raises(UserError, match=problem):
        translator.translate(GERMAN, tgt_lang="xx", src_lang="fr")
    with pytest.raises(UserError, match="--src-lang fr: this model reads de:"):
        Translator.load(models["de-en"], workers=1).translate(GERMAN, src_lang="fr")
    ran = nmt("translate", "--checkpoint", models["tagged"], "--tgt-lang", "xx", "--src-lang",
              "fr", input="der Hund.\n")  # fmt: skip
    assert ran.returncode == 2 and ran.stderr.startswith(f"error: {problem}"), ran.stderr
    with served(f"m={models['tagged']}") as client:
        item = {"src": GERMAN[0], "id": "m", "tgt_lang": "xx", "src_lang": "fr"}
        assert refused(client, item, "src_lang").startswith("this model reads de, en, xx")


def test_a_chain_through_a_language_they_do_not_meet_in_names_through(models):
    with pytest.raises(UserError, match="--through xx: the two models meet in en, not xx"):
        Translator.load(models["de-en"], then=models["en-xx"], through="xx")
    ran = nmt("translate", "--checkpoint", models["de-en"], "--then", models["en-xx"],
              "--through", "xx", input="der Hund.\n")  # fmt: skip
    assert ran.returncode == 2 and "meet in en, not xx" in ran.stderr, ran.stderr
    assert "must meet in one language" not in ran.stderr


def test_the_server_refuses_what_a_chains_second_model_refuses(models, tmp_path):
    loaded = Translator.load(models["en-xx"], workers=1)
    decode = dataclasses.replace(loaded.config.decode, max_constraints=1)
    strict = dataclasses.replace(loaded.config, decode=decode)
    second = write_checkpoint(tmp_path / "strict.pt", strict, loaded.tokenizer, seed=2)
    item = {"src": GERMAN[0], "id": "de-en", "then": "en-xx", "beam": 2,
            "constraints": {"include": ["a", "b"]}}  # fmt: skip
    with served(f"de-en={models['de-en']}", f"en-xx={second}") as client:
        assert "more than decode.max_constraints=1" in refused(client, item, "constraints")
        assert client.request("GET", "/translator/health")[0] == 200
