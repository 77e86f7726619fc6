"""The options of the pairwise test (tests/test_option_pairs.py), where each is taken, the
combinations that are always refused (kept out of the covering array by `valid`, and each
tried once on its own in REFUSALS, with the option its message must name), and the input.
"""

from __future__ import annotations

from pair_kinds import KINDS

from nmt.model.device import cpu_has_fast_bf16

LINES = [
    "the dog sees the cat.",
    "",
    "a very small bird has slept because we sleep.",
    "the cat sleeps.",
    "we see a small dog.",
    "a bird sees the cat because the dog sleeps.",
]
# LINES marked up (--markup html): each tag must come back once, around some words or none
MARKED = [
    "the <b>dog</b> sees the cat.",
    "",
    'a very small bird has slept because <a href="#x">we sleep</a>.',
    "the cat sleeps.<br>",
    "<p>we see a <i>small</i> dog.</p>",
    "a bird sees the cat because <code>x = 1</code> the dog sleeps.",
]
CONSTRAINTS = [{"include": ["Hund"], "exclude": ["Katze"]}, None, {"exclude": ["Vogel"]}]
CONSTRAINTS += [None, {"include": ["klein"]}, None]
PREFIXES = ["der", None, "ein", None, "wir", None]
REFERENCES = ["der Hund sieht die Katze.", "", "ein sehr kleiner Vogel hat geschlafen."]
REFERENCES += ["die Katze schläft.", "wir sehen einen kleinen Hund.", "ein Vogel sieht die Katze."]
# the pair of the translation memory (--tm) whose source is LINES[0]: its exact match
REMEMBERED = (LINES[0], "der Hund aus dem Gedächtnis sieht die Katze.")

FACTORS = {
    "entry": ["translate", "eval", "score", "distill", "serve", "python"],
    "kind": list(KINDS),
    "search": ["greedy", "beam", "sample"],
    "nbest": [1, 2],
    "alignments": [False, True],
    "plots": [False, True],
    "coverage": [0.0, 0.2],
    "constraints": [False, True],
    "prefix": [False, True],
    "blocking": [0, 2],
    "shortlist": [0, 3],
    "restrict": [False, True],
    "int8": [False, True],
    "ensemble": [False, True],  # two different models of the kind
    "workers": [1, 2],
    "through": [False, True],  # True: through the kind's pivot language
    "precision": ["fp32", "bf16"] if cpu_has_fast_bf16() else ["fp32"],
    "zero_shot": ["pivot", "direct"],
    "candidates": [1, 2],  # --pivot-candidates
    "src_lang": [False, True],  # True: --src-lang en, the input's language
    "batch": [None, 3],  # --batch-size (the kinds' own: 2)
    "sampling": [False, True],  # True: temperature 0.7, top-k 5, top-p 0.9, seed 3
    "max_constraints": [None, 2],
    "stdio": [False, True],  # True: the input on stdin, the output on stdout
    "markup": [False, True],  # True: MARKED with --markup html (markup="html")
    "document": [False, True],  # True: LINES as the cues of a SubRip file, --format srt
    "tm": [False, True],  # True: --tm, a memory of the corpus and REMEMBERED (memory=...)
}
DECODING = {"search", "coverage", "blocking", "shortlist", "restrict", "ensemble", "workers"}
DECODING |= {"precision", "zero_shot", "candidates", "batch"}
# the options each entry point takes (the rest stay at their first value there)
TAKES = {
    "translate": set(FACTORS),
    "python": set(FACTORS) - {"stdio", "document"},
    "eval": DECODING | {"through", "max_constraints", "tm"},
    "score": {"ensemble", "workers", "through", "precision", "zero_shot", "candidates", "batch"}
    | {"src_lang"},
    "distill": DECODING | {"int8"},  # every direction: no pivot between them (REFUSALS)
    # (score and distill read no memory)
    "serve": set(FACTORS) - {"ensemble", "batch", "sampling", "stdio", "document"},
}
# what names one sentence's translation, which a marked-up line or a file does not have
NOT_MARKED = {"nbest", "alignments", "plots", "constraints", "prefix"}
# what a memory's appended match or unsearched exact match leaves nothing to refer to
NOT_WITH_MEMORY = {"alignments", "plots", "constraints", "prefix", "through", "markup", "document"}
SEARCHES = {"eval": ("greedy", "beam"), "distill": ("greedy", "beam"), "serve": ("greedy", "beam")}
ENTRIES = {"ctranslate2": {"translate"}, "chain": {"translate", "python", "serve"}}
# what CTranslate2 does not decode (it is refused: REFUSALS)
NOT_CTRANSLATE2 = {"alignments", "plots", "constraints", "coverage", "ensemble", "through", "tm"}


