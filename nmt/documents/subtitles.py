"""Subtitles: SubRip (.srt, read and written by `srt`) and WebVTT (.vtt, by webvtt-py). Each
cue's lines are translated as one text (its tags, <i> and the like, kept) and the
translation is wrapped again in at most as many lines as the cue had, each at most
`Settings.max_line` characters where that many lines allow it; numbers, timings, cue
settings, identifiers and notes stay as they were."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

import srt
import webvtt
from webvtt.errors import MalformedCaptionError, MalformedFileError

from nmt.documents.errors import DocumentError, decoded
from nmt.documents.segments import Segment, Translate

if TYPE_CHECKING:
    from nmt.documents.formats import Settings

TAG = re.compile(r"<[^>]*>")


def translate_srt(data: bytes, translate: Translate, settings: Settings) -> bytes:
    text = decoded(data)
    try:
        cues = list(srt.parse(text))
    except srt.SRTParseError as error:
        line = text.count("\n", 0, error.expected_start) + 1
        raise DocumentError(
            f"line {line}: a cue should start there (its number, then 'HH:MM:SS,mmm --> "
            f"HH:MM:SS,mmm'), found {text[error.expected_start : error.actual_start][:40]!r}"
        ) from None
    contents = [cue.content for cue in cues]
    # SubRip's tags come without character references: its text is written as it is
    translated = translate([Segment(one_line(c), "html", escaped=False) for c in contents])
    for cue, content, translation in zip(cues, contents, translated, strict=True):
        cue.content = wrapped(translation, len(content.splitlines()), settings.max_line)
    return srt.compose(cues, reindex=False).encode("utf-8")


def translate_vtt(data: bytes, translate: Translate, settings: Settings) -> bytes:
    text = decoded(data)
    if not text.startswith("WEBVTT"):
        raise DocumentError(f"line 1: a WebVTT file starts with WEBVTT, not {text[:20]!r}")
    try:
        captions = webvtt.from_buffer(io.StringIO(text))
    except (MalformedFileError, MalformedCaptionError) as error:
        raise DocumentError(str(error)) from None
    contents = [caption.raw_text for caption in captions]
    translated = translate([Segment(one_line(c), "html") for c in contents])
    for caption, content, translation in zip(captions, contents, translated, strict=True):
        caption.text = wrapped(translation, len(content.splitlines()), settings.max_line)
    return captions.content.encode("utf-8")


def one_line(content: str) -> str:
    """A cue's lines as one text, a space where a line ended."""
    return " ".join(line.strip() for line in content.splitlines() if line.strip())


def wrapped(text: str, lines: int, width: int) -> str:
    """`text` in the fewest of at most `lines` lines (at least one) that are each at most
    `width` characters long (tags not counted), or in `lines` lines as even as they can be;
    broken only at spaces outside tags."""
    words = _words(text)
    if lines <= 1 or len(words) <= 1:
        return " ".join(words)
    sizes = [len(TAG.sub("", word)) for word in words]
    best = None
    for count in range(1, min(lines, len(words)) + 1):
        best = _balanced(sizes, count)
        if max(_widths(sizes, best)) <= width:
            break
    cuts = [0, *best, len(words)]
    return "\n".join(" ".join(words[a:b]) for a, b in zip(cuts, cuts[1:], strict=False))


def _words(text: str) -> list[str]:
    """Words, each with the tags that touch it: spaces inside a tag do not part words."""
    words, current, inside = [], [], False
    for char in text:
        inside = (inside or char == "<") and char != ">"
        if char.isspace() and not inside:
            if current:
                words.append("".join(current))
            current = []
        else:
            current.append(char)
    return [*words, "".join(current)] if current else words


def _balanced(sizes: list[int], count: int) -> list[int]:
    """Where to break words of `sizes` into `count` lines so that the longest line is as
    short as it can be (dynamic programming over the break points)."""
    n = len(sizes)
    prefix = [0]
    for size in sizes:
        prefix.append(prefix[-1] + size)

    def width(a: int, b: int) -> int:
        return prefix[b] - prefix[a] + (b - a - 1)  # the words and the spaces between

    best = {(0, 0): (0, [])}  # (lines made, words used) -> (longest line, breaks)
    for made in range(count):
        for used in range(n):
            if (made, used) not in best:
                continue
            longest, breaks = best[(made, used)]
            ends = [n] if made == count - 1 else range(used + 1, n)  # the last line: the rest
            for end in ends:
                candidate = (max(longest, width(used, end)), [*breaks, end])
                key = (made + 1, end)
                if key not in best or candidate[0] < best[key][0]:
                    best[key] = candidate
    return best[(count, n)][1][:-1]


def _widths(sizes: list[int], breaks: list[int]) -> list[int]:
    cuts = [0, *breaks, len(sizes)]
    return [sum(sizes[a:b]) + (b - a - 1) for a, b in zip(cuts, cuts[1:], strict=False)]
