"""One behaviour everywhere (issue 15): an unknown language, the course text each lesson follows, numbers
counted from 1, the 'measured again' note only where something is timed, no English words in zh CLI tables."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from attnlab.cli import app as cli
from attnlab.lessons.explain import TOPICS
from attnlab.web.app import create_app
from attnlab.web.nav import LESSONS
from attnlab.web.pages.explain import measures_time


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


@pytest.mark.parametrize("path", ["/", "/toy", "/ledger", "/explain/forms?n_tgt=3&n_src=2"])
def test_an_unknown_language_falls_back_to_chinese_and_says_so(client, path):
    page = client.get(path + ("&" if "?" in path else "?") + "lang=fr").text
    assert 'lang="zh-CN"' in page and 'id="lang-note"' in page
    note = re.search(r'id="lang-note"[^>]*>([^<]*)<', page).group(1)
    assert "fr" in note and "zh, en" in note
    for fine in ("", "lang=en", "lang=en-US", "lang=zh"):
        assert 'id="lang-note"' not in client.get(path + ("&" if "?" in path else "?") + fine).text


@pytest.mark.parametrize(
    "argv", [["toy", "--lang", "fr"], ["explain", "forms", "--lang", "fr"], ["real", "--lang", "fr"]]
)
def test_the_cli_refuses_an_unknown_language_and_names_the_known_ones(argv):
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2
    out = re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", result.output))
    assert "fr" in out and "zh" in out and "en" in out


def test_the_home_page_names_each_lessons_course_text_and_where_to_break_things(client):
    for lang, words in (("zh", ("第 06 讲", "第 1 章", "第 16 章")), ("en", ("Lecture 06", "Chapter 1", "Chapter 16"))):
        page = client.get("/", params={"lang": lang}).text
        sections = re.findall(r'<h2 id="map-[a-z0-9]+">([^<]*)<', page)  # the course map's sections, in order
        assert [any(word in s for s in sections[i : i + 1]) for i, word in enumerate(words)] == [True] * 3, sections
        for lesson in LESSONS:  # every page of the lab is on the map (the explain index through its topics)
            assert lesson.slug == "explain" or f'href="{lesson.path}' in page, lesson.slug
        # /explain/break (another branch's topic) is linked as soon as it is registered
        assert bool(re.search(r'<a href="/explain/break(\?lang=en)?">', page)) == ("break" in TOPICS)


def test_the_measured_again_note_only_where_a_lesson_times_something(client):
    timed = client.get(
        "/explain/serial-vs-parallel", params={"n_max": 32, "d_model": 8, "n_heads": 2, "repeats": 1}
    ).text
    untimed = client.get("/explain/norms", params={"batch": 4, "d_model": 6}).text
    assert "实测时间每次重算" in timed and "实测时间每次重算" not in untimed
    assert measures_time({"points": [{"n": 4, "seconds": 0.1}]}) and not measures_time({"n": 4, "loss": [1.0]})


def test_unlabelled_rows_and_columns_count_from_1(client):
    page = client.get("/explain/norms", params={"batch": 4, "d_model": 6}).text
    first_row = re.search(r'<th data-bind="@n"[^>]*>([^<]*)<', page)
    assert first_row and first_row.group(1) == "1"
    pipeline = client.get("/pipeline").text
    assert re.search(r'<th scope="row">床 \(1\)</th>', pipeline)


def test_zh_cli_tables_say_their_headers_in_chinese():
    result = CliRunner().invoke(
        cli, ["explain", "positional", "--n-positions", "16", "--d-model", "16", "--n-check", "50"]
    )
    assert result.exit_code == 0, result.output
    assert "最大误差" in result.output and "max error" not in result.output
