"""The one catalog of UI strings (zh first, en second).

Strings live in `attnlab/i18n/*.json`, one file per area of the lab (`common.json`, `toy.json`, ...), each
mapping a key to {"zh": ..., "en": ...}. They are merged into a single catalog; a key defined twice or
missing a language is an error at load time, so a gap is found by the tests, not by a learner.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

LANGS = ("zh", "en")
DEFAULT_LANG = "zh"


@lru_cache(maxsize=1)
def catalog() -> dict[str, dict[str, str]]:
    """Every UI string, merged from the package's JSON files: {key: {"zh": ..., "en": ...}}."""
    merged: dict[str, dict[str, str]] = {}
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        strings = json.loads(entry.read_text(encoding="utf-8"))
        for key, texts in strings.items():
            if key in merged:
                raise ValueError(f"UI string {key!r} is defined twice (second time in {entry.name})")
            missing = [lang for lang in LANGS if not texts.get(lang)]
            if missing:
                raise ValueError(f"UI string {key!r} in {entry.name} has no text for {missing}")
            merged[key] = texts
    return merged


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
