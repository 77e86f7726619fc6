"""Random online back-translation (nmt/train/backtranslation.py): what replaces a source is
the model's own greedy translation of the target into the other language, made in eval mode
without gradients; the draw is a pure function of the seed and the update; a run with it
resumes exactly."""

import dataclasses

import pytest
import torch

from conftest import TINY_CONFIG, tiny_experiment, two_way_tokenizer
from nmt.checkpoint import load_checkpoint
from nmt.config import ConfigError, load_config
from nmt.data.batching import make_batch, pad
from nmt.errors import UserError
from nmt.model.seq2seq import build_model
from nmt.search import greedy_search, max_lengths
from nmt.search.hypothesis import Columns
from nmt.train import backtranslation
from nmt.train.backtranslation import OnlineBacktranslation
from nmt.train.experiment import train_experiment

TWO_WAY = ("data.directions=[en-de,de-en]",)


@pytest.fixture(params=["source", "decoder_bos"])
def setting(request, corpus_dir, tokenizer):
    """(config with online back-translation, tagged tokenizer, untrained model, a batch), with
    the tag before the source or as the decoder's start (data.tags)."""
    place = f"data.tags={request.param}"
    config = tiny_experiment(corpus_dir, *TWO_WAY, place, "train.online_backtranslation=1.0")
    tagged = dataclasses.replace(two_way_tokenizer(tokenizer), tag_place=request.param)
    torch.manual_seed(0)
    model = build_model(config.model, tagged.src, tagged.tgt).train()
    lines = (corpus_dir / "train.en").read_text("utf-8").splitlines()[:6]
    german = (corpus_dir / "train.de").read_text("utf-8").splitlines()[:6]
    into_de, into_en = tagged.towards("de"), tagged.towards("en")
    src = into_de.src.encode(lines[:3]) + into_en.src.encode(german[3:])
    tgt = into_de.encode_targets(german[:3]) + into_en.encode_targets(lines[3:])
    return config, tagged, model, make_batch(src, tgt, tagged.tgt, tagged.src.pad_id)


def test_each_chosen_source_is_the_models_greedy_translation_of_its_target(setting, monkeypatch):
    config, tagged, model, batch = setting
    seen = []
    search = backtranslation.greedy_search

    def watched(model, *args, **options):
        seen.append((model.training, torch.is_grad_enabled()))
        return search(model, *args, **options)

    monkeypatch.setattr(backtranslation, "greedy_search", watched)
    changed = OnlineBacktranslation(config, tagged)(model, batch, step=0)
    assert seen == [(False, False)] * 2 and model.training  # one search per language drawn
    assert all(parameter.grad is None for parameter in model.parameters())
    assert torch.equal(changed.tgt_out, batch.tgt_out) and torch.equal(changed.tgt_in, batch.tgt_in)
    tags, at_decoder = tagged.tgt.tags, tagged.tag_place == "decoder_bos"
    model.eval()
    for row in range(6):
        language, other = ("de", "en") if row < 3 else ("en", "de")
        target = batch.tgt_out[row][batch.tgt_out[row] != tagged.tgt.pad_id][:-1].tolist()
        request = target if at_decoder else [tags[other], *target]
        start = tags[other] if at_decoder else tagged.tgt.bos_id
        lengths = torch.tensor([len(request)])
        limits = max_lengths(lengths, config.decode.max_len_ratio, config.decode.max_len_extra)
        with torch.no_grad():
            (found,) = greedy_search(
                model, pad([request], 0), lengths, start, tagged.tgt.eos_id, limits
            )
        expected = found.tokens if at_decoder else [tags[language], *found.tokens]
        length = int(changed.src_lengths[row])
        original = batch.src[row][: int(batch.src_lengths[row])].tolist()
        assert changed.src[row][:length].tolist() == (expected if found.tokens else original)
        assert int(batch.tgt_in[row, 0]) == (tags[language] if at_decoder else tagged.tgt.bos_id)


def test_restricted_it_translates_into_each_language_with_that_languages_pieces(
    setting, corpus_dir
):
    """With decode.restrict_to_target_language, each synthetic source is the restricted
    greedy translation: only pieces the drawn language's training targets used."""
    _, tagged, model, batch = setting
    german = (corpus_dir / "train.de").read_text("utf-8").splitlines()
    english = (corpus_dir / "train.en").read_text("utf-8").splitlines()
    size = tagged.tgt.size
    pieces = {  # a few pieces each, so that an untrained model must be held to them
        language: torch.bincount(torch.tensor(tagged.tgt.encode(lines[:2])[0]), minlength=size)
        for language, lines in (("de", german), ("en", english))
    }
    tagged = dataclasses.replace(
        tagged, target_pieces={language: c.tolist() for language, c in pieces.items()}
    )
    restricted = tiny_experiment(
        corpus_dir,
        *TWO_WAY,
        f"data.tags={tagged.tag_place}",
        "train.online_backtranslation=1.0",
        "decode.restrict_to_target_language=true",
    )
    changed = OnlineBacktranslation(restricted, tagged)(model, batch, step=0)
    decode, tags = restricted.decode, tagged.tgt.tags
    at_decoder = tagged.tag_place == "decoder_bos"
    model.eval()
    for row in range(6):
        language, other = ("de", "en") if row < 3 else ("en", "de")
        allowed = torch.tensor(tagged.language_pieces(other))
        target = batch.tgt_out[row][batch.tgt_out[row] != tagged.tgt.pad_id][:-1].tolist()
        request = target if at_decoder else [tags[other], *target]
        start = tags[other] if at_decoder else tagged.tgt.bos_id
        lengths = torch.tensor([len(request)])
        limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra)
        with torch.no_grad():
            (found,) = greedy_search(
                model,
                pad([request], 0),
                lengths,
                start,
                tagged.tgt.eos_id,
                limits,
                shortlist=Columns(allowed, size),
            )
        assert found.tokens and set(found.tokens) <= set(allowed.tolist())
        expected = found.tokens if at_decoder else [tags[language], *found.tokens]
        length = int(changed.src_lengths[row])
        assert changed.src[row][:length].tolist() == expected


