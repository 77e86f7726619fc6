"""Every pair of option values on every model kind and entry point: translate, eval, score,
distill, serve (its HTTP API) and Python. The cases are a covering array (tests/covering.py)
of the combinations that must run (tests/pair_factors.py `valid`): each runs to its answer
and keeps its invariants (tests/pair_invariants.py); a refusal, a traceback, exit 1, a 500
or a broken invariant fails it. What is always refused is tried once per reason on its own
(REFUSALS): exit 2 (a 4xx from the server, a UserError in Python) with one message naming
the option that conflicts. A ledger records the pairs each case ran to its answer, and the
last test fails if a valid pair never did. Every valid pair in the default suite; every
valid triple under `make test-slow`.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from covering import covering_cases
from pair_factors import (
    CONSTRAINTS,
    FACTORS,
    LINES,
    MARKED,
    PREFIXES,
    REFERENCES,
    REFUSALS,
    REMEMBERED,
    valid,
)
from pair_kinds import corpus_of, shared_kinds
from pair_runners import Refusal, run

from conftest import WORKER, nmt

# one worker runs every case of this file, in order, so the ledger is complete when its
# last test reads it
pytestmark = [pytest.mark.usefixtures("one_thread"), pytest.mark.xdist_group("option_pairs")]


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    return shared_kinds(tmp_path_factory)


@pytest.fixture(scope="module")
def files(tmp_path_factory, kinds):
    """The input, its references, its constraints and prefixes, and a small corpus (of
    every language the kinds read) to distil, as files."""
    directory = tmp_path_factory.mktemp("inputs")
    written = {
        "input": LINES,
        "reference": REFERENCES,
        "constraints": [json.dumps(c) if c else "" for c in CONSTRAINTS],
        "prefix": [p or "" for p in PREFIXES],
        "marked": MARKED,
    }
    for name, lines in written.items():
        (directory / name).write_text("".join(line + "\n" for line in lines), "utf-8")
    memorised = directory / "memorised"  # REMEMBERED first, then the corpus: a memory's pairs
    corpus = corpus_of(kinds["rnnsearch"].checkpoint.parent)
    for lang, extra in (("en", REMEMBERED[0]), ("de", REMEMBERED[1])):
        lines = [extra, *(corpus / f"train.{lang}").read_text("utf-8").splitlines()]
        memorised.mkdir(exist_ok=True)
        (memorised / f"train.{lang}").write_text("".join(f"{line}\n" for line in lines), "utf-8")
    ran = nmt("tm", "build", "--data", memorised, "--src-lang", "en", "--tgt-lang", "de",
              "--out", directory / "memory.npz")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    cues = [line for line in LINES if line]  # a SubRip file of the input, a cue a line
    (directory / "film.srt").write_text(
        "".join(
            f"{n}\n00:00:0{n},000 --> 00:00:0{n},900\n{line}\n\n" for n, line in enumerate(cues, 1)
        ),  # fmt: skip
        "utf-8",
    )
    corpus = directory / "corpus"
    corpus.mkdir()
    for source in corpus_of(kinds["rnnsearch"].checkpoint.parent).iterdir():
        kept = source.read_text("utf-8").splitlines()[:3]
        (corpus / source.name).write_text("".join(line + "\n" for line in kept), "utf-8")
    return directory


@pytest.fixture(scope="session")
def ledger(tmp_path_factory) -> Path:
    """Where each pair case records what it ran (every xdist worker writes there)."""
    root = tmp_path_factory.getbasetemp()
    directory = (root.parent if WORKER else root) / "pairs-ran"
    directory.mkdir(exist_ok=True)
    return directory


def case_id(case: dict) -> str:
    shown = [case["entry"], case["kind"]]
    shown += [
        f"{k}={case[k]}" for k in FACTORS if k not in ("entry", "kind") and case[k] != FACTORS[k][0]
    ]
    return ",".join(shown)


def defaults(**options) -> dict:
    return {name: values[0] for name, values in FACTORS.items()} | options


PAIRS = covering_cases(FACTORS, valid, 2)


@pytest.mark.parametrize("number", range(len(PAIRS)), ids=[case_id(c) for c in PAIRS])
def test_every_pair_of_options_runs_to_its_answer(number, kinds, files, tmp_path, ledger):
    case, ran = PAIRS[number], False
    try:
        outcome = run(case, kinds, files, tmp_path)
        assert not isinstance(outcome, Refusal), outcome.message
        ran = True
    finally:
        pairs = [
            [(a, repr(case[a])), (b, repr(case[b]))] for a, b in itertools.combinations(FACTORS, 2)
        ]
        (ledger / f"{number}.json").write_text(json.dumps({"ran": ran, "pairs": pairs}))


@pytest.mark.slow
def test_every_triple_of_options_runs_to_its_answer(kinds, files, tmp_path):
    """The triples' covering array (generated here: seconds that collection need not pay)."""
    failed = []
    for number, case in enumerate(covering_cases(FACTORS, valid, 3)):
        (tmp_path / str(number)).mkdir()
        try:
            outcome = run(case, kinds, files, tmp_path / str(number))
            assert not isinstance(outcome, Refusal), outcome.message
        except Exception as error:  # every case's failure, not only the first
            failed.append(f"{case_id(case)}: {type(error).__name__}: {error}")
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize(
    "why, options, names", REFUSALS, ids=[f"{o['entry']}: {why}" for why, o, _ in REFUSALS]
)
def test_what_is_always_refused_is_refused_naming_the_option(
    why, options, names, kinds, files, tmp_path
):
    outcome = run(defaults(**options), kinds, files, tmp_path)
    assert isinstance(outcome, Refusal), f"{why}: {options} ran to an answer"
    named = "|".join(rf"(?<![\w-]){re.escape(name)}(?![\w-])" for name in names)
    assert re.search(named, outcome.message), (why, names, outcome.message)


def valid_pairs() -> set[tuple]:
    """Every pair of two options' values that must run, enumerated here on its own."""
    found = set()
    for (a, values_a), (b, values_b) in itertools.combinations(FACTORS.items(), 2):
        for x, y in itertools.product(values_a, values_b):
            if valid({a: x, b: y}):
                found.add(((a, repr(x)), (b, repr(y))))
    return found


def test_every_valid_pair_ran_to_its_answer(request, ledger):
    """After the pair cases (on the same worker, as their xdist group): no valid pair only
    refused."""
    numbers = {
        item.callspec.params["number"]
        for item in request.session.items
        if item.originalname == "test_every_pair_of_options_runs_to_its_answer"
    }
    if numbers != set(range(len(PAIRS))):
        pytest.skip("only some of the pair cases were selected")
    missing = [n for n in numbers if not (ledger / f"{n}.json").exists()]
    assert not missing, f"pair cases {missing} did not run before this test"
    records = [json.loads((ledger / f"{n}.json").read_text()) for n in numbers]
    ran = {
        tuple(map(tuple, pair)) for record in records if record["ran"] for pair in record["pairs"]
    }
    wanted = valid_pairs()
    print(f"{len(wanted & ran)} of {len(wanted)} valid pairs ran to their answer")
    assert not wanted - ran, f"{len(wanted - ran)} valid pairs never ran: {sorted(wanted - ran)}"
