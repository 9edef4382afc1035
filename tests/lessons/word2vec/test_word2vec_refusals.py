"""A bad word2vec value is refused before the lesson is given a slot (issue 37): the analogies are parsed by the
lesson's cost(), which the web asks before it reserves memory; the API says it as a 422 naming the parameter."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnlab.lessons.common.params import ParamError
from attnlab.lessons.explain import get_topic
from attnlab.web import budget
from attnlab.web.app import create_app


def test_a_bad_analogy_is_refused_by_the_cost_before_any_slot(monkeypatch):
    with pytest.raises(ParamError) as refused:
        get_topic("word2vec").cost(analogies="月-明")
    assert refused.value.name == "analogies"
    taken = []
    monkeypatch.setattr(budget, "lane_for", lambda cost: taken.append(cost) or pytest.fail("a slot was asked for"))
    with TestClient(create_app()) as client:
        answer = client.get("/api/explain/word2vec", params={"analogies": "月-明", "lang": "en"})
    assert answer.status_code == 422 and "analogies" in answer.text and taken == []
