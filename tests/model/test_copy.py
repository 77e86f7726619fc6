"""Copying from the source (nmt/model/copy.py): the mixture at its two extremes and against a
direct computation, extended ids back to text, step-by-step = teacher-forced, the loss."""

from __future__ import annotations

import pytest
import torch

import nmt.model.copy as copy_module
from conftest import TINY_CONFIG, TINY_TRANSFORMER, copy_model, tiny_experiment
from nmt.config import ConfigError, load_config
from nmt.data.batching import pad
from nmt.model.seq2seq import Seq2Seq, build_model

SOURCES = ["the dog sees the cat.", "a very small bird has slept because we sleep."]
TARGETS = ["der Hund sieht die Katze.", "ein sehr kleiner Vogel hat geschlafen."]


def batch(tokenizer):
    src_ids = tokenizer.src.encode(SOURCES)
    tgt_ids = [
        [tokenizer.tgt.bos_id, *ids, tokenizer.tgt.eos_id] for ids in tokenizer.tgt.encode(TARGETS)
    ]
    src = pad(src_ids, tokenizer.src.pad_id)
    lengths = torch.tensor([len(ids) for ids in src_ids])
    tgt = pad(tgt_ids, tokenizer.tgt.pad_id)
    return src, lengths, tgt[:, :-1], tgt[:, 1:]


def stepped(model, src, lengths, tgt_in):
    """Each step's scores and weights, [B, T, V'] and [B, T, H, S]."""
    state = model.init_state(model.encode(src, lengths))
    scores, weights = [], []
    for t in range(tgt_in.size(1)):
        step_scores, state, step_weights = model.step(state, tgt_in[:, t])
        scores.append(step_scores)
        weights.append(step_weights)
    return torch.stack(scores, 1), torch.stack(weights, 1)


@pytest.mark.parametrize("decoder", ["rnnsearch", "transformer"])
def test_with_p_gen_1_a_copy_model_is_the_plain_model(corpus_dir, tokenizer, decoder):
    extra = TINY_TRANSFORMER if decoder == "transformer" else ()
    model = copy_model(corpus_dir, tokenizer, *extra, gate=60.0)
    plain = Seq2Seq(model.encoder, model.decoder, model.tgt_pad_id)
    src, lengths, tgt_in, tgt_out = batch(tokenizer)
    vocab = tokenizer.tgt.size
    copied, _ = stepped(model, src, lengths, tgt_in)
    logits, _ = stepped(plain, src, lengths, tgt_in)
    assert copied.shape[-1] == vocab + src.size(1)
    torch.testing.assert_close(copied[..., :vocab], logits.log_softmax(-1), atol=1e-5, rtol=0)
    assert copied[..., vocab:].max() < -50
    torch.testing.assert_close(
        model(src, lengths, tgt_in, tgt_out, 0.1), plain(src, lengths, tgt_in, tgt_out, 0.1)
    )


def test_with_p_gen_0_all_mass_is_copied_in_proportion_to_attention(corpus_dir, separate_tokenizer):
    model = copy_model(corpus_dir, separate_tokenizer, gate=-60.0)
    src = torch.tensor([separate_tokenizer.src.encode(["the dog sees the dog."])[0]])
    repeated = [i for i, token in enumerate(src[0].tolist()) if src[0].tolist().count(token) > 1]
    assert repeated, "the sentence repeats a source piece"
    lengths = torch.tensor([src.size(1)])
    state = model.init_state(model.encode(src, lengths))
    scores, _, weights = model.step(state, torch.tensor([separate_tokenizer.tgt.bos_id]))
    expected = torch.zeros(scores.shape)
    for position, target in enumerate(model.copy.source_ids(src)[0].tolist()):
        expected[0, target] += weights[0, :, position].mean()  # repeated pieces add up
    torch.testing.assert_close(scores.exp(), expected, atol=1e-6, rtol=1e-5)


