"""A test-sized static site with states (tests/test_export_states.py, tests/browser/test_exported_states.py):
Chinese only, /toy's states for two query words (answers and the preset from the default page), two light
explain topics and one treated as heavy, the poem model trained for /pipeline. Exported once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.web.export import site as export
from attnlab.web.export import states as export_states
from attnlab.lessons.explain import TOPICS

SMALL_TOPICS = ("forms", "norms", "break")  # quick ones; norms stands in for a heavy topic (default only);
# break is heavy and the pipeline page links to it


def keep(target: export.Target) -> bool:
    """The states the small site renders: on /toy, the query words 它 and 猫 with the mask, the answers and
    the preset at the default query only; every other page's states."""
    if target.path != "/toy":
        return True
    q = dict(target.query)
    if q.get("query", "它") not in ("它", "猫"):
        return False
    return set(q) <= {"query", "causal"} or len(q) == 1


def small_site(tmp_path_factory) -> tuple[Path, export.Report]:
    import attnlab.web.pages.explain as explain_pages

    site = tmp_path_factory.getbasetemp() / "attnlab-site-states"
    if not hasattr(small_site, "report"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(explain_pages, "TOPICS", {k: TOPICS[k] for k in SMALL_TOPICS})
            mp.setattr(export_states, "HEAVY_TOPICS", frozenset({"norms", "break"}))
            small_site.report = export.export_site(site, ("zh",), states=keep)
    return site, small_site.report
