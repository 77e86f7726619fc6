"""A translation memory: past translations found again for a new sentence (`nmt tm build`,
`--tm`, `data.fuzzy_matches`).

A match's fuzzy score is 1 - (word-level edit distance) / (the longer sentence's words),
the fuzzy match score of translation tools and of Bulte & Tezcan 2019, on lowercased words
(rapidfuzz computes the distance). An exact match, the same source up to spaces, is looked
up first by a hash. Fuzzy candidates come from an inverted index of the memory's words:
a query reads the postings of its rarer words (at most MAX_POSTINGS entries), counts how
many of its words each entry shares, and reranks entries by that count's bound on their
score, best first, until no unread entry can beat the best found. Where the skipped common
words alone cannot reach the threshold, the answer is the exhaustive search's.

Saved as one .npz of plain arrays, read with allow_pickle=False: a file cannot run code.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rapidfuzz.distance import Levenshtein

from nmt.errors import UserError
from nmt.outputs import write_output
from nmt.reads import record

FORMAT = "nmt-translation-memory-1"
WORD = re.compile(r"\w+|[^\w\s]")
MAX_POSTINGS = 300_000  # postings one query reads, its rarest words' first
MAX_RERANKED = 200  # entries one query scores by edit distance, at most


@dataclass(frozen=True)
class Match:
    """An entry of the memory found for a sentence."""

    index: int  # the entry's place in the memory
    score: float  # fuzzy score in [0, 1]; 1 for an exact match
    source: str
    target: str
    exact: bool  # the same source, spaces aside

    @property
    def band(self) -> str:
        """The score band results are reported in: exact, 90-100, 70-90, 50-70 or <50."""
        return band_of(self)


BANDS = ("exact", "90-100", "70-90", "50-70", "no match")


def band_of(match: Match | None) -> str:
    if match is None or match.score < 0.5:
        return "no match"
    if match.exact:
        return "exact"
    return "90-100" if match.score >= 0.9 else "70-90" if match.score >= 0.7 else "50-70"


def words(text: str) -> list[str]:
    """What fuzzy scores compare: lowercased words and punctuation marks."""
    return WORD.findall(text.lower())


def _exact_key(text: str) -> int:
    key = " ".join(text.split()).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little", signed=True)


def _term(word: str) -> int:
    """A word's 64-bit id in the index (collisions only add candidates)."""
    data = word.encode("utf-8", "surrogatepass")
    return (zlib.crc32(data) << 31) ^ zlib.adler32(data)


