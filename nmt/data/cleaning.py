"""Rule-based cleaning of a parallel corpus: the filters crawled data needs (OpusFilter,
Aulamo et al. 2020; Khayrallah & Koehn 2018 on what noise costs a neural model), each a
small check with a threshold of the `clean` config section, judged in this order after
the repairs of nmt/data/repairs.py (mojibake decoded again, markup stripped):

  empty               a side empty or only whitespace
  control_characters  control, private-use or unassigned characters, or U+FFFD (damage)
  markup              HTML tags, character references or URLs (with clean.markup: remove)
  too_long            more than max_words words or max_chars characters on a side
  letters             a side mostly digits, punctuation or URLs
  length_ratio        a log character-length ratio far from the corpus's own (truncations,
                      merged or split sentences): more than max_ratio_deviation robust
                      standard deviations from the median of the first ratio_sample pairs
  copy                the target's character trigrams mostly found in the source
  held_out            a side that is also a sentence of the valid or test split
  language            a side whose language is not among py3langid's most likely
  duplicate           a pair seen before
  near_duplicate      a pair seen before once case, punctuation and whitespace are folded

A pair is removed for the first filter that fires. Duplicates are judged last, among the
pairs every other filter kept, so the first of equal pairs stays. Memory is flat in the
corpus's size but for what duplicates need: 8 bytes per distinct pair (`SeenHashes`).
"""

from __future__ import annotations

import collections
import logging
import math
import statistics
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import chain, islice

from nmt.config import MIN_RATIO_SAMPLE, CleanConfig, DataConfig, Experiment
from nmt.data.language_id import identifier
from nmt.data.repairs import URL, has_markup, repaired
from nmt.data.seen_hashes import SeenHashes
from nmt.data.splits import load_split, locate, read_pairs
from nmt.errors import UserError

# each filter, in the order they judge, and its keys in the clean section (CleanConfig)
FILTER_KEYS = {
    "empty": ("empty",),
    "control_characters": ("control_characters",),
    "markup": ("markup",),
    "too_long": ("max_words", "max_chars"),
    "letters": ("min_letter_ratio",),
    "length_ratio": ("max_ratio_deviation",),
    "copy": ("max_copy_overlap",),
    "held_out": ("held_out",),
    "language": ("language_rank",),
    "duplicate": ("duplicates",),
    "near_duplicate": ("near_duplicates",),
}
FILTERS = tuple(FILTER_KEYS)  # in the order they judge
REPAIRS = ("fix_text", "markup")  # nmt/data/repairs.py, in the order they repair
# a pair repaired, the repairs made, and the filter that removes it with what it saw
Verdict = tuple[str, str, tuple[str, ...], tuple[str, str] | None]
log = logging.getLogger("nmt")

LANGUAGES_HINT = "Check that data.src_lang and data.tgt_lang name the corpus's languages. "


@dataclass(frozen=True)
class Judged:
    """A pair (`number` counts from 1, as lines do), what repaired it and why it was
    removed, if it was: the filter's name and what it saw."""

    number: int
    src: str  # as the filters judged it: repaired
    tgt: str
    removed_by: str | None = None
    detail: str = ""
    repairs: tuple[str, ...] = ()  # of nmt/data/repairs.py, those that changed the pair


