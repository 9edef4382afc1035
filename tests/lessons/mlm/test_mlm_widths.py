"""Every width mlm's cost() accepts builds its models: rotary positions need each head's width even, so an
accepted d_model of 58 (2 heads of 29) was a 500 from the model's config; bench_claims' random draws found it."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import get_topic
from attnlab.lessons.mlm.models import MODELS, build
from attnlab.web.app import create_app


def test_every_accepted_width_builds_every_model_and_the_rest_are_refused_in_one_line():
    topic = get_topic("mlm")
    width = next(p for p in topic.params if p.name == "d_model")
    accepted = []
    for d in range(int(width.lo), int(width.hi) + 1):
        try:
            topic.cost(d_model=d)
        except ParamError as err:
            assert err.name == "d_model" and str(d) in str(err)
            continue
        accepted.append(d)
        for kind in MODELS:
            build(kind, 12, d, 16, 0)  # raises if the config refuses the width
    assert accepted == list(range(8, 129, 4))


def test_the_api_refuses_an_odd_head_width_naming_d_model():
    with TestClient(create_app()) as client:
        answer = client.get("/api/explain/mlm", params={"d_model": "58", "lang": "en"})
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["query", "d_model"]
    assert "even width" in answer.json()["detail"][0]["msg"]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_sentence_names_the_width_and_the_heads(lang):
    with pytest.raises(ParamError) as refused:
        get_topic("mlm").cost(d_model=58)
    said = refused.value.localized(lang)
    assert "58" in said and "2" in said and "d_model" in said
