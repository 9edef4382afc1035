"""Notebook output that shows its finding (issue 22 §5): a heatmap's numbers each fit their own cell (they ran
together as "0.02540.05150.0515"), rounded honestly; the toy lab's matrices are labelled with its tokens and
features and its mask is a matrix of ✓ and ·, not a list of True/False; examples/course.ipynb asks for the
learner's prediction instead of filling in the answers, and its check cell refuses politely while it is empty."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from attnlab.display.heatmap import FONT, heatmap, number
from attnlab.display.predict import Waiting, ask
from attnlab.lessons.toy.lesson import FEATURES, TOKENS, check_prediction, toy_lab

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "course.ipynb"
CELL = re.compile(r'<rect x="[^"]*" y="[^"]*" width="([\d.]+)"[^>]*/><text [^>]*>([^<]*)</text>')


def svg_named(page: str, name: str) -> str:
    """The first heatmap whose aria-label is `name` (a field of the result)."""
    match = re.search(rf'<svg [^>]*aria-label="{re.escape(name)}".*?</svg>', page, re.S)
    assert match, name
    return match.group(0)


def labels(svg: str, kind: str) -> list[str]:
    return re.findall(rf'<text class="{kind}"[^>]*>([^<]*)</text>', svg)


def test_each_number_fits_its_own_cell_and_is_rounded_honestly():
    matrix = [[0.0254, 0.0515, 0.0515, 0.99998], [2e-5, -0.5, 123.456, None]]
    svg = heatmap(matrix, ["a", "b"], ["1", "2", "3", "4"], "m")
    cells = CELL.findall(svg)
    assert [text for _, text in cells] == [number(v) for row in matrix for v in row]
    assert [text for _, text in cells][3:5] == ["0.99998", "2e−5"] and cells[-1][1] == "−∞"  # never '1', '0'
    measure = TextToPath()
    font = FontProperties(family="DejaVu Sans", size=FONT)  # a wide sans-serif, at the heatmap's own size
    for width, text in cells:
        drawn = measure.get_text_width_height_descent(text, font, ismath=False)[0]
        assert drawn + 4 <= float(width), (text, drawn, width)  # room on both sides: no two numbers touch


@pytest.fixture(scope="module")
def toy_page() -> str:
    return toy_lab("它", causal=True)._repr_html_()


def test_the_toy_labels_rows_and_columns_with_its_tokens_and_features(toy_page):
    x = svg_named(toy_page, "X")
    assert labels(x, "row") == list(TOKENS) and labels(x, "col") == list(FEATURES)
    for name in ("weights", "scores", "masked_scores"):
        svg = svg_named(toy_page, name)
        assert labels(svg, "row") == list(TOKENS) and labels(svg, "col") == list(TOKENS), name
    assert labels(svg_named(toy_page, "W_Q"), "row") == list(FEATURES)
    assert labels(svg_named(toy_page, "Q"), "row") == list(TOKENS)
    assert "−∞" in [t for _, t in CELL.findall(svg_named(toy_page, "masked_scores"))]  # a masked score, not '—'


def test_the_mask_is_a_matrix_of_marks(toy_page):
    lab = toy_lab("它", causal=True)
    svg = svg_named(toy_page, "mask")
    marks = [t for _, t in CELL.findall(svg)]
    assert marks == ["✓" if ok else "·" for row in lab.mask for ok in row]
    assert labels(svg, "row") == list(TOKENS) and labels(svg, "col") == list(TOKENS)
    assert "True" not in toy_page and "False" not in toy_page


def test_the_course_notebook_asks_for_predictions_and_stores_no_answer():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code")  # no stored verdicts
    predictions = re.findall(r"^(my_\w+) = (.*?)\s*(?:#|$)", "\n".join(code), re.M)
    assert {name for name, _ in predictions} == {"my_keys", "my_future"}
    assert all(value == "None" for _, value in predictions)  # left for the learner to fill in
    assert not re.search(r"check_prediction\(\s*\"", "\n".join(code))  # no answer typed in for the learner
    for name, _ in predictions:
        check = next(i for i, c in enumerate(code) if re.search(rf"ask\([^)]*\b{name}\b", c))
        writes = next(i for i, c in enumerate(code) if c.startswith(f"{name} = "))
        assert writes < check, name  # the learner predicts first, then checks
        reveal = next(i for i, c in enumerate(code) if "toy_lab(" in c and "ask(" not in c and i > writes)
        assert check < reveal, name  # the lab's matrices come after the check


def test_the_check_refuses_politely_while_the_prediction_is_empty():
    for empty in (None, "", "  "):
        waiting = ask(check_prediction, "keys", empty, ["1", "2", "3", "4"])
        assert isinstance(waiting, Waiting)
        shown = waiting._repr_html_() + repr(waiting)
        assert "None" in shown and "1 / 2 / 3 / 4" in shown and "✓" not in shown and "✗" not in shown
    verdict = ask(check_prediction, "keys", " 4 ", ["1", "2", "3", "4"])
    assert verdict.correct and verdict.evidence["nonzero"] == 4
