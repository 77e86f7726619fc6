"""What every format hands its text to: a batch of segments (a paragraph, a cue, a catalogue
message) translated together, each with its tags and placeholders kept."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nmt.data.markup import MarkupKind
from nmt.translate.markup import marked_stream


@dataclass(frozen=True)
class Segment:
    """A piece of a file to translate: `text` in markup of `kind` (its tags kept), `escaped`
    as nmt/data/markup's `parse` takes it (None: as the kind has it)."""

    text: str
    kind: MarkupKind = "text"
    escaped: bool | None = None


@dataclass
class SegmentTranslator:
    """Translates segments with `translator` (a Translator, or anything with its `stream`),
    the options of `translator.stream` in `options`, `keep` its extra placeholder patterns;
    `done(n)` hears of each n segments translated."""

    translator: Any
    keep: Sequence[str] = ()
    src_lang: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    done: Callable[[int], None] | None = None

    def __call__(self, segments: Sequence[Segment]) -> list[str]:
        """Each segment's translation, in order (a blank one as it is)."""
        found: list[str] = [segment.text for segment in segments]
        groups: dict[tuple, list[int]] = {}
        for index, segment in enumerate(segments):
            if segment.text.strip():
                groups.setdefault((segment.kind, segment.escaped), []).append(index)
        for (kind, escaped), indices in groups.items():
            translations = marked_stream(
                self.translator,
                (segments[index].text for index in indices),
                kind,
                chunk=None,
                done=self.done,
                first=indices,
                src_lang=self.src_lang,
                keep=self.keep,
                escaped=escaped,
                **self.options,
            )
            for index, translation in zip(indices, translations, strict=True):
                found[index] = translation.text
        return found


Translate = Callable[[Sequence[Segment]], list[str]]
