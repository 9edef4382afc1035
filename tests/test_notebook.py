"""Jupyter: lesson results, traces and attention weights render as self-contained HTML (no script, no URL,
tables and inline SVG whose cells print the lesson's own numbers, the glyphs of their text embedded), and
examples/course.ipynb runs top to bottom in a fresh kernel of this Python (nbclient, offline) with every cell's
output shown and no glyph missing."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient
from notebook_support import embedded_fonts, missing_glyphs, table_grid, tables

import attnlab
from attnlab.display import Weights
from attnlab.display.notebook import _num
from attnlab.lessons.toy.hand_calc import hand_calc
from attnlab.lessons.toy.lesson import check_prediction, toy_lab
from attnlab.models import GPT, GPTConfig
from attnlab.nn import attention
from attnlab.trace import trace

pytestmark = pytest.mark.slow  # starts processes

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "course.ipynb"
OUTSIDE = re.compile(r"<script|<link|<iframe|\bsrc=|\bhref=|https?://|//[a-z0-9.-]+\.[a-z]{2,}/", re.I)


def self_contained(text: str) -> str:
    assert text and not OUTSIDE.search(text), OUTSIDE.search(text)
    return text


def cells(svg: str) -> list[str]:
    """The numbers a heatmap prints, row by row (the labels are not inside a <rect>'s <text>)."""
    return re.findall(r"<rect [^>]*/><text [^>]*>([^<]*)</text>", svg)


def test_lesson_results_render_their_own_numbers():
    lab = toy_lab("它", causal=True)
    page = self_contained(lab._repr_html_())
    assert "<table" in page and "ToyLab" in page
    for head, table in zip(lab.heads, tables(page, "weights"), strict=True):  # each head's A, as the lesson computed it
        assert [[td.text() for td in row] for row in table_grid(table)[2]] == [
            [_num(x) for x in r] for r in head.weights
        ]
    hand = self_contained(hand_calc(["0", "ln 3"], [[2, 0], [0, 4]])._repr_html_())
    assert "HandCalc" in hand and "0.25" in hand and "0.75" in hand
    verdict = self_contained(check_prediction("keys", "2")._repr_html_())
    assert "Verdict" in verdict and "✗" in verdict  # correct = False


def test_attention_weights_and_a_trace_render_as_heatmaps():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)  # (B, H, T, d_k)
    _, weights = attention(q, k, v)  # (1, 2, 3, 5)
    shown = self_contained(Weights(weights, ["a", "b", "c"], ["1", "2", "3", "4", "5"])._repr_html_())
    assert shown.count("<svg") == 2  # one per head
    assert cells(shown) == [_num(x) for x in weights[0].flatten().tolist()]
    model = GPT(GPTConfig(vocab_size=11, context_length=8, d_model=8, n_heads=2, n_layers=2)).eval()
    tr = trace(model, torch.tensor([[1, 2, 3, 4]]))  # (B=1, T=4)
    page = self_contained(tr._repr_html_())
    assert page.count("<svg") == 4  # 2 layers x 2 heads
    for name in tr.names():
        assert name in page
    first = tr["layers.0.attn.weights"][0, 0]  # (T, T)
    assert cells(page)[:16] == [_num(x) for x in first.flatten().tolist()]


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """A kernel spec for this very Python in a temporary Jupyter path: a fresh venv (CI) needs nothing
    installed in the user's folders, and no other Python is picked up."""
    spec = tmp_path / "jupyter" / "kernels" / "attnlab-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "attnlab test",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    # The kernel imports the attnlab this test imports (a worktree's src/ ahead of an installed copy).
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join([str(Path(attnlab.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    return "attnlab-test"


def test_the_course_notebook_runs_in_a_fresh_kernel(kernel, tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, kernel_name=kernel, timeout=None, resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(code) >= 8
    html = []
    for cell in code:
        assert cell.outputs, cell.source
        for out in cell.outputs:
            assert out.output_type != "error", out
            if "text/html" in out.get("data", {}):
                html.append(self_contained(out["data"]["text/html"]))
    joined = "\n".join(html)
    for part in ("ToyLab", "Verdict", "HandCalc", "PipelineView", "Trace"):
        assert part in joined, part
    assert len(html) >= 7
    # No missing glyph with no system Chinese font: every non-ASCII character an output draws is drawn by a font
    # that output embeds (decoded with fontTools), so the page never needs a font of the machine's.
    for page in html:
        assert missing_glyphs(page) == set(), page[:300]
    assert sum(bool(embedded_fonts(page)) for page in html) >= 6  # the Chinese ones carry their glyphs


def test_every_explain_topic_result_renders_in_a_notebook():
    # Every topic's result class shows as HTML; the quick ones are rendered and must hold their own claims' text.
    import inspect
    import typing

    from attnlab.lessons.explain import TOPICS, get_topic

    for name, topic in TOPICS.items():
        result_class = typing.get_type_hints(inspect.unwrap(topic.lesson))["return"]
        assert callable(getattr(result_class, "_repr_html_", None)), name
    for name in ("forms", "positional", "norms", "glossary"):
        result = get_topic(name).run(lang="en")
        html = self_contained(result._repr_html_())
        assert all(claim.text.split()[0] in html for claim in result.claims), name