def _blob(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


class TranslationMemory:
    """Pairs of source and target sentences, searchable by source (`best`)."""

    def __init__(self, arrays: dict[str, np.ndarray], src_lang: str, tgt_lang: str):
        self.arrays = arrays
        self.src_lang, self.tgt_lang = src_lang, tgt_lang
        self.lengths = arrays["lengths"]
        self.terms, self.starts, self.postings = (
            arrays["terms"],
            arrays["term_starts"],
            arrays["postings"],
        )

    @classmethod
    def build(
        cls, sources: Sequence[str], targets: Sequence[str], src_lang: str, tgt_lang: str
    ) -> TranslationMemory:
        """The memory of the pairs (sources[i], targets[i])."""
        if len(sources) != len(targets):
            raise ValueError("sources and targets differ in length")
        lengths = np.zeros(len(sources), dtype=np.int32)
        term_ids: list[int] = []
        rows: list[int] = []
        for row, source in enumerate(sources):
            found = words(source)
            lengths[row] = len(found)
            unique = {_term(word) for word in found}
            term_ids.extend(unique)
            rows.extend([row] * len(unique))
        ids, entries = np.array(term_ids, dtype=np.int64), np.array(rows, dtype=np.int64)
        order = np.lexsort((entries, ids))
        ids, entries = ids[order], entries[order]
        terms, starts = np.unique(ids, return_index=True)
        keys = np.array([_exact_key(source) for source in sources], dtype=np.int64)
        by_key = np.argsort(keys, kind="stable")
        source_bytes, source_offsets = _blob(sources)
        target_bytes, target_offsets = _blob(targets)
        arrays = {
            "lengths": lengths,
            "terms": terms,
            "term_starts": np.append(starts, len(ids)).astype(np.int64),
            "postings": entries.astype(np.int32 if len(sources) < 2**31 else np.int64),
            "exact_keys": keys[by_key],
            "exact_rows": by_key.astype(np.int64),
            "source_bytes": source_bytes,
            "source_offsets": source_offsets,
            "target_bytes": target_bytes,
            "target_offsets": target_offsets,
        }
        return cls(arrays, src_lang, tgt_lang)

    def __len__(self) -> int:
        return len(self.lengths)

    def source(self, index: int) -> str:
        return self._text("source", index)

    def target(self, index: int) -> str:
        return self._text("target", index)

    def _text(self, side: str, index: int) -> str:
        offsets = self.arrays[f"{side}_offsets"]
        data = self.arrays[f"{side}_bytes"][offsets[index] : offsets[index + 1]]
        return data.tobytes().decode("utf-8", "surrogatepass")

    def best(self, query: str, threshold: float, exclude: int | None = None) -> Match | None:
        """The entry whose source matches `query` best, if it scores at least `threshold`
        (an exact one first; among equals, the first entry); `exclude`: an entry not to
        find (a training pair's own)."""
        exact = self.exact(query, exclude)
        if exact is not None:
            return exact
        query_words = words(query)
        if not query_words:
            return None
        rows, bounds = self._candidates(query_words, threshold, exclude)
        best_index, best_score = -1, -1.0
        for row, bound in zip(rows[:MAX_RERANKED], bounds[:MAX_RERANKED], strict=False):
            if bound < best_score or bound < threshold:
                break
            score = Levenshtein.normalized_similarity(query_words, words(self.source(row)))
            if score > best_score or (score == best_score and row < best_index):
                best_index, best_score = int(row), score
        if best_index < 0 or best_score < threshold:
            return None
        return Match(
            best_index, best_score, self.source(best_index), self.target(best_index), False
        )

    def exact(self, query: str, exclude: int | None = None) -> Match | None:
        """The first entry whose source is `query`, spaces aside (not `exclude`), or None;
        None for a blank query, which a corpus's pair with a blank source would answer."""
        wanted = " ".join(query.split())
        if not wanted:
            return None
        keys, rows = self.arrays["exact_keys"], self.arrays["exact_rows"]
        key = _exact_key(query)
        start = np.searchsorted(keys, key)
        for place in range(start, len(keys)):
            if keys[place] != key:
                break
            row = int(rows[place])
            if row != exclude and " ".join(self.source(row).split()) == wanted:
                return Match(row, 1.0, self.source(row), self.target(row), True)
        return None

    def _candidates(
        self, query_words: list[str], threshold: float, exclude: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Entries sharing a read word with the query, best bound first, and the bounds:
        at most (words shared, counted as often as the query has them, plus the query's
        unread words) / (the longer sentence's words), which no edit distance beats."""
        counts: dict[int, int] = {}
        for word in query_words:
            counts[_term(word)] = counts.get(_term(word), 0) + 1
        ids = np.fromiter(counts, dtype=np.int64)
        weights = np.fromiter(counts.values(), dtype=np.float64)
        places = np.searchsorted(self.terms, ids)
        known = places < len(self.terms)
        known[known] = self.terms[places[known]] == ids[known]
        places, weights = places[known], weights[known]
        sizes = self.starts[places + 1] - self.starts[places]
        order = np.argsort(sizes, kind="stable")
        read = order[np.cumsum(sizes[order]) <= MAX_POSTINGS]
        if len(read) == 0 and len(order):
            read = order[:1]
        unread = float(weights.sum() - weights[read].sum())  # words the memory has, unread
        chunks = [self.postings[self.starts[p] : self.starts[p + 1]] for p in places[read]]
        if not chunks:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        # counting by bincount, not by sorting the postings: a query of common words reads
        # up to MAX_POSTINGS of them, and a sort of that many was most of a lookup's time
        shared = np.bincount(np.concatenate(chunks), weights=np.repeat(weights[read], sizes[read]))
        entries = np.flatnonzero(shared)
        longer = np.maximum(self.lengths[entries], len(query_words))
        bounds = np.minimum(shared[entries] + unread, longer) / longer
        keep = bounds >= threshold
        if exclude is not None:
            keep &= entries != exclude
        entries, bounds = entries[keep], bounds[keep]
        if len(bounds) > MAX_RERANKED:  # only those that can be among the reranked are sorted
            # the level (in thousandths) the best MAX_RERANKED reach, from a histogram: a
            # partition of bounds this tied took longer than the rest of the lookup
            levels = (bounds * 1000).astype(np.int64)
            reaching = np.cumsum(np.bincount(levels, minlength=1001)[::-1])[::-1]
            level = np.flatnonzero(reaching >= MAX_RERANKED)[-1]
            entries, bounds = entries[levels >= level], bounds[levels >= level]
        order = np.lexsort((entries, -bounds))
        return entries[order], bounds[order]

    def save(self, path: Path, option: str = "--out") -> None:
        """Writes the memory to `path` (.npz, named by `option`), atomically; a UserError
        where it cannot be written."""
        import io

        meta = {"format": FORMAT, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang}
        buffer = io.BytesIO()
        np.savez(buffer, meta=np.array(json.dumps(meta)), **self.arrays)
        write_output(Path(path), buffer.getbuffer(), option)

    @classmethod
    def load(cls, path: Path | str) -> TranslationMemory:
        """A memory `save` wrote; anything else is a UserError naming the file."""
        path = record(Path(path), "a translation memory")
        try:
            with np.load(path, allow_pickle=False) as stored:
                arrays = {name: stored[name] for name in stored.files}
            meta = json.loads(str(arrays.pop("meta")))
        except FileNotFoundError:
            raise UserError(
                f"translation memory {path} does not exist: build one with nmt tm build "
                "--data DIR --out FILE."
            ) from None
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as error:
            raise UserError(
                f"{path} is not a translation memory nmt tm build wrote ({error}); build "
                "one with nmt tm build --data DIR --out FILE."
            ) from None
        if meta.get("format") != FORMAT:
            raise UserError(
                f"{path} is a translation memory of another format ({meta.get('format')}); "
                "build it again with this nmt: nmt tm build."
            )
        return cls(arrays, meta["src_lang"], meta["tgt_lang"])