def given(case: dict) -> set[str]:
    """The options a (partial) case sets away from their first value."""
    return {name for name, value in case.items() if name != "kind" and value != FACTORS[name][0]}


def valid(case: dict) -> bool:
    """Whether a (partial) case is one that must run to its answer: an entry point takes
    every option it sets, and no two of its options are always refused together."""
    entry, kind = case.get("entry"), KINDS.get(case.get("kind"))
    options = given(case) - {"entry"}
    if entry is not None and (
        options - TAKES[entry]
        or case.get("search", "greedy") not in SEARCHES.get(entry, FACTORS["search"])
        or entry not in ENTRIES.get(case.get("kind"), {entry})
    ):
        return False
    search = case.get("search", "sample" if "sampling" in options else None)
    if "nbest" in options and search == "greedy":  # n-best needs a beam or samples
        return False
    if search in ("greedy", "beam") and "sampling" in options:
        return False
    if search == "sample" and "constraints" in options:  # included phrases need a beam
        return False
    if {"int8", "precision"} <= options:  # two ways to compute faster: choose one
        return False
    if options & {"markup", "document"} and options & NOT_MARKED:
        return False
    if {"markup", "document"} <= options or {"document", "stdio"} <= options:
        return False
    if "tm" in options and options & NOT_WITH_MEMORY:
        return False
    if kind is None:
        return True
    if "tm" in options and (kind.chain or kind.tgt_lang not in (None, "de")):
        return False  # the memory's targets are German, and the chain's go on into xx
    not_ctranslate2 = NOT_CTRANSLATE2 | {"sampling", "markup", "document"}
    if kind.engine == "ctranslate2" and options & not_ctranslate2:
        return False
    if kind.engine == "ctranslate2" and search == "sample":
        return False
    return not (
        "restrict" in options
        and not kind.several
        or "shortlist" in options
        and kind.copies
        or "through" in options
        and kind.pivot is None
    )


