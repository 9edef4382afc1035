"""/scale in a real browser, JavaScript on and off (issue 24, item 3): a lab started with a corpora folder and a runs
folder offers the corpora by name, starts a sweep from its form, follows it while it runs (the page reloads itself)
and then opens it with the command that made it. The sweep is replaced by one the test lets finish (the real one is
tests/test_scale_sweep.py; tests/test_sweeps_page.py covers the refusals)."""

from __future__ import annotations

import json
import threading

import pytest

from attnlab.lessons.scale import sweep as sweep_module
from attnlab.web import sweeps
from attnlab.web.app import create_app
from attnlab.web.server import background

SCALE_JSON = {
    "corpus": "poems",
    "runs": [{"n_params": 3312, "tokens": 1000, "flops": 1e9, "val_loss": 5.3}],
    "fit": None,
    "optimum": [],
    "mlp_baseline": [],
    "emergence": {
        "rows": [
            {
                "n_params": 3312,
                "val_loss": 5.3,
                "form_score": 0.34,
                "form_prob": 0.96,
                "exact_recall": 0.0,
                "recall_prob": 0.0039,
            }
        ],
        "shapes": {"exact_recall": {"shape": "too-few-sizes", "rise": None}},
    },
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweeps")
    (root / "data").mkdir()
    (root / "data" / "notes.txt").write_text("abc " * 100, encoding="utf-8")
    (root / "runs").mkdir()
    sweeps.JOBS.clear()
    with background(create_app(runs_dir=root / "runs", data_dir=root / "data")) as url:
        yield url
    sweeps.JOBS.clear()


@pytest.mark.parametrize("js", [True, False])
def test_a_sweep_started_from_the_form_is_followed_then_opened(chromium, lab, monkeypatch, js):
    go = threading.Event()

    def fake_sweep(corpus_data, out, *, minutes, progress, command, **kw):
        progress({"phase": "run", "run": "L1-d16-C0", "done": 0, "of": 3, "left_s": 60})
        go.wait(120)
        out.mkdir(parents=True)
        (out / "scale.json").write_text(json.dumps({**SCALE_JSON, "command": command}), encoding="utf-8")

    monkeypatch.setattr(sweep_module, "run_sweep", fake_sweep)
    sweeps.JOBS.clear()  # the other parametrization's finished job: this page must show only its own
    context = chromium.new_context(java_script_enabled=js, base_url=lab)
    try:
        page = context.new_page()
        page.goto("/scale?lang=en")
        assert page.locator("#sweeps-corpus option").all_text_contents() == ["notes.txt"]
        page.fill("#sweeps-minutes", "1")
        page.click("#sweeps-go")
        page.wait_for_selector('#sweeps-jobs li[data-status="running"]')
        # the sweep's first progress line arrives a moment after it starts: the page (reloading itself every 3 s
        # while a sweep runs) shows it then
        running = page.wait_for_selector('#sweeps-jobs li[data-status="running"]:has-text("run 1/3: L1-d16-C0")')
        assert "attnlab scale --corpus" in running.text_content()
        go.set()  # the page reloads itself every 3 s while a sweep runs, with or without JavaScript
        page.wait_for_selector('#sweeps-jobs li[data-status="done"]')
        page.click('#sweeps-jobs li[data-status="done"] a')
        page.wait_for_selector("#sweep")
        assert "attnlab scale --corpus" in page.locator("#sweep").text_content()
        assert page.locator("#emergence-table tbody tr").count() == 1
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= page.viewport_size["width"]  # wide tables scroll in their own box
    finally:
        go.set()
        context.close()
        for job in list(sweeps.JOBS.values()):
            while job.status == "running":
                threading.Event().wait(0.05)
