"""Running one case of the pairwise test (tests/test_option_pairs.py) on its entry point:
`nmt translate`, `nmt eval`, `nmt score`, `nmt distill`, the server's HTTP API or Python.
Each answers a Refusal (exit 2 and one `error:` line, a 4xx, a UserError) or checks its
invariants (tests/pair_invariants.py) and returns None. A case's options become decode
keywords once (`decode_options`), and the command-line flags are spelt from them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pair_invariants as check
from pair_factors import CONSTRAINTS, FACTORS, LINES, MARKED, PREFIXES, REFERENCES, TAKES
from pair_kinds import KINDS, Built

from conftest import nmt
from nmt.errors import UserError
from nmt.translate.translator import Translator


@dataclasses.dataclass
class Refusal:
    message: str


def run(case: dict, kinds: dict[str, Built], files: Path, tmp_path: Path) -> Refusal | None:
    runner = {"python": run_python, "serve": run_serve}.get(case["entry"], run_command)
    return runner(case, kinds, files, tmp_path)


def through(case: dict) -> str | None:
    """The pivot a case names: its kind's (True), another language, or none."""
    value = case["through"]
    return KINDS[case["kind"]].pivot if value is True else value or None


def decode_options(case: dict) -> dict:
    """The decode keywords of Translator.load (and, spelt as flags, of the commands) that
    the case sets on its entry point."""
    takes, options = TAKES[case["entry"]], {}
    if "search" in takes:
        options["beam"] = {"greedy": 1, "beam": 3, "sample": 3}[case["search"]]
        options["sample"] = case["search"] == "sample" or None
    if "shortlist" in takes:  # an export's own default is its vocabulary map's
        options["shortlist"] = case["shortlist"]
    if case["sampling"]:
        options.update(temperature=0.7, top_k=5, top_p=0.9, seed=3)
    for key, name in (
        ("nbest", "nbest"),
        ("coverage_penalty", "coverage"),
        ("no_repeat_ngram", "blocking"),
        ("restrict_to_target_language", "restrict"),
        ("pivot_candidates", "candidates"),
        ("batch_size", "batch"),
        ("max_constraints", "max_constraints"),
    ):
        if name in takes and case[name] != FACTORS[name][0]:
            options[key] = case[name]
    if case["precision"] != "fp32":
        options["precision"] = case["precision"]
    if case["zero_shot"] != "pivot":
        options["zero_shot"] = case["zero_shot"]
    options["through"] = through(case)
    return {key: value for key, value in options.items() if value is not None}


def flags(options: dict) -> list[str]:
    spelt = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        spelt += [flag] if value is True else [flag, str(value)]
    return spelt


def src_lang(case: dict) -> str | None:
    return "en" if case["src_lang"] is True else case["src_lang"] or None


def checkpoints(case: dict, kinds: dict[str, Built]) -> list[Path]:
    built = kinds[case["kind"]]
    return [built.checkpoint, built.partner] if case["ensemble"] else [built.checkpoint]


def second(case: dict, kinds: dict[str, Built]) -> Path | None:
    """A chain's second model (the strict one, for the refusal of its limits)."""
    then = kinds[case["kind"]].then
    return then and (then.with_suffix(".strict.pt") if case.get("strict_then") else then)


def memory(case: dict, files: Path) -> Path | None:
    return files / "memory.npz" if case["tm"] else None


def translator(case: dict, kinds: dict[str, Built], files: Path, **changed) -> Translator:
    """The Translator of the case's models and options, as the commands load it."""
    quantize = "int8" if case["int8"] else None
    options = {**decode_options(case), **changed}
    return Translator.load(
        checkpoints(case, kinds),
        quantize=quantize,
        workers=case["workers"],
        then=second(case, kinds),
        memory=memory(case, files),
        **options,
    )


