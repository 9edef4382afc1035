"""Notebook output that shows its finding (issue 22 §5, issue 36 §5): a heatmap's numbers each fit their own cell
(they ran together as "0.02540.05150.0515"), rounded honestly; the toy lab and the hand calculation are tables
labelled with the tokens, features and keys, not dumps of their dataclasses, and the mask is a matrix of ✓ and
·; masked cells are hatched as lab.css hatches them; examples/course.ipynb asks for the learner's prediction
instead of filling in the answers, and its check cell refuses politely while it is empty."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from notebook_support import parse, table_grid, tables

from attnlab.display import Weights, html_of
from attnlab.display.heatmap import FONT, heatmap, number
from attnlab.display.predict import Waiting, ask
from attnlab.lessons.toy.hand_calc import hand_calc
from attnlab.lessons.toy.lesson import FEATURES, TOKENS, check_prediction, toy_lab
from attnlab.models import GPT, GPTConfig
from attnlab.trace import trace

NOTEBOOK = Path(__file__).resolve().parents[1] / "examples" / "course.ipynb"
LAB_CSS = Path(__file__).resolve().parents[1] / "src" / "attnlab" / "web" / "static" / "lab.css"
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
def toy() -> tuple:
    lab = toy_lab("它", causal=True)
    return lab, lab._repr_html_()


def test_the_toy_is_labelled_tables_of_its_tokens_and_features(toy):
    lab, page = toy
    cols, rows, _ = table_grid(tables(page, "X")[0])
    assert rows == list(TOKENS) and [c.split()[-1] for c in cols] == list(FEATURES)  # "名词 noun"
    for name in ("weights", "masked_scores"):
        for table in tables(page, name):  # one per head
            cols, rows, _ = table_grid(table)
            assert rows == list(TOKENS) and cols == list(TOKENS), name
    assert table_grid(tables(page, "W_Q")[0])[1] == table_grid(tables(page, "X")[0])[0]  # W_Q's rows: X's columns
    assert table_grid(tables(page, "Q")[0])[1] == list(TOKENS)
    for head, table in zip(lab.heads, tables(page, "weights")):
        assert [[td.text() for td in r] for r in table_grid(table)[2]] == [[number(x) for x in r] for r in head.weights]
    shown = parse(page).text()
    assert "ToyLab" in shown and "−∞" in shown
    for field in ("query_index", "concat_row", "contribution_norms", "masked_scores", "W_Q:"):
        assert field not in shown, field  # tables, not a dump of the dataclass's fields


def test_any_result_shown_field_by_field_labels_and_hatches_its_heatmaps():
    # html_of, the view of every result without one of its own, reads the tokens and the mask off the result.
    lab = toy_lab("它", causal=True)
    page = html_of(lab)
    x = svg_named(page, "X")
    assert labels(x, "row") == list(TOKENS) and labels(x, "col") == list(FEATURES)
    weights = svg_named(page, "weights")
    assert labels(weights, "row") == list(TOKENS) and weights.count('<g class="masked">') == 6


def test_the_mask_is_a_matrix_of_marks(toy):
    lab, page = toy
    cols, rows, cells = table_grid(tables(page, "mask")[0])
    assert [[td.text() for td in r] for r in cells] == [["✓" if ok else "·" for ok in r] for r in lab.mask]
    assert rows == list(TOKENS) and cols == list(TOKENS)
    assert "True" not in page and "False" not in page


def web_hatch() -> tuple[str, list[str]]:
    """lab.css's masked cell: its background (the hatch) and the colours in it."""
    rule = re.search(r"\.mat td\.masked \{([^}]*)\}", LAB_CSS.read_text(encoding="utf-8"))[1]
    background = re.search(r"background:\s*([^;]+);", rule)[1].strip()
    return background, re.findall(r"#[0-9a-f]{6}", background)


