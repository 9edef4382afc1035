"""The scale topic's "上亿倍?" (issue 40, Also): parameters, data and compute of the lab's 静夜思 model against the
published model of most training compute, each side counted again here by another path (the model `attnlab train`
builds, the window its trainer reads), and Llama 3 beside Llama 2 against the figures Meta publishes."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from results import result

from attnlab.models import count_params
from attnlab.models.published import published
from attnlab.train.run import new_run
from attnlab.web.app import create_app


@pytest.fixture(scope="module")
def up():
    return result("scale", lang="en").scale_up


def test_the_lab_side_is_the_model_attnlab_train_makes_and_the_tokens_its_steps_read(up):
    run = new_run("jingyesi")  # what `attnlab train --corpus jingyesi` builds, with its default settings
    n = sum(p.numel() for p in run.model.parameters())
    window = len(run.data.train) - 1  # 静夜思 fits one window: every step reads the whole poem (train/data.get_batch)
    steps = run.trainer.cfg.steps
    ratios = {q.what: q for q in up.ratios}
    assert up.lab_steps == steps
    assert ratios["params"].lab == n and ratios["data"].lab == steps * window
    assert ratios["compute"].lab == 6 * n * steps * window


def test_the_big_side_is_the_row_of_most_compute_and_each_ratio_is_its_quotient(up):
    rows = result("scale", lang="en").published
    most = max((r for r in rows if r.tokens), key=lambda r: 6 * r.counted * r.tokens)
    assert up.big == most.name == "Llama-3-70B"
    n, d = count_params(published(up.big).architecture), published(up.big).tokens
    ratios = {q.what: q for q in up.ratios}
    assert (ratios["params"].big, ratios["data"].big, ratios["compute"].big) == (n, d, 6 * n * d)
    for q in up.ratios:
        assert q.times == q.big / q.lab and q.reaches == (q.times >= 1e8)
    # the finding: data and compute grew by more than 10⁸, parameters by less than 10⁶
    assert [q.what for q in up.ratios if q.reaches] == ["data", "compute"]
    assert 1e5 < ratios["params"].times < 1e6


def test_llama_3_is_counted_as_meta_publishes_it():
    """Meta's model card gives 8.03B and 70.6B (the names round them to 8B and 70B)."""
    assert round(count_params(published("Llama-3-8B").architecture) / 1e7) == 803
    assert round(count_params(published("Llama-3-70B").architecture) / 1e8) == 706


def test_the_page_shows_the_layers_and_the_ratios():
    html = TestClient(create_app()).get("/explain/scale", params={"lang": "en", "predict": "a"}).text
    table = html[html.index('id="published-table"') :]
    layers = dict(re.findall(r'<th data-bind="name">([^<]+)</th><td data-bind="layers" data-value="(\d+)"', table))
    assert layers["Transformer base (2017)"] == "6" and layers["GPT-3 175B"] == "96"
    assert layers["Llama-3-8B"] == "32" and layers["Llama-3-70B"] == "80"
    up = html[html.index('id="scale-up-table"') :]
    assert [m for m in re.findall(r'data-reaches="(\w+)"', up)] == ["false", "true", "true"]
    assert "Reaching 10⁸" in html and "Short of it" in html
