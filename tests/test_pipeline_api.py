"""The pipeline page's API: training runs with server-sent events, stopping, generation, and the page showing
the same numbers as the API and the Python calls."""

from __future__ import annotations

import re
import time

import pytest
from lab_client import read_events, serving

from attnlab.lessons.pipeline.lesson import pipeline
from attnlab.sampling import generate, prob_text
from attnlab.text import JINGYESI
from attnlab.train import new_run
from attnlab.web import runs as runs_service

pytestmark = pytest.mark.slow  # trains models


@pytest.fixture(scope="module")
def client():
    yield from serving()


def train(client, **settings) -> str:
    response = client.post("/api/train", json=settings)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def test_train_streams_every_step_then_done(client):
    run_id = train(client, corpus="poem", seed=0)
    events = read_events(client, run_id)
    steps = [data for _, kind, data in events if kind == "step"]
    assert [e["step"] for e in steps] == list(range(1, 61))  # the poem's default budget, every step
    assert [i for i, _, _ in events] == list(range(len(events)))
    kind, done = events[-1][1], events[-1][2]
    assert kind == "done" and not done["stopped"] and done["step"] == 60
    assert steps[0]["loss"] > 1.0 and steps[-1]["loss"] < 0.05 and steps[-1]["p_probe"] > 0.95

    status = client.get(f"/api/train/{run_id}").json()
    assert status["status"] == "done" and status["step"] == 60
    assert [h["loss"] for h in status["history"]] == [e["loss"] for e in steps]  # the same numbers
    # the before-training probability is the untrained model's, near 1/|V|
    assert 0.5 / 6 < status["before"]["p_target"] < 2 / 6


def test_runs_equal_the_python_call(client):
    run_id = train(client, corpus="jingyesi", steps=25, seed=7, layers=1, d_model=32, heads=2)
    read_events(client, run_id)
    api = client.get(f"/api/train/{run_id}").json()["history"]
    run = new_run("jingyesi", steps=25, seed=7, layers=1, d_model=32, heads=2, device="cpu")
    run.trainer.run()
    assert [h["loss"] for h in api] == pytest.approx([h["loss"] for h in run.trainer.history], rel=1e-6)
    assert [h["p_probe"] for h in api] == pytest.approx([h["p_probe"] for h in run.trainer.history], rel=1e-6)


def test_a_reconnecting_reader_continues_after_last_event_id(client):
    run_id = train(client, corpus="poem", steps=20)
    first = read_events(client, run_id)
    again = read_events(client, run_id, headers={"Last-Event-ID": "9"})
    assert again == first[10:]


def test_stop_ends_a_run_early(client):
    run_id = train(client, corpus="jingyesi", steps=5000, pace_ms=20)
    deadline = time.monotonic() + 30
    while client.get(f"/api/train/{run_id}").json()["step"] < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    stopped = client.post(f"/api/train/{run_id}/stop").json()
    assert stopped["status"] == "stopped" and 3 <= stopped["step"] < 5000
    events = read_events(client, run_id)
    assert events[-1][1] == "done" and events[-1][2]["stopped"] and events[-1][2]["step"] == stopped["step"]
    assert client.post(f"/api/train/{run_id}/stop").json()["status"] == "stopped"  # stopping twice is harmless


