"""Every topic asks first (issue 36): its folder's ask.py names the choices, each has words in both languages,
and at the lesson's QUICK settings its answer is one of them, read from that run and explained with its numbers."""

import html
import string

import pytest
from results import by_topic, result

from attnlab.i18n import LANGS, catalog
from attnlab.lessons.explain import TOPICS


@pytest.mark.parametrize("name", TOPICS)
def test_every_topic_asks_a_question_with_words_for_each_choice(name):
    topic, strings = TOPICS[name], catalog()
    assert (topic.folder / "ask.py").is_file(), f"{name}: no ask.py"
    options = topic.options
    assert 2 <= len(options) <= 4 and len(set(options)) == len(options), options
    key = f"explain.{topic.slug}.ask"
    for part in ("q", "why", *(f"opt.{o}" for o in options)):
        assert f"{key}.{part}" in strings, f"{name}: no string {key}.{part}"
    words = [strings[f"{key}.opt.{o}"][lang] for o in options for lang in LANGS]
    assert len(set(words)) == len(words), f"{name}: two choices read alike"


@pytest.mark.parametrize("name", by_topic())
def test_the_answer_is_a_choice_and_its_reason_names_this_runs_numbers(name):
    topic = TOPICS[name]
    r = result(name, **topic.quick)
    answer = topic.answer(r)
    assert answer.option in topic.options
    why = catalog()[f"explain.{topic.slug}.ask.why"]
    for lang in LANGS:
        fields = {f for _, f, _, _ in string.Formatter().parse(why[lang]) if f}
        assert fields == set(answer.numbers), f"{name} [{lang}]: the sentence and the numbers disagree"
        assert any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in answer.numbers.values())
        verdicts = {o: topic.verdict(r, o, lang) for o in topic.options}
        assert [o for o, v in verdicts.items() if v["correct"]] == [answer.option]


def test_the_api_says_right_or_wrong_and_refuses_a_choice_that_is_not_one():
    from fastapi.testclient import TestClient

    from attnlab.web.app import create_app

    topic, query = TOPICS["norms"], {"batch": "4", "d_model": "6"}
    with TestClient(create_app()) as client:
        data = client.get("/api/explain/norms", params={**query, "predict": "b", "lang": "en"}).json()
        assert data["verdict"] == topic.verdict(result("norms", batch=4, d_model=6), "b", "en")
        bad = client.get("/api/explain/norms", params={**query, "predict": "z"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "predict"]
        assert "a, b, c" in bad.json()["detail"][0]["msg"]
        assert "verdict" not in client.get("/api/explain/norms", params=query).json()  # no answer, no verdict


@pytest.mark.parametrize("name", by_topic())
def test_the_number_that_carries_the_lesson_is_marked_where_the_sentence_says_it(name):
    """Each answer names the one number that carries the lesson (Answer.key, one of its numbers); the verdict
    gives its text and place in the sentence, and the page without JavaScript marks exactly that span."""
    from fastapi.testclient import TestClient

    from attnlab.web.app import create_app

    topic = TOPICS[name]
    client = TestClient(create_app())
    for lang in LANGS:
        r = result(name, lang, **topic.quick)
        answer = topic.answer(r)
        assert answer.key in answer.numbers, f"{name}: Answer.key {answer.key!r} is not one of its numbers"
        v = topic.verdict(r, answer.option, lang)
        assert v["key"] == answer.key and v["key_text"] and v["key_at"] >= 0, v
        assert v["why"][v["key_at"] : v["key_at"] + len(v["key_text"])] == v["key_text"]
        value = answer.numbers[answer.key]  # the marked text is that number as the sentence writes it
        assert isinstance(value, str) and v["key_text"] == value or any(ch.isdigit() for ch in v["key_text"])
        query = {**topic.quick, "lang": lang, "predict": answer.option}
        assert client.get(f"/api/explain/{name}", params=query).status_code == 200  # its nulls computed too
        page = client.get(f"/explain/{name}", params=query).text
        mark = f'<mark class="key" data-key="{answer.key}">{html.escape(v["key_text"], quote=False)}</mark>'
        assert mark in page and page.count('<mark class="key"') == 1, name
