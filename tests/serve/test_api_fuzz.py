"""The whole HTTP API fuzzed from its own OpenAPI schema by schemathesis (Hypothesis
underneath): every operation gets generated requests, valid and not, and every answer
must be a 2xx or a 4xx, with the server still answering its health check after each. In
the slow suite (`make test-slow`): it sends hundreds of requests."""

from __future__ import annotations

import collections

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from serving import serving_app

from conftest import make_translator, tiny_experiment
from nmt.serve.catalog import ServedModel
from nmt.serve.server import Limits, create_app

EXAMPLES = 150  # generated requests per operation at most (fewer where fewer differ)


@pytest.mark.slow
def test_every_answer_is_a_2xx_or_a_4xx_and_the_server_goes_on(corpus_dir, tokenizer):
    translator = make_translator(tiny_experiment(corpus_dir), tokenizer, max_len_extra=4)
    app = create_app({"demo": ServedModel("demo", translator)}, limits=Limits(), workers=1)
    tried: list[tuple[str, int]] = []
    with serving_app(app) as client:
        schema = schemathesis.openapi.from_url(client.url + "/openapi.json")
        for result in schema.get_all_operations():
            operation = result.ok()

            @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))  # fmt: skip
            @given(case=operation.as_strategy())
            def answered(case):
                served_id(case.body)
                response = case.call(base_url=client.url, timeout=60)
                tried.append((f"{case.method} {case.path}", response.status_code))
                assert response.status_code < 500, (case.path, case.body, response.text[:500])
                assert client.request("GET", "/translator/health") == (200, {"status": "ok"})

            answered()
    operations = collections.Counter(label for label, _ in tried)
    statuses = collections.Counter(status for _, status in tried)
    print(f"{len(tried)} requests: {dict(operations)}; statuses {dict(sorted(statuses.items()))}")
    assert {"POST /translator/translate", "POST /translate_file"} <= set(operations)
    assert statuses[200] >= 10 and statuses[422] >= 50  # deep enough to translate, and refuse


def served_id(body) -> None:
    """Most generated items name the served model (a random id only ever meets the 404),
    changed in place; one in four keeps its generated id."""
    items = body if isinstance(body, list) else [body] if isinstance(body, dict) else []
    for item in items:
        if isinstance(item, dict) and "id" in item and hash(repr(item)) % 4:
            item["id"] = "demo"
