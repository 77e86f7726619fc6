"""Every pair of option values on every model kind and entry point: translate, eval, score,
distill, serve (its HTTP API) and Python. Each case ends in an answer that keeps its
invariants (a line per input, n-best counts, alignments in range, constraints and prefixes
met, only the pieces allowed, scores equal to forced scores where the docs promise it) or
in a clear refusal: exit 2 (a 4xx from the server, a UserError in Python) with one
`error:` line naming one of the options given. A traceback, exit 1, a 500 or a broken
invariant fails. The cases are a covering array (tests/covering.py): every valid pair once
at least in the default suite, every valid triple under `make test-slow`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from covering import covering_cases

from conftest import (
    TINY_TRANSFORMER,
    nmt,
    tiny_experiment,
    two_way_tokenizer,
    write_checkpoint,
    write_marian_model,
)
from nmt.data.corpus import target_piece_counts
from nmt.data.splits import ParallelText, read_lines
from nmt.errors import UserError
from nmt.translate.translator import Translator

LINES = ["the dog sees the cat.", "", "a very small bird has slept because we sleep."]
CONSTRAINTS = [{"include": ["Hund"], "exclude": ["Katze"]}, None, {"exclude": ["Vogel"]}]
PREFIXES = ["der", None, "ein"]
REFERENCES = ["der Hund sieht die Katze.", "", "ein sehr kleiner Vogel hat geschlafen."]

FACTORS = {
    "entry": ["translate", "eval", "score", "distill", "serve", "python"],
    "kind": ["rnnsearch", "transformer", "copy", "tagged", "decoder_bos", "marian"],
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
    "ensemble": [False, True],
    "workers": [1, 2],
    "through": [None, "en"],
}
# the options each entry point takes (the rest stay at their first value there)
TAKES = {
    "translate": set(FACTORS),
    "python": set(FACTORS),
    "eval": {"search", "coverage", "blocking", "shortlist", "restrict", "ensemble", "workers"}
    | {"through"},
    "score": {"ensemble", "workers", "through"},
    "distill": {"search", "coverage", "blocking", "shortlist", "restrict", "int8", "ensemble"}
    | {"workers", "through"},
    "serve": set(FACTORS) - {"ensemble"},
}
SEARCHES = {"eval": ("greedy", "beam"), "distill": ("greedy", "beam"), "serve": ("greedy", "beam")}
# what a refusal may call each option by: its flag, its key, its request field
NAMES = {
    "search": ("sample", "beam"),
    "nbest": ("nbest", "n_best"),
    "alignments": ("alignments",),
    "plots": ("attention",),
    "coverage": ("coverage",),
    "constraints": ("constraints", "include", "exclude", "phrase"),
    "prefix": ("prefix",),
    "blocking": ("no-repeat-ngram", "no_repeat_ngram"),
    "shortlist": ("shortlist",),
    "restrict": ("restrict",),
    "int8": ("int8", "quantize"),
    "ensemble": ("ensemble", "checkpoint"),
    "workers": ("workers",),
    "through": ("through",),
}
TWO_WAY = ("data.directions=[en-de,de-en]",)


def valid(case: dict) -> bool:
    entry = case.get("entry")
    if entry is None:
        return True
    given = {name for name, value in case.items() if name in NAMES and value != FACTORS[name][0]}
    if given - TAKES[entry]:
        return False
    return "search" not in case or case["search"] in SEARCHES.get(entry, FACTORS["search"])


@pytest.fixture(scope="module")
def models(tmp_path_factory, corpus_dir, tokenizer):
    """A checkpoint of each kind, each with its shortlist: untrained, but for the imported
    Marian's weights; the tagged ones record their languages' pieces as training does."""
    directory = tmp_path_factory.mktemp("kinds")
    english, german = (read_lines(corpus_dir / f"train.{lang}") for lang in ("en", "de"))
    texts = {
        "en-de": ParallelText(english, german, "en-de"),
        "de-en": ParallelText(german, english, "de-en"),
    }
    tagged = two_way_tokenizer(tokenizer)
    pieces = target_piece_counts(tagged, [("en", "de"), ("de", "en")], texts)
    kinds = {
        "rnnsearch": (tiny_experiment(corpus_dir), tokenizer),
        "transformer": (tiny_experiment(corpus_dir, *TINY_TRANSFORMER), tokenizer),
        "copy": (tiny_experiment(corpus_dir, "model.copy=true"), tokenizer),
        "tagged": (
            tiny_experiment(corpus_dir, *TWO_WAY),
            dataclasses.replace(tagged, target_pieces=pieces),
        ),
        "decoder_bos": (
            tiny_experiment(corpus_dir, *TWO_WAY, "data.tags=decoder_bos"),
            dataclasses.replace(tagged, target_pieces=pieces, tag_place="decoder_bos"),
        ),
    }
    paths = {
        name: write_checkpoint(directory / f"{name}.pt", *made) for name, made in kinds.items()
    }
    from nmt.export.marian import import_marian

    marian = write_marian_model(directory / "opus-mt-en-de", corpus_dir)
    paths["marian"] = import_marian(str(marian), directory / "marian.pt")
    for name, path in paths.items():
        built = nmt("shortlist", "--checkpoint", path, "--data", corpus_dir, "--depth", "8")
        assert built.returncode == 0, (name, built.stderr)
    return paths


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The input, its references, its constraints and prefixes, and a small corpus to
    distil, as files."""
    directory = tmp_path_factory.mktemp("inputs")
    written = {
        "input": LINES,
        "reference": REFERENCES,
        "constraints": [json.dumps(c) if c else "" for c in CONSTRAINTS],
        "prefix": [p or "" for p in PREFIXES],
    }
    for name, lines in written.items():
        (directory / name).write_text("".join(line + "\n" for line in lines), "utf-8")
    corpus = directory / "corpus"
    corpus.mkdir()
    for split in ("train", "valid", "test"):
        (corpus / f"{split}.en").write_text("the dog sleeps.\na cat sees the bird.\n", "utf-8")
        (corpus / f"{split}.de").write_text("der Hund schläft.\neine Katze sieht den Vogel.\n")
    return directory