def test_generation_through_the_api(client):
    run_id = train(client, corpus="jingyesi")
    read_events(client, run_id)
    greedy = client.post(
        "/api/generate", json={"run": run_id, "prompt": "床", "greedy": True, "max_new_tokens": 40}
    ).json()
    assert greedy["text"] == JINGYESI and greedy["stop_reason"] == "eot"
    assert all(step["chosen"]["kept"] for step in greedy["steps"])

    body = {"run": run_id, "prompt": "举头", "temperature": 1.5, "top_k": 3, "seed": 4, "max_new_tokens": 10}
    a, b = (client.post("/api/generate", json=body).json() for _ in range(2))
    assert a == b  # seeded sampling repeats
    for step in a["steps"]:
        assert step["n_kept"] <= 3 and step["chosen"]["kept"]
        kept = [c for c in step["candidates"] if c["kept"]]
        assert sum(c["filtered_prob"] for c in kept) == pytest.approx(1.0, abs=1e-5)

    # the same model through Python gives the same steps
    model = runs_service.RUNS.get(run_id).run
    direct = generate(model.model, model.tokenizer, "举头", temperature=1.5, top_k=3, seed=4, max_new_tokens=10)
    assert direct.new_ids == a["new_ids"]


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"prompt": "春风"}, 422, "'春风'"),
        ({"prompt": "床", "temperature": -1}, 422, "temperature"),
        ({"prompt": "床", "top_p": 0}, 422, "top_p"),
        ({"prompt": "床", "top_k": 0}, 422, "top_k"),
        ({"prompt": ""}, 422, "prompt"),
    ],
)
def test_generation_refuses_bad_input(client, body, status, message):
    run_id = train(client, corpus="poem", steps=5)
    read_events(client, run_id)
    response = client.post("/api/generate", json={"run": run_id, **body})
    assert response.status_code == status and message in response.json()["message"]


def test_unknown_and_busy_runs(client):
    assert client.get("/api/train/nope").status_code == 404
    assert client.post("/api/generate", json={"run": "nope", "prompt": "床"}).status_code == 404
    assert client.get("/api/train/nope/events").status_code == 404
    long_runs = [train(client, corpus="poem", steps=5000, pace_ms=50) for _ in range(2)]
    try:
        response = client.post("/api/generate", json={"run": long_runs[0], "prompt": "床"})
        assert response.status_code == 409 and "still training" in response.json()["message"]
        third = client.post("/api/train", json={"corpus": "poem"})
        assert third.status_code == 429 and "already training" in third.json()["message"]
    finally:
        for run_id in long_runs:
            client.delete(f"/api/train/{run_id}")


@pytest.mark.parametrize(
    "body, message",
    [
        ({"heads": 3}, "divisible"),
        ({"steps": 0}, "steps"),
        ({"corpus": "/etc/passwd"}, "corpus"),
        ({"lr": 2}, "lr"),
        ({"dropout": 0.5}, "dropout"),
    ],
)
def test_train_refuses_bad_settings(client, body, message):
    response = client.post("/api/train", json=body)
    assert response.status_code == 422 and message in response.json()["message"]


def test_pipeline_api_equals_the_lesson(client):
    api = client.get("/api/pipeline", params={"corpus": "jingyesi", "seed": 3}).json()
    run = new_run("jingyesi", seed=3, device="cpu")
    lesson = pipeline(run.model, run.tokenizer, text=JINGYESI)
    assert api["tokens"]["ids"] == lesson.tokens.ids
    assert api["next"]["p_target"] == pytest.approx(lesson.next.p_target, rel=1e-9)
    flat = lambda rows: [x for row in rows for x in row]  # noqa: E731
    assert flat(api["attention"]["maps"][3]["weights"]) == pytest.approx(
        flat(lesson.attention.maps[3].weights), rel=1e-6
    )
    bad = client.get("/api/pipeline", params={"text": "春眠不觉晓"})
    assert bad.status_code == 422 and "春眠不觉晓"[0] in bad.json()["message"]


def data_values(html: str, element_id: str) -> float:
    match = re.search(rf'id="{element_id}" data-value="([^"]+)"', html)
    assert match, f"#{element_id} not on the page"
    return float(match.group(1))


def test_page_shows_the_api_numbers(client):
    run_id = train(client, corpus="poem")
    read_events(client, run_id)
    html = client.get("/pipeline", params={"run": run_id}).text
    api = client.get("/api/pipeline", params={"run": run_id}).json()
    status = client.get(f"/api/train/{run_id}").json()
    assert data_values(html, "p-target") == pytest.approx(api["next"]["p_target"], rel=1e-12)
    assert data_values(html, "p-after") == pytest.approx(api["next"]["p_target"], rel=1e-12)
    assert data_values(html, "p-before") == pytest.approx(status["before"]["p_target"], rel=1e-12)
    assert data_values(html, "final-loss") == pytest.approx(status["history"][-1]["loss"], rel=1e-12)
    untrained = client.get("/pipeline").text
    assert data_values(untrained, "p-target") == pytest.approx(client.get("/api/pipeline").json()["next"]["p_target"])


