"""The real-model page (/real) and its API (/api/real, /api/real/coreference, /api/real/embeddings).

Every number comes from lessons/real/lesson.py; without the weights package the page says in one line how to
install it, and the API answers 503 with the same sentence.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import HTMLResponse

from attnlab.lessons.common.bad_input import BadInput, shown
from attnlab.lessons.common.cost import Cost
from attnlab.lessons.real import lesson
from attnlab.web import budget, lesson_cache
from attnlab.web.api_lang import ApiLang
from attnlab.web.errors import unprocessable
from attnlab.web.render import lang_of, render
from attnlab.web.responses import answers

router = APIRouter()
LEVELS = 8  # shades of a mini map; the full map of a head prints every number
LAYERS, HEADS = 6, 12  # of lesson.MODEL (all-MiniLM-L6-v2)
# Each of these characters is at most one WordPiece piece (ASCII, CJK punctuation and ideographs, full-width
# forms; a Korean syllable, by contrast, is three), and [CLS] and [SEP] come with every text: so MAX_CHARS of
# them always fit in lesson.MAX_TOKENS. The API checks both (the document says what it serves); the page also
# takes other text whose pieces fit (a Korean sentence), and says when they do not.
_SHOWN = "!-~\u3001-\u303f\u4e00-\u9fff\uff01-\uff5e"
MAX_CHARS = lesson.MAX_TOKENS - 2
TEXT_PATTERN = f"^[ \u3000{_SHOWN}]*[{_SHOWN}][ \u3000{_SHOWN}]*$"  # and at least one that is not a space


def mini_paths(weights: list[list[float]]) -> list[tuple[float, str]]:
    """One head's map as SVG paths, one per shade: [(opacity, "M j i h1v1h-1z ...")]; cells under half a
    shade are left blank. Drawing only: the numbers are the lesson's, shown in full on the head's own map."""
    shades: dict[int, list[str]] = {}
    for i, row in enumerate(weights):
        for j, a in enumerate(row):
            level = round(a * LEVELS)
            if level > 0:
                shades.setdefault(level, []).append(f"M{j} {i}h1v1h-1z")
    return [(level / LEVELS, "".join(parts)) for level, parts in sorted(shades.items())]


def _int(value: str | None, field: str, n: int) -> int | None:
    if value is None or value.strip() == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise BadInput(f"real.err.{field}", field, n=n, got=shown(value)) from None


REAL = Cost(64.0)  # a forward pass of MiniLM on at most 64 tokens, and the page of its 72 maps: the light lane


@router.get("/real", response_class=HTMLResponse, include_in_schema=False)
def real_page(request: Request):
    with budget.hold(REAL):  # like every computation with a model (web/budget.py)
        return _real_page(request)


def _real_page(request: Request):
    lang = lang_of(request)
    q = request.query_params
    text = q.get("text", lesson.DEFAULT_TEXT)
    word = q.get("word", "king")
    if not lesson.model_available():
        return render(
            request,
            "real/page.html",
            missing=lesson.ModelMissing().text(lang),
            r=None,
            mini_paths=mini_paths,
            co=None,
            emb=None,
            state={},
            problems=[],
            text=text,
            word=word,
        )
    problems = []
    try:
        layer, head = _int(q.get("layer"), "layer", LAYERS), _int(q.get("head"), "head", HEADS)
        if q.get("pick"):  # a map clicked in the grid: "L.H"
            layer, _, head = q["pick"].partition(".")
            layer, head = _int(layer, "layer", LAYERS), _int(head, "head", HEADS)
        r = lesson_cache.remembered(
            "real.analyse",
            {"text": text, "layer": layer, "head": head},  # kept on disk too
            lambda: lesson.analyse(text, layer, head),
            source="real",
            min_s=0.0,
        )
    except BadInput as err:
        problems.append(err.text(lang))
        try:
            r = lesson.analyse(text)  # the sentence without the bad head choice
        except BadInput:
            text = lesson.DEFAULT_TEXT
            r = lesson.analyse(text)
    try:
        emb = lesson_cache.remembered(
            "real.embeddings",
            {"word": word},
            lambda: lesson.embeddings(word, lang=lang),
            lang=lang,
            source="real",
            min_s=0.0,
        )
    except BadInput as err:
        problems.append(err.text(lang))
        word = "king"
        emb = lesson.embeddings(word, lang=lang)
    state = {"text": text if text != lesson.DEFAULT_TEXT else None, "word": word if word != "king" else None}
    # Each part is kept on disk however quick it was: the first part a process computes pays for loading the model.
    co = lesson_cache.remembered(
        "real.coreference", {}, lambda: lesson.coreference(lang), lang=lang, source="real", min_s=0.0
    )
    return render(
        request,
        "real/page.html",
        missing=None,
        r=r,
        mini_paths=mini_paths,
        co=co,
        emb=emb,
        state=state,
        problems=problems,
        text=text,
        word=word,
    )


def _missing() -> HTTPException:
    return HTTPException(503, lesson.ModelMissing().text("en"))


@router.get("/api/real", tags=["real"], responses=answers(503))
def api_real(
    text: Annotated[
        str,
        Query(
            description=f"a sentence (English works best), not only spaces, of at most "
            f"{lesson.MAX_TOKENS} WordPiece tokens with [CLS] and [SEP]: {MAX_CHARS} characters "
            "of ASCII or Chinese (other text: on the /real page, when its pieces fit)",
            max_length=MAX_CHARS,
            pattern=TEXT_PATTERN,
        ),
    ] = lesson.DEFAULT_TEXT,
    layer: Annotated[
        int | None,
        Query(
            description=f"1..{LAYERS}: with head, the full map of one head",
            json_schema_extra={"minimum": 1, "maximum": LAYERS},
        ),
    ] = None,
    head: Annotated[
        int | None,
        Query(description=f"1..{HEADS}, given with layer", json_schema_extra={"minimum": 1, "maximum": HEADS}),
    ] = None,
) -> lesson.RealAnalysis:
    """Tokens, every layer's and head's attention weights (L, H, T, T), and head-pattern scores. `layer` and
    `head` come together or not at all (one alone: 422)."""
    if not lesson.model_available():
        raise _missing()
    try:
        with budget.hold(REAL):
            return lesson.analyse(text, layer, head)
    except BadInput as err:
        raise unprocessable(
            ("query", err.field or "text"), err, {"layer": layer, "head": head}.get(err.field, text)
        ) from None


@router.get("/api/real/coreference", tags=["real"], responses=answers(503))
def api_coreference(lang: ApiLang = "en") -> lesson.Coreference:
    """How much "it" attends to each candidate in every head, and how many heads prefer the implied referent."""
    if not lesson.model_available():
        raise _missing()
    return lesson.coreference(lang)


@router.get("/api/real/embeddings", tags=["real"], responses=answers(503))
def api_embeddings(
    word: Annotated[
        str,
        Query(
            description="one whole English word of the model's vocabulary (king, paris; any "
            "case); a word outside it is answered 422 naming its pieces",
            examples=["king", "paris"],
            json_schema_extra={"pattern": "^[A-Za-z]+$"},
        ),
    ] = "king",
    lang: ApiLang = "en",
) -> lesson.Embeddings:
    """Nearest neighbours by cosine in the input table; king − man + woman and the rank of queen; one-hot vs dense."""
    if not lesson.model_available():
        raise _missing()
    try:
        return lesson.embeddings(word, lang=lang)
    except BadInput as err:
        raise unprocessable(("query", "word"), err, word) from None