def pairwise_cases(strength: int) -> list[dict]:
    return covering_cases(FACTORS, valid, strength)


def case_id(case: dict) -> str:
    shown = [f"{k}={v}" for k, v in case.items() if k in ("entry", "kind")]
    shown += [f"{k}={v}" for k, v in case.items() if k in NAMES and v != FACTORS[k][0]]
    return ",".join(shown)


PAIRS = pairwise_cases(2)


@pytest.mark.parametrize("case", PAIRS, ids=[case_id(case) for case in PAIRS])
def test_every_pair_of_options_answers_or_refuses_clearly(case, models, files, tmp_path):
    check_case(case, models, files, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", pairwise_cases(3), ids=case_id)
def test_every_triple_of_options_answers_or_refuses_clearly(case, models, files, tmp_path):
    check_case(case, models, files, tmp_path)


def test_the_cases_hold_every_valid_pair():
    from covering import _held, required

    names = list(FACTORS)
    held = set()
    for case in PAIRS:
        held |= _held({n: FACTORS[n].index(case[n]) for n in names}, names, 2)
    assert required(FACTORS, valid, 2) <= held
    assert len(PAIRS) <= 45  # about the product of the two largest factors (36)


def check_case(case: dict, models: dict, files: Path, tmp_path: Path) -> None:
    run = {"python": run_python, "serve": run_serve}.get(case["entry"], run_command)
    outcome = run(case, models, files, tmp_path)
    if isinstance(outcome, Refusal):
        named = [word for option in given(case) for word in NAMES[option]]
        assert any(word in outcome.message for word in named), (case, outcome.message)
        assert "Traceback" not in outcome.message, outcome.message


@dataclasses.dataclass
class Refusal:
    message: str


def given(case: dict) -> list[str]:
    return [name for name in NAMES if case[name] != FACTORS[name][0]]


def tgt_lang(case: dict) -> list[str]:
    """A multilingual model is asked for German; distill translates every direction."""
    tagged = case["kind"] in ("tagged", "decoder_bos") and case["entry"] != "distill"
    return ["--tgt-lang", "de"] if tagged else []


def decode_flags(case: dict) -> list[str]:
    flags = {"greedy": ["--beam", "1"], "beam": ["--beam", "3"], "sample": ["--sample"]}
    flags = list(flags[case["search"]]) if "search" in TAKES[case["entry"]] else []
    for name, flag in (("coverage", "--coverage-penalty"), ("blocking", "--no-repeat-ngram")):
        if case[name]:
            flags += [flag, str(case[name])]
    if case["shortlist"]:
        flags += ["--shortlist", str(case["shortlist"])]
    if case["restrict"]:
        flags.append("--restrict-to-target-language")
    if case["int8"]:
        flags += ["--quantize", "int8"]
    if case["through"]:
        flags += ["--through", case["through"]]
    return flags


def run_command(case: dict, models: dict, files: Path, tmp_path: Path) -> Refusal | None:
    entry, checkpoint = case["entry"], models[case["kind"]]
    args = [entry, "--checkpoint", checkpoint]
    if case["ensemble"]:  # nmt eval compares the checkpoints it is given, unless --ensemble
        args += ["--checkpoint", checkpoint, *["--ensemble"] * (entry == "eval")]
    args += [*decode_flags(case), *tgt_lang(case), "--workers", str(case["workers"])]
    output = tmp_path / "out"
    if entry == "translate":
        args += ["--input", files / "input", "--output", output, "--nbest", str(case["nbest"])]
        args += ["--alignments"] * case["alignments"]
        args += ["--attention-plots", tmp_path / "plots"] * case["plots"]
        args += ["--constraints", files / "constraints"] * case["constraints"]
        args += ["--prefix", files / "prefix"] * case["prefix"]
    elif entry in ("eval", "score"):
        args += ["--src", files / "input", "--tgt", files / "reference"]
        args += ["--output", output] if entry == "score" else []
    else:
        args += ["--data", files / "corpus", "--out", output]
    ran = nmt(*args)
    assert ran.returncode in (0, 2), (args, ran.returncode, ran.stderr)
    if ran.returncode == 2:
        errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, ran.stderr
        return Refusal(errors[0])
    if entry == "translate":
        check_written(case, output.read_text("utf-8").splitlines(), tmp_path / "plots")
    elif entry == "eval":
        assert re.search(r"BLEU\s+\d", ran.stdout), ran.stdout
    elif entry == "score":
        scores = output.read_text("utf-8").splitlines()
        assert [bool(s) for s in scores] == [bool(line) for line in LINES]
    else:
        manifest = json.loads((output / "manifest.json").read_text("utf-8"))
        for direction in manifest["directions"]:
            sources = (output / direction["source"]).read_text("utf-8").splitlines()
            targets = (output / direction["target"]).read_text("utf-8").splitlines()
            assert len(targets) == len(sources) == 2, direction
    return None


def check_written(case: dict, rows: list[str], plots: Path) -> None:
    """translate's output: n-best rows (INDEX ||| text ||| score) or a line per input, each
    alignment in range, a heatmap per non-blank input."""
    nbest = case["nbest"]
    assert len(rows) == len(LINES) * nbest, rows
    for number, row in enumerate(rows):
        fields = row.split(" ||| ")
        if nbest > 1:
            assert int(fields[0]) == number // nbest and float(fields[2]) <= 0 or not fields[1]
        if case["alignments"]:
            words = len(LINES[number // nbest].split())
            for link in fields[-1].split():
                source, target = map(int, link.split("-"))
                assert 0 <= source < words and target >= 0, (row, link)
    if case["plots"]:  # through a pivot, one of each leg
        legs = ("", ".pivot") if case["through"] else ("",)
        expected = sorted(f"{line:05d}{leg}.png" for line in (0, 2) for leg in legs)
        assert sorted(p.name for p in plots.iterdir()) == expected


def python_options(case: dict) -> tuple[dict, dict]:
    """(Translator.load's keywords, translate's)."""
    load = {"workers": case["workers"], "quantize": "int8" if case["int8"] else None}
    load.update(beam={"greedy": 1, "beam": 3, "sample": 3}[case["search"]], nbest=case["nbest"])
    load.update(sample=case["search"] == "sample", coverage_penalty=case["coverage"])
    load.update(no_repeat_ngram=case["blocking"], shortlist=case["shortlist"])
    load.update(restrict_to_target_language=case["restrict"], through=case["through"])
    call = {"alignments": case["alignments"], "attention": case["plots"]}
    call["constraints"] = CONSTRAINTS if case["constraints"] else None
    call["prefix"] = PREFIXES if case["prefix"] else None
    if case["kind"] in ("tagged", "decoder_bos"):
        call["tgt_lang"] = "de"
    return load, call


def run_python(case: dict, models: dict, files: Path, tmp_path: Path) -> Refusal | None:
    checkpoints = [models[case["kind"]]] * (2 if case["ensemble"] else 1)
    load, call = python_options(case)
    try:
        translator = Translator.load(checkpoints, **load)
        found = translator.translate(LINES, **call)
    except UserError as error:
        return Refusal(str(error))
    check_translations(case, translator, found, call.get("tgt_lang"))
    return None


def check_translations(case: dict, translator: Translator, found: list, language) -> None:
    tokenizer = translator.towards(language)
    tgt = tokenizer.tgt
    never = {tgt.pad_id, tgt.bos_id, *tgt.tags.values()}
    allowed = None
    if case["restrict"]:
        allowed = set(tokenizer.language_pieces(language))
    if case["shortlist"]:
        ids = [t.src_ids for t in found if t.src_ids]
        specials = (tgt.eos_id, tgt.unk_id, tgt.bos_id, tgt.pad_id)
        columns = set(translator.shortlist.columns(ids, case["shortlist"], specials).tolist())
        allowed = columns if allowed is None else allowed & columns | {tgt.eos_id}
    assert len(found) == len(LINES)
    for number, translation in enumerate(found):
        if not LINES[number]:
            assert translation.text == "" and not translation.nbest
            continue
        assert 1 <= len(translation.nbest) <= case["nbest"]
        scores = [c.score for c in translation.nbest]
        assert case["search"] == "sample" or scores == sorted(scores, reverse=True)
        for candidate in translation.nbest:
            tokens = candidate.hypothesis.tokens
            written = {t for t in tokens if t < tgt.size}  # copies lie beyond
            assert not written & never, (number, tokens)
            if allowed is not None:
                assert written <= allowed | named_pieces(tgt, case, number), (number, tokens)
            check_guides(case, number, candidate)
            assert (candidate.alignment is not None) == case["alignments"]
            assert (candidate.attention is not None) == case["plots"]
    # over every piece, and in float weights (int8's activation scales follow the batch)
    if not (case["shortlist"] or case["restrict"] or case["int8"] or case["through"]):
        check_forced_scores(translator, found, language)


def named_pieces(tgt, case: dict, number: int) -> set[int]:
    """The pieces the constraints and prefix of input `number` name, which stay allowed."""
    named = set()
    if case["constraints"] and CONSTRAINTS[number]:
        for phrase in CONSTRAINTS[number].get("include", []):
            named |= set(tgt.encode([phrase])[0])
    if case["prefix"] and PREFIXES[number]:
        named |= set(tgt.encode([PREFIXES[number]])[0])
    return named


def check_guides(case: dict, number: int, candidate) -> None:
    text = candidate.text
    if case["constraints"] and CONSTRAINTS[number] and candidate.constraints_met:
        assert all(p in text for p in CONSTRAINTS[number].get("include", [])), text
        assert not any(p in text.split() for p in CONSTRAINTS[number].get("exclude", [])), text
    if case["prefix"] and PREFIXES[number]:
        assert text.startswith(PREFIXES[number]), text


def check_forced_scores(translator: Translator, found: list, language) -> None:
    """Each hypothesis's score is the sum of its tokens' log-probabilities, as nmt score
    computes them (Translator.score)."""
    pairs = [(t.source, c.hypothesis) for t in found for c in t.nbest]
    forced = translator.score(
        [s for s, _ in pairs], [h.tokens for _, h in pairs], tgt_lang=language
    )
    for (_, hypothesis), scored in zip(pairs, forced, strict=True):
        assert scored.total == pytest.approx(hypothesis.score, abs=2e-3), (scored, hypothesis)


def run_serve(case: dict, models: dict, files: Path, tmp_path: Path) -> Refusal | None:
    from serve.serving import serving_app

    from nmt.serve.catalog import load_models
    from nmt.serve.server import create_app

    load, _ = python_options(case)
    options = {k: load[k] for k in ("coverage_penalty", "no_repeat_ngram", "shortlist")}
    options["restrict_to_target_language"] = load["restrict_to_target_language"]
    try:
        served = load_models([f"m={models[case['kind']]}"], quantize=load["quantize"], **options)
    except UserError as error:
        return Refusal(str(error))
    items = []
    for number, line in enumerate(LINES):
        item = {"src": line, "id": "m", "beam": load["beam"], "n_best": case["nbest"]}
        if case["through"]:
            item["through"] = case["through"]
        item.update(alignments=case["alignments"], attention=case["plots"])
        if case["constraints"] and CONSTRAINTS[number]:
            item["constraints"] = CONSTRAINTS[number]
        if case["prefix"] and PREFIXES[number]:
            item["prefix"] = PREFIXES[number]
        if case["kind"] in ("tagged", "decoder_bos"):
            item["tgt_lang"] = "de"
        items.append(item)
    with serving_app(create_app(served, workers=case["workers"])) as client:
        status, answer = client.translate(items)
        assert status == 200 or 400 <= status < 500, (status, answer)
        assert client.request("GET", "/translator/health")[0] == 200  # still serving
    if status != 200:
        return Refusal(json.dumps(answer))
    assert len(answer) == case["nbest"] and all(len(rank) == len(LINES) for rank in answer)
    for rank in answer:
        for number, found in enumerate(rank):
            assert ("align" in found) == case["alignments"], found
            assert bool(found["tgt"]) <= bool(LINES[number]), found  # a blank line: blank
    return None
