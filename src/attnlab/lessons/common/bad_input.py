"""BadInput: a lesson refusing one input, in words a page can show in either language.

`str(err)` is the English sentence (the API's JSON message, the CLI); `err.key` and `err.fields` are the same
sentence in the UI catalog, so a page says it in its own language with `t(err.key, lang, **err.fields)`.
`err.field` names the input at fault (a page may rename it to the field the learner sees).
"""

from __future__ import annotations

from attnlab.i18n import t

MAX_SHOWN = 40  # an echoed input longer than this is cut, so a 5000-digit paste does not fill the page


def shown(value: object) -> str:
    """repr(value), cut to MAX_SHOWN characters."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


class BadInput(ValueError):
    def __init__(self, key: str, field: str | None = None, **fields: object):
        super().__init__(t(key, "en", **fields))
        self.key, self.field, self.fields = key, field, fields

    def text(self, lang: str, **renamed: object) -> str:
        """The sentence in `lang`, with some fields replaced (e.g. what="s₁", the page's name for the input)."""
        return t(self.key, lang, **{**self.fields, **renamed})