def test_no_javascript_form_post_trains_and_shows_the_result(client):
    response = client.post(
        "/pipeline/train", data={"corpus": "poem", "steps": "60", "seed": "1"}, follow_redirects=False
    )
    assert response.status_code == 303  # at once: the run trains in the background, like the API's
    run_id = re.search(r"run=([\w-]+)", response.headers["location"]).group(1)
    runs_service.RUNS.get(run_id).wait()
    page = client.get(response.headers["location"])
    assert 'data-status="done"' in page.text and data_values(page.text, "p-target") > 0.9
    generated = client.get("/pipeline", params={"run": run_id, "prompt": "床前", "greedy": "1"}).text
    assert re.search(r'id="gen-text">床前明月光<', generated)
    assert generated.count('class="gen-step"') == 4  # 明 月 光 <eot>


def test_form_post_with_bad_settings_shows_the_problem(client):
    response = client.post("/pipeline/train", data={"corpus": "poem", "heads": "3"}, follow_redirects=True)
    assert response.status_code == 200 and 'id="settings-problem"' in response.text
    assert re.search(r'id="settings-problem">d_model（32）要能被头数（3）整除', response.text)
    en = client.post("/pipeline/train", data={"corpus": "poem", "heads": "3", "lang": "en"}, follow_redirects=True)
    assert re.search(r'id="settings-problem">d_model \(32\) must be divisible by heads \(3\)', en.text)


def test_training_form_problems_name_the_fields_as_the_page_does(client):
    html = client.get("/pipeline", params={"layers": "9", "lr": "abc"}).text
    problem = re.search(r'id="settings-problem">([^<]*)<', html).group(1)
    assert problem == "层数 不能大于 8；学习率 要填数字"
    en = client.get("/pipeline", params={"layers": "9", "lr": "abc", "lang": "en"}).text
    assert re.search(r'id="settings-problem">layers must be at most 8; learning rate must be a number<', en)


def test_page_for_a_forgotten_run(client):
    html = client.get("/pipeline", params={"run": "gone-123"}).text
    assert "gone" in client.get("/pipeline", params={"run": "gone-123", "lang": "en"}).text
    assert 'data-status="untrained"' in html


def gen_problem(client, lang="zh", **params) -> str | None:
    html = client.get("/pipeline", params={**params, **({"lang": lang} if lang != "zh" else {})}).text
    found = re.search(r'id="gen-problem">([^<]*)<', html)
    assert found is None or 'id="gen-steps"' not in html
    return found and found.group(1)


@pytest.fixture(scope="module")
def short_run(client) -> str:
    run_id = train(client, corpus="poem", steps=5)
    read_events(client, run_id)
    return run_id


@pytest.mark.parametrize(
    "params, zh, en",
    [
        (
            {"prompt": "春床"},
            "开头里有模型没见过的字：春（它只在床前明月光（一句）上训练过）",
            "The prompt has characters the model never saw: 春 (it was trained only on 床前明月光 (one line))",
        ),
        ({"prompt": "天下"}, "开头里有模型没见过的字：天下", "never saw: 天下"),
        ({"prompt": "床", "top_p": "2"}, "top-p 不能大于 1", "top-p must be at most 1"),
        ({"prompt": "床", "top_p": "0"}, "top-p 必须大于 0", "top-p must be greater than 0"),
        ({"prompt": "床", "max_new_tokens": "999"}, "最多几个字 不能大于 300", "max new tokens must be at most 300"),
        ({"prompt": "床", "gseed": "x"}, "采样种子 要填整数", "sampling seed must be a whole number"),
        ({"prompt": ""}, "开头是空的：给模型一个开头，比如「床前」", "The prompt is empty: give the model a beginning"),
        ({"prompt": "  "}, "开头是空的", "The prompt is empty"),
    ],
)
def test_generation_problems_in_the_pages_language(client, short_run, params, zh, en):
    zh_text = gen_problem(client, run=short_run, **params)
    en_text = gen_problem(client, "en", run=short_run, **params)
    assert zh_text is not None and zh in zh_text
    assert en_text is not None and en in en_text
    for text in (zh_text, en_text):
        assert "body field" not in text and "Input should" not in text and "top_p" not in text


