"""The options the commands share, each declared once: its flag, its value's name and its
help. The decoding options (the `decode` settings a command may replace) are given to a
command by `decoding(...)`, which hands them on as one dict, so translate, eval, score and
serve cannot drift apart in what an option is called, says or does."""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import typer

# Every option names its value the way the README does (FILE, DIR, N, ...): Typer's own
# placeholders are Python types (<path>, <list[Path]>).
CHECKPOINT_HELP = "A .pt file written by nmt train, or its run directory (its best.pt)"

DECODE_OPTIONS: dict[str, Any] = {  # unset, each comes from the checkpoint's decode section
    "batch_size": Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="Sentences per batch (default: decode.batch_size)."),
    ],
    "beam": Annotated[
        int | None, typer.Option(min=1, metavar="K", help="Beam size; 1 is greedy search.")
    ],
    "alpha": Annotated[
        float | None,
        typer.Option(
            min=0.0,
            metavar="A",
            help="Length penalty exponent: rank by score / ((5 + length) / 6) ** alpha.",
        ),
    ],
    "nbest": Annotated[
        int | None,
        typer.Option(
            min=1, metavar="N", help="Write N lines per input: 'INDEX ||| translation ||| score'."
        ),
    ],
    "sample": Annotated[
        bool | None,
        typer.Option("--sample/--no-sample", help="Draw translations at random (nbest: draws)."),
    ],
    "temperature": Annotated[
        float | None, typer.Option(min=0.0, metavar="T", help="Sampling temperature.")
    ],
    "top_k": Annotated[
        int | None,
        typer.Option(min=0, metavar="K", help="Sample from the K most likely tokens (0: all)."),
    ],
    "top_p": Annotated[
        float | None,
        typer.Option(
            metavar="P", help="Sample from the most likely tokens holding this probability mass."
        ),
    ],
    "seed": Annotated[int | None, typer.Option(metavar="S", help="Seed of the sampling.")],
    "max_src_len": Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Cut sources longer than N subwords to N, with a warning (default: "
            "decode.max_src_len).",
        ),
    ],
    "max_len_extra": Annotated[
        int | None,
        typer.Option(
            min=0,
            metavar="N",
            help="A translation may be decode.max_len_ratio x its source's subwords + N long "
            "(default: decode.max_len_extra).",
        ),
    ],
    "no_repeat_ngram": Annotated[
        int | None,
        typer.Option(
            min=0,
            metavar="N",
            help="No translation repeats an n-gram of N tokens (0: off; default: "
            "decode.no_repeat_ngram).",
        ),
    ],
    "coverage_penalty": Annotated[
        float | None,
        typer.Option(
            min=0.0,
            metavar="BETA",
            help="Beam search ranks by GNMT's coverage penalty too, BETA * sum over source "
            "words of log min(attention received, 1) (0: off; default: decode.coverage_penalty).",
        ),
    ],
    "shortlist": Annotated[
        int | None,
        typer.Option(
            min=0,
            metavar="K",
            help="Write only pieces of the shortlist beside the checkpoint (nmt shortlist): "
            "each source piece's K best, and the frequent ones; faster (0: off; default: "
            "decode.shortlist).",
        ),
    ],
    "restrict_to_target_language": Annotated[
        bool | None,
        typer.Option(
            "--restrict-to-target-language/--any-target-piece",
            help="A model that writes several languages writes only pieces its training "
            "targets in the requested language used (default: "
            "decode.restrict_to_target_language).",
        ),
    ],
    "precision": Annotated[
        Literal["auto", "fp32", "bf16"] | None,
        typer.Option(
            metavar="auto|fp32|bf16",
            help="What search computes in: bf16 (bfloat16 weights and activations, scores "
            "summed in float32) is faster where the CPU or GPU multiplies it natively; auto "
            "chooses it there for models 128 or more wide (default: decode.precision).",
        ),
    ],
    "through": Annotated[
        str | None,
        typer.Option(
            metavar="LANG",
            help="Translate into LANG first, then from LANG into the target (pivoting); a "
            "direction a multilingual model never trained goes through the language that "
            "connects it unless decode.zero_shot is direct (default: decode.through).",
        ),
    ],
    "zero_shot": Annotated[
        Literal["pivot", "direct"] | None,
        typer.Option(
            metavar="pivot|direct",
            help="A direction a multilingual model never trained: through the language that "
            "connects it (pivot), or zero-shot (direct) (default: decode.zero_shot).",
        ),
    ],
    "pivot_candidates": Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="K",
            help="Through a pivot, the first leg's K best each give K translations, ranked by "
            "the two legs' summed log-probability (default: decode.pivot_candidates).",
        ),
    ],
    "max_constraints": Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Most phrases one sentence may include or exclude (default: "
            "decode.max_constraints).",
        ),
    ],
}

WorkersOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        metavar="N",
        help="Batches decoded side by side, each on one torch thread (default: one per core).",
    ),
]
TgtLangOption = Annotated[
    str | None,
    typer.Option(
        "--tgt-lang",
        metavar="LANG",
        help="The language to translate into, for a model trained to write several "
        "(data.directions); a model that writes one needs none.",
    ),
]
ThenOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help=f"{CHECKPOINT_HELP} that translates on from the translations of --checkpoint: "
        "a chain of two models, e.g. German-English then English-Czech.",
    ),
]
AdapterOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="An adapter checkpoint (a run directory of train.adapters, or a .pt file in "
        "it) for the one --checkpoint, its base (default: a --checkpoint naming an adapter "
        "run finds the base it was trained on).",
    ),
]
MemoryOption = Annotated[
    Path | None,
    typer.Option(
        "--tm",
        metavar="FILE",
        help="A translation memory (nmt tm build): a line with an exact match gets its "
        "target as it is; a model trained with data.fuzzy_matches reads the best fuzzy one.",
    ),
]
SrcLangOption = Annotated[
    str | None,
    typer.Option(
        "--src-lang",
        metavar="LANG",
        help="The input's language, where it decides whether a multilingual model pivots "
        "(default: what py3langid reads among the model's source languages).",
    ),
]
QuantizeOption = Annotated[
    Literal["int8"] | None,
    typer.Option(
        metavar="int8",
        help="Run with int8 weights: faster on CPUs, translations nearly always the same "
        "(default: float32).",
    ),
]
SrcOption = Annotated[
    Path | None, typer.Option("--src", metavar="FILE", help="Source sentences, one a line.")
]
TgtOption = Annotated[
    Path | None,
    typer.Option(
        "--tgt", "--ref", metavar="FILE", help="Their translations (references), one a line."
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def checkpoints_option(what: str) -> Any:
    """--checkpoint, repeatable: `what` repeating it does."""
    return Annotated[
        list[Path] | None,
        typer.Option(metavar="FILE", help=f"{CHECKPOINT_HELP}; repeat it to {what}."),
    ]


def decoding(
    *names: str, repeatable: tuple[str, ...] = ()
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Gives a command the decoding options `names` (keys of DECODE_OPTIONS, after its own
    options); they reach it as `decode`, a dict of those given on the command line. Those
    in `repeatable` may be given several times, and reach it as lists."""
    unknown = set(names) - set(DECODE_OPTIONS) | set(repeatable) - set(names)
    if unknown:
        raise ValueError(f"no decoding option {', '.join(sorted(unknown))}")

    def add(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "decode"]
        added = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=_repeated(DECODE_OPTIONS[name]) if name in repeatable else kind,
            )
            for name, kind in ((name, DECODE_OPTIONS[name]) for name in names)
        ]

        @functools.wraps(command)
        def with_decoding(**arguments: Any) -> None:
            given = {name: arguments.pop(name) for name in names}
            decode = {name: value for name, value in given.items() if value is not None}
            command(**arguments, decode=decode)

        with_decoding.__signature__ = signature.replace(parameters=[*own, *added])
        return with_decoding

    return add


def _repeated(option: Any) -> Any:
    """A decoding option, `Annotated[T | None, typer.Option(...)]`, as a repeatable one."""
    kind, info = get_args(option)
    value = next(arg for arg in get_args(kind) if arg is not type(None))
    info = copy.copy(info)
    info.help = f"{info.help} Repeat it to score every combination: a row each, and the best."
    return Annotated[list[value] | None, info]
