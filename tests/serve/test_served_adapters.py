"""Adapters served side by side on one base (`nmt serve --adapter`): each request names its
adapter, one request may mix them and each sentence is answered by its own, the base's
weights are in memory once, and a bad adapter name is a 422 that leaves the server
serving."""

from pathlib import Path

import pytest
from serving import serving_app

from conftest import TINY_TRANSFORMER, tiny_experiment, write_adapter, write_checkpoint
from nmt.errors import UserError
from nmt.serve.loading import load_models
from nmt.serve.server import create_app
from nmt.translate.translator import Translator

SENTENCES = ["the dog sees the cat.", "a small bird sleeps."]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, corpus_dir, tokenizer) -> dict[str, Path]:
    """A tiny Transformer, a LoRA and a bottleneck adapter on it (weights drawn at random,
    as if trained), and another model."""
    root = tmp_path_factory.mktemp("served_adapters")
    config = tiny_experiment(corpus_dir, *TINY_TRANSFORMER)
    base = write_checkpoint(root / "base.pt", config, tokenizer)
    adapted = (*TINY_TRANSFORMER, f"train.init_from={base}")
    lora = tiny_experiment(corpus_dir, *adapted, "train.adapters.rank=4")
    bottleneck = tiny_experiment(
        corpus_dir, *adapted, "train.adapters.type=bottleneck", "train.adapters.size=8"
    )
    return {
        "base": base,
        "lora": write_adapter(root / "lora.pt", base, lora),
        "bottleneck": write_adapter(root / "bottleneck.pt", base, bottleneck),
        "other": write_checkpoint(root / "other.pt", config, tokenizer, seed=5),
    }


def test_one_request_mixing_adapters_is_answered_by_each_sentences_own(runs):
    models = load_models(
        [f"base={runs['base']}"], adapters=[f"a={runs['lora']}", f"b={runs['bottleneck']}"]
    )
    routes = [{}, {"adapter": "a"}, {"adapter": "b"}]
    body = [{"src": src, "id": "base", **route} for route in routes for src in SENTENCES]
    with serving_app(create_app(models, workers=1)) as client:
        status, answer = client.translate(body)
        assert status == 200, answer
        got = [item["tgt"] for item in answer[0]]
        scores = {item["pred_score"] for item in answer[0][0::2]}
        status, listed = client.request("GET", "/translator/models")
    expected = []
    for adapter in (None, runs["lora"], runs["bottleneck"]):
        translator = Translator.load(runs["base"], adapter=adapter)
        expected += [translation.text for translation in translator.translate(SENTENCES)]
    assert got == expected
    assert len(scores) == 3  # three models: one sentence scored three ways
    (base,) = listed
    assert [(a["adapter"], a["base"], a["type"]) for a in base["adapters"]] == [
        ("a", "base", "lora"),
        ("b", "base", "bottleneck"),
    ]


def test_ten_adapters_hold_the_base_once(runs):
    specs = [f"a{number}={runs['lora']}" for number in range(10)]
    models = load_models([f"base={runs['base']}"], adapters=specs)
    served = models["base"]
    base_bytes = storage_bytes([served.translator.model])
    adapters = [served.adapters[f"a{number}"].translator.model for number in range(10)]
    one_adapter = storage_bytes([adapters[0]]) - base_bytes
    assert 0 < one_adapter < base_bytes
    assert storage_bytes([served.translator.model, *adapters]) == base_bytes + 10 * one_adapter


def storage_bytes(models) -> int:
    """The bytes of the distinct tensors the models hold (shared ones once)."""
    tensors = {}
    for model in models:
        for tensor in [*model.parameters(), *model.buffers()]:
            tensors[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
    return sum(tensors.values())


def test_an_adapter_name_the_model_lacks_is_a_422_and_the_server_serves_on(runs):
    models = load_models([f"base={runs['base']}"], adapters=[f"a={runs['lora']}"])
    with serving_app(create_app(models, workers=1)) as client:
        status, answer = client.translate([{"src": "x", "id": "base", "adapter": "legal"}])
        assert status == 422
        (error,) = answer["detail"]
        assert error["loc"] == ["body", 0, "adapter"] and "'a'" in error["msg"]
        status, _ = client.translate([{"src": "x", "id": "base", "adapter": "a"}])
        assert status == 200


def test_an_adapter_no_served_model_fits_is_refused_before_serving(runs):
    with pytest.raises(UserError, match="which no --checkpoint serves"):
        load_models([f"other={runs['other']}"], adapters=[f"a={runs['lora']}"])
    with pytest.raises(UserError, match="not an adapter checkpoint"):
        load_models([f"base={runs['base']}"], adapters=[f"a={runs['other']}"])
    with pytest.raises(UserError, match="int8"):
        load_models([f"base={runs['base']}"], quantize="int8", adapters=[f"a={runs['lora']}"])
