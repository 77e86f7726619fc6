"""The server's app in this process (tests/serve/serving.py), where a test can patch the
translators it serves to make the search answer what a trained model seldom does."""

from serving import serving_app

from conftest import make_translator
from nmt.serve.catalog import ServedModel
from nmt.serve.server import create_app

SENTENCES = ["the dog sees the cat.", "we sleep because a very small bird has slept."]


def test_ranks_the_search_left_empty_are_padded_and_say_so(monkeypatch, tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer)
    found = translator.translate(SENTENCES, beam=3, nbest=3, alignments=True)
    search = translator._search  # one hypothesis per sentence, as a tiny vocabulary may leave
    monkeypatch.setattr(translator, "_search", lambda *args: [h[:1] for h in search(*args)])
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
