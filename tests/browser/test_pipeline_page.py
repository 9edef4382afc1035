"""The pipeline page in Chromium: train from the page and watch the curve grow, stop a run, generate with
per-step candidates; with JavaScript off the settings form still trains and shows the result."""

from __future__ import annotations

import re

from attnlab.sampling import prob_text


def points(page, selector: str) -> int:
    return len((page.get_attribute(selector, "points") or "").split())


def test_train_live_then_generate(open_page, api):
    page = open_page("/pipeline?lang=en")
    assert page.get_attribute("#pipeline", "data-status") == "untrained"
    page.fill("#set-steps", "120")
    page.check("#slow")  # 30 ms a step: about 4 s to watch
    page.click("#train-button")

    page.wait_for_selector("#live:not([hidden])")
    page.wait_for_function("() => Number(document.querySelector('#live-status').dataset.step) >= 5")
    early = points(page, "#live-loss")
    page.wait_for_function(f"() => document.querySelector('#live-loss').getAttribute('points').split(' ').length > {early + 10}")
    assert points(page, "#live-p") > 0  # p(光) is drawn beside the loss
    assert re.search(r"step \d+/120 · loss \d\.\d{4} · p\(光\) = \d\.\d{3}", page.inner_text("#live-status"))

    # when the run ends the result page is swapped in
    page.wait_for_selector('#run-status[data-status="done"]')
    run_id = page.get_attribute("#pipeline", "data-run")
    assert f"run={run_id}" in page.url
    status = api(f"/api/train/{run_id}")
    assert status["step"] == 120 and len(status["history"]) == 120
    shown = float(page.get_attribute("#p-target", "data-value"))
    assert shown == api(f"/api/pipeline?run={run_id}")["next"]["p_target"] and shown > 0.9
    assert float(page.get_attribute("#final-loss", "data-value")) == status["history"][-1]["loss"]
    assert page.locator("#attn-2-2 tbody td").count() == 25  # layer 2, head 2: a 5 x 5 heatmap

    # ⑥ generate: greedy from 床前, every step with its candidates
    page.fill("#gen-prompt", "床前")
    page.check("#gen-greedy")
    page.click("#gen-button")
    page.wait_for_selector("#gen-steps")
    assert page.inner_text("#gen-text") == "床前明月光"
    steps = page.locator(".gen-step")
    assert steps.count() == 4  # 明 月 光, then the end mark
    first = steps.nth(0)
    assert first.locator(".cand").count() == 5
    assert first.locator(".cand.chosen .tok").inner_text() == "明"
    assert first.locator(".cand.kept").count() == 1  # greedy: only the argmax survives
    expected = api("/api/generate", {"run": run_id, "prompt": "床前", "greedy": True})
    assert [float(c.get_attribute("data-prob")) for c in first.locator(".cand").all()] == \
        [c["prob"] for c in expected["steps"][0]["candidates"]]

    # temperature and top-k change the distribution: p′ is on screen, equal to the API's, beside p
    shown = {}
    for temperature in ("0.5", "3"):
        page.uncheck("#gen-greedy")
        page.fill("#gen-temperature", temperature)
        page.fill("#gen-top-k", "3")
        page.fill("#gen-seed", "2")
        body = {"run": run_id, "prompt": "床前", "temperature": float(temperature), "top_k": 3, "seed": 2}
        want = [c for step in api("/api/generate", body)["steps"] for c in step["candidates"]]
        page.click("#gen-button")
        # Wait for the page to show this response: every candidate's p′ as the API gives it. (Checking only the
        # first one passed on the previous page too when that p′ was 1.0 under greedy and under T = 0.5.)
        page.wait_for_function(
            "(ps) => { const c = [...document.querySelectorAll('#gen-steps .cand')];"
            " return c.length === ps.length && c.every((x, i) => x.dataset.filtered === ps[i]); }",
            arg=[repr(c["filtered_prob"]) for c in want])
        cands = page.locator("#gen-steps .cand").all()
        assert len(cands) == len(want)
        for chip, c in zip(cands, want):
            assert chip.locator(".p").inner_text() == prob_text(c["prob"])
            assert chip.locator(".pf").inner_text() == prob_text(c["filtered_prob"])
            assert chip.locator(".pf").is_visible()
            assert chip.locator(".why").inner_text() == ("kept" if c["kept"] else "cut by top-k")
        shown[temperature] = page.locator("#gen-step-1 .cand .pf").first.inner_text()
    assert shown["0.5"] != shown["3"]  # a learner sees the temperature move the first step's p′


def test_stop_button_ends_the_run(open_page, api):
    page = open_page("/pipeline")
    page.check("#corpus-jingyesi")
    page.fill("#set-steps", "3000")
    page.check("#slow")
    page.click("#train-button")
    page.wait_for_function("() => Number(document.querySelector('#live-status').dataset.step) >= 3")
    page.click("#stop-button")
    page.wait_for_selector('#run-status[data-status="stopped"]')
    run_id = page.get_attribute("#pipeline", "data-run")
    status = api(f"/api/train/{run_id}")
    assert status["status"] == "stopped" and 3 <= status["step"] < 3000
    assert int(page.get_attribute("#run-status", "data-step")) == status["step"]
    # the settings stay in the form, ready to train again
    assert page.input_value("#set-steps") == "3000" and page.is_checked("#corpus-jingyesi")


def test_bad_settings_are_explained_in_the_page(chromium, lab_url, new_watch):
    # Its own watched context: Chromium logs the API's HTTP 422 answer as a console error, which is expected here.
    context = chromium.new_context(base_url=lab_url, viewport={"width": 1300, "height": 900})
    watch = new_watch()
    context.route("**/*", watch.route)
    page = context.new_page()
    page.on("console", lambda msg: watch.console_errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda err: watch.page_errors.append(str(err)))
    try:
        # the API answers in English with its field names; the page says it in its own language and labels
        for path, message in (("/pipeline", "d_model（32）要能被头数（3）整除"),
                              ("/pipeline?lang=en", "d_model (32) must be divisible by heads (3)")):
            page.goto(path)
            page.fill("#set-heads", "3")
            page.click("#train-button")
            page.wait_for_selector("#train-error:not([hidden])")
            assert message in page.inner_text("#train-error")
            assert "body field" not in page.inner_text("#train-error")
            assert page.is_enabled("#train-button")
    finally:
        context.close()
    problems = [p for p in watch.problems() if "status of 422" not in p]
    assert not problems, problems
    assert any("status of 422" in p for p in watch.problems())  # the request really was refused


def test_without_javascript_the_form_trains(open_page):
    page = open_page("/pipeline", js=False)
    page.click("#train-button")  # a plain form post; the server trains, then redirects to the result
    page.wait_for_selector('#run-status[data-status="done"]')
    assert "run=" in page.url
    assert float(page.get_attribute("#p-target", "data-value")) > 0.9
    assert page.locator("#curve polyline.loss").get_attribute("points").count(",") == 60  # one point a step
    page.fill("#gen-prompt", "")
    page.click("#gen-button")  # a plain GET form
    assert page.inner_text("#gen-problem").startswith("开头是空的")
    page.fill("#gen-prompt", "床前")
    page.check("#gen-greedy")
    page.click("#gen-button")
    page.wait_for_selector("#gen-steps")
    assert page.inner_text("#gen-text") == "床前明月光"
