"""The one catalog of UI strings: complete in both languages, the same placeholders in each, every key the
templates and views ask for exists, and an English page carries no Chinese beyond the lab's own data."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from attnlab.i18n import LANGS, catalog, catalog_files, normalize_lang, t
from attnlab.web.app import create_app
from attnlab.web.nav import LESSONS

WEB = Path(__file__).resolve().parents[1] / "src" / "attnlab" / "web"
LESSONS_DIR = WEB.parent / "lessons"
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
# the tokens, the switch back to Chinese, the lab's name, and the examples the course map's topic titles quote
DATA = ("猫", "追", "老鼠", "它", "中文", "注意力实验室", "苹果发布会", "苹果真甜", "苹果", "明月", "月明")


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_string_has_both_languages_and_the_same_placeholders():
    for key, texts in catalog().items():
        assert set(texts) >= set(LANGS), key
        assert all(texts[lang].strip() for lang in LANGS), key
        assert fields(texts["zh"]) == fields(texts["en"]), f"{key}: {texts}"


def test_my_areas_keep_their_prefixes():
    for path, prefix in (
        (LESSONS_DIR / "toy" / "strings.json", "toy."),
        (LESSONS_DIR / "ledger" / "strings.json", "toy.ledger."),
        (WEB.parent / "i18n" / "web.json", "web."),
    ):
        strings = json.loads(path.read_text(encoding="utf-8"))
        assert strings and all(k.startswith(prefix) for k in strings), path


def test_a_topic_keeps_its_words_in_its_own_folder():
    from attnlab.lessons.explain import TOPICS

    for topic in TOPICS.values():
        mine = f"explain.{topic.slug}."
        elsewhere = [
            f.relative_to(WEB.parent).as_posix()
            for f in catalog_files()
            if f.parent.name != topic.slug
            and any(k.startswith(mine) for k in json.loads(f.read_text(encoding="utf-8")))
        ]
        assert not elsewhere, f"{mine}* keys outside lessons/{topic.slug}/: {elsewhere}"


def test_t_fills_fields_and_falls_back_to_chinese():
    assert t("web.error.title", "en", code=404) == "Something went wrong (404)"
    assert t("web.error.title", "xx", code=404) == t("web.error.title", "zh", code=404)
    assert normalize_lang("EN-us") == "en" and normalize_lang(None) == "zh"
    with pytest.raises(KeyError, match="no UI string 'nope.nothing'"):
        t("nope.nothing")


def test_every_choice_of_every_topic_has_its_label():
    """The form's <select> names each choice `explain.choice.<param>.<value>` (explain_topic.html): a choice added
    to a lesson (a published model, say) without its words is a 500 on the page."""
    from attnlab.lessons.explain import TOPICS

    missing = [
        f"explain.choice.{p.name}.{choice}"
        for topic in TOPICS.values()
        for p in topic.params
        if p.kind == "choice"
        for choice in p.choices
        if f"explain.choice.{p.name}.{choice}" not in catalog()
    ]
    assert missing == []


def test_every_literal_key_in_templates_and_views_exists():
    keys = set(catalog())
    used = set()
    for path in [
        *WEB.glob("templates/*.html"),
        *WEB.glob("*.py"),
        *WEB.glob("pages/*.py"),
        *LESSONS_DIR.glob("*/*.html"),
        *LESSONS_DIR.glob("*/*.py"),
    ]:
        used |= set(re.findall(r"""\bt\(\s*["']([a-z0-9_.]+)["']""", path.read_text(encoding="utf-8")))
    for lesson in LESSONS:
        used |= {lesson.title_key, lesson.summary_key}
    assert used, "the scan found no keys"
    used.discard("demo.key")  # the how-to example in web/app.py
    prefixes = {k for k in used if k.endswith((".", "_"))}  # t("toy.head." ~ name): some key must start so
    assert all(any(key.startswith(p) for key in keys) for p in prefixes), prefixes
    assert used - prefixes <= keys, sorted(used - prefixes - keys)


STATES = {  # page states that reach every branch of the templates (dynamic keys included)
    "/": [{}],
    "/toy": [
        {},
        {"query": "老鼠", "causal": "1", "ans_keys": "1", "ans_future": "yes", "ans_heads": "no"},
        {"ans_keys": "4", "ans_future": "no", "ans_heads": "yes", "s1": "1"},
        {"s1": "x", "query": "dog"},
        {"v2y": "1e-5000", "ans_keys": "9"},
        {"v2y": "4", "v2_guess": "all"},
    ],
    "/lookup": [{}, {"head": "2", "query": "1"}, {"head": "9"}],
    "/ledger": [{}, {"n": "128000", "d": "4096", "h": "32"}, {"n": "0"}, {"h": "3"}],
}


@pytest.mark.parametrize("path", list(STATES))
def test_english_pages_have_no_chinese_but_the_data(path):
    client = TestClient(create_app())
    for params in STATES[path]:
        for lang in LANGS:
            r = client.get(path, params={**params, "lang": lang}, headers={"accept": "text/html"})
            assert r.status_code == 200, (path, params, lang)
            if lang == "en":
                text = re.sub(r"<[^>]+>", " ", r.text)
                for word in DATA:
                    text = text.replace(word, "")
                stray = sorted(set(CJK.findall(text)))
                assert not stray, f"{path} {params}: Chinese left in the English page: {stray}"
