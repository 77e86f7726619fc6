"""SentencePiece subwords for both sides, and the special ids the model relies on.

Models trained here put pad/unk/bos/eos at ids 0-3. An existing model (`tokenizer.model`)
may lack pad, bos or eos; those get ids appended after its pieces, so any SentencePiece
model works without being retrained.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm

from nmt.config import TokenizerConfig
from nmt.errors import UserError

log = logging.getLogger(__name__)


class Vocab:
    """One SentencePiece model plus the ids of pad, bos and eos (appended if it has none)."""

    def __init__(self, model_proto: bytes):
        self.model_proto = model_proto
        self.processor = spm.SentencePieceProcessor(model_proto=model_proto)
        size = self.processor.get_piece_size()
        extra = iter(range(size, size + 3))
        self.pad_id = _own_or(self.processor.pad_id(), extra)
        self.bos_id = _own_or(self.processor.bos_id(), extra)
        self.eos_id = _own_or(self.processor.eos_id(), extra)
        self.unk_id = self.processor.unk_id()
        self.size = max(size - 1, self.pad_id, self.bos_id, self.eos_id) + 1

    def encode(self, lines: Sequence[str]) -> list[list[int]]:
        return self.processor.encode(list(lines), out_type=int)

    def sample(self, lines: Sequence[str], alpha: float, seed: int) -> list[list[int]]:
        """One sampled segmentation per line (BPE-dropout or unigram lattice sampling), a pure
        function of `seed`: SentencePiece's generator is reseeded here, and one thread draws
        the lines in order."""
        spm.set_random_generator_seed(seed)
        return self.processor.encode(
            list(lines),
            out_type=int,
            enable_sampling=True,
            alpha=alpha,
            nbest_size=-1,
            num_threads=1,
        )

    def decode(self, ids: Sequence[int], copied: Sequence[str] = ()) -> str:
        """The text of ids. Ids from `size` on are source pieces a copy model copied
        (nmt/model/copy.py): id `size + j` is `copied[j]`, the piece at source position j."""
        specials = {self.pad_id, self.bos_id, self.eos_id}
        ids = [i for i in ids if i not in specials]
        if all(i < self.size for i in ids):
            return self.processor.decode(ids)
        # SentencePiece keeps a piece it does not know as it is, word boundary marks included
        pieces = [
            self._piece(i) if i < self.size else copied[i - self.size].replace("▁", " ")
            for i in ids
        ]
        if ids[0] >= self.size:  # the text starts without the word boundary, as decode's
            pieces[0] = pieces[0].removeprefix(" ")
        return self.processor.decode_pieces(pieces)

    def pieces(self, ids: Sequence[int], copied: Sequence[str] = ()) -> list[str]:
        """The pieces of ids; `copied` as for `decode`."""
        return [self._piece(i, copied) for i in ids]

    def _piece(self, index: int, copied: Sequence[str] = ()) -> str:
        if index >= self.size:
            return copied[index - self.size]
        names = {self.pad_id: "<pad>", self.bos_id: "<s>", self.eos_id: "</s>"}
        return names.get(index) or self.processor.id_to_piece(index)


def _own_or(index: int, extra: Iterable[int]) -> int:
    return index if index >= 0 else next(iter(extra))


@dataclass
class Tokenizer:
    """Source and target vocabularies (the same object when joint)."""

    src: Vocab
    tgt: Vocab

    @property
    def joint(self) -> bool:
        return self.src is self.tgt

    def to_state(self) -> dict:
        return {"src": self.src.model_proto, "tgt": self.tgt.model_proto, "joint": self.joint}

    @classmethod
    def from_state(cls, state: dict) -> Tokenizer:
        src = Vocab(state["src"])
        return cls(src, src if state["joint"] else Vocab(state["tgt"]))

    def save(self, run_dir: Path) -> None:
        files = (
            {"spm.model": self.src}
            if self.joint
            else {"spm.src.model": self.src, "spm.tgt.model": self.tgt}
        )
        for name, vocab in files.items():
            (run_dir / name).write_bytes(vocab.model_proto)


def build_tokenizer(
    config: TokenizerConfig, src_lines: Sequence[str], tgt_lines: Sequence[str], cache_dir: Path
) -> Tokenizer:
    """Loads `config.model` or trains SentencePiece on the train split (cached by content)."""
    if config.model:
        path = Path(config.model)
        try:
            vocab = Vocab(path.read_bytes())
        except OSError as error:
            raise UserError(f"tokenizer.model: cannot read {path}: {error.strerror}.") from None
        except RuntimeError:
            raise UserError(f"tokenizer.model: {path} is not a SentencePiece model.") from None
        return Tokenizer(vocab, vocab)
    if config.joint:
        vocab = _trained_vocab(config, [*src_lines, *tgt_lines], cache_dir)
        return Tokenizer(vocab, vocab)
    return Tokenizer(
        _trained_vocab(config, src_lines, cache_dir), _trained_vocab(config, tgt_lines, cache_dir)
    )


def _trained_vocab(config: TokenizerConfig, lines: Sequence[str], cache_dir: Path) -> Vocab:
    settings = dict(
        vocab_size=config.vocab_size,
        model_type=config.type,
        character_coverage=config.character_coverage,
    )
    digest = hashlib.sha256(repr(sorted(settings.items())).encode())
    for line in lines:
        digest.update(line.encode())
        digest.update(b"\n")
    cached = cache_dir / "spm" / f"{digest.hexdigest()[:24]}.model"
    if cached.exists():
        log.info("reusing SentencePiece model %s", cached)
        return Vocab(cached.read_bytes())
    log.info(
        "training SentencePiece (%s, %d pieces) on %d lines",
        config.type,
        config.vocab_size,
        len(lines),
    )
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(line for line in lines if line),
        model_writer=model,
        **settings,
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,
        hard_vocab_limit=False,
        input_sentence_size=2_000_000,
        shuffle_input_sentence=True,
        num_threads=os.cpu_count() or 1,
        minloglevel=2,
    )
    proto = model.getvalue()
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cached.parent, delete=False) as handle:
        handle.write(proto)
    os.replace(handle.name, cached)
    return Vocab(proto)
