"""The server's app in this process (tests/serve/serving.py), serving translators built
here: patched to make the search answer what a trained model seldom does, or under limits of
the test's choosing."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from serving import serving_app

from conftest import make_translator, tiny_experiment, two_way_tokenizer
from nmt.serve.catalog import ServedModel
from nmt.serve.server import Limits, create_app
from nmt.translate import decoding as decoding_module
from nmt.translate.translator import Translator

SENTENCES = ["the dog sees the cat.", "we sleep because a very small bird has slept."]


def test_ranks_the_search_left_empty_are_padded_and_say_so(monkeypatch, tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer)
    found = translator.translate(SENTENCES, beam=3, nbest=3, alignments=True)
    search = decoding_module.search_batch  # one hypothesis per sentence, as a tiny
    # vocabulary may leave
    monkeypatch.setattr(
        decoding_module,
        "search_batch",
        lambda *args, **options: [h[:1] for h in search(*args, **options)],
    )
    app = create_app({"demo": ServedModel("demo", translator)}, workers=1)
    options = {"id": "demo", "beam": 3, "n_best": 3, "alignments": True}
    items = [{"src": src, **options} for src in SENTENCES]
    with serving_app(app) as client:
        status, answer = client.translate(items)
    assert status == 200, answer
    assert [len(rank) for rank in answer] == [2, 2, 2]  # every rank, for every input
    for column, (src, translation) in enumerate(zip(SENTENCES, found, strict=True)):
        best = translation.nbest[0]
        assert (answer[0][column]["tgt"], answer[0][column]["align"]) == (best.text, best.alignment)
        for rank in (1, 2):
            assert answer[rank][column] == {
                "src": src,
                "tgt": "",
                "pred_score": None,
                "n_best": 3,
                "truncated": False,
                "align": "",
            }


FIELDS = (
    "src, id, beam, n_best, alignments, attention, constraints, prefix, tgt_lang, through, "
    "src_lang, then, markup, markup_placement, adapter"
)
# What the server answers, each naming something the client can change (a field of the
# request) or the operator can (a flag of nmt serve): body, status, detail (for most 422s
# the loc and msg of its one error).
REFUSALS = {
    "n_best above the default beam": (
        [{"src": "a", "id": "demo", "n_best": 6}],
        422,
        (
            ["body", 0, "n_best"],
            "n_best must be at most beam (5), got 6: ask for a larger beam (at most 16) or a "
            "smaller n_best",
        ),
    ),
    "n_best above the beam asked": (
        [{"src": "a", "id": "demo", "beam": 2, "n_best": 3}],
        422,
        (
            ["body", 0, "n_best"],
            "n_best must be at most beam (2), got 3: ask for a larger beam (at most 16) or a "
            "smaller n_best",
        ),
    ),
    "n_best differing": (
        [{"src": "a", "id": "demo"}, {"src": "b", "id": "demo", "beam": 2, "n_best": 2}],
        422,
        (
            ["body", 1, "n_best"],
            "all inputs of a request need the same n_best; earlier ones have 1: give this one "
            "n_best 1 too, or send it in another request",
        ),
    ),
    "sampling asked for": (
        [{"src": "a", "id": "demo", "sample": True}],
        422,
        (["body", 0, "sample"], f"unknown field; the fields here are {FIELDS}"),
    ),
    "a misspelt field": (
        [{"src": "a", "id": "demo", "nbest": 2}],
        422,
        (["body", 0, "nbest"], f"unknown field; did you mean n_best? the fields here are {FIELDS}"),
    ),
    "a misspelt constraints field": (
        [{"src": "a", "id": "demo", "constraints": {"includes": ["hund"]}}],
        422,
        (
            ["body", 0, "constraints", "includes"],
            "unknown field; did you mean include? the fields here are include, exclude",
        ),
    ),
    "no tgt_lang for a model that writes two": (
        [{"src": "a", "id": "two-way"}],
        422,
        (["body", 0, "tgt_lang"], "this model writes de, en: set tgt_lang to the one to write"),
    ),
    "a tgt_lang the model does not write": (
        [{"src": "a", "id": "two-way", "tgt_lang": "fr"}],
        422,
        (["body", 0, "tgt_lang"], "tgt_lang 'fr': this model writes de, en only; set one of them"),
    ),
    "a tgt_lang of a model that writes one": (
        [{"src": "a", "id": "demo", "tgt_lang": "fr"}],
        422,
        (
            ["body", 0, "tgt_lang"],
            "tgt_lang 'fr': this model writes only de; set tgt_lang to de or omit it",
        ),
    ),
    "a src_lang the model does not read": (
        [{"src": "a", "id": "two-way", "tgt_lang": "de", "src_lang": "fr"}],
        422,
        (
            ["body", 0, "src_lang"],
            "this model reads de, en: name one of them, or leave it out to have each line's "
            "language read from its text",
        ),
    ),
    "a pivot that is the target": (
        [{"src": "a", "id": "two-way", "tgt_lang": "de", "through": "de"}],
        422,
        (
            ["body", 0, "through"],
            "de is the language translated into, and a pivot lies between the source and the "
            "target: translate directly, without a pivot",
        ),
    ),
    "a lone surrogate": (
        b'[{"src": "\\ud800", "id": "demo"}]',
        422,
        (
            ["body", 0, "src"],
            "Value error, not valid Unicode at character 0 (a lone surrogate, such as \\ud800): "
            "send whole characters",
        ),
    ),
    "a lone surrogate in a constraint": (
        b'[{"src": "a", "id": "demo", "constraints": {"exclude": ["b", "\\udc00"]}}]',
        422,
        (
            ["body", 0, "constraints", "exclude"],
            "Value error, not valid Unicode at character 0 (a lone surrogate, such as \\ud800): "
            "send whole characters",
        ),
    ),
    "markup with what names one sentence's translation": (
        [{"src": "a <b>b</b>", "id": "demo", "markup": "html", "alignments": True}],
        422,
        (
            ["body", 0, "markup"],
            "a marked-up src is answered once, with its tags, from the translations of the "
            "sentences it holds, so alignments cannot go with markup: leave them out, or send "
            "plain text",
        ),
    ),
    "XML that is not well-formed": (
        [{"src": "a", "id": "demo"}, {"src": "a <b>b</i>", "id": "demo", "markup": "xml"}],
        422,
        (
            ["body", 1, "src"],
            "not well-formed XML at line 1, column 7: </i> where </b> was expected: close "
            "each element in order, or send markup html",
        ),
    ),
    "too many sentences": (
        [{"src": "a", "id": "demo"}] * 3,
        422,
        "a request holds at most 2 sentences (this server's --max-sentences), got 3; send "
        "them in several requests",
    ),
    "an unknown model": (
        [{"src": "a", "id": "nope"}],
        404,
        "unknown model id 'nope': set id to one this server has, 'demo', 'two-way' "
        "(GET /translator/models)",
    ),
    "a body over the limit": (
        [{"src": "a" * 2048, "id": "demo"}],
        413,
        "the body is larger than this server's limit of 2048 bytes (--max-body-kib): send "
        "fewer or shorter sentences per request",
    ),
    "a body not in UTF-8": (
        b'[{"src": "caf\xe9", "id": "demo"}]',
        400,
        "the body is not UTF-8 (byte 13: invalid continuation byte); send it encoded as UTF-8",
    ),
}


@pytest.fixture(scope="module")
def refusing(corpus_dir, tokenizer):
    """A server of a model that writes German and one that writes German or English, with
    small limits."""
    two_way = tiny_experiment(corpus_dir, "data.directions=[en-de,de-en]")
    models = {
        "demo": ServedModel("demo", make_translator(tiny_experiment(corpus_dir), tokenizer)),
        "two-way": ServedModel("two-way", make_translator(two_way, two_way_tokenizer(tokenizer))),
    }
    app = create_app(models, limits=Limits(max_sentences=2, max_body_bytes=2048), workers=1)
    with serving_app(app) as client:
        yield client


@pytest.mark.parametrize("case", REFUSALS)
def test_every_refusal_says_what_to_change(refusing, case):
    body, status, detail = REFUSALS[case]
    got, answer = refusing.translate(body)
    assert got == status, answer
    if status == 422 and isinstance(detail, tuple):
        ((error,),) = answer.values()
        assert (error["loc"], error["msg"]) == detail
    else:
        assert answer == {"detail": detail}


def test_a_route_that_is_not_there_names_those_that_are(refusing):
    routes = (
        "POST /translator/translate; GET /translator/models, /translator/limits and "
        "/translator/health; the page at / and the API docs at /docs"
    )
    assert refusing.request("GET", "/translate") == (
        404,
        {"detail": f"no such route; this server has {routes}"},
    )
    assert refusing.request("GET", "/translator/translate") == (
        405,
        {"detail": "GET is not allowed here; use POST"},
    )
    assert refusing.request("POST", "/translator/models", []) == (
        405,
        {"detail": "POST is not allowed here; use GET"},
    )
    assert refusing.request("POST", "/static/app.js", []) == (
        405,
        {"detail": "POST is not allowed here; use GET, HEAD"},
    )


def test_a_request_draws_the_same_samples_whoever_shares_its_batch(tiny_config, tokenizer):
    """Sampling seeds each sentence by its place in its own request: merged with another
    request's in one batch (the window waits for a batch as large as the first request's),
    each draws what it draws alone."""
    translator = make_translator(tiny_config, tokenizer, sample=True, nbest=2, seed=5)
    app = create_app(
        {"demo": ServedModel("demo", translator)}, limits=Limits(window=2.0), workers=1
    )
    requests = [
        [{"src": src, "id": "demo"} for src in pair] for pair in (SENTENCES, SENTENCES[::-1])
    ]
    with serving_app(app) as client:
        assert client.translate(requests[0] + requests[1])[0] == 200  # a batch of four
        with ThreadPoolExecutor(2) as pool:
            merged = list(pool.map(client.translate, requests))
    for request, (status, answer) in zip(requests, merged, strict=True):
        expected = translator.translate([item["src"] for item in request])
        assert status == 200
        assert [[a["tgt"] for a in rank] for rank in answer] == [
            [t.nbest[rank].text for t in expected] for rank in range(2)
        ]


def test_an_imported_marian_model_is_served_like_any_other(tmp_path, corpus_dir):
    pytest.importorskip("transformers", reason="pip install 'nmt[hub]'")
    from conftest import write_marian_model
    from nmt.export.marian import import_marian
    from nmt.translate.translator import Translator

    directory = write_marian_model(tmp_path / "opus-mt-en-de", corpus_dir)
    translator = Translator.load(import_marian(str(directory), tmp_path / "imported.pt"))
    app = create_app({"opus": ServedModel("opus", translator)}, workers=1)
    with serving_app(app) as client:
        status, answer = client.translate([{"src": src, "id": "opus"} for src in SENTENCES])
    assert status == 200, answer
    assert [item["tgt"] for item in answer[0]] == [t.text for t in translator.translate(SENTENCES)]


def test_marked_up_sources_come_back_with_their_tags_beside_plain_ones(demo_rnnsearch):
    translator = Translator.load(demo_rnnsearch)
    app = create_app({"demo": ServedModel("demo", translator)}, workers=1)
    marked = "<p>I bring <b>the cities</b> back. They sleep.</p>"
    body = [
        {"src": marked, "id": "demo", "markup": "html"},
        {"src": "I bring the cities back.", "id": "demo"},
        {"src": "<br/>", "id": "demo", "markup": "xml"},
    ]
    with serving_app(app) as client:
        status, answer = client.translate(body)
    assert status == 200, answer
    tagged, plain, only_tags = (rank[0] for rank in zip(*answer, strict=True))
    assert tagged["tgt"] == translator.translate(marked, markup="html").text
    assert tagged["tgt"].startswith("<p>") and "<b>die Städte</b>" in tagged["tgt"]
    assert plain["tgt"] == translator.translate(body[1]["src"]).text  # no tags, as sent
    assert only_tags["tgt"] == "<br/>"


def test_a_requests_markup_placement_is_taken_or_refused_naming_the_field(corpus_dir, tokenizer):
    translator = make_translator(tiny_experiment(corpus_dir), tokenizer)
    app = create_app({"m": ServedModel("m", translator)}, workers=1)
    marked = "<p>the <b>dog</b> sees the cat.</p>"
    with serving_app(app) as client:
        status, answer = client.translate(
            [{"src": marked, "id": "m", "markup": "html", "markup_placement": "projection"}]
        )
        assert status == 200 and answer[0][0]["tgt"].count("<b>") == 1
        assert answer[0][0]["tgt"] == translator.translate(marked, markup="html").text
        for item, wanted in (
            ({"markup": "html", "markup_placement": "model"}, "data.markup_augment"),
            ({"markup_placement": "projection"}, "set markup too"),
        ):
            status, answer = client.translate([{"src": marked, "id": "m", **item}])
            assert status == 422, answer
            (error,) = answer["detail"]
            assert error["loc"] == ["body", 0, "markup_placement"] and wanted in error["msg"]
