"""Helpers the browser tests share (plain functions; the fixtures live in conftest.py)."""

from __future__ import annotations


def follow_training(page) -> None:
    """A lesson page that shows its models' training (a first visit: the run, then its claims' nulls) reloads
    itself until the results are there: wait for them (events and selectors, no timer)."""
    if page.locator("#training").count():
        page.wait_for_selector("#results, #explain-error:not([hidden])")
        page.wait_for_load_state("load")


def explain_update(page, action) -> None:
    """Run action() and wait until explain.js has written the API's answer into the page (an event, no timer)."""
    page.evaluate(
        "() => { window.__explained = false; document.addEventListener('explain:updated', "
        "() => { window.__explained = true; }, {once: true}); }"
    )
    action()
    page.wait_for_function("() => window.__explained === true")
