"""Words a learner reads (issue 36): one term for one idea across the lab, and no words of the project's own
making (its issues, a bug "elsewhere") on any page. Every word a page, the terminal or a figure shows comes from
the string catalog or a template, so both are scanned, in zh and en."""

import re

from attnlab.i18n import LANGS, catalog
from attnlab.lessons.explain import FOLDER

TERMS = {  # a word a page must not use -> the term the lab uses for it
    "逻辑透镜": "logit 透镜",
    "已显示": "实测成立",
    "未显示": "未能证实",
}
PROJECT_WORDS = re.compile(
    r"议题|别处有个已知|the issue|an issue|issue #|known bug elsewhere|另一个分支", re.IGNORECASE
)
TEMPLATES = [*FOLDER.glob("*/*.html"), *(FOLDER.parent / "web" / "templates").glob("*.html")]


def _texts():
    for key, texts in catalog().items():
        for lang in LANGS:
            yield key, texts[lang]
    for path in TEMPLATES:
        text = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.S)  # comments are not shown
        yield path.name, re.sub(r"<[^>]+>", " ", text)


def test_one_term_for_one_idea():
    found = [(where, avoided) for where, text in _texts() for avoided in TERMS if avoided in text]
    assert not found, f"use the lab's terms ({TERMS}): {found}"


def test_no_page_speaks_of_the_projects_own_business():
    found = [(where, m.group()) for where, text in _texts() for m in PROJECT_WORDS.finditer(text)]
    assert not found, found