# Always refused: (why, case's options away from their defaults, the names its message may
# call the option that conflicts). Each runs alone, on the entry and kind given.
REFUSALS = [
    ("n-best of greedy search", dict(entry="translate", nbest=2), ("--nbest", "decode.nbest")),
    ("n-best of greedy search", dict(entry="python", nbest=2), ("nbest", "decode.nbest")),
    ("n-best of greedy search", dict(entry="serve", nbest=2), ("n_best",)),
    (
        "included phrases while sampling",
        dict(entry="translate", search="sample", constraints=True),
        ("--sample", "sample"),
    ),
    (
        "one target language to keep to",
        dict(entry="eval", restrict=True),
        ("--restrict-to-target-language",),
    ),
    (
        "one target language to keep to",
        dict(entry="python", restrict=True),
        ("restrict_to_target_language",),
    ),
    (
        "a shortlist of a copy model",
        dict(entry="translate", kind="copy", shortlist=3),
        ("--shortlist",),
    ),
    ("a shortlist of a copy model", dict(entry="serve", kind="copy", shortlist=3), ("shortlist",)),
    ("a pivot the model never writes", dict(entry="translate", through="xx"), ("--through",)),
    ("a pivot the model never writes", dict(entry="score", through="xx"), ("--through",)),
    ("a pivot the model never writes", dict(entry="serve", through="xx"), ("through",)),
    (
        "a pivot that is the source language",
        dict(entry="translate", kind="pivoting", through="en"),
        ("--through",),
    ),
    (
        "a pivot that is the target language",
        dict(entry="python", kind="pivoting", through="xx"),
        ("through",),
    ),
    (
        "a pivot that is the target language",
        dict(entry="serve", kind="multi_transformer", through="xx"),
        ("through",),
    ),
    (
        "a pivot that is a source of every direction distilled",
        dict(entry="distill", kind="pivoting", through="de"),
        ("--through",),
    ),
    (
        "an unknown source language",
        dict(entry="translate", kind="pivoting", src_lang="fr"),
        ("--src-lang",),
    ),
    (
        "an unknown source language",
        dict(entry="serve", kind="pivoting", src_lang="fr"),
        ("src_lang",),
    ),
    (
        "a chain that cannot meet in the pivot",
        dict(entry="translate", kind="chain", through="xx"),
        ("--through",),
    ),
    (
        "constraints the chain's second model limits",
        dict(entry="serve", kind="chain", constraints=True, strict_then=True),
        ("max_constraints", "--max-constraints"),
    ),
    (
        "two ways to compute faster",
        dict(entry="translate", int8=True, precision="bf16"),
        ("--precision", "--quantize"),
    ),
    (
        "more phrases than allowed",
        dict(entry="translate", constraints=True, max_constraints=1),
        ("--max-constraints",),
    ),
    (
        "more phrases than allowed",
        dict(entry="python", constraints=True, max_constraints=1),
        ("max_constraints",),
    ),
    (
        "CTranslate2 samples nothing",
        dict(entry="translate", kind="ctranslate2", search="sample"),
        ("--sample",),
    ),
    (
        "CTranslate2 aligns nothing",
        dict(entry="translate", kind="ctranslate2", alignments=True),
        ("--alignments",),
    ),
    (
        "CTranslate2 decodes no constraints",
        dict(entry="translate", kind="ctranslate2", constraints=True),
        ("--constraints",),
    ),
    (
        "one marked-up line of several sentences",
        dict(entry="translate", markup=True, alignments=True),
        ("--alignments",),
    ),
    (
        "one marked-up line of several sentences",
        dict(entry="translate", markup=True, search="beam", nbest=2),
        ("--nbest",),
    ),
    (
        "one marked-up line of several sentences",
        dict(entry="python", markup=True, constraints=True),
        ("constraints",),
    ),
    (
        "one marked-up line of several sentences",
        dict(entry="serve", markup=True, prefix=True),
        ("markup", "prefix"),
    ),
    (
        "a file of several sentences",
        dict(entry="translate", document=True, plots=True),
        ("--attention-plots",),
    ),  # fmt: skip
    (
        "a file's format decides its markup",
        dict(entry="translate", markup=True, document=True),
        ("--markup",),
    ),  # fmt: skip
    (
        "a file is read whole from --input",
        dict(entry="translate", document=True, stdio=True),
        ("--format", "--input"),
    ),  # fmt: skip
    (
        "CTranslate2 aligns no tags",
        dict(entry="translate", kind="ctranslate2", markup=True),
        ("--markup",),
    ),
    (
        "a memory's matches change the source",
        dict(entry="translate", tm=True, alignments=True),
        ("alignments",),
    ),
    (
        "a memory's matches change the source",
        dict(entry="python", tm=True, prefix=True),
        ("prefix",),
    ),
    (
        "a memory's matches change the source",
        dict(entry="serve", tm=True, constraints=True),
        ("constraints",),
    ),
    (
        "a memory of another target language",
        dict(entry="translate", kind="pivoting", tm=True),
        ("--tgt-lang",),
    ),
    (
        "CTranslate2 has no coverage penalty",
        dict(entry="translate", kind="ctranslate2", coverage=0.2),
        ("--coverage-penalty",),
    ),
]