def test_unmapped_source_pieces_get_extended_ids_that_decode_to_their_text(separate_tokenizer):
    src, tgt = separate_tokenizer.src, separate_tokenizer.tgt
    model = build_model(load_config(TINY_CONFIG, ["model.copy=true"]).model, src, tgt)
    sentence = "the dog sees the cat."
    ids = src.encode([sentence])[0]
    pieces = src.pieces(ids)
    extended = model.copy.source_ids(torch.tensor([ids]))[0].tolist()
    target_pieces = tgt.pieces(range(tgt.size))
    for position, (piece, target) in enumerate(zip(pieces, extended, strict=True)):
        if piece in target_pieces:
            assert target == target_pieces.index(piece)
        else:  # V + the first position of this piece
            assert target == tgt.size + pieces.index(piece) <= tgt.size + position
    assert any(target >= tgt.size for target in extended)
    assert tgt.decode(extended, pieces) == sentence  # copying every piece gives the source back
    assert tgt.pieces(extended, pieces) == pieces


def test_the_loss_is_the_cross_entropy_of_the_mixture_computed_directly(
    corpus_dir, separate_tokenizer, monkeypatch
):
    model = copy_model(corpus_dir, separate_tokenizer)
    src, lengths, tgt_in, tgt_out = batch(separate_tokenizer)
    state = model.decoder.init_state(model.encoder(src, lengths))
    features, _, weights = model.decoder(state, tgt_in)
    p_gen = torch.sigmoid(model.copy.gate(features))  # [B, T, 1]
    ids = model.copy.training_ids(src)[:, None, :].expand(-1, tgt_in.size(1), -1)
    copied = torch.zeros(*tgt_in.shape, separate_tokenizer.tgt.size).scatter_add(
        -1, ids, weights.mean(2)
    )
    probs = p_gen * model.output_layer(features).softmax(-1) + (1 - p_gen) * copied
    eps, real = 0.1, tgt_out != separate_tokenizer.tgt.pad_id
    per_token = -(1 - eps) * probs.gather(-1, tgt_out[..., None]).squeeze(-1).log()
    per_token = per_token - eps * probs.log().mean(-1)
    expected = per_token[real].sum()
    torch.testing.assert_close(model(src, lengths, tgt_in, tgt_out, eps), expected)
    assert (model.copy.training_ids(src) < separate_tokenizer.tgt.size).all()

    # chunked and checkpointed, the loss and its gradients are those of one chunk
    model.zero_grad()
    model(src, lengths, tgt_in, tgt_out, eps).backward()
    whole = [parameter.grad.clone() for parameter in model.parameters()]
    monkeypatch.setattr(copy_module, "CHUNK_ROWS", 3)
    model.zero_grad()
    loss = model(src, lengths, tgt_in, tgt_out, eps)
    loss.backward()
    torch.testing.assert_close(loss, expected)
    for parameter, gradient in zip(model.parameters(), whole, strict=True):
        torch.testing.assert_close(parameter.grad, gradient, atol=1e-6, rtol=1e-4)


def test_a_transformer_copies_with_its_copy_layer_whatever_plots_show(
    corpus_dir, separate_tokenizer
):
    model = copy_model(corpus_dir, separate_tokenizer, *TINY_TRANSFORMER, "model.copy_layer=1")
    src, lengths, tgt_in, _ = batch(separate_tokenizer)
    stepwise, weights = stepped(model, src, lengths, tgt_in)
    forced, forced_weights = model.teacher_forcing(src, lengths, tgt_in)
    torch.testing.assert_close(stepwise, forced, atol=1e-5, rtol=0)
    torch.testing.assert_close(weights, forced_weights, atol=1e-6, rtol=0)
    model.choose_attention_layer(2)  # what plots show, not what it copies with
    shown, shown_weights = stepped(model, src, lengths, tgt_in)
    torch.testing.assert_close(shown, stepwise)
    assert not torch.allclose(shown_weights, weights)


def test_copy_settings_that_make_no_sense_are_refused(corpus_dir):
    with pytest.raises(ConfigError, match="model.copy_layer") as unused:
        tiny_experiment(corpus_dir, "model.copy_layer=1")
    assert "copies with one of its layers" in str(unused.value)
    with pytest.raises(ConfigError, match="model.copy_layer.*1 to 2.*got 3"):
        tiny_experiment(corpus_dir, *TINY_TRANSFORMER, "model.copy=true", "model.copy_layer=3")
