"""The course map (issue 36): the home page and every page's top bar reach every topic and /scale, in course order
(lecture 06, chapter 1, chapter 16, inside the model), each topic with its one line; every topic's COURSE names a
known section. Checked on the HTML the app serves (the browser test tests/browser/test_ask_first.py checks the
marks a learner's answers leave on it)."""

import re

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from attnlab.i18n import t
from attnlab.lessons.explain import TOPICS
from attnlab.web.app import create_app
from attnlab.web.course_map import PAGES, SECTIONS, course_map


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def test_every_topic_names_a_section_and_a_place_of_its_own():
    places = [topic.course for topic in TOPICS.values()] + [(s, p) for s, p, _, _ in PAGES.values()]
    assert {s for s, _ in places} <= set(SECTIONS)
    assert len(places) == len(set(places)), "two stops share a place"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_home_page_maps_every_topic_and_scale_in_course_order_with_its_line(client, lang):
    html = client.get("/", params={"lang": lang}).text
    links = re.findall(r'<a href="(/[^"?]*)', html[html.index('id="map"') : html.index('id="break-it"')])
    expected = [stop.path for _, stops in course_map() for stop in stops]
    assert links == expected
    assert {f"/explain/{name}" for name in TOPICS} | {"/scale"} <= set(links)
    for topic in TOPICS.values():
        assert str(escape(t(f"explain.{topic.slug}.summary", lang))) in html
    sections = [t(f"web.map.{s}", lang) for s in SECTIONS]
    assert [html.index(s) for s in sections] == sorted(html.index(s) for s in sections)


@pytest.mark.parametrize("path", ["/toy", "/explain/sqrt-dk", "/scale", "/runs"])
def test_the_top_bar_reaches_every_topic_from_any_page(client, path):
    html = client.get(path).text
    menu = html[html.index('id="map-menu"') : html.index("</details>", html.index('id="map-menu"'))]
    assert all(f'href="/explain/{name}"' in menu for name in TOPICS) and 'href="/scale"' in menu
