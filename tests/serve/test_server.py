"""`nmt serve` end to end: a real server process on a loopback port, its routes, what bad
input gets, the API key, concurrent clients and a graceful SIGTERM."""

import dataclasses
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from serving import running_server

from conftest import nmt, tiny_experiment, write_checkpoint
from nmt.data.demo import generate_pairs
from nmt.errors import UserError
from nmt.serve.files import file_formats
from nmt.serve.loading import load_models
from nmt.serve.server import exposure_warning, serve
from nmt.translate.lines import InputLines, write_translations
from nmt.translate.translator import Translator

SENTENCES = [en for en, _ in generate_pairs(64, seed=11)]
# model id and request options: the settings the 32 clients mix
SETTINGS = {"beam": ("demo", {}), "greedy": ("demo", {"beam": 1}), "other": ("other", {})}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, corpus_dir, tokenizer):
    config = dataclasses.replace(tiny_experiment(corpus_dir), name="demo")  # its run name
    copying = dataclasses.replace(tiny_experiment(corpus_dir, "model.copy=true"), name="demo")
    directory = tmp_path_factory.mktemp("served")
    return {
        "demo": write_checkpoint(directory / "a.pt", config, tokenizer),
        "other": write_checkpoint(directory / "b.pt", copying, tokenizer, seed=1),  # copies
    }


