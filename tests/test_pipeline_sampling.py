"""⑥ on /pipeline lets a learner see sampling matter (issue 22, item 3).

Following the page's old hint (train 静夜思 with the defaults, generate at temperature 1.5) the model had
memorised the poem (p ≈ 0.9999 at every step), so every setting wrote the same poem. The hint now trains
fewer steps (a model that knows the poem but is not yet certain), and the page draws 5 samples side by side
and counts the different texts (lessons.pipeline.samples)."""

from __future__ import annotations

import re
import time

import pytest
from lab_client import serving

from attnlab.i18n import t
from attnlab.lessons.pipeline.samples import HINT_CORPUS, HINT_STEPS, HINT_TEMPERATURE, N_SAMPLES, sample_texts
from attnlab.text import JINGYESI
from attnlab.train import new_run
from attnlab.web import runs as runs_service


@pytest.fixture(scope="module")
def client():
    yield from serving()


def trained(client, **settings) -> str:
    run_id = client.post("/api/train", json=settings).json()["id"]
    deadline = time.monotonic() + 300  # a guard against a hang only: the run ends on its own
    while client.get(f"/api/train/{run_id}").json()["status"] == "training":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return run_id


@pytest.fixture(scope="module")
def hint_run_id(client) -> str:
    """A run trained as the page's hint says: 静夜思 with HINT_STEPS steps, the other settings blank (defaults)."""
    return trained(client, corpus=HINT_CORPUS, steps=HINT_STEPS)


@pytest.fixture(scope="module")
def hint_run(hint_run_id):
    return runs_service.RUNS.get(hint_run_id).run


def test_the_hints_model_recites_greedily_and_varies_at_its_temperature(hint_run):
    varied, _ = sample_texts(
        hint_run.model, hint_run.tokenizer, "床", seed=0, temperature=HINT_TEMPERATURE, max_new_tokens=30
    )
    assert varied.distinct >= 3, [s.text for s in varied.samples]
    assert len(varied.samples) == N_SAMPLES and varied.least_sure < 0.99
    greedy, _ = sample_texts(hint_run.model, hint_run.tokenizer, "床", temperature=0, max_new_tokens=30)
    assert greedy.distinct == 1 and greedy.samples[0].text.startswith(JINGYESI)  # it still knows the poem
    assert [s.same_as for s in greedy.samples] == [None, 0, 0, 0, 0] and greedy.samples[0].seed is None


def test_the_old_hints_model_has_memorised_the_poem():
    # the control: the default 150 steps (what the old hint trained) memorise the poem
    run = new_run(HINT_CORPUS, device="cpu")
    run.trainer.run()
    same, _ = sample_texts(run.model, run.tokenizer, "床", seed=0, temperature=HINT_TEMPERATURE, max_new_tokens=30)
    assert same.distinct <= 2 and same.least_sure > 0.99


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_page_shows_five_samples_and_how_many_differ(client, hint_run_id, lang):
    run_id = hint_run_id
    base = {"run": run_id, "prompt": "床", **({"lang": "en"} if lang == "en" else {})}
    html = client.get("/pipeline", params={**base, "temperature": HINT_TEMPERATURE, "gseed": 3}).text
    texts = re.findall(r'class="sample-text">([^<]*)<', html)
    assert len(texts) == N_SAMPLES
    distinct = int(re.search(r'id="gen-distinct" data-value="(\d+)"', html).group(1))
    assert distinct == len(set(texts)) >= 3
    assert t("pipeline.step6.samples.distinct", lang, d=distinct, n=N_SAMPLES) in html
    assert re.findall(r'class="sample[^"]*" data-seed="(\d+)"', html) == ["3", "4", "5", "6", "7"]
    first = client.post(
        "/api/generate", json={"run": run_id, "prompt": "床", "temperature": HINT_TEMPERATURE, "seed": 3}
    ).json()
    assert re.search(r'id="gen-text">([^<]*)<', html).group(1) == first["text"] == texts[0]  # sample 1, in detail

    greedy = client.get("/pipeline", params={**base, "temperature": 0}).text
    assert re.search(r'id="gen-distinct" data-value="(\d+)"', greedy).group(1) == "1"
    (only,) = set(re.findall(r'class="sample-text">([^<]*)<', greedy))
    assert only.startswith(JINGYESI)
    # this is the hint's own model: the page says what to do with it instead of the hint (test_pipeline_api.py
    # follows the hint's link from another run)
    assert 'id="gen-hint-followed"' in html and "gen-hint-link" not in html


def test_the_count_of_drawable_tokens_does_not_read_as_a_position():
    # "→ 前 20 个字可被抽中" read as "the first 20 characters": the count must not follow the token as a number
    for lang in ("zh", "en"):
        said = t("pipeline.step6.kept_n", lang, n=20, shown=5)
        assert not re.match(r"\s*\d", said), said
