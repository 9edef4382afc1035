"""Rendering a page: the Jinja2 environment, the helpers every template gets, and number formatting.

Every template receives: `lang` ("zh" | "en"), `t(key, **fields)` bound to that language, `url(path,
**params)` (keeps the language in the link), `here(**changes)` (this page with some parameters changed;
None removes one), `lang_url` (this page in the other language), `static(name)`, `nav` (the lessons, with
`.active`), and the filters `num` (3 decimals, U+2212 minus, None -> −∞), `frac`, `big`, `heat` and
`pick` ([2, 0]|pick(tokens) -> [tokens[2], tokens[0]]).
"""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import urlencode

import jinja2
from fastapi import Request
from fastapi.templating import Jinja2Templates

from attnlab import __version__
from attnlab.display.fmt import MINUS, num
from attnlab.i18n import DEFAULT_LANG, LANGS, normalize_lang, t
from attnlab.web import plots
from attnlab.web.course_map import course_map
from attnlab.web.nav import LESSONS

HERE = Path(__file__).parent
TEMPLATES_DIR = HERE / "templates"  # the lab's frame: base, home, explain, runs, error
LESSONS_DIR = HERE.parent / "lessons"  # each lesson's page: "toy/page.html", "sqrt_dk/page.html", "common/macros.html"
STATIC_DIR = HERE / "static"
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def frac(text: str | None) -> str:
    """An exact fraction string from a lesson ('-3/4') with a typographic minus."""
    return "" if text is None else str(text).replace("-", MINUS)


def big(n: int | float) -> str:
    """1234567 -> '1,234,567'; from 10^12 on -> '1.23 × 10¹⁵'."""
    if abs(n) < 1e12:
        return f"{int(n):,}" if float(n).is_integer() else num(n)
    exp = int(math.floor(math.log10(abs(n))))
    return f"{n / 10**exp:.2f} × 10{str(exp).translate(SUPERSCRIPT)}"


def heat(a: float | None) -> str:
    """The inline style of a heatmap cell of weight a in [0, 1] (the cell prints the number too)."""
    a = 0.0 if a is None else max(0.0, min(1.0, float(a)))
    return f"--a:{a:.3f}"


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([TEMPLATES_DIR, LESSONS_DIR]),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,  # a typo in a template is an error, not an empty string
    )
    env.filters.update(num=num, frac=frac, big=big, heat=heat, pick=lambda idx, seq: [seq[i] for i in idx])
    env.globals["vector_plot"] = plots.vector_sum
    return env


templates = Jinja2Templates(env=_env())


def lang_of(request: Request) -> str:
    return normalize_lang(request.query_params.get("lang"))


def make_url(path: str, lang: str, **params) -> str:
    """path?params with the language added when it is not the default; None/'' values are dropped."""
    query = {k: v for k, v in params.items() if v is not None and v != "" and k != "lang"}
    if lang != DEFAULT_LANG:
        query["lang"] = lang
    return f"{path}?{urlencode(query)}" if query else path


def helpers(request: Request) -> dict:
    """What every template gets (see the module docstring)."""
    lang = lang_of(request)
    path = request.url.path
    current = dict(request.query_params)

    def here(**changes) -> str:
        params = {**current, **changes}
        return make_url(path, normalize_lang(params.pop("lang", lang)), **params)

    other = "en" if lang == "zh" else "zh"
    asked = request.query_params.get("lang")
    # An unknown ?lang= falls back to Chinese, and the page says so (the CLI refuses one instead).
    unknown = asked is not None and (asked.split("-")[0].lower() not in LANGS)
    return {
        "lang_note": t("web.lang.unknown", lang, asked=asked[:24], langs=", ".join(LANGS)) if unknown else None,
        "lang": lang,
        "other_lang": other,
        "t": lambda key, **fields: t(key, lang, **fields),
        "url": lambda p, **params: make_url(p, lang, **params),
        "here": here,
        "lang_url": here(lang=other),
        "static": lambda name: f"/static/{name}?v={__version__}",
        "course_map": course_map,
        "nav": [
            {
                "slug": l.slug,
                "path": l.path,
                "title_key": l.title_key,
                "summary_key": l.summary_key,
                "source_key": l.source_key,
                "active": path == l.path or path.startswith(l.path + "/"),
            }
            for l in LESSONS
        ],
    }


def render(request: Request, template: str, status_code: int = 200, **context):
    """Render `template` (in web/templates/ or a lesson's folder) with the shared helpers plus `context`."""
    return templates.TemplateResponse(request, template, {**helpers(request), **context}, status_code=status_code)
