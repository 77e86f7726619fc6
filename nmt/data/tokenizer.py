"""SentencePiece subwords for both sides, and the special ids the model relies on.

Models trained here put pad/unk/bos/eos at ids 0-3. An existing model (`tokenizer.model`)
may lack pad, bos or eos; those get ids appended after its pieces, so any SentencePiece
model works without being retrained. A model that writes several languages reads a tag
naming the one to write (`<2en>`, Johnson et al. 2017) before each source, or, with
`data.tags: decoder_bos`, starts its decoder from that tag instead of bos (Wu et al. 2021
compare the two). The tags get ids appended after those, so no text can ever spell one, and
SentencePiece never learns them.

A model imported from Marian (OPUS-MT, `nmt import`) brings its own vocabulary: a list of
pieces whose order is the model's ids, shared by a source and a target SentencePiece model
that only segment. Its sources end with </s>, and its decoder starts from <pad> (it has no
<s>), as Marian trained it.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sentencepiece as spm

from nmt.config import TokenizerConfig
from nmt.cores import available_cores
from nmt.errors import UserError
from nmt.reads import record, record_directory

log = logging.getLogger(__name__)

TAGS_FILE = "tags.json"  # beside spm.model: the languages a tag can ask for, in id order
PIECES_FILE = "pieces.json"  # beside the SentencePiece models of a vocabulary of its own
TARGET_PIECES_FILE = "target_pieces.json"  # each target language's count per target id
TAG_PLACE_FILE = "tag_place.txt"  # where the tag goes, unless in front of the source


VOCABULARY_KEYS = frozenset({"src", "tgt", "joint", "tags", "pieces"})  # to_state's models
BORROWED = "vocabularies_from_base"  # marks a state that left VOCABULARY_KEYS to its base


def without_vocabularies(state: dict) -> dict:
    """`state` (Tokenizer.to_state) without its SentencePiece models: what an adapter
    checkpoint keeps, since its frozen base holds the same vocabularies (half a megabyte a
    copy, more than the adapter's own weights at small ranks). What the run itself records
    (target_pieces, tag_place) stays."""
    own = {key: value for key, value in state.items() if key not in VOCABULARY_KEYS}
    return {**own, BORROWED: True}


def with_vocabularies(state: dict, base: dict) -> dict:
    """`state` whole again: the vocabularies of `base` (the base checkpoint's state) where
    `state` left them to it (without_vocabularies); else `state` as it is."""
    if not state.get(BORROWED):
        return state
    own = {key: value for key, value in state.items() if key != BORROWED}
    return {**{key: base[key] for key in VOCABULARY_KEYS if key in base}, **own}


def language_tag(language: str) -> str:
    """The piece that asks for a translation into `language`."""
    return f"<2{language}>"


class Vocab:
    """One SentencePiece model plus the ids of pad, bos and eos (appended if it has none)
    and of the target-language tags (appended after them). `towards(language)` gives the
    same vocabulary encoding every line with that language's tag in front.

    With `pieces` the ids are positions in that list instead of SentencePiece's own (an
    imported Marian vocabulary): the model only segments, a piece the list lacks is <unk>,
    and bos is <pad> where the list has no <s>. `ends_with_eos`: every encoded line ends
    with eos (Marian's sources)."""

    def __init__(
        self,
        model_proto: bytes,
        tags: Sequence[str] = (),
        pieces: Sequence[str] | None = None,
        ends_with_eos: bool = False,
    ):
        self.model_proto = model_proto
        self.processor = spm.SentencePieceProcessor(model_proto=model_proto)
        self.vocabulary = None if pieces is None else list(pieces)
        self.ends_with_eos = ends_with_eos
        if self.vocabulary is None:
            size = self.processor.get_piece_size()
            extra = iter(range(size, size + 3))
            self.pad_id = _own_or(self.processor.pad_id(), extra)
            self.bos_id = _own_or(self.processor.bos_id(), extra)
            self.eos_id = _own_or(self.processor.eos_id(), extra)
            self.unk_id = self.processor.unk_id()
            first_tag = max(size - 1, self.pad_id, self.bos_id, self.eos_id) + 1
        else:
            self.ids = {piece: index for index, piece in enumerate(self.vocabulary)}
            missing = [p for p in ("<pad>", "<unk>", "</s>") if p not in self.ids]
            if missing or tags:
                raise ValueError(f"a vocabulary of its own needs {missing} and takes no tags")
            self.pad_id, self.unk_id = self.ids["<pad>"], self.ids["<unk>"]
            self.eos_id = self.ids["</s>"]
            self.bos_id = self.ids.get("<s>", self.pad_id)
            first_tag = len(self.vocabulary)
        self.tags = {language: first_tag + index for index, language in enumerate(tags)}
        self.size = first_tag + len(self.tags)
        self.prefix: list[int] = []  # ids every encoded line starts with: a tag, or none

    def towards(self, language: str) -> Vocab:
        """This vocabulary, putting the tag of `language` in front of every line it encodes."""
        if language not in self.tags:
            raise UserError(
                f"the tokenizer has no tag for '{language}' (it has: "
                f"{', '.join(self.tags) or 'none'})."
            )
        tagged = copy.copy(self)
        tagged.prefix = [self.tags[language]]
        return tagged

    def encode(self, lines: Sequence[str]) -> list[list[int]]:
        return self._framed(self._segmented(lines))

    def sample(self, lines: Sequence[str], alpha: float, seed: int) -> list[list[int]]:
        """One sampled segmentation per line (BPE-dropout or unigram lattice sampling), a pure
        function of `seed`: SentencePiece's generator is reseeded here, and one thread draws
        the lines in order."""
        spm.set_random_generator_seed(seed)
        options = dict(enable_sampling=True, alpha=alpha, nbest_size=-1, num_threads=1)
        return self._framed(self._segmented(lines, **options))

    def _segmented(self, lines: Sequence[str], **options: Any) -> list[list[int]]:
        """SentencePiece's segmentation of each line, as this vocabulary's ids."""
        if self.vocabulary is None:
            return self.processor.encode(list(lines), out_type=int, **options)
        codes, texts = zip(*map(_language_code, lines), strict=True) if lines else ((), ())
        segmented = self.processor.encode(list(texts), out_type=str, **options)
        unk = self.unk_id
        return [
            [self.ids.get(piece, unk) for piece in [*code, *pieces]]
            for code, pieces in zip(codes, segmented, strict=True)
        ]

    def _framed(self, encoded: list[list[int]]) -> list[list[int]]:
        """The ids with the prefix (a tag) before and eos after, where this vocabulary adds
        them; a blank line stays empty, so that it is a blank line to translation too."""
        if not (self.prefix or self.ends_with_eos):
            return encoded
        suffix = [self.eos_id] if self.ends_with_eos else []
        return [[*self.prefix, *ids, *suffix] if ids else [] for ids in encoded]

    def decode(self, ids: Sequence[int], copied: Sequence[str] = ()) -> str:
        """The text of ids. Ids from `size` on are source pieces a copy model copied
        (nmt/model/copy.py): id `size + j` is `copied[j]`, the piece at source position j."""
        specials = {self.pad_id, self.bos_id, self.eos_id, *self.tags.values()}
        ids = [i for i in ids if i not in specials]
        if self.vocabulary is not None:  # pieces only the source model knows stay as they are
            text = self.processor.decode_pieces(self.pieces(ids, copied))
            return text.replace("▁", " ").strip()
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
        if self.vocabulary is not None:
            return self.vocabulary[index]
        names = {self.pad_id: "<pad>", self.bos_id: "<s>", self.eos_id: "</s>"}
        names.update((tag, language_tag(language)) for language, tag in self.tags.items())
        return names.get(index) or self.processor.id_to_piece(index)


def _own_or(index: int, extra: Iterable[int]) -> int:
    return index if index >= 0 else next(iter(extra))


def _language_code(line: str) -> tuple[list[str], str]:
    """A leading Marian target-language code (">>fra<<") as a piece of its own, and the rest
    of the line, which SentencePiece segments: MarianTokenizer's split."""
    end = line.find("<<") if line.startswith(">>") else -1
    return ([line[: end + 2]], line[end + 2 :]) if end != -1 else ([], line)


@dataclass
class Tokenizer:
    """Source and target vocabularies (one SentencePiece model when joint). A tokenizer with
    tags records, once it has read a training corpus, how often each language's training
    targets used each target piece (`target_pieces`: language -> a count per id): what a
    translation into that language may be restricted to (decode.restrict_to_target_language).

    `tag_place` (data.tags) says where `towards(language)` puts the language's tag: in front
    of every source ("source"), or as the decoder's first input ("decoder_bos"): then
    `start_id` is the tag, and `encode_targets` writes it in front of each training target,
    where nmt/data/batching.py::make_batch finds it."""

    src: Vocab
    tgt: Vocab
    target_pieces: dict[str, list[int]] | None = None
    tag_place: str = "source"
    language: str | None = None  # the language `towards` asked for; None without tags

    @property
    def start_id(self) -> int:
        """The decoder's first input: bos, or the asked language's tag (decoder_bos)."""
        if self.tag_place == "decoder_bos" and self.language is not None:
            return self.tgt.tags[self.language]
        return self.tgt.bos_id

    def encode_targets(self, lines: Sequence[str]) -> list[list[int]]:
        """Training targets: the target ids, after the asked language's tag (decoder_bos)."""
        encoded = self.tgt.encode(lines)
        if self.start_id == self.tgt.bos_id:
            return encoded
        return [[self.start_id, *ids] for ids in encoded]

    def language_pieces(self, language: str) -> list[int]:
        """The target ids a translation into `language` may write: the pieces its training
        targets used, and eos and unk; never a tag, pad or bos."""
        counts = (self.target_pieces or {}).get(language)
        if counts is None:
            raise UserError(
                f"this model records no target pieces of '{language}': restricting a "
                "translation to its language needs a model that writes several languages, "
                "trained by this version of nmt or later."
            )
        tags = set(self.tgt.tags.values())
        used = {index for index, count in enumerate(counts) if count and index not in tags}
        return sorted(
            (used - {self.tgt.pad_id, self.tgt.bos_id}) | {self.tgt.eos_id, self.tgt.unk_id}
        )

    @property
    def joint(self) -> bool:
        return self.src.processor is self.tgt.processor

    @property
    def tags(self) -> list[str]:
        """The languages a tag can ask for (none: the model writes one language)."""
        return list(self.src.tags)

    def towards(self, language: str) -> Tokenizer:
        """This tokenizer asking for a translation into `language`: its tag in front of every
        source, or as the decoder's start (`tag_place`); untagged without tags."""
        if not self.tags:
            return self
        src = self.src.towards(language)  # an unknown language fails here
        if self.tag_place == "decoder_bos":
            src = self.src
        return dataclasses.replace(self, src=src, language=language)

    def to_state(self) -> dict:
        state = {
            "src": self.src.model_proto,
            "tgt": self.tgt.model_proto,
            "joint": self.joint,
            "tags": self.tags,
        }
        if self.src.vocabulary is not None:
            state["pieces"] = self._pieces_state()
        if self.target_pieces is not None:
            state["target_pieces"] = self.target_pieces
        if self.tag_place != "source":
            state["tag_place"] = self.tag_place
        return state

    def _pieces_state(self) -> dict:
        """A vocabulary of its own (`Vocab`'s `pieces`): each side's list, and whether
        sources end with eos."""
        return {
            "src": self.src.vocabulary,
            "tgt": self.tgt.vocabulary,
            "source_eos": self.src.ends_with_eos,
        }

    @classmethod
    def from_state(cls, state: dict) -> Tokenizer:
        pieces = state.get("pieces")
        if pieces is not None:
            return cls(
                Vocab(state["src"], (), pieces["src"], pieces["source_eos"]),
                Vocab(state["tgt"], (), pieces["tgt"]),
            )
        src = Vocab(state["src"], state.get("tags", ()))
        tgt = src if state["joint"] else Vocab(state["tgt"])
        return cls(src, tgt, state.get("target_pieces"), state.get("tag_place", "source"))

    def save(self, run_dir: Path) -> None:
        files = (
            {"spm.model": self.src}
            if self.joint
            else {"spm.src.model": self.src, "spm.tgt.model": self.tgt}
        )
        for name, vocab in files.items():
            (run_dir / name).write_bytes(vocab.model_proto)
        if self.tags:
            (run_dir / TAGS_FILE).write_text(json.dumps(self.tags) + "\n", "utf-8")
        if self.target_pieces is not None:
            text = json.dumps(self.target_pieces, separators=(",", ":"))
            (run_dir / TARGET_PIECES_FILE).write_text(text + "\n", "utf-8")
        if self.src.vocabulary is not None:
            text = json.dumps(self._pieces_state(), ensure_ascii=False)
            (run_dir / PIECES_FILE).write_text(text + "\n", "utf-8")
        if self.tag_place != "source":
            (run_dir / TAG_PLACE_FILE).write_text(self.tag_place + "\n", "utf-8")

    @classmethod
    def load(cls, directory: Path) -> Tokenizer:
        """The tokenizer `save` wrote into `directory`; an OSError if its files are missing."""
        record_directory(directory, "a tokenizer's directory")
        tags_file = directory / TAGS_FILE
        tags = json.loads(tags_file.read_text("utf-8")) if tags_file.is_file() else []
        joint = directory / "spm.model"
        if joint.is_file():
            vocab = Vocab(joint.read_bytes(), tags)
            counts, place = directory / TARGET_PIECES_FILE, directory / TAG_PLACE_FILE
            recorded = json.loads(counts.read_text("utf-8")) if counts.is_file() else None
            tag_place = place.read_text("utf-8").strip() if place.is_file() else "source"
            return cls(vocab, vocab, recorded, tag_place)
        src, tgt = (directory / "spm.src.model").read_bytes(), (directory / "spm.tgt.model")
        pieces_file = directory / PIECES_FILE
        if pieces_file.is_file():
            pieces = json.loads(pieces_file.read_text("utf-8"))
            return cls(
                Vocab(src, (), pieces["src"], pieces["source_eos"]),
                Vocab(tgt.read_bytes(), (), pieces["tgt"]),
            )
        return cls(Vocab(src), Vocab(tgt.read_bytes()))


def build_tokenizer(
    config: TokenizerConfig,
    src_lines: Sequence[str],
    tgt_lines: Sequence[str],
    cache_dir: Path,
    tags: Sequence[str] = (),
    symbols: Sequence[str] = (),
) -> Tokenizer:
    """Loads `config.model` or trains SentencePiece on the train split (cached by content);
    `tags`: the target languages a joint vocabulary gets a tag for; `symbols`: strings that
    must each be one piece of their own (data.markup_augment's tags)."""
    if config.model:
        path = Path(config.model)
        try:
            vocab = Vocab(record(path, "tokenizer.model").read_bytes(), tags)
        except OSError as error:
            raise UserError(f"tokenizer.model: cannot read {path}: {error.strerror}.") from None
        except RuntimeError:
            raise UserError(f"tokenizer.model: {path} is not a SentencePiece model.") from None
        check_symbols(Tokenizer(vocab, vocab), symbols, f"tokenizer.model {path}")
        return Tokenizer(vocab, vocab)
    if config.joint:
        vocab = _trained_vocab(config, [*src_lines, *tgt_lines], cache_dir, symbols)
        vocab = Vocab(vocab.model_proto, tags) if tags else vocab
        return Tokenizer(vocab, vocab)
    return Tokenizer(
        _trained_vocab(config, src_lines, cache_dir, symbols),
        _trained_vocab(config, tgt_lines, cache_dir, symbols),
    )


def check_symbols(tokenizer: Tokenizer, symbols: Sequence[str], named: str) -> None:
    """A UserError unless both sides read each of `symbols` as one piece of its own."""
    missing = [
        symbol for symbol in symbols for vocab in (tokenizer.src, tokenizer.tgt)
        if vocab.processor.piece_to_id(symbol) == vocab.unk_id
    ]  # fmt: skip
    if missing:
        raise UserError(
            f"{named} has no piece of its own for {', '.join(sorted(set(missing)))}, which "
            "data.markup_augment's tags and data.fuzzy_matches' separator need: let nmt "
            "train the SentencePiece model (leave tokenizer.model out), or switch those off."
        )


def _trained_vocab(
    config: TokenizerConfig, lines: Sequence[str], cache_dir: Path, symbols: Sequence[str] = ()
) -> Vocab:
    settings = dict(
        vocab_size=config.vocab_size,
        model_type=config.type,
        character_coverage=config.character_coverage,
    )
    if symbols:
        settings["user_defined_symbols"] = list(symbols)
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
    try:
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
            num_threads=available_cores(),
            minloglevel=2,
        )
    except RuntimeError as error:  # e.g. fewer pieces than the characters to cover
        raise UserError(
            f"SentencePiece cannot train a vocabulary of tokenizer.vocab_size="
            f"{config.vocab_size} (character_coverage {config.character_coverage}) on this "
            f"corpus: {str(error).strip()}. Raise tokenizer.vocab_size, or lower "
            "tokenizer.character_coverage (e.g. 0.9995 for a language of many characters)."
        ) from None
    proto = model.getvalue()
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=cached.parent, delete=False) as handle:
        handle.write(proto)
    os.replace(handle.name, cached)
    return Vocab(proto)