def run_command(case: dict, kinds: dict[str, Built], files: Path, tmp_path: Path):
    entry, kind, built = case["entry"], KINDS[case["kind"]], kinds[case["kind"]]
    options = decode_options(case)
    if kind.engine == "ctranslate2":
        args = [entry, "--engine", "ctranslate2", "--model", built.model]
    else:
        args = [entry, *(a for path in checkpoints(case, kinds) for a in ("--checkpoint", path))]
        args += ["--ensemble"] * (entry == "eval" and case["ensemble"])
        args += ["--then", second(case, kinds)] if kind.chain else []
    args += [*flags(options), "--workers", str(case["workers"])]
    args += ["--tm", memory(case, files)] if case["tm"] else []
    if kind.tgt_lang and entry != "distill":  # distill translates every direction
        args += ["--tgt-lang", kind.tgt_lang]
    output, plots, stdin = tmp_path / "out", tmp_path / "plots", None
    if entry in ("translate", "score"):
        args += ["--src-lang", src_lang(case)] if src_lang(case) else []
    if entry == "translate":
        args += ["--quantize", "int8"] * case["int8"]
        args += ["--alignments"] * case["alignments"] + ["--attention-plots", plots] * case["plots"]
        args += ["--constraints", files / "constraints"] * bool(case["constraints"])
        args += ["--prefix", files / "prefix"] * case["prefix"]
        args += ["--markup", "html"] * case["markup"] + ["--format", "srt"] * case["document"]
        lines, source = (MARKED, files / "marked") if case["markup"] else (LINES, files / "input")
        source = files / "film.srt" if case["document"] else source
        if case["stdio"]:
            stdin = "".join(line + "\n" for line in lines)
        else:
            args += ["--input", source, "--output", output]
    elif entry in ("eval", "score"):
        args += ["--src", files / "input", "--tgt", files / "reference", "--output", output]
    else:
        args += ["--quantize", "int8"] * case["int8"]
        args += ["--data", files / "corpus", "--out", output]
    ran = nmt(*args, input=stdin)
    assert ran.returncode in (0, 2), (args, ran.returncode, ran.stderr)
    if ran.returncode == 2:
        errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in ran.stderr, ran.stderr
        return Refusal(errors[0])
    if entry == "translate":
        rows = ran.stdout if case["stdio"] else output.read_text("utf-8")
        if case["document"]:
            check.subtitles(source.read_text("utf-8"), rows)
        elif case["markup"]:
            check.marked(rows.splitlines())
        else:
            check.written(case, rows.splitlines(), plots, ran.stderr)
    elif entry == "eval":
        found = translator(case, kinds, files).translate(LINES, tgt_lang=kind.tgt_lang)
        assert output.read_text("utf-8").splitlines() == [t.text for t in found]
    elif entry == "score":
        scored = translator(case, kinds, files).score(
            LINES, REFERENCES, tgt_lang=kind.tgt_lang, src_lang=src_lang(case)
        )
        check.scores(output.read_text("utf-8").splitlines(), scored)
    else:
        check.distilled(output, translator(case, kinds, files))
    return None


def run_python(case: dict, kinds: dict[str, Built], files: Path, tmp_path: Path):
    kind = KINDS[case["kind"]]
    call = {"alignments": case["alignments"], "attention": case["plots"]}
    call.update(tgt_lang=kind.tgt_lang, src_lang=src_lang(case))
    call["constraints"] = CONSTRAINTS if case["constraints"] else None
    call["prefix"] = PREFIXES if case["prefix"] else None
    lines = MARKED if case["markup"] else LINES
    if case["markup"]:
        call["markup"] = "html"
    try:
        loaded = translator(case, kinds, files)
        found = loaded.translate(lines, **call)
    except UserError as error:
        return Refusal(str(error))
    if case["markup"]:
        check.marked([t.text for t in found])
    else:
        check.translations(case, loaded, found)
    if case["workers"] > 1:  # batches decoded side by side answer as one after another
        alone = translator({**case, "workers": 1}, kinds, files).translate(LINES, **call)
        assert [t.text for t in alone] == [t.text for t in found]
    return None


def run_serve(case: dict, kinds: dict[str, Built], files: Path, tmp_path: Path):
    from serve.serving import serving_app

    from nmt.serve.loading import load_models
    from nmt.serve.server import create_app

    kind, options = KINDS[case["kind"]], decode_options(case)
    per_item = {"beam": options.pop("beam"), "through": options.pop("through", None)}
    options.pop("sample", None)
    specs = [f"m={kinds[case['kind']].checkpoint}"]
    specs += [f"n={second(case, kinds)}"] if kind.chain else []
    quantize = "int8" if case["int8"] else None
    try:
        memories = [memory(case, files)] if case["tm"] else []
        served = load_models(specs, quantize=quantize, memories=memories, **options)
    except UserError as error:
        return Refusal(str(error))
    items = []
    for number, line in enumerate(MARKED if case["markup"] else LINES):
        item = {"src": line, "id": "m", "beam": per_item["beam"], "n_best": case["nbest"]}
        if case["markup"]:
            item["markup"] = "html"
        item.update(alignments=case["alignments"], attention=case["plots"])
        extra = dict(through=per_item["through"], src_lang=src_lang(case), tgt_lang=kind.tgt_lang)
        extra["then"] = "n" if kind.chain else None
        if case["constraints"]:
            extra["constraints"] = CONSTRAINTS[number]
        if case["prefix"]:
            extra["prefix"] = PREFIXES[number]
        items.append({**item, **{k: v for k, v in extra.items() if v is not None}})
    with serving_app(create_app(served, workers=case["workers"])) as client:
        status, answer = client.translate(items)
        assert status == 200 or 400 <= status < 500, (status, answer)
        assert client.request("GET", "/translator/health")[0] == 200  # still serving
    if status != 200:
        return Refusal(json.dumps(answer))
    if case["markup"]:
        check.marked([found["tgt"] for found in answer[0]])
    else:
        check.served(case, answer)
    return None
