"""The states a learner reaches in the static copy (attnlab.web.export.site): what the pages' forms would ask the lab
for, turned into links to pages rendered ahead of time.

- A GET form's named submit buttons (/toy's four query words, the hand-calculation presets) and the radio
  buttons and checkboxes in labels (the three predictions, the causal mask, a bool parameter, the glossary
  quiz) become links to what the form would submit: the URL the lab would answer, so the crawler renders it.
- Fields a learner types (numbers, text, sliders) cannot be enumerated. Each explain topic gets links to a
  few values of each parameter (from its PARAMS, one changed at a time from the defaults; heavy topics stay
  at their default), and the pipeline a model trained at export time with the lab's seeded defaults and a
  few generation settings. A note on each such page says what needs the live lab.

Nothing here renders a page: it reads the HTML the app rendered and names URLs of the app.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

from attnlab.i18n import t
from attnlab.lessons.explain import TOPICS
from attnlab.web.export.tags import tags_of

# Topics whose lesson takes seconds (timed, sampled or trained): the copy has them at their default only (each
# lesson's HEAVY, read from the registry).
HEAVY_TOPICS = frozenset(name for name, topic in TOPICS.items() if topic.heavy)
# Topics whose parameters only mean something together (a whole model configuration): default only, and why.
TOGETHER_TOPICS = frozenset(name for name, topic in TOPICS.items() if topic.together)
VALUES_PER_PARAM = 2  # a number parameter at its default, its lowest and its highest value
SKIPPED_PARAMS = frozenset({"seed"})  # a seed's other values teach nothing a learner can see on one page
# /toy's three parts are rendered one at a time (attnlab.web.export.axes), so its answers combine freely.
# The pages whose GET forms become links (/pipeline's and /real's forms type or train: they stay off), and
# forms left as they are (a topic's parameters get their links from PARAMS, one at a time, below).
EXPANDED = ("/toy", "/lookup", "/explain/")
NOT_EXPANDED_FORMS = frozenset({"explain-form"})
ASK_FORM = "ask-form"  # a topic's question: its answers become links on the topic's first page (asks_here)
# The generation settings the copy shows for the trained model (one prompt, a few ways to choose).
GENERATIONS = (
    {"greedy": "1"},
    {"temperature": "0.5", "gseed": "0"},
    {"temperature": "1", "gseed": "0"},
    {"temperature": "1.5", "gseed": "0"},
    {"temperature": "1", "top_k": "3", "gseed": "0"},
    {"temperature": "1", "top_p": "0.9", "gseed": "0"},
)
NEW_TOKENS = "30"


@dataclass(frozen=True)
class Links:
    """A paragraph the copy adds at offset `at`: a lead sentence, then links (label, lab URL, is this page)."""

    at: int
    id: str
    lead: str
    links: tuple[tuple[str, str, bool], ...] = ()


@dataclass
class Extras:
    """What the copy adds to one page: controls that become links (start offset of the <button> or <label>
    -> the lab URL it submits) and paragraphs of links."""

    choices: dict[int, str] = field(default_factory=dict)
    paragraphs: list[Links] = field(default_factory=list)

    def urls(self) -> list[str]:
        return [*self.choices.values(), *(url for p in self.paragraphs for _, url, _ in p.links)]


@dataclass
class Trained:
    """The model the export trained for /pipeline: its run id and what it was trained with."""

    run: str
    corpus: str
    seed: int
    steps: int
    prompt: str


# ---- forms -------------------------------------------------------------------------------------------


@dataclass
class _Form:
    attrs: dict
    start: int
    end: int = -1
    fields: list[tuple[str, str | None]] = field(default_factory=list)  # (name, value or None if off)
    buttons: list[tuple[int, str, str]] = field(default_factory=list)  # (offset, name, value)
    toggles: list[tuple[int, str, str, str, bool]] = field(
        default_factory=list
    )  # (label offset, type, name, value, on)


def forms(text: str) -> list[_Form]:
    """Every <form> of the page with its submitted fields, named submit buttons and labelled toggles."""
    parsed = tags_of(text)
    events = sorted(
        [(tag.start, 0, tag) for tag in parsed.tags] + [(s, 1, name) for name, s, _ in parsed.ends], key=lambda e: e[0]
    )
    out: list[_Form] = []
    form: _Form | None = None
    label: int | None = None
    select: tuple[str, str | None] | None = None
    for offset, is_end, item in events:
        if is_end:
            if item == "form" and form is not None:
                form.end = offset
                out.append(form)
                form = None
            elif item == "label":
                label = None
            elif item == "select" and form is not None and select is not None:
                form.fields.append(select)
                select = None
            continue
        tag, a = item, dict(item.attrs)
        if tag.name == "form":
            form = _Form(a, offset)
        if form is None:
            continue
        name = a.get("name")
        if tag.name == "label":
            label = offset
        elif tag.name == "select" and name:
            select = (name, None)
        elif tag.name == "option" and select is not None and (select[1] is None or "selected" in a):
            select = (select[0], a.get("value") or "")
        elif tag.name == "button" and name and a.get("type", "submit") == "submit":
            form.buttons.append((offset, name, a.get("value") or ""))
        elif tag.name == "input" and name:
            kind = (a.get("type") or "text").lower()
            if kind in ("radio", "checkbox"):
                on = "checked" in a
                form.fields.append((name, (a.get("value") or "on") if on else None))
                if label is not None:
                    form.toggles.append((label, kind, name, a.get("value") or "on", on))
            elif kind not in ("submit", "button", "image", "reset", "file"):
                form.fields.append((name, a.get("value") or ""))
    return out


def _submit(here: str, form: _Form, fields: list[tuple[str, str]]) -> str:
    """The URL a GET form sends: its action with the fields that have a value."""
    action = urljoin(here, form.attrs.get("action") or here)
    parts = urlsplit(action)
    defaults = page_defaults(parts.path)  # a value at its default is left out, as the lab's own links do
    query = urlencode([(k, v) for k, v in dict(fields).items() if v and defaults.get(k) != v])
    return parts.path + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")


def page_defaults(path: str) -> dict[str, str]:
    """The query parameters a page takes as its defaults (each page's own table)."""
    if path == "/toy":
        from attnlab.web.pages.toy import DEFAULTS

        return DEFAULTS
    if path == "/lookup":
        from attnlab.web.pages.lookup import DEFAULTS

        return DEFAULTS
    if path == "/pipeline":
        from attnlab.web.pages.pipeline import GEN_FIELDS

        return GEN_FIELDS
    return {}


def asks_here(here: str) -> bool:
    """Whether the copy asks a topic's question on this page: on its first page (the defaults) and the pages its
    answers lead to; a state reached by a parameter's link shows its results at once (the copy asked already)."""
    parts = urlsplit(here)
    return parts.path.startswith("/explain/") and not (set(parse_qs(parts.query)) - {"lang", "predict"})


def answered_already(tag, here: str):
    """(tag, changed): on a topic's page reached by a parameter's link, the results show at once and the question
    (asked on the topic's first page) is hidden; any other tag as it is."""
    names = dict(tag.attrs)
    if asks_here(here) or not urlsplit(here).path.startswith("/explain/"):
        return tag, False
    if "data-results" not in names and names.get("id") != "ask":
        return tag, False
    attrs = [(k, v) for k, v in tag.attrs if k != "hidden"] + ([("hidden", None)] if names.get("id") == "ask" else [])
    return replace(tag, attrs=attrs), True


def form_choices(text: str, here: str) -> dict[int, str]:
    """{offset of a <button>/<label>: the lab URL its GET form would submit when it is pressed}."""
    choices: dict[int, str] = {}
    path = urlsplit(here).path
    fixed = not path.startswith(EXPANDED) or path.removeprefix("/explain/") in HEAVY_TOPICS | TOGETHER_TOPICS
    for form in forms(text):
        if form.attrs.get("id") == ASK_FORM:
            if not asks_here(here):
                continue
        elif (
            fixed or (form.attrs.get("method") or "get").lower() != "get" or form.attrs.get("id") in NOT_EXPANDED_FORMS
        ):
            continue
        base = [(k, v) for k, v in form.fields if v is not None]
        for offset, name, value in form.buttons:
            choices[offset] = _submit(here, form, base + [(name, value)])
        for offset, kind, name, value, on in form.toggles:
            if kind == "radio" and on:
                continue  # the page already shows it
            rest = [(k, v) for k, v in base if k != name]
            choices[offset] = _submit(here, form, rest if kind == "checkbox" and on else rest + [(name, value)])
    return choices


# ---- the paragraphs ------------------------------------------------------------------------------------


def _cmd(lang: str, key: str, **fields) -> str:
    mark = "\x00"
    return html.escape(t(key, lang, cmd=mark, **fields)).replace(mark, "<code>attnlab serve</code>")


def param_values(p) -> list:
    """The values of one parameter the copy renders: every choice, both booleans, or the default and a few
    numbers across its range (powers of two for a log parameter), on the slider's step."""
    if p.kind == "choice":
        return list(p.choices)
    if p.kind == "bool":
        return [False, True]
    if p.kind not in ("int", "float") or p.name in SKIPPED_PARAMS or p.lo is None or p.hi is None:
        return [p.default]
    lo, hi = float(p.lo), float(p.hi)
    if p.log:
        lo, hi = max(lo, 1.0), min(hi, float(p.default) * 16)
        marks = [
            2 ** round(math.log2(lo) + (math.log2(hi) - math.log2(lo)) * i / VALUES_PER_PARAM)
            for i in range(VALUES_PER_PARAM + 1)
        ]
    else:
        marks = [lo + (hi - lo) * i / VALUES_PER_PARAM for i in range(VALUES_PER_PARAM + 1)]
    step = float(p.step or 1)
    values = {p.default}
    for x in marks:
        x = min(hi, max(float(p.lo), round(x / step) * step))
        values.add(int(x) if p.kind == "int" else round(x, 6))
    return sorted(values)


def _url(path: str, lang: str, **params) -> str:
    from attnlab.web.render import make_url

    return make_url(path, lang, **params)


def _shown(value) -> str:
    if isinstance(value, bool):
        return "✓" if value else "✗"
    return f"{value:g}" if isinstance(value, float) else str(value)


def explain_values(text: str, topic: str, query: dict[str, str], lang: str) -> list[Links]:
    """Under a topic's form: links to each parameter's values (one changed from the defaults), or, for a
    heavy topic, the sentence that its other values need the live lab."""
    from attnlab.lessons.explain import TOPICS

    tp = TOPICS.get(topic)
    form = next((f for f in forms(text) if f.attrs.get("id") == "explain-form"), None)
    if tp is None or form is None:
        return []
    if topic in HEAVY_TOPICS:
        return [Links(form.end, "static-values", _cmd(lang, "export.states.heavy"))]
    if topic in TOGETHER_TOPICS:
        return [Links(form.end, "static-values", _cmd(lang, "export.states.together"))]
    links = []
    from attnlab.web.pages.explain import FORM_HIDDEN

    for p in tp.params:
        values = param_values(p)
        if len(values) < 2 or p.cli_only or p.name in FORM_HIDDEN:
            continue
        for v in values:
            params = {} if v == p.default else {p.name: str(v).lower() if isinstance(v, bool) else _shown(v)}
            here = params == {k: v for k, v in query.items() if k != "predict"}
            links.append((f"{p.name} = {_shown(v)}", _url(f"/explain/{topic}", lang, **params), here))
    return [Links(form.end, "static-values", _cmd(lang, "export.states.values"), tuple(links))]


def pipeline_links(text: str, query: dict[str, str], lang: str, trained: Trained | None) -> list[Links]:
    """On /pipeline: a link to the model trained at export time; on its page, a few generation settings."""
    if trained is None:
        return []
    found = {f.attrs.get("id"): f for f in forms(text)}
    out = []
    if "train-form" in found:
        words = _cmd(lang, "export.states.trained", corpus=trained.corpus, seed=trained.seed, steps=trained.steps)
        run = _url("/pipeline", lang, run=trained.run)
        out.append(
            Links(
                found["train-form"].end,
                "static-trained",
                words,
                ((t("export.states.trained.link", lang), run, query.get("run") == trained.run),),
            )
        )
    if "gen-form" in found and query.get("run") == trained.run:
        links = []
        for g in GENERATIONS:
            params = {"run": trained.run, "prompt": trained.prompt, "max_new_tokens": NEW_TOKENS, **g}
            params = {k: v for k, v in params.items() if page_defaults("/pipeline").get(k) != v}
            label = ", ".join(f"{k} = {v}" for k, v in g.items() if k != "gseed")
            links.append((label, _url("/pipeline", lang, **params), params == query))
        out.append(
            Links(
                found["gen-form"].end,
                "static-generations",
                _cmd(lang, "export.states.generate", prompt=trained.prompt),
                tuple(links),
            )
        )
    return out


def extras(text: str, path: str, query: dict[str, str], lang: str, here: str, trained: Trained | None = None) -> Extras:
    """What the copy adds to the page at `path` (its query without lang, its language, its full URL)."""
    out = Extras(choices=form_choices(text, here))
    if path.startswith("/explain/") and path.count("/") == 2:
        out.paragraphs += explain_values(text, path.split("/")[2], query, lang)
    if path == "/pipeline":
        out.paragraphs += pipeline_links(text, query, lang, trained)
    if path == "/toy":
        main = text.find("<main")
        if main >= 0:
            out.paragraphs.append(Links(text.index(">", main) + 1, "static-states", _cmd(lang, "export.states.toy")))
    return out


STYLE = (
    "<style>a.btn{display:inline-block;text-decoration:none;padding:.35em .8em}"
    "a.btn[aria-current=page]{background:var(--accent);border-color:var(--accent);color:#fff;font-weight:700}"
    ".static-links a[aria-current=page]{font-weight:700;text-decoration:none}"
    ".static-links{overflow-wrap:anywhere}a>input{pointer-events:none}</style>"
)  # a click on the (disabled) radio follows the link


def paragraph(p: Links, href) -> str:
    """The HTML of a Links paragraph; `href(url)` is the relative link of an exported URL (None: left out)."""
    items = []
    for label, url, here in p.links:
        target = href(url)
        if target is None:
            continue
        current = ' aria-current="page"' if here else ""
        items.append(f'<a href="{html.escape(target, quote=True)}"{current}>{html.escape(label)}</a>')
    return (
        f'<p class="note static-links" id="{p.id}" role="note">{p.lead}'
        + (" " + " · ".join(items) if items else "")
        + "</p>"
    )