class Cleaner:
    """The filters of a `clean` section for one direction, with the state they keep: the
    corpus's length ratio, the pairs seen, and counts of what each removed."""

    def __init__(
        self,
        config: CleanConfig,
        src_lang: str,
        tgt_lang: str,
        held_out: Iterable[str] = (),
    ):
        self.config = config
        self.languages = (src_lang, tgt_lang)
        self.identifier = LanguageRanks() if config.language_rank else None
        self.held_out = (
            {fold(line) for line in held_out if fold(line)} if config.held_out else set()
        )
        self.seen, self.seen_folded = SeenHashes(), SeenHashes()
        self.ratio: tuple[float, float] | None = None  # the corpus's median, robust deviation
        self.counts: collections.Counter[str] = collections.Counter()  # removed, repaired
        self.pairs = 0
        self.checks: list[tuple[str, Callable[[str, str], str | None]]] = [  # all but duplicates
            (name, check) for name, check in self._checks().items() if check is not None
        ]

    def clean(self, pairs: Iterable[tuple[str, str]], workers: int = 1) -> Iterator[Judged]:
        """Every pair, judged, in input order. The first `ratio_sample` pairs are read
        before the first is judged: they measure the corpus's length ratio. With `workers`
        > 1, on a corpus longer than that sample, the filters but duplicates judge chunks of
        pairs in as many processes, a few chunks ahead at most; duplicates are judged here,
        in order, so the result is the same."""
        numbered = ((number, src, tgt) for number, (src, tgt) in enumerate(pairs, 1))
        sample = list(islice(numbered, self.config.ratio_sample))
        self.ratio = _ratio_spread([repaired(src, tgt, self.config)[:2] for _, src, tgt in sample])
        rows = chain(sample, numbered)
        if workers > 1 and len(sample) == self.config.ratio_sample:  # worth starting processes
            verdicts = _in_processes(self, rows, workers)
        else:
            verdicts = ((row, self.judge_alone(row[1], row[2])) for row in rows)
        for (number, _, _), (src, tgt, repairs, verdict) in verdicts:
            removal = verdict or self._repeated(src, tgt)
            yield self._counted(Judged(number, src, tgt, *removal, repairs=repairs))

    def judge_alone(self, src: str, tgt: str) -> Verdict:
        """The pair repaired, the repairs made, and (filter, detail) of the first filter but
        duplicates that removes it (None: none does)."""
        src, tgt, repairs = repaired(src, tgt, self.config)
        for name, check in self.checks:
            detail = check(src, tgt)
            if detail is not None:
                return src, tgt, repairs, (name, detail)
        return src, tgt, repairs, None

    def _repeated(self, src: str, tgt: str) -> tuple[str, str] | tuple[()]:
        """(filter, detail) where a kept pair repeats an earlier kept one; () if new."""
        if self.config.duplicates and self.seen.seen_or_add(f"{src}\t{tgt}"):
            return "duplicate", "seen before"
        folded = f"{fold(src)}\t{fold(tgt)}"
        if self.config.near_duplicates and self.seen_folded.seen_or_add(folded):
            return "near_duplicate", "seen before, once case and punctuation are folded"
        return ()

    def _counted(self, judged: Judged) -> Judged:
        self.pairs += 1
        self.counts.update(f"repaired:{name}" for name in judged.repairs)
        if judged.removed_by is not None:
            self.counts[judged.removed_by] += 1
        return judged

    def report(self) -> dict:
        """Pairs in, out, repaired by each repair and removed by each filter (all of them,
        zeros included)."""
        removed = {name: self.counts[name] for name in FILTERS}
        repairs = {name: self.counts[f"repaired:{name}"] for name in REPAIRS}
        kept = self.pairs - sum(removed.values())
        return {"pairs_in": self.pairs, "pairs_out": kept, "repaired": repairs, "removed": removed}

    def _checks(self) -> dict[str, Callable[[str, str], str | None] | None]:
        config = self.config
        return {
            "empty": _empty if config.empty else None,
            "control_characters": _control if config.control_characters else None,
            "markup": _markup if config.markup == "remove" else None,
            "too_long": self._too_long if config.max_words or config.max_chars else None,
            "letters": self._letters if config.min_letter_ratio else None,
            "length_ratio": self._length_ratio if config.max_ratio_deviation else None,
            "copy": self._copy if config.max_copy_overlap else None,
            "held_out": self._held_out if self.held_out else None,
            "language": self._language if self.identifier else None,
        }

    def _too_long(self, src: str, tgt: str) -> str | None:
        words, chars = self.config.max_words, self.config.max_chars
        for side, text in (("source", src), ("target", tgt)):
            if words and len(text.split()) > words:
                return f"{side} has {len(text.split())} words, over {words}"
            if chars and len(text) > chars:
                return f"{side} has {len(text)} characters, over {chars}"
        return None

    def _length_ratio(self, src: str, tgt: str) -> str | None:
        if self.ratio is None:
            return None
        median, spread = self.ratio
        deviation = abs(_log_ratio(src, tgt) - median) / spread
        if deviation > self.config.max_ratio_deviation:
            return f"length ratio {len(src)}:{len(tgt)} characters, {deviation:.1f} deviations"
        return None

    def _copy(self, src: str, tgt: str) -> str | None:
        target = trigrams(tgt)
        overlap = len(target & trigrams(src)) / max(1, len(target))
        if overlap > self.config.max_copy_overlap:
            return f"{overlap:.0%} of the target's trigrams are in the source"
        return None

    def _letters(self, src: str, tgt: str) -> str | None:
        for side, text in (("source", src), ("target", tgt)):
            share = letter_share(text)
            if share < self.config.min_letter_ratio:
                return f"{side} is {share:.0%} letters"
        return None

    def _held_out(self, src: str, tgt: str) -> str | None:
        for side, text in (("source", src), ("target", tgt)):
            if fold(text) in self.held_out:
                return f"{side} is a sentence of the valid or test split"
        return None

    def _language(self, src: str, tgt: str) -> str | None:
        best = self.config.language_rank
        for side, text, language in zip(
            ("source", "target"), (src, tgt), self.languages, strict=True
        ):
            if language in self.identifier.known:
                read_as = self.identifier.outside_best(text, language, best)
                if read_as is not None:
                    return f"{side} reads as {read_as}, not {language}"
        return None


