"""Helpers the browser tests share (plain functions; the fixtures live in conftest.py)."""

from __future__ import annotations


def explain_update(page, action) -> None:
    """Run action() and wait until explain.js has written the API's answer into the page (an event, no timer)."""
    page.evaluate(
        "() => { window.__explained = false; document.addEventListener('explain:updated', "
        "() => { window.__explained = true; }, {once: true}); }"
    )
    action()
    page.wait_for_function("() => window.__explained === true")
