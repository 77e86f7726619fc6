"""The options of `nmt translate` and `nmt eval` that no other command takes, each named
and declared once (the ones commands share are in options.py), and the groups of decode
options the decoding commands take."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

# The decode options' groups, by what they govern; each command's @decoding names the groups
# it takes.
SEARCH = ("batch_size", "beam", "alpha", "max_src_len", "max_len_extra", "no_repeat_ngram")
COMPUTING = ("precision",)  # what the model computes in
PIVOTING = ("through", "zero_shot", "pivot_candidates")  # a pivot language between the two
SAMPLING = ("nbest", "sample", "temperature", "top_k", "top_p", "seed")
RESTRICTING = ("shortlist", "restrict_to_target_language")  # which output pieces search scores
GRID = ("beam", "alpha")  # what `nmt eval` scores a grid of, each option given several times

EngineOption = Annotated[
    Literal["torch", "ctranslate2"],
    typer.Option(
        metavar="torch|ctranslate2",
        help="torch: a --checkpoint; ctranslate2: a --model DIR written by nmt export.",
    ),
]
ModelDirOption = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR",
        help="A model directory written by nmt export --format ctranslate2 "
        "(with --engine ctranslate2).",
    ),
]
InputOption = Annotated[
    Path | None,
    typer.Option(
        "--input",
        "--src",
        "-i",
        metavar="FILE",
        help="Source text, one sentence a line, translated a chunk at a time with a "
        "progress line (default: stdin, translated line by line as it arrives).",
    ),
]
TranslationsOutputOption = Annotated[
    Path | None,
    typer.Option("--output", "-o", metavar="FILE", help="Where translations go (default: stdout)."),
]
AlignmentsOption = Annotated[
    bool, typer.Option(help="Append ' ||| ' and word alignments 'i-j' (source-target).")
]
MarkupOption = Annotated[
    Literal["html", "xml"] | None,
    typer.Option(
        metavar="html|xml",
        help="Each input line is marked up: its tags are kept, put back around the words "
        "that translate the words they wrapped; blocks such as <p> and sentences are "
        'translated one by one, and code, translate="no" and class="notranslate" '
        "elements copied untouched.",
    ),
]
PlacementOption = Annotated[
    Literal["projection", "model", "both"] | None,
    typer.Option(
        "--markup-placement",
        metavar="projection|model|both",
        help="Where tags go: by the word alignments (projection, the default), where a model "
        "trained with data.markup_augment writes them (model), or there and by the "
        "alignments where it does not write them each once and in order (both).",
    ),
]
FormatOption = Annotated[
    Literal["txt", "html", "xml", "md", "srt", "vtt", "po", "xliff", "docx"] | None,
    typer.Option(
        "--format",
        metavar="FORMAT",
        help="Translate --input as a whole file of this format: txt, html, xml, md, srt, "
        "vtt, po, xliff, docx (default: by its extension, .html .htm .xhtml .xml .md "
        ".markdown .srt .vtt .po .pot .xliff .xlf .docx; other files, .txt among them, are "
        "translated line by line).",
    ),
]
KeepOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="REGEX",
        help="With --markup: also copy untouched what this regular expression matches "
        "(repeatable), as URLs, e-mail addresses, numbers with units and format variables "
        "such as %s and {count} always are.",
    ),
]
AttentionPlotsOption = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR", help="Write an attention heatmap per input line here, DIR/INDEX.png."
    ),
]
AttentionLayerOption = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        help="A Transformer's layer (1 to its layers) whose attention over the source "
        "--alignments and --attention-plots show (default: the last).",
    ),
]
ConstraintsOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help='One JSON object per input line, {"include": [phrases], "exclude": '
        "[phrases]}: phrases each translation must hold, and must not (a blank line: "
        "none). Included phrases take beam search.",
    ),
]
PrefixOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="One line per input line: the text its translation starts with (a blank "
        "line: none); the search continues from it.",
    ),
]
SplitOption = Annotated[
    str | None,
    typer.Option(
        metavar="SPLIT",
        help="Which split of the checkpoint's corpus to score: train, valid or test "
        "(default: test).",
    ),
]
HypOption = Annotated[
    list[Path] | None,
    typer.Option(
        metavar="FILE",
        help="Translations made elsewhere, to score; repeat to compare systems (paired "
        "bootstrap p-values against the first).",
    ),
]
AmendOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help="Amend the checkpoint's config to find --split, e.g. --set data.path=DIR "
        "(repeatable).",
    ),
]
EnsembleOption = Annotated[
    bool,
    typer.Option(
        "--ensemble",
        help="Translate with all the --checkpoint models as one ensemble instead of "
        "comparing them.",
    ),
]
KeptOutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Keep the translations there, one a line, to test later systems against "
        "(--hyp): one system (a --checkpoint, or --ensemble), one setting, one direction.",
    ),
]