def warn_unjudged(clean: CleanConfig, languages: set[str]) -> None:
    """A notice naming the languages the language filter cannot identify (it lets their
    sides through): a filter the config asks for that does nothing is said, not silent."""
    unknown = unidentifiable(languages) if clean.language_rank else []
    if unknown:
        log.warning(
            "notice: the language filter cannot identify %s (py3langid knows ISO 639-1 codes "
            "of 97 languages), so it judges no side in %s.",
            ", ".join(unknown),
            ", ".join(unknown),
        )


def cleaned_pairs(
    pairs: Iterable[tuple[str, str]], data: DataConfig, clean: CleanConfig
) -> Iterator[tuple[str, str]]:
    """The pairs of `data`'s direction that `clean`'s filters keep, as `data.clean: true`
    trains on them (what `nmt clean` writes); the counts are logged at the end."""
    warn_unjudged(clean, {data.src_lang, data.tgt_lang})
    cleaner = Cleaner(clean, data.src_lang, data.tgt_lang, held_out_sentences(data))
    for judged in cleaner.clean(pairs):
        if judged.removed_by is None:
            yield judged.src, judged.tgt
    report = cleaner.report()
    removed = ", ".join(f"{name} {count}" for name, count in report["removed"].items() if count)
    direction = f"{data.src_lang}-{data.tgt_lang}"
    if report["pairs_in"] and not report["pairs_out"]:
        keys = ", ".join(
            f"clean.{key}" for name, count in report["removed"].items() if count
            for key in FILTER_KEYS[name]
        )  # fmt: skip
        raise UserError(
            f"data.clean: the filters removed all {report['pairs_in']} {direction} training "
            f"pairs of {_train_files(data)} ({removed}), leaving nothing to train on. "
            f"{LANGUAGES_HINT if report['removed']['language'] else ''}Loosen those filters "
            f"({keys}; null turns one off), or set data.clean: false."
        )
    repaired = ", ".join(f"{name} {count}" for name, count in report["repaired"].items() if count)
    log.info(
        "data.clean: %d of %d %s training pairs kept (repaired: %s; removed: %s)",
        report["pairs_out"],
        report["pairs_in"],
        direction,
        repaired or "none",
        removed or "none",
    )


def _train_files(data: DataConfig) -> str:
    """Where the train split's pairs come from, for messages."""
    location = locate(data, "train")
    if location.kind == "hub":
        return f"data.hub_id {data.hub_id}, split '{location.split}'"
    return " and ".join(str(file) for file in location.files)


def cleaning(config: Experiment) -> CleanConfig | None:
    """The filters a run's train split goes through: its clean section under data.clean."""
    return config.clean if config.data.clean else None


def train_pairs(data: DataConfig, clean: CleanConfig | None) -> Iterator[tuple[str, str]]:
    """The train split's pairs one at a time, cleaned by `clean`'s filters where given."""
    pairs = read_pairs(data)
    return pairs if clean is None else cleaned_pairs(pairs, data, clean)


def held_out_sentences(data: DataConfig) -> list[str]:
    """Both sides of the valid and test splits: what no training pair may hold."""
    lines = []
    for role in ("valid", "test"):
        if getattr(data.splits, role) is not None:
            text = load_split(data, role)
            lines += [*text.src, *text.tgt]
    return lines


CHUNK = 2_000  # pairs a process judges at once


