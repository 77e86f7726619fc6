"""The vocabulary shortlist: IBM Model 1 finds each source piece's translations, a batch may
write the union of its pieces' candidates with the frequent, special and constrained pieces,
and translation under `--shortlist K` writes nothing else."""

import pytest
import torch

from conftest import TINY_TRANSFORMER, make_translator, nmt, tiny_experiment, write_checkpoint
from nmt.corpus.shortlist_learning import learn_shortlist
from nmt.data.batching import pad
from nmt.errors import UserError
from nmt.search.beam import beam_search
from nmt.search.constraints import Constraints
from nmt.search.hypothesis import Columns
from nmt.translate.shortlist import Shortlist, load_shortlist, shortlist_file
from nmt.translate.translator import Translator

# source 10 is always translated by 20, 11 by 21, 12 by 22; target 5 ends every sentence
PAIRS = [
    ([10, 11], [20, 21, 5]),
    ([11, 12], [21, 22, 5]),
    ([10, 12], [22, 20, 5]),
    ([10], [20, 5]),
    ([12, 11, 10], [21, 20, 22, 5]),
]


def test_ibm_model_1_ranks_each_source_pieces_translation_first():
    shortlist = learn_shortlist(PAIRS, source_size=15, target_size=30, depth=2, frequent=1)
    assert shortlist.candidates[10:13, 0].tolist() == [20, 21, 22]
    assert (shortlist.candidates[:10] == -1).all()  # never seen: no candidates
    assert shortlist.frequent.tolist() == [5]


def test_a_batch_may_write_its_candidates_the_frequent_specials_and_constrained_pieces():
    candidates = torch.full((15, 3), -1)
    candidates[10] = torch.tensor([20, 23, 24])
    candidates[11] = torch.tensor([21, 25, -1])
    shortlist = Shortlist(candidates, frequent=torch.tensor([5, 6]), target_size=30)
    guide = Constraints(include=((26, 27),), prefix=(28, 31))  # 31: a copied piece, beyond V
    columns = shortlist.columns([[10, 11], [11]], best=2, always=(3,), constraints=[guide, None])
    assert columns.tolist() == [3, 5, 6, 20, 21, 23, 25, 26, 27, 28]
    unseen = shortlist.columns([[7]], best=3, always=(3,))  # no candidates: the fallback
    assert unseen.tolist() == [3, 5, 6]


@pytest.fixture(scope="module")
def checkpoint(corpus_dir, tokenizer, tmp_path_factory):
    """A perturbed tiny Transformer and the shortlist `nmt shortlist` learns for it."""
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    path = write_checkpoint(tmp_path_factory.mktemp("shortlisted") / "model.pt", config, tokenizer)
    with torch.no_grad():
        payload = torch.load(path, weights_only=True)
        for weights in payload["model"].values():
            if weights.is_floating_point():
                weights.add_(0.3 * torch.randn_like(weights))
        torch.save(payload, path)
    ran = nmt("shortlist", "--checkpoint", path, "--depth", "4", "--frequent", "3")
    assert ran.returncode == 0, ran.stderr
    assert f"wrote {shortlist_file(path)}" in ran.stdout
    return path


def test_translations_hold_only_their_sentences_columns(checkpoint):
    translator = Translator.load(checkpoint, shortlist=2, beam=3)
    plain = Translator.load(checkpoint, beam=3)
    shortlist, tgt = translator.shortlist, translator.tokenizer.tgt
    lines = ["the dog sees the cat .", "a very small bird has slept"]
    changed = 0
    for line in lines:
        src_ids = translator.tokenizer.src.encode([line])
        specials = (tgt.eos_id, tgt.unk_id, tgt.bos_id, tgt.pad_id)
        allowed = shortlist.columns(src_ids, 2, specials).tolist()
        found = translator.translate(line).nbest[0].hypothesis.tokens
        assert set(found) <= set(allowed)
        changed += found != plain.translate(line).nbest[0].hypothesis.tokens
    assert changed  # the untrained model writes pieces outside it otherwise


def test_the_cli_translates_with_a_shortlist_and_says_what_is_missing(checkpoint, tmp_path):
    ran = nmt("translate", "--checkpoint", checkpoint, "--shortlist", "3", input="the dog\n")
    assert ran.returncode == 0 and ran.stdout.count("\n") == 1, ran.stderr
    deeper = nmt("translate", "--checkpoint", checkpoint, "--shortlist", "5", input="a\n")
    assert deeper.returncode == 2 and "holds 4 candidates per source piece" in deeper.stderr
    lone = tmp_path / "lone.pt"
    lone.write_bytes(checkpoint.read_bytes())
    missing = nmt("translate", "--checkpoint", lone, "--shortlist", "3", input="a\n")
    assert missing.returncode == 2
    assert f"needs {tmp_path / 'lone.shortlist.pt'}" in missing.stderr
    assert "nmt shortlist --checkpoint" in missing.stderr


def test_a_shortlist_of_other_vocabularies_is_refused(checkpoint):
    with pytest.raises(UserError, match="built for vocabularies of .* build it again"):
        load_shortlist(checkpoint, 10, 10)


def test_a_copy_model_is_refused_a_shortlist(corpus_dir, tokenizer, tmp_path):
    config = tiny_experiment(corpus_dir, "model.copy=true")
    path = write_checkpoint(tmp_path / "copy.pt", config, tokenizer)
    assert nmt("shortlist", "--checkpoint", path).returncode == 0
    with pytest.raises(UserError, match="a model that copies .* without --shortlist"):
        Translator.load(path, shortlist=3)


@pytest.mark.parametrize("quantize", [None, "int8"])
def test_a_shortlist_of_every_piece_translates_as_none_does(checkpoint, quantize):
    """The output layer cut to all its rows (int8 rows with their scales, under --quantize
    int8) scores every piece as the whole layer does."""
    translator = Translator.load(checkpoint, quantize=quantize)
    tokenizer, model = translator.tokenizer, translator.model
    ids = tokenizer.src.encode(["the dog sees the cat .", "a very small bird has slept"])
    src = pad(ids, tokenizer.src.pad_id)
    lengths = torch.tensor([len(row) for row in ids])
    limits = torch.tensor([12, 12])
    tgt = tokenizer.tgt
    every = Columns(torch.arange(tgt.size), tgt.size)
    found = [
        beam_search(model, src, lengths, tgt.bos_id, tgt.eos_id, limits, 3, 1.0, nbest=3, **more)
        for more in ({}, {"shortlist": every})
    ]
    for plain, cut in zip(*found, strict=True):
        assert [h.tokens for h in cut] == [h.tokens for h in plain]
        assert [h.score for h in cut] == pytest.approx([h.score for h in plain], abs=1e-5)


def test_a_translator_given_decode_shortlist_without_its_shortlist_says_how_to_load_one(
    corpus_dir, tokenizer
):
    with pytest.raises(UserError, match=r"Translator.load\(checkpoint, shortlist=K\)"):
        make_translator(tiny_experiment(corpus_dir), tokenizer, shortlist=3)