def test_masked_cells_are_hatched_as_on_the_web(toy):
    lab, page = toy
    background, colours = web_hatch()
    squeeze = lambda text: re.sub(r"\s+", "", text)  # noqa: E731 - the same gradient, however it is spaced
    for name in ("masked_scores", "weights"):
        for table in tables(page, name):
            for i, row in enumerate(table_grid(table)[2]):
                for j, td in enumerate(row):
                    forbidden = not lab.mask[i][j]
                    assert ("masked" in td.classes()) == forbidden, (name, i, j)
                    if forbidden:
                        assert squeeze(background) in squeeze(td.attrs["style"]), td.attrs
    assert sum(not ok for r in lab.mask for ok in r) == 6  # the causal mask hides 6 of the 16 cells
    # The SVG heatmaps (Weights, a trace) hatch the same cells with the same two colours, drawn as stripes.
    svg = Weights([h.weights for h in lab.heads], lab.tokens, mask=lab.mask)._repr_html_()
    for one in re.findall(r"<svg .*?</svg>", svg, re.S):
        groups = re.findall(r'<g class="masked">(.*?)</g>', one)
        assert len(groups) == 6
        assert all(colours[0] in g and colours[1] in g and 'class="hatch"' in g for g in groups)
    assert '<g class="masked">' not in Weights([h.weights for h in lab.heads], lab.tokens)._repr_html_()


def test_a_trace_hatches_what_the_causal_mask_hid():
    model = GPT(GPTConfig(vocab_size=11, context_length=8, d_model=8, n_heads=2, n_layers=1)).eval()
    page = trace(model, torch.tensor([[1, 2, 3, 4, 5]]))._repr_html_()
    maps = re.findall(r"<svg .*?</svg>", page, re.S)
    assert len(maps) == 2 and all(m.count('<g class="masked">') == 5 * 4 // 2 for m in maps)  # above the diagonal


def test_hand_calc_is_a_labelled_table_with_the_closed_form_numbers():
    page = hand_calc(["0", "ln 3"], [[2, 0], [0, 4]])._repr_html_()
    cols, rows, cells = table_grid(tables(page, "mix")[0])
    assert cols == ["s", "eˢ", "a = softmax(s)", "v", "a·v"] and rows == ["j = 1", "j = 2", "o = Σ aⱼvⱼ"]
    a = [1 / (1 + 3), 3 / (1 + 3)]  # softmax(0, ln 3) = (1, 3) / 4
    text = [[td.text() for td in r] for r in cells]
    assert text[0][:3] == ["0", "1", f"1/4 = {number(a[0])}"] and text[1][:3] == ["ln 3", "3", f"3/4 = {number(a[1])}"]
    o = [a[0] * 2 + a[1] * 0, a[0] * 0 + a[1] * 4]
    assert text[2][-1] == f"(1/2, 3) = ({number(o[0])}, {number(o[1])})"
    cols, rows, cells = table_grid(tables(page, "delta")[0])
    assert rows == ["j = 1", "j = 2", "Δo = Σ aⱼΔvⱼ"] and cols[-1] == "a·Δv"
    assert cells[-1][-1].text() == f"(0, 3/2) = (0, {number(a[1] * 2)})"  # Δo = a₂ Δv₂ = 3/4 · (0, 2)
    shown = parse(page).text()
    assert "HandCalc" in shown
    for field in ("score_inputs", "delta_terms", "exact_delta_output", "ExactMix", "before"):
        assert field not in shown, field


def test_a_verdict_says_right_or_wrong_in_words_with_the_lab_numbers():
    wrong = parse(check_prediction("keys", "2")._repr_html_()).text()
    assert "✗" in wrong and "不对" in wrong and "Not quite" in wrong and "4" in wrong
    right = parse(check_prediction("keys", "4")._repr_html_()).text()
    row = toy_lab(1).heads[0].row.weights  # the numbers that settle it: 4 positive weights, the smallest shown
    assert "✓" in right and "Right." in right and number(min(row)) in right and "evidence" not in right


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