def _in_processes(
    cleaner: Cleaner, rows: Iterator[tuple[int, str, str]], workers: int
) -> Iterator[tuple[tuple[int, str, str], Verdict]]:
    """Each row with the verdict of `cleaner`'s filters but duplicates, judged a chunk at a
    time by `workers` processes (each with a copy of the cleaner), in order."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # no torch threads inherited mid-use
    with ProcessPoolExecutor(workers, context, initializer=_adopt, initargs=(cleaner,)) as pool:
        pending: collections.deque = collections.deque()
        chunks = iter(lambda: list(islice(rows, CHUNK)), [])
        for chunk in chain(chunks, [None]):
            if chunk is not None:
                pending.append((chunk, pool.submit(_judge_chunk, [(s, t) for _, s, t in chunk])))
            while pending and (chunk is None or len(pending) > 2 * workers):
                done, verdicts = pending.popleft()
                yield from zip(done, verdicts.result(), strict=True)


_ADOPTED: list[Cleaner] = []  # a worker process's copy of the cleaner


def _adopt(cleaner: Cleaner) -> None:
    _ADOPTED[:] = [cleaner]


def _judge_chunk(pairs: list[tuple[str, str]]) -> list[Verdict]:
    return [_ADOPTED[0].judge_alone(src, tgt) for src, tgt in pairs]


def _empty(src: str, tgt: str) -> str | None:
    if not src.strip() or not tgt.strip():
        return f"{'source' if not src.strip() else 'target'} is empty"
    return None


def _markup(src: str, tgt: str) -> str | None:
    for side, text in (("source", src), ("target", tgt)):
        if has_markup(text):
            return f"{side} holds an HTML tag, a character reference or a URL"
    return None


def _control(src: str, tgt: str) -> str | None:
    for side, text in (("source", src), ("target", tgt)):
        if text.isprintable() and "\ufffd" not in text:
            continue  # no Cc, Co, Cn or Cs character (isprintable excludes them), at C speed
        for char in text:
            if char == "\ufffd" or (
                char != "\t" and unicodedata.category(char) in ("Cc", "Co", "Cn", "Cs")
            ):
                return f"{side} holds U+{ord(char):04X}"
    return None


class _Folding(dict):
    """fold's str.translate table, filled as characters are met: a space for punctuation,
    separators and whitespace, the character itself otherwise (a lookup per character, not
    a category)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        spaced = unicodedata.category(char).startswith(("P", "Z")) or char.isspace()
        self[code] = " " if spaced else char
        return self[code]


FOLDING = _Folding()


def fold(text: str) -> str:
    """Lower case, no punctuation, single spaces: what near duplicates share."""
    return " ".join(text.lower().translate(FOLDING).split())


def trigrams(text: str) -> set[str]:
    padded = f" {text.lower()} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def letter_share(text: str) -> float:
    """Letters among the characters that are not spaces, a URL's counted as no letters."""
    shown = len(text) - sum(map(str.isspace, text))
    letters = sum(map(str.isalpha, URL.sub("", text)))
    return letters / max(1, shown)


def _log_ratio(src: str, tgt: str) -> float:
    return math.log(max(1, len(src)) / max(1, len(tgt)))


def _ratio_spread(sample: list[tuple[str, str]]) -> tuple[float, float] | None:
    """The median log character-length ratio of the sample's non-empty pairs and its robust
    standard deviation (1.4826 x the median absolute deviation); None on too few pairs."""
    ratios = [_log_ratio(src, tgt) for src, tgt in sample if src.strip() and tgt.strip()]
    if len(ratios) < MIN_RATIO_SAMPLE:
        return None
    median = statistics.median(ratios)
    spread = 1.4826 * statistics.median(abs(ratio - median) for ratio in ratios)
    return median, max(spread, 0.01)


class LanguageRanks:
    """py3langid over all its 97 languages (a language it does not know is not judged)."""

    def __init__(self):
        self.model = identifier()
        self.known = set(self.model.nb_classes)

    def outside_best(self, text: str, language: str, best: int) -> str | None:
        """The most likely language of `text` where `language` is not among its `best` most
        likely; None where it is."""
        top = self.model.classify(text)[0]
        if top == language:  # the common case, at a classification's cost
            return None
        ranked = [found for found, _ in self.model.rank(text)[:best]]
        return None if language in ranked else top


def unidentifiable(languages: Iterable[str]) -> list[str]:
    """Those of `languages` py3langid does not know (its ISO 639-1 codes)."""
    return sorted(set(languages) - LanguageRanks().known)