def test_the_draw_depends_on_the_seed_and_the_update_only(setting, corpus_dir):
    _, tagged, model, batch = setting
    config = tiny_experiment(
        corpus_dir, *TWO_WAY, "train.online_backtranslation=0.5", "train.seed=3"
    )
    first = OnlineBacktranslation(config, tagged)
    again = OnlineBacktranslation(config, tagged)
    one, two = first(model, batch, step=7), again(model, batch, step=7)
    assert torch.equal(one.src, two.src) and torch.equal(one.src_lengths, two.src_lengths)
    drawn = {tuple(first(model, batch, step=step).src_lengths.tolist()) for step in range(8)}
    assert len(drawn) > 1  # other updates choose other pairs
    assert first.update(model, [batch], step=0)[0] is not batch
    later = tiny_experiment(
        corpus_dir,
        *TWO_WAY,
        "train.online_backtranslation=0.5",
        "train.online_backtranslation_after=5",
    )
    assert OnlineBacktranslation(later, tagged).update(model, [batch], step=4)[0] is batch


@pytest.mark.parametrize("place", ["source", "decoder_bos"])
def test_a_run_with_it_resumes_exactly_and_differs_from_one_without(tmp_path, corpus_dir, place):
    keys = [*TWO_WAY, f"data.tags={place}", "train.valid_every=4", "train.batch_tokens=300"]
    online = ["train.online_backtranslation=0.5", "train.online_backtranslation_after=2"]
    straight, split, plain = tmp_path / "straight", tmp_path / "split", tmp_path / "plain"
    train_experiment(tiny_experiment(corpus_dir, *keys, *online, "train.max_steps=8"), straight)
    train_experiment(tiny_experiment(corpus_dir, *keys, *online, "train.max_steps=4"), split)
    train_experiment(
        tiny_experiment(corpus_dir, *keys, *online, "train.max_steps=8"), split, resume=True
    )
    train_experiment(tiny_experiment(corpus_dir, *keys, "train.max_steps=8"), plain)
    a, b, c = (load_checkpoint(run / "last.pt")["model"] for run in (straight, split, plain))
    assert all(torch.equal(a[name], b[name]) for name in a)
    assert any(not torch.equal(a[name], c[name]) for name in a)


def test_a_run_resumes_with_it_switched_on_while_no_update_has_used_it(tmp_path, corpus_dir):
    """Keys that have not taken effect may change on resume (on, off, a later start); once
    an update was back-translated they may not."""
    keys = [*TWO_WAY, "train.valid_every=4", "train.batch_tokens=300"]
    online = ["train.online_backtranslation=0.5", "train.online_backtranslation_after=4"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    train_experiment(tiny_experiment(corpus_dir, *keys, *online, "train.max_steps=6"), straight)
    train_experiment(tiny_experiment(corpus_dir, *keys, "train.max_steps=4"), split)
    train_experiment(
        tiny_experiment(corpus_dir, *keys, *online, "train.max_steps=6"), split, resume=True
    )
    a, b = (load_checkpoint(run / "last.pt")["model"] for run in (straight, split))
    assert all(torch.equal(a[name], b[name]) for name in a)
    later = tiny_experiment(
        corpus_dir, *keys, *online[:1], "train.online_backtranslation_after=5", "train.max_steps=8"
    )
    with pytest.raises(UserError, match="online_backtranslation_after: 4 -> 5"):
        train_experiment(later, split, resume=True)


@pytest.mark.parametrize(
    "overrides, key, message",
    [
        (["train.online_backtranslation=1.5"], "train.online_backtranslation", r"in \[0, 1\]"),
        (
            ["train.online_backtranslation_after=100"],
            "train.online_backtranslation_after",
            "set online_backtranslation",
        ),
        (["train.online_backtranslation=0.3"], "train.online_backtranslation", "writes de only"),
    ],
)
def test_its_keys_are_checked(corpus_dir, overrides, key, message):
    with pytest.raises(ConfigError, match=message) as raised:
        load_config(TINY_CONFIG, [f"data.path={corpus_dir}", *overrides])
    assert raised.value.path == key