def test_page_without_a_sent_form_shows_no_problem(client, short_run):
    assert gen_problem(client, run=short_run) is None  # first visit: the prompt box is filled in, nothing sent


def test_page_shows_p_and_filtered_p_equal_to_the_api(client, short_run):
    """Temperature and top-k change the distribution: the page shows both, the same numbers as the API."""
    settings = {"prompt": "床", "temperature": 3.0, "top_k": 3, "seed": 4, "max_new_tokens": 4}
    api = client.post("/api/generate", json={"run": short_run, **settings}).json()
    html = client.get(
        "/pipeline", params={"run": short_run, **{("gseed" if k == "seed" else k): v for k, v in settings.items()}}
    ).text
    chips = re.findall(
        r'<span class="cand[^"]*" data-id="(\d+)" data-prob="([^"]+)" data-filtered="([^"]+)" '
        r'data-cut="([^"]*)"[^>]*>\s*<span class="cand-mark">(.)</span> <span class="tok">[^<]*</span>\s*'
        r'<span class="p">([^<]+)</span> → <span class="pf">([^<]+)</span>',
        html,
    )
    expected = [c for step in api["steps"] for c in step["candidates"]]
    assert len(chips) == len(expected) > 0
    for (cid, prob, filtered, cut, mark, p_text, pf_text), c in zip(chips, expected):
        assert int(cid) == c["id"] and float(prob) == c["prob"] and float(filtered) == c["filtered_prob"]
        assert p_text == prob_text(c["prob"]) and pf_text == prob_text(c["filtered_prob"])
        assert mark == ("✓" if c["kept"] else "×") and cut == (c["cut_by"] or "")
    kept = [c for c in expected if c["kept"]]
    assert any(c["filtered_prob"] != c["prob"] for c in kept)  # T = 3 and top-k 3 really moved the numbers
    assert {c["cut_by"] for c in expected if not c["kept"]} == {"top-k"}


def test_the_page_of_a_run_still_training_renders(client):
    # The no-JS form redirects to this page at once and it reloads itself while the run trains: it must render
    # then too (step ⑤'s checks are computed only once the run has finished).
    r = client.post("/api/train", json={"corpus": "poem", "steps": 5000, "pace_ms": 200})
    run_id = r.json()["id"]
    try:
        assert not runs_service.RUNS.get(run_id).finished  # 5000 paced steps: a minute at the least
        page = client.get("/pipeline", params={"run": run_id})
        assert page.status_code == 200 and 'data-status="training"' in page.text
    finally:
        client.post(f"/api/train/{run_id}/stop")


def test_the_sampling_hint_gives_way_once_followed(client):
    """Step ⑥'s hint (a memorised model samples one text: train 静夜思 for 20 steps and raise the temperature)
    is shown for any other run, and once followed the page says what to do with that model instead."""
    from attnlab.lessons.pipeline.samples import HINT_CORPUS, HINT_STEPS

    memorised = train(client, corpus="jingyesi", steps=HINT_STEPS + 10)
    followed = train(client, corpus="jingyesi", steps=HINT_STEPS)
    for run_id in (memorised, followed):
        read_events(client, run_id)
    for lang in ("zh", "en"):
        other = client.get("/pipeline", params={"run": memorised, "lang": lang}).text
        assert 'id="gen-memorized"' in other and 'id="gen-hint-followed"' not in other
        page = client.get("/pipeline", params={"run": followed, "lang": lang}).text
        assert 'id="gen-hint-followed"' in page and 'id="gen-memorized"' not in page and "gen-hint-link" not in page
        # the hint's link fills the form with the steps and corpus it names
        link = re.search(r'id="gen-hint-link" href="([^"]*)"', other).group(1).replace("&amp;", "&")
        assert f"corpus={HINT_CORPUS}" in link and f"steps={HINT_STEPS}" in link
        form = client.get(link.split("#")[0]).text
        assert re.search(rf'id="set-steps" name="steps" value="{HINT_STEPS}"', form)
        assert re.search(rf'value="{HINT_CORPUS}" id="corpus-{HINT_CORPUS}"[^>]* checked', form)
