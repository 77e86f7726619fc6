"""Random online back-translation (Zhang et al. 2020, `train.online_backtranslation`).

A model trained only on pairs into and out of English never sees a German source asked for
Czech, and asked for it, answers in English. Online back-translation shows it such pairs: for
a share P of each batch's pairs (x -> y, y in language T), the model translates y into a
language L drawn at random among its other target languages, greedily, in eval mode and
without gradients, and the pair trains as (that translation, tagged for T) -> y. The target
stays a real sentence; the source is the model's own, in a language it may never have read
going to T. The tag asking for T stays where data.tags puts it (before the source, or as
the decoder's start). It starts at update `online_backtranslation_after`: an untrained model's
translations teach nothing.

With decode.restrict_to_target_language the model translates as it would at decoding: into
each language with that language's pieces only. An English-centric model asked for Czech
from German answers in English; restricted, its synthetic sources are in the language drawn
from the first update on, not mostly English ones the model could already read.

Which pairs and which languages are drawn from a generator seeded by the run's seed, the
update, the micro-batch and the rank, so a run is reproducible and resumes exactly.
"""

from __future__ import annotations

import torch
from torch import nn

from nmt.config import Experiment
from nmt.data.batching import Batch, make_batch, pad
from nmt.data.tokenizer import Tokenizer
from nmt.search import greedy_search, max_lengths
from nmt.search.hypothesis import Columns

_PRIME = 1_000_003


class OnlineBacktranslation:
    """Turns batches into partly back-translated ones (`__call__`)."""

    def __init__(self, config: Experiment, tokenizer: Tokenizer, rank: int = 0):
        self.share = config.train.online_backtranslation
        self.after = config.train.online_backtranslation_after
        self.seed, self.rank, self.decode = config.train.seed, rank, config.decode
        self.tokenizer = tokenizer
        self.tags = tokenizer.tgt.tags  # language -> its tag's id
        self.language_of = {tag: language for language, tag in self.tags.items()}
        self.at_decoder = tokenizer.tag_place == "decoder_bos"  # else sources start with one
        # language -> the target ids its translations may write (None: every one)
        self.columns = {language: None for language in self.tags}
        if config.decode.restrict_to_target_language and self.share > 0:
            size = tokenizer.tgt.size
            for language in self.tags:
                pieces = torch.tensor(tokenizer.language_pieces(language))
                self.columns[language] = Columns(pieces, size)

    def update(self, model: nn.Module, batches: list[Batch], step: int) -> list[Batch]:
        """The micro-batches of update `step`, partly back-translated once that applies."""
        if self.share == 0 or step < self.after:
            return batches
        return [self(model, batch, step, index) for index, batch in enumerate(batches)]

    def __call__(self, model: nn.Module, batch: Batch, step: int, micro_batch: int = 0) -> Batch:
        """`batch` with the chosen pairs' sources replaced (a row whose translation comes out
        empty keeps its own). `model` translates in eval mode, and is left as it was."""
        mixed = ((self.seed * _PRIME + step) * _PRIME + micro_batch) * _PRIME + self.rank
        generator = torch.Generator().manual_seed(mixed % 2**63)
        rows = batch.src.size(0)
        chosen = torch.rand(rows, generator=generator) < self.share
        picks = torch.randint(len(self.tags) - 1, (rows,), generator=generator).tolist()
        if not chosen.any():
            return batch
        tgt = self.tokenizer.tgt
        lengths = batch.src_lengths.tolist()
        src = [row[:length].tolist() for row, length in zip(batch.src.cpu(), lengths, strict=True)]
        targets = [row[row != tgt.pad_id][:-1].tolist() for row in batch.tgt_out.cpu()]  # no eos
        # each row's tag (of its target's language) and its source without it
        if self.at_decoder:
            asked = batch.tgt_in[:, 0].tolist()
        else:
            asked, src = [row[0] for row in src], [row[1:] for row in src]
        picked = chosen.nonzero().flatten().tolist()
        drawn = {}  # language -> the rows translated into it
        for row in picked:
            others = [other for other in self.tags if other != self.language_of[asked[row]]]
            drawn.setdefault(others[picks[row]], []).append(row)
        for language, rows in drawn.items():
            found = self._translate(model, [targets[row] for row in rows], language)
            for row, tokens in zip(rows, found, strict=True):
                if tokens:
                    src[row] = tokens
        if self.at_decoder:
            targets = [[tag, *ids] for tag, ids in zip(asked, targets, strict=True)]
        else:
            src = [[tag, *ids] for tag, ids in zip(asked, src, strict=True)]
        return make_batch(src, targets, tgt, self.tokenizer.src.pad_id).to(batch.src.device)

    @torch.no_grad()
    def _translate(
        self, model: nn.Module, sentences: list[list[int]], language: str
    ) -> list[list[int]]:
        """Greedy translations of `sentences` (untagged ids) into `language`, in eval mode."""
        asking = self.tokenizer.towards(language)  # the tag before the source, or as start
        sentences = [[*asking.src.prefix, *ids] for ids in sentences]
        training = model.training
        model.eval()
        try:
            device = next(model.parameters()).device
            lengths = torch.tensor([len(ids) for ids in sentences])
            src = pad(sentences, self.tokenizer.src.pad_id)
            limits = max_lengths(lengths, self.decode.max_len_ratio, self.decode.max_len_extra)
            tgt = self.tokenizer.tgt
            found = greedy_search(
                model,
                src.to(device),
                lengths,
                asking.start_id,
                tgt.eos_id,
                limits,
                attention=False,
                shortlist=self.columns[language],
            )
        finally:
            model.train(training)
        return [hypothesis.tokens for hypothesis in found]
