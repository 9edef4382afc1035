"""The one catalog of UI strings (zh first, en second).

Strings live beside what uses them: each lesson's `attnlab/lessons/<topic>/strings.json` (and the shared
`lessons/common/strings.json`), and the web lab's own in `attnlab/i18n/*.json` (`common.json`, `web.json`, ...).
Each maps a key to {"zh": ..., "en": ...}. They are merged into a single catalog; a key defined twice or
missing a language is an error at load time, so a gap is found by the tests, not by a learner. The lesson
files are found by their path, not imported: this module sits below every other layer.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).parent
LESSONS = HERE.parent / "lessons"
LANGS = ("zh", "en")
DEFAULT_LANG = "zh"


@lru_cache(maxsize=1)
def catalog() -> dict[str, dict[str, str]]:
    """Every UI string, merged from the package's JSON files: {key: {"zh": ..., "en": ...}}."""
    merged: dict[str, dict[str, str]] = {}
    for entry in catalog_files():
        name = entry.relative_to(HERE.parent).as_posix()
        strings = json.loads(entry.read_text(encoding="utf-8"))
        for key, texts in strings.items():
            if key in merged:
                raise ValueError(f"UI string {key!r} is defined twice (second time in {name})")
            missing = [lang for lang in LANGS if not texts.get(lang)]
            if missing:
                raise ValueError(f"UI string {key!r} in {name} has no text for {missing}")
            merged[key] = texts
    return merged


def catalog_files() -> list[Path]:
    """The catalog's files: attnlab/i18n/*.json, then every lesson's strings.json, in name order."""
    return sorted(HERE.glob("*.json")) + sorted(LESSONS.glob("*/strings.json"))


def normalize_lang(lang: str | None) -> str:
    """'en', 'en-US', 'EN' -> 'en'; anything unknown falls back to Chinese, the lab's default."""
    code = (lang or "").split("-")[0].lower()
    return code if code in LANGS else DEFAULT_LANG


def t(key: str, lang: str = DEFAULT_LANG, **fields: object) -> str:
    """The string for `key` in `lang`, with {placeholders} filled from `fields`."""
    texts = catalog().get(key)
    if texts is None:
        raise KeyError(f"no UI string {key!r} in the catalog")
    text = texts[normalize_lang(lang)]
    return text.format(**fields) if fields else text
