import pytest
import torch

from conftest import make_translator, tiny_model
from nmt.data.demo import generate_pairs
from nmt.search import greedy_search, max_lengths
from nmt.translate import decoding as decoding_module


def test_one_line_out_per_line_in_with_blank_lines_kept(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer)
    lines = ["the dog sees the cat.", "", "   ", "a very small bird has slept because we sleep."]
    results = translator.translate(lines, batch_size=2)
    assert len(results) == 4
    assert results[1].text == "" and results[2].text == ""


def test_order_is_restored_after_length_sorting(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer)
    lines = [
        "the big dog has seen the small cat because she sleeps.",
        "the dog.",
        "we know that the cat sleeps.",
        "a bird.",
    ]
    together = [t.text for t in translator.translate(lines, batch_size=2)]
    alone = [translator.translate([line])[0].text for line in lines]
    assert together == alone


def test_greedy_respects_length_limits(tiny_config):
    model = tiny_model(tiny_config).eval()
    src = torch.randint(4, 50, (3, 6))
    lengths = torch.tensor([6, 6, 6])
    limits = torch.tensor([1, 3, 5])
    hypotheses = greedy_search(model, src, lengths, start=2, eos_id=3, limits=limits)
    for hypothesis, limit in zip(hypotheses, limits.tolist(), strict=True):
        assert len(hypothesis.tokens) <= limit
        assert hypothesis.attention.shape[1:] == (1, 6)


def test_max_lengths_scale_with_source():
    assert max_lengths(torch.tensor([1, 10]), 1.5, 2).tolist() == [4, 17]


@pytest.mark.parametrize("settings", [{"beam": 1}, {"beam": 4, "nbest": 2}])
def test_order_is_restored_with_every_search(tiny_config, tokenizer, settings):
    translator = make_translator(tiny_config, tokenizer, **settings)
    lines = ["the big dog has seen the small cat because she sleeps.", "", "the dog.", "a bird."]
    together = translator.translate(lines, batch_size=2)
    alone = [translator.translate([line])[0] for line in lines]
    assert [[c.text for c in t.nbest] for t in together] == [
        [c.text for c in t.nbest] for t in alone
    ]


def test_nbest_hypotheses_are_distinct_and_blank_lines_have_none(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer, beam=4, nbest=3)
    results = translator.translate(["the dog sees the cat.", "", "we sleep."])
    assert [len(t.hypotheses) for t in results] == [3, 0, 3]
    assert results[1].text == "" and results[1].nbest == []
    for translation in results[::2]:
        assert len({tuple(h.tokens) for h in translation.hypotheses}) == 3
        assert translation.text == translation.nbest[0].text


def test_long_sources_are_cut_to_max_src_len(tiny_config, tokenizer):
    translator = make_translator(tiny_config, tokenizer, max_src_len=12)
    decode = translator.decode
    (result,) = translator.translate(["the dog sees the cat because we sleep. " * 20])
    assert len(result.src_ids) == 12
    limit = max_lengths(torch.tensor([12]), decode.max_len_ratio, decode.max_len_extra)
    assert len(result.hypotheses[0].tokens) <= int(limit)


SENTENCES = [en for en, _ in generate_pairs(23, seed=5)] + ["", "we sleep."]


def candidates(translations):
    return [
        [(c.text, c.score, c.alignment, c.attention.weights.tolist()) for c in t.nbest]
        for t in translations
    ]


@pytest.mark.parametrize("settings", [{"beam": 1}, {"beam": 4, "nbest": 2}])
def test_batches_side_by_side_translate_as_one_after_another(
    tiny_config, tokenizer, settings, one_thread
):
    translator = make_translator(tiny_config, tokenizer, batch_size=4, **settings)
    options = dict(alignments=True, attention=True)
    alone = candidates(translator.translate(SENTENCES, **options))
    translator.workers = 3
    assert candidates(translator.translate(SENTENCES, **options)) == alone
    assert sum(bool(c) for c in alone) == len(SENTENCES) - 1  # one blank line


def test_sampling_draws_per_line_whatever_the_batches_workers_and_calls(
    tiny_config, tokenizer, one_thread
):
    """Each line draws from a generator seeded by decode.seed and its number in the input:
    batches, workers, chunks and a split into calls (`first`) change nothing."""

    def draws(workers=1, batch_size=4, seed=0, split=None):
        translator = make_translator(
            tiny_config, tokenizer, batch_size=batch_size, sample=True, nbest=2, seed=seed
        )
        translator.workers = workers
        if split is None:
            found = translator.translate(SENTENCES)
        else:
            found = [
                *translator.stream(SENTENCES[:split], chunk=3),
                *translator.stream(SENTENCES[split:], chunk=5, first=split),
            ]
        return [[c.text for c in t.nbest] for t in found]

    one = draws()
    assert one == draws(workers=3) == draws(batch_size=7) == draws(split=10) == draws()
    assert one != draws(seed=1)  # another seed draws afresh


def test_a_failing_batch_fails_the_call(tiny_config, tokenizer, monkeypatch):
    translator = make_translator(tiny_config, tokenizer, batch_size=4)
    translator.workers = 2

    def broken(model, tokenizer, src_ids, decode, lines, constraints, **options):
        raise RuntimeError(f"the batch of lines {lines}")

    monkeypatch.setattr(decoding_module, "search_batch", broken)
    with pytest.raises(RuntimeError, match="the batch of lines"):
        translator.translate(SENTENCES)
