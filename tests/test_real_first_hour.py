"""Issue 22, /real and `attnlab real` in a learner's first hour: honest rounding (0.99980 is never shown as 1, a tiny
weight never as 0, which reads as masked) in the results, the page and the terminal, and a head's full map that
fits an 80-column terminal with every number in it."""

from __future__ import annotations

import re

import pytest
from real_support import need_minilm
from rich.cells import cell_len
from typer.testing import CliRunner

from attnlab.cli import app as cli
from attnlab.display.fmt import rounded
from attnlab.lessons.real.term import blocks, pack

pytestmark = pytest.mark.slow  # trains models

NUMBER = re.compile(r"^−?\d+(\.\d+)?(e−?\d+)?$")


@pytest.mark.parametrize(
    "x, digits, want",
    [
        (0.99980, 3, 0.9998),
        (0.00004, 4, 4e-5),
        (2.345e-5, 4, 2.3e-5),
        (0.12345, 3, 0.123),
        (1.0, 3, 1.0),
        (0.0, 4, 0.0),
        (-0.99996, 4, -0.99996),
        (float("inf"), 3, float("inf")),
    ],
)
def test_rounded_never_makes_a_number_whole(x, digits, want):
    assert rounded(x, digits) == want


def test_blocks_fit_the_width_and_keep_every_number():
    cells = [[f"{i}.{j}e−5" for j in range(16)] for i in range(16)]
    names = ["[CLS]", "because", "明月", "##ing"] * 4
    for width in (40, 80, 120):
        parts = blocks(cells, names, names, width)
        assert [j for a, b, _ in parts for j in range(a, b)] == list(range(16))  # every column once, in order
        for a, b, lines in parts:
            assert all(cell_len(line) <= width for line in lines)
            assert [line.split()[1:] for line in lines[1:]] == [row[a:b] for row in cells]
    assert pack("name:", ["L1·H3 0.9998"] * 7, 40) == [
        "name: L1·H3 0.9998  L1·H3 0.9998",
        "  L1·H3 0.9998  L1·H3 0.9998",
        "  L1·H3 0.9998  L1·H3 0.9998",
        "  L1·H3 0.9998",
    ]


@pytest.fixture(scope="module")
def lesson(one_thread):
    need_minilm()
    from attnlab.lessons.real import lesson as real

    real.real_model()
    return real


def test_results_round_honestly(lesson):
    """L1·H3 reads the previous token with a mean weight of 0.99980: the result said 1.0, and the page and the
    terminal printed "1"; tiny weights were 0.0 at 4 decimals, which the page printed as "0"."""
    r = lesson.analyse(lesson.DEFAULT_TEXT, 3, 5)
    top = r.patterns.ranking["previous"][0]
    assert (top.layer, top.head) == (1, 3) and 0.999 < top.score < 1
    weights = [x for layer in r.weights for head in layer for row in head for x in row]
    assert 0.0 not in weights and 1.0 not in weights  # a softmax weight is never exactly 0 or 1 here
    assert all(0 < s < 1 for p in r.patterns.patterns for s in sum(r.patterns.scores[p], []))
    assert min(x for row in r.detail.weights for x in row) > 0


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_page_and_api_show_no_dishonest_whole_number(lesson, lang):
    from fastapi.testclient import TestClient

    from attnlab.web.app import create_app

    client = TestClient(create_app())
    html = client.get("/real", params={"layer": 3, "head": 5, "lang": lang}).text
    pattern_top = re.findall(r'<table class="rowcalc" id="pattern-top">.*?</table>', html, re.S)[0]
    assert "L1·H3</button> 0.9998</td>" in pattern_top  # was "L1·H3</button> 1</td>"
    head_map = re.findall(r'<table class="mat heatmap" id="head-map">.*?</table>', html, re.S)[0]
    shown = re.findall(r">([^<>]+)</td>", head_map)
    assert len(shown) == 16 * 16 and "0" not in shown and "1" not in shown
    api = client.get("/api/real", params={"layer": 3, "head": 5}).json()
    assert api["patterns"]["ranking"]["previous"][0]["score"] == pytest.approx(0.9998)
    for e in client.get("/api/real/embeddings", params={"lang": lang}).json()["claims"]:
        assert not re.search(r"\d\.\d*0\b", e["text"])  # num() drops trailing zeros; '.3f' padded them


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_cli_fits_80_columns_with_every_number(lesson, lang):
    out = CliRunner().invoke(cli, ["real", "--layer", "3", "--head", "5", "--lang", lang], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    assert "…" not in out.output  # no cell and no header cut to an ellipsis
    assert "L1·H3 0.9998" in out.output  # was "L1·H3 1"
    cells = [w for line in lines for w in line.split() if NUMBER.match(w)]
    assert len(cells) >= 2 * 16 * 16  # both maps, every cell
    assert "0" not in cells and "1" not in cells  # a tiny weight reads 3e−4, not 0 (which reads as masked)
    wide = CliRunner().invoke(cli, ["real", "--layer", "3", "--head", "5", "--lang", lang], env={"COLUMNS": "200"})
    assert max(cell_len(line) for line in wide.output.splitlines()) > 80  # the terminal's width is used
    assert len(wide.output.splitlines()) < len(lines)
