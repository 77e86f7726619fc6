"""CTranslate2's search of a batch, made to search as ours does (nmt/export/engine.py's
docstring says how): one call a batch under its longest limit, the sentences that ran past
their own limit again under it, hypotheses ranked by our normalised score."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import torch

from nmt.config import DecodeConfig
from nmt.data.tokenizer import Tokenizer
from nmt.errors import UserError
from nmt.search import Hypothesis, max_lengths
from nmt.search.constraints import Constraints


class BatchSearch:
    """The pipeline's search function (src_ids, decode, lines, constraints -> each
    sentence's hypotheses, best first) over a ctranslate2.Translator."""

    def __init__(self, model: Any, tokenizer: Tokenizer):
        self.model, self.tokenizer = model, tokenizer
        self.tgt_ids = {
            piece: i for i, piece in enumerate(tokenizer.tgt.pieces(range(tokenizer.tgt.size)))
        }

    def __call__(
        self,
        src_ids: list[list[int]],
        decode: DecodeConfig,
        lines: Sequence[int] = (),
        constraints: Sequence[Constraints | None] | None = None,
    ) -> list[list[Hypothesis]]:
        if any(c and (c.include or c.exclude) for c in constraints or ()):
            raise UserError(
                "CTranslate2 decodes no lexical constraints; translate with --constraints "
                "from the --checkpoint the model was exported from."
            )
        lengths = torch.tensor([len(ids) for ids in src_ids])
        limits = max_lengths(lengths, decode.max_len_ratio, decode.max_len_extra)
        limits = limits.tolist()
        prefixes = [
            self.tokenizer.tgt.pieces(c.prefix) if c and c.prefix else None
            for c in constraints or [None] * len(src_ids)
        ]
        results: list[list[Hypothesis]] = [[] for _ in src_ids]
        overran = []
        batch = self._translate_batch(src_ids, max(limits), prefixes, decode)
        for i, output in enumerate(batch):
            if max(len(pieces) for pieces in output.hypotheses) > limits[i]:
                overran.append(i)
            else:
                results[i] = self._hypotheses(output, decode)
        overran.sort(key=limits.__getitem__)
        for limit, group in itertools.groupby(overran, key=limits.__getitem__):
            group = list(group)
            outputs = self._translate_batch(
                [src_ids[i] for i in group], limit, [prefixes[i] for i in group], decode
            )
            for i, output in zip(group, outputs, strict=True):
                results[i] = self._hypotheses(output, decode)
        return results

    def _translate_batch(
        self,
        src_ids: list[list[int]],
        limit: int,
        prefixes: list[list[str] | None],
        decode: DecodeConfig,
    ) -> list[Any]:
        if decode.shortlist and any(prefixes):
            return self._prefixed_apart(src_ids, limit, prefixes, decode)
        beam, alpha = decode.beam, decode.alpha
        return self.model.translate_batch(
            [self.tokenizer.src.pieces(ids) for ids in src_ids],
            target_prefix=prefixes if any(prefixes) else None,
            beam_size=beam,
            num_hypotheses=beam,  # every finished hypothesis, to rank by our penalty
            length_penalty=alpha if beam > 1 else 0.0,
            max_decoding_length=limit,
            min_decoding_length=0,
            max_input_length=0,  # the pipeline has cut sources at decode.max_src_len
            return_end_token=True,
            return_scores=True,
            no_repeat_ngram_size=decode.no_repeat_ngram,
            use_vmap=decode.shortlist > 0,
        )

    def _prefixed_apart(
        self,
        src_ids: list[list[int]],
        limit: int,
        prefixes: list[list[str] | None],
        decode: DecodeConfig,
    ) -> list[Any]:
        """CTranslate2 forces a prefix through the vocabulary map's pieces only (a piece the
        map leaves out is read as another), so lines with a prefix decode with the whole
        vocabulary, the others with the map."""
        outputs: list[Any] = [None] * len(src_ids)
        whole = dataclasses.replace(decode, shortlist=0)
        for prefixed, settings in ((True, whole), (False, decode)):
            group = [i for i, prefix in enumerate(prefixes) if bool(prefix) == prefixed]
            if group:
                found = self._translate_batch(
                    [src_ids[i] for i in group], limit, [prefixes[i] for i in group], settings
                )
                for i, output in zip(group, found, strict=True):
                    outputs[i] = output
        return outputs

    def _hypotheses(self, output: Any, decode: DecodeConfig) -> list[Hypothesis]:
        """CTranslate2's hypotheses as ours, best `nbest` first by our normalised score."""
        alpha, eos = decode.alpha, self.tokenizer.tgt.eos_id
        unk = self.tokenizer.tgt.unk_id
        hypotheses = []
        for pieces, score in zip(output.hypotheses, output.scores, strict=True):
            tokens = [self.tgt_ids.get(piece, unk) for piece in pieces]  # eos included if produced
            steps = len(tokens)
            raw = score * steps**alpha if decode.beam > 1 else score  # undo its penalty
            ended = bool(tokens) and tokens[-1] == eos
            hypotheses.append(Hypothesis(tokens[:-1] if ended else tokens, raw, None, steps))
        hypotheses.sort(key=lambda h: h.normalised_score(alpha), reverse=True)
        return hypotheses[: decode.nbest]