@pytest.fixture(scope="module")
def server(checkpoints, tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "server.log"
    args = ["--checkpoint", checkpoints["demo"], "--checkpoint", f"other={checkpoints['other']}"]
    args += ["--checkpoint", f"100={checkpoints['demo']}"]  # OpenNMT-py clients send numbers
    with running_server(log, *args, "--max-sentences", 8, "--max-body-kib", 64) as running:
        yield running
        assert running.stop() == 0, log.read_text()


@pytest.fixture(scope="module")
def expected(checkpoints, tmp_path_factory):
    """What `nmt translate --input` writes for SENTENCES under each setting: the n-best one
    by the command itself, the others meanwhile by the functions it calls."""
    source = tmp_path_factory.mktemp("expected") / "in.txt"
    source.write_text("".join(line + "\n" for line in SENTENCES))
    command = ["translate", "--checkpoint", checkpoints["demo"], "--input", source]
    command += ["--beam", 3, "--nbest", 2, "--alignments"]
    process = subprocess.Popen(
        [sys.executable, "-m", "nmt", *map(str, command)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    outputs, threads = {}, torch.get_num_threads()
    torch.set_num_threads(1)  # beside the command: two threads each would oversubscribe
    try:
        for name, (model, options) in SETTINGS.items():
            translator = Translator.load(checkpoints[model], **options)
            sink = io.StringIO()
            with source.open("rb") as lines:
                write_translations(translator, InputLines(lines), sink)
            outputs[name] = sink.getvalue().splitlines()
    finally:
        torch.set_num_threads(threads)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    outputs["nbest"] = stdout.splitlines()
    return outputs


def test_health_models_limits_and_page(server):
    assert server.request("GET", "/translator/health") == (200, {"status": "ok"})
    status, models = server.request("GET", "/translator/models")
    assert status == 200
    assert [m["model_id"] for m in models] == ["demo", "other", "100"]
    described = {key: models[0][key] for key in ("decoder", "attention", "heads", "quantize")}
    assert described == {
        "decoder": "rnnsearch",
        "attention": "additive",
        "heads": 1,
        "quantize": None,
    }
    assert (models[0]["src_lang"], models[0]["tgt_lang"]) == ("en", "de")
    assert models[0]["decode"]["beam"] == 5  # the checkpoint's decode section
    limits = {"max_sentences": 8, "max_body_bytes": 64 * 1024, "max_beam": 16}
    limits["file_formats"] = file_formats()  # what POST /translate_file takes
    assert server.request("GET", "/translator/limits") == (200, limits)
    status, page = server.request("GET", "/")
    assert status == 200 and 'id="translate"' in page and "static/app.js" in page
    assert server.request("GET", "/static/app.js")[0] == 200


def test_the_docs_page_needs_nothing_from_elsewhere_and_only_relative_urls(server):
    status, html = server.request("GET", "/docs")
    assert status == 200
    sources = re.findall(r"""(?:src|href)=["']([^"']+)["']|url: *["']([^"']+)["']""", html)
    urls = [url for pair in sources for url in pair if url]
    assert sorted(urls) == [
        "openapi.json",
        "static/docs/favicon.png",
        "static/docs/swagger-ui-bundle.js",
        "static/docs/swagger-ui.css",
    ]
    for url in urls:  # relative to /docs, so behind a path prefix they stay under it
        assert server.request("GET", "/" + url)[0] == 200, url
    status, schema = server.request("GET", "/openapi.json")
    assert {"/translator/translate", "/translator/limits"} <= set(schema["paths"])
    # without --api-key nothing to authorize: Swagger UI shows no "Authorize"
    assert "securitySchemes" not in schema["components"]
    assert not [op for ops in schema["paths"].values() for op in ops.values() if "security" in op]


def test_32_concurrent_clients_each_get_their_own_translations(server, expected):
    names = list(SETTINGS)
    requests = []  # (setting, indices of SENTENCES): client r sends 2 sentences under one setting
    for client in range(32):
        requests.append((names[client % 3], [2 * client, 2 * client + 1]))
    barrier = threading.Barrier(32)

    def post(request):
        name, indices = request
        model, options = SETTINGS[name]
        items = [{"src": SENTENCES[i], "id": model, **options} for i in indices]
        barrier.wait(timeout=60)  # all 32 are sent at once
        return server.translate(items)

    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(post, requests))
    for (name, indices), (status, answer) in zip(requests, answers, strict=True):
        assert status == 200, answer
        assert [a["src"] for a in answer[0]] == [SENTENCES[i] for i in indices]
        assert [a["tgt"] for a in answer[0]] == [expected[name][i] for i in indices], name


def test_nbest_alignments_and_attention(server, expected):
    items = [
        {"src": src, "id": "demo", "beam": 3, "n_best": 2, "alignments": True, "attention": True}
        for src in [SENTENCES[0], "", SENTENCES[1]]
    ]
    status, answer = server.translate(items)
    assert status == 200
    assert [len(rank) for rank in answer] == [3, 3]  # answer[rank][input]
    nbest = [line.split(" ||| ") for line in expected["nbest"]]  # INDEX ||| text ||| score ||| a
    for rank in range(2):
        for column, index in ((0, 0), (2, 1)):
            got = answer[rank][column]
            _, text, score, align = nbest[2 * index + rank]
            assert (got["tgt"], got["align"]) == (text, align)
            # the server batches otherwise than the CLI: float sums may differ in the last digits
            assert got["pred_score"] == pytest.approx(float(score), abs=1e-3)
            attention = got["attention"]
            rows, columns = len(attention["tgt_tokens"]), len(attention["src_tokens"])
            assert [len(head) for head in attention["weights"]] == [rows]
            for row in attention["weights"][0]:
                assert len(row) == columns and abs(sum(row) - 1) < 1e-3
    blank = answer[0][1]
    assert (blank["tgt"], blank["pred_score"], blank["align"]) == ("", 0.0, "")
    assert answer[0][0]["pred_score"] >= answer[1][0]["pred_score"]


def test_numeric_ids_and_long_lines_cut_as_translate_cuts(server):
    status, answer = server.translate(
        [
            {"src": "dog " * 300, "id": 100, "beam": 1, "attention": True},
            {"src": SENTENCES[0], "id": 100, "beam": 1},
        ]
    )
    assert status == 200
    cut, whole = answer[0]
    assert cut["truncated"] and len(cut["attention"]["src_tokens"]) == 250  # decode.max_src_len
    assert not whole["truncated"]


BAD_INPUTS = {
    # name: (body, status, where the answer points)
    "body over the limit": (b"[" + b" " * 70_000 + b"]", 413, None),
    "alignments not a boolean": (
        [{"src": "a", "id": "demo", "alignments": "yes"}],
        422,
        ["body", 0, "alignments"],
    ),
    "beam as a string": ([{"src": "a", "id": "demo", "beam": "5"}], 422, ["body", 0, "beam"]),
    "missing field": ([{"id": "demo"}], 422, ["body", 0, "src"]),
    "wrong type": ([{"src": "a", "id": "demo", "beam": "wide"}], 422, ["body", 0, "beam"]),
    "misspelt option": ([{"src": "a", "id": "demo", "nbest": 2}], 422, ["body", 0, "nbest"]),
    "beam too large": ([{"src": "a", "id": "demo", "beam": 10_000}], 422, ["body", 0, "beam"]),
    "n_best above beam": (
        [{"src": "a", "id": "demo", "beam": 2, "n_best": 3}],
        422,
        ["body", 0, "n_best"],
    ),
    "n_best differing in one request": (
        [{"src": "a", "id": "demo"}, {"src": "b", "id": "demo", "beam": 2, "n_best": 2}],
        422,
        ["body", 1, "n_best"],
    ),
    "not a list": ({"src": "a", "id": "demo"}, 422, ["body"]),
    "no body": (b"", 422, ["body"]),
    "broken JSON": (b'[{"src": "a", ', 422, ["body", 14]),
    "not UTF-8": (b'[{"src": "caf\xe9", "id": "demo"}]', 400, None),
    "lone surrogate": (b'[{"src": "\\ud800", "id": "demo"}]', 422, ["body", 0, "src"]),
    "unknown model": ([{"src": "a", "id": "nope"}], 404, None),
    "unknown target language": (
        [{"src": "a", "id": "demo", "tgt_lang": "fr"}],
        422,
        ["body", 0, "tgt_lang"],
    ),
    "unknown constraints field": (
        [{"src": "a", "id": "demo", "constraints": {"must": ["x"]}}],
        422,
        ["body", 0, "constraints", "must"],
    ),
    "constraints not a list": (
        [{"src": "a", "id": "demo", "constraints": {"include": "hund"}}],
        422,
        ["body", 0, "constraints", "include"],
    ),
    "more constraints than the maximum": (
        [{"src": "a", "id": "demo", "constraints": {"exclude": [f"w{i}" for i in range(17)]}}],
        422,
        ["body", 0, "constraints"],
    ),
    "constraint over the length limit": (
        [{"src": "a", "id": "demo", "constraints": {"include": ["der hund " * 20]}}],
        422,
        ["body", 0, "constraints", "include"],
    ),
    "prefix over the length limit": (
        [{"src": "a", "id": "demo", "prefix": "der hund " * 20}],
        422,
        ["body", 0, "prefix"],
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_gets_a_clear_answer_and_harms_nothing(server, case):
    body, status, where = BAD_INPUTS[case]
    got, answer = server.translate(body)
    assert got == status, answer
    if where is not None:
        assert where in [error["loc"] for error in answer["detail"]], answer
    if case == "unknown model":
        assert "'demo', 'other', '100'" in answer["detail"]
    assert server.translate([{"src": "a dog", "id": "demo", "beam": 1}])[0] == 200


HUGE = "dog " * 15_000  # 60,000 characters: under the server's 64 KiB limit on a body
CUT = HUGE[:80] + "… (60000 characters)"


def test_a_422_says_what_a_huge_input_is_instead_of_echoing_it(server):
    """Each error keeps pydantic's shape and names the field and the problem, but a long
    input comes back as an excerpt: the answer stays small whatever was sent."""
    cases = [  # (body, the error it gets)
        (
            {"src": HUGE, "id": "demo"},
            ("list_type", ["body"], "Input should be a valid list", "an object of 2 keys: src, id"),
        ),
        (
            [{"src": ["a"] * 10_000, "id": "demo"}],
            (
                "string_type",
                ["body", 0, "src"],
                "Input should be a valid string",
                "a list of 10000 items",
            ),
        ),
        (
            [{"src": "a", "id": "demo", "beam": HUGE}],
            ("int_type", ["body", 0, "beam"], "Input should be a valid integer", CUT),
        ),
        (
            [{"src": "a", "id": "demo", "tgt_lang": HUGE}],
            (
                "value_error",
                ["body", 0, "tgt_lang"],
                f"tgt_lang '{CUT}': this model writes only de; set tgt_lang to de or omit it",
                CUT,
            ),
        ),
    ]
    for body, (kind, loc, msg, shown) in cases:
        status, answer = server.translate(body)
        assert status == 422
        assert answer == {"detail": [{"type": kind, "loc": loc, "msg": msg, "input": shown}]}
        assert len(json.dumps(answer, separators=(",", ":"))) < 2048

    status, answer = server.translate([{"src": "a", "id": "demo", HUGE: 1}])  # unknown field
    ((error,),) = answer.values()
    assert (status, error["loc"]) == (422, ["body", 0, HUGE[:40] + "… (60000 characters)"])
    assert error["msg"].startswith("unknown field; the fields here are src, id, beam, n_best,")

    prefix = "der hund " * 6000  # too long for the sentence: the server's own 422
    status, answer = server.translate([{"src": "a", "id": "demo", "prefix": prefix}])
    ((error,),) = answer.values()
    assert (status, error["loc"]) == (422, ["body", 0, "prefix"])
    assert error["input"] == prefix[:80] + "… (54000 characters)"
    assert len(json.dumps(answer)) < 2048

    status, answer = server.translate([{"src": "a", "id": HUGE}])
    assert status == 404
    assert answer["detail"].startswith(f"unknown model id '{CUT}': set id to one this server has")


def test_a_422_lists_the_first_ten_errors_and_counts_the_others(server):
    status, answer = server.translate([{"src": "a"}] * 3000)  # every item lacks its id
    assert status == 422
    missing = {"type": "missing", "msg": "Field required", "input": {"src": "a"}}
    assert answer["detail"] == [
        *({**missing, "loc": ["body", index, "id"]} for index in range(10)),
        {
            "type": "more_errors",
            "loc": ["body"],
            "msg": "2990 more errors not shown; fix the ones above first",
            "input": None,
        },
    ]


def test_constraints_and_prefixes_reach_the_search(server):
    items = [
        {"src": SENTENCES[0], "id": "demo", "constraints": {"include": ["hund"]}, "prefix": "die"},
        {"src": SENTENCES[1], "id": "demo", "beam": 1, "constraints": {"exclude": ["die"]}},
        {"src": SENTENCES[2], "id": "demo"},
    ]
    status, answer = server.translate(items)
    assert status == 200, answer
    first, second, third = answer[0]
    assert first["constraints_met"] and first["tgt"].startswith("die") and "hund" in first["tgt"]
    assert second["constraints_met"] and "die" not in second["tgt"].split()
    assert "constraints_met" not in third


def test_too_many_sentences_name_the_limit_and_do_not_echo_the_request(server):
    status, answer = server.translate([{"src": f"sentence {i}", "id": "demo"} for i in range(9)])
    assert status == 422
    assert answer == {
        "detail": "a request holds at most 8 sentences (this server's --max-sentences), got 9; "
        "send them in several requests"
    }


def test_decode_options_replace_every_served_models_settings(checkpoints):
    specs = [str(checkpoints["demo"]), f"b={checkpoints['other']}"]
    models = load_models(specs, max_src_len=7, no_repeat_ngram=2)
    assert [model.translator.decode.max_src_len for model in models.values()] == [7, 7]
    assert models["b"].describe(models)["decode"]["no_repeat_ngram"] == 2
    (cut,) = models["b"].translator.translate(["the dog sees the cat because we sleep . " * 4])
    assert cut.truncated and len(cut.src_ids) == 7


def test_served_models_translate_with_their_shortlist(checkpoints, tmp_path):
    """--shortlist K serves each model with the shortlist beside its checkpoint; one
    without is named before the server starts."""
    served = tmp_path / "a.pt"
    served.write_bytes(checkpoints["demo"].read_bytes())
    with pytest.raises(UserError, match="a.shortlist.pt, which does not exist"):
        load_models([str(served)], shortlist=3)
    assert nmt("shortlist", "--checkpoint", served).returncode == 0
    (model,) = load_models([str(served)], shortlist=3).values()
    assert model.describe({})["decode"]["shortlist"] == 3
    translator = model.translator
    (found,) = translator.translate(["the dog sees the cat ."])
    tgt = translator.tokenizer.tgt
    allowed = translator.shortlist.columns(
        [found.src_ids], 3, (tgt.eos_id, tgt.unk_id, tgt.bos_id, tgt.pad_id)
    )
    assert set(found.nbest[0].hypothesis.tokens) <= set(allowed.tolist())


def test_the_commands_decode_options_reach_the_server(checkpoints, tmp_path):
    """Requests to `nmt serve --max-src-len 7 --no-repeat-ngram 2 --coverage-penalty 0.2`
    are answered as nmt translate answers with those options, greedy ones included."""
    options = ["--max-src-len", "7", "--no-repeat-ngram", "2", "--coverage-penalty", "0.2"]
    settings = dict(max_src_len=7, no_repeat_ngram=2, coverage_penalty=0.2)
    translator = Translator.load(checkpoints["demo"], workers=1, **settings)
    with running_server(tmp_path / "log", "--checkpoint", checkpoints["demo"], *options) as s:
        for request in ({"beam": 1}, {}, {"beam": 3, "n_best": 2}):
            items = [{"src": line, "id": "demo", **request} for line in SENTENCES[:3]]
            status, answer = s.translate(items)
            assert status == 200, answer
            decode = {"beam": request.get("beam"), "nbest": request.get("n_best")}
            found = translator.translate(SENTENCES[:3], **decode)
            ranks = range(request.get("n_best", 1))  # OpenNMT-py's layout: a list per rank
            assert [[a["tgt"] for a in group] for group in answer] == [
                [t.nbest[rank].text for t in found] for rank in ranks
            ]
            assert all(len(t.src_ids) <= 7 for t in found)
        assert s.stop() == 0


def test_an_empty_list_gets_an_empty_answer(server):
    assert server.translate([]) == (200, [])


def test_api_key_guards_every_route_but_health_and_sigterm_finishes_requests(checkpoints, tmp_path):
    key = "s3cret-key"
    args = ["--checkpoint", checkpoints["demo"], "--api-key", key]
    with running_server(tmp_path / "log", *args) as s:
        auth = {"Authorization": f"Bearer {key}"}
        item = [{"src": SENTENCES[0], "id": "demo", "beam": 1}]
        assert s.request("GET", "/translator/health")[0] == 200
        for path in ("/translator/models", "/translator/limits"):
            assert s.request("GET", path)[0] == 401, path
        public = ("/", "/static/app.js", "/docs", "/openapi.json", "/static/docs/swagger-ui.css")
        for path in public:  # the page, the docs and their files: no data
            assert s.request("GET", path)[0] == 200, path
        status, schema = s.request("GET", "/openapi.json")
        bearer = {"type": "http", "scheme": "bearer", "description": "The server's --api-key."}
        assert schema["components"]["securitySchemes"] == {"apiKey": bearer}
        required = {
            path: [operation.get("security") for operation in operations.values()]
            for path, operations in schema["paths"].items()
        }
        assert required == {
            "/translator/translate": [[{"apiKey": []}]],
            "/translator/models": [[{"apiKey": []}]],
            "/translator/limits": [[{"apiKey": []}]],
            "/translator/health": [None],
            "/translate_file": [[{"apiKey": []}]],
        }
        status, answer = s.translate(item)
        assert status == 401 and "Bearer" in answer["detail"]
        assert s.translate(item, headers={"Authorization": "Bearer wrong"})[0] == 401
        assert s.translate(item, headers={"Authorization": key})[0] == 401  # no scheme
        assert s.translate(item, headers=auth)[0] == 200
        assert s.request("GET", "/translator/models", headers=auth)[0] == 200

        # A request in flight when SIGTERM comes is answered, then the server exits 0. Its
        # body is held back until the server has stopped accepting, so it is surely in flight.
        body = json.dumps([{"src": line, "id": "demo"} for line in SENTENCES[:8]]).encode()
        in_flight = _send_raw(s.url, body, auth, held_back=10)
        assert s.request("GET", "/translator/health")[0] == 200  # accepted after the one above
        s.process.send_signal(signal.SIGTERM)
        _wait_until_refused(s.url)  # shutting down, with our request still unread
        in_flight.sendall(body[-10:])
        status, answer = _read_raw(in_flight)
        assert status == 200 and len(answer[0]) == 8
        assert s.process.wait(timeout=60) == 0, (tmp_path / "log").read_text()


def _send_raw(url: str, body: bytes, headers: dict, held_back: int) -> socket.socket:
    """Sends a request but the last `held_back` bytes of its body; returns the socket."""
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=120)
    lines = ["POST /translator/translate HTTP/1.1", f"Host: {host}", "Connection: close"]
    lines += [f"Content-Length: {len(body)}", "Content-Type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body[:-held_back])
    return connection


def _wait_until_refused(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except ConnectionRefusedError:
            return
        time.sleep(0.05)
    raise AssertionError("the server still accepts connections 30 s after SIGTERM")


def _read_raw(connection: socket.socket) -> tuple[int, object]:
    with connection:
        data = b""
        while chunk := connection.recv(1 << 16):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_bad_command_lines_exit_2_with_one_paragraph(checkpoints, tmp_path):
    result = nmt("serve", "--checkpoint", tmp_path / "missing.pt", "--port", 0)
    assert result.returncode == 2 and result.stderr.startswith("error: "), result.stderr
    assert "missing.pt does not exist" in result.stderr and "Traceback" not in result.stderr

    demo = str(checkpoints["demo"])
    with pytest.raises(UserError, match="expected PATH or ID=PATH"):
        serve([f"=+{demo}"], port=0)
    with pytest.raises(UserError, match="two checkpoints have the model id 'demo'"):
        serve([demo, demo], port=0)  # both named by their run name
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(UserError, match="it is in use"):
            serve([demo], port=busy.getsockname()[1])


def test_a_warning_when_serving_beyond_loopback_without_a_key():
    assert "without --api-key" in exposure_warning("0.0.0.0", None)
    for host in ("127.0.0.1", "::1", "localhost"):
        assert exposure_warning(host, None) is None
    assert exposure_warning("0.0.0.0", "key") is None
