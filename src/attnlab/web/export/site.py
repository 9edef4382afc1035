"""`export_site(DIR)`: the lab as a static site a teacher can host (or open from file://), offline.

Every page is rendered by the real app (FastAPI's TestClient, no server, no second copy of the templates),
starting from the home page in each language and following every link the pages hold, so each lesson is
there in its default state, plus the states the pages link to (the ledger's presets), plus (unless
states=False) the states a learner reaches through the pages' forms, listed by attnlab.web.export.states: /toy's
queries, mask, answers, presets and v₂ guesses (each of its three parts on its own, the others at their defaults:
attnlab.web.export.axes, so its pages add up instead of multiplying), each explain topic at a few values, and a
poem model trained for the export with a few generations. Then each page is post-processed, never the templates:
- links become relative file paths (the site works from any folder, host or file://);
- a banner says it is a static copy (i18n key `export.banner`);
- the scripts are left out (each calls the server, and every page is complete without them); a button, radio
  or checkbox whose state was rendered becomes a link to that page, every other form control is disabled and
  forms lose their action; a link to a page not exported (the other language in a one-language export, a
  state left out) is hidden.

Layout, with both languages (one language: that language at the root, no en/ folder):

    index.html                  the home page in Chinese (/)
    toy.html, explain.html ...  each page /x in Chinese; /explain/sqrt-dk -> explain/sqrt-dk.html
    ledger~d=768~h=12~n=1024.html   a linked state: /ledger?n=1024&d=768&h=12 (query keys sorted)
    toy~causal=1~query=_E7_8C_AB.html   a state a form reaches: /toy?query=猫&causal=1 (non-ASCII as _XX)
    pipeline~run=poem.html      the model trained for the export (its random run id named by its corpus)
    explain/sqrt-dk/figure.png  figures, as the page shows them
    api/toy.json ...            the JSON answer of GET /api/x for each page /x that has one
    en/...                      the same in English (?lang=en): en/index.html, en/toy.html, en/api/...
    static/                     styles and the icon, shared by both languages
"""

from __future__ import annotations

import html
import posixpath
import re
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, quote, urljoin, urlsplit

from attnlab.i18n import DEFAULT_LANG, LANGS, normalize_lang, t
from attnlab.io.atomic import atomic_dir
from attnlab.train.storage.links import LinkLoop, real_path
from attnlab.web.export.axes import SECTIONED, TwoParts, narrow, parts
from attnlab.web.export.tags import Tag, tags_of

BANNER_ID = "static-copy"
MAX_FILES = 3000  # a guard: the lab and its states are some hundreds of files; more would mean a loop
ORIGIN = "http://testserver"  # the TestClient's base URL
FOLLOW = {("a", "href"), ("link", "href"), ("img", "src"), ("source", "src")}  # what gets copied and linked
CONTROLS = {"input", "button", "select", "textarea"}


class ExportError(ValueError):
    """The destination cannot be used, or a page could not be rendered."""


@dataclass(frozen=True)
class Target:
    """A URL of the lab: path, query (sorted, without lang) and language ('' for the shared static files)."""

    path: str
    query: tuple[tuple[str, str], ...] = ()
    lang: str = ""

    @property
    def url(self) -> str:
        from attnlab.web.render import make_url

        return make_url(self.path, self.lang or DEFAULT_LANG, **dict(self.query))


@dataclass
class Report:
    """What an export wrote: the folder and the files by kind."""

    dir: Path
    pages: list[str] = field(default_factory=list)
    assets: list[str] = field(default_factory=list)
    api: list[str] = field(default_factory=list)
    trained: object = None  # attnlab.web.export.states.Trained: the model /pipeline shows, trained for the export

    @property
    def files(self) -> int:
        return len(self.pages) + len(self.assets) + len(self.api)


Progress = Callable[[int, int, str], None]  # (done, total so far, what is being rendered)


# ---- where things go ----------------------------------------------------------------------------------


def target_of(url: str, base: str = "/") -> Target | None:
    """The lab URL an href/src names, seen from the page at `base`; None for a fragment or another site."""
    if url.startswith("#"):
        return None
    parts = urlsplit(urljoin(ORIGIN + base, url))
    if f"{parts.scheme}://{parts.netloc}" != ORIGIN:
        return None
    if parts.path.startswith("/static/"):
        return Target(parts.path)  # ?v=version is for browser caches; the copy has one version
    query = parse_qsl(parts.query, keep_blank_values=True)
    lang = normalize_lang(dict(query).get("lang"))
    return Target(parts.path, tuple(sorted((k, v) for k, v in query if k != "lang")), lang)


def _safe(text: str) -> str:
    return "".join(
        c if c.isascii() and (c.isalnum() or c in "-_.") else "".join(f"%{b:02X}" for b in c.encode()) for c in text
    ).replace("%", "_")


def file_for(target: Target, kind: str, langs: tuple[str, ...]) -> str:
    """The site-relative file of `target`, whose response is `kind` ('html', 'json' or another content)."""
    if not target.lang:
        return target.path.lstrip("/")
    prefix = "" if len(langs) == 1 or target.lang == DEFAULT_LANG else f"{target.lang}/"
    name = target.path.strip("/") or "index"
    suffix = "".join(f"~{_safe(k)}={_safe(v)}" for k, v in target.query)
    if kind in ("html", "json"):
        return f"{prefix}{name}{suffix}.{kind}"
    stem, ext = posixpath.splitext(name)
    return f"{prefix}{stem}{suffix}{ext}"


def relative(to_file: str, from_file: str) -> str:
    """An href from one site file to another, percent-encoded."""
    return quote(posixpath.relpath(to_file, posixpath.dirname(from_file) or "."), safe="/~=")


# ---- reading and rewriting a page ---------------------------------------------------------------------


def references(text: str) -> list[tuple[str, str, str]]:
    """(tag, attribute, value) of every attribute that names another file: href, src, srcset, action."""
    return [
        (tag.name, k, v)
        for tag in tags_of(text).tags
        for k, v in tag.attrs
        if v is not None and k in ("href", "src", "srcset", "action", "formaction", "poster")
    ]


def _write_tag(tag: Tag) -> str:
    attrs = "".join(f" {k}" if v is None else f' {k}="{html.escape(v, quote=True)}"' for k, v in tag.attrs)
    return f"<{tag.name}{attrs}{' /' if tag.closed else ''}>"


def static_page(text: str, here: str, lang: str, link: Callable[[Target], str | None], extras=None) -> str:
    """The page as the static copy serves it: see the module docstring. `here` is the page's own URL;
    `link(target)` is the relative href of an exported target, None when it is not exported. `extras`
    (attnlab.web.export.states.Extras) names the controls that become links and the paragraphs to add."""
    from attnlab.web.export.states import STYLE, answered_already, paragraph

    parsed = tags_of(text)
    edits: list[tuple[int, int, str]] = [(start, end, "") for start, end in parsed.scripts]

    def goto(url: str) -> str | None:
        target = target_of(url, urlsplit(here).path)
        fragment = urlsplit(url).fragment
        found = link(target) if target is not None else None
        return None if found is None else found + (f"#{fragment}" if fragment else "")

    choices = extras.choices if extras is not None else {}
    for p in extras.paragraphs if extras is not None else []:
        edits.append((p.at, p.at, "\n" + paragraph(p, goto)))
    if extras is not None and "</head>" in text:
        at = text.index("</head>")
        edits.append((at, at, STYLE))
    for tag in parsed.tags:
        if tag.name == "script":
            continue
        goes = goto(choices[tag.start]) if tag.start in choices and tag.start in parsed.closes else None
        if goes is not None:  # a form control the copy has rendered: a link to that page
            keep = [(k, v) for k, v in tag.attrs if k in ("id", "class", "title", "lang")]
            if tag.name == "button":
                keep = [(k, ((v or "") + " btn").strip() if k == "class" else v) for k, v in keep]
                if "class" not in dict(keep):
                    keep.append(("class", "btn"))
            if dict(tag.attrs).get("aria-pressed") == "true":
                keep.append(("aria-current", "page"))
            edits.append((tag.start, tag.end, _write_tag(Tag("a", [*keep, ("href", goes)], tag.start, tag.end, False))))
            close = parsed.closes[tag.start]
            edits.append((close[0], close[1], "</a>"))
            continue
        tag, changed = answered_already(tag, here)
        attrs = []
        for k, v in tag.attrs:
            if tag.name == "form" and k in ("action", "method"):
                changed = True
                continue
            if v is not None and (tag.name, k) in FOLLOW:
                fragment = urlsplit(v).fragment
                target = target_of(v, here)
                if target is not None:
                    href = link(target)
                    changed = True
                    if href is None:  # a page this export does not have: hide the link
                        attrs += [("hidden", None)]
                        continue
                    v = href + (f"#{fragment}" if fragment else "")
            attrs.append((k, v))
        if tag.name in CONTROLS and dict(tag.attrs).get("type") != "hidden" and "disabled" not in dict(tag.attrs):
            attrs.append(("disabled", None))
            changed = True
        if changed:
            edits.append((tag.start, tag.end, _write_tag(Tag(tag.name, attrs, tag.start, tag.end, tag.closed))))
        if tag.name == "main":
            edits.append((tag.end, tag.end, "\n" + banner(lang)))
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def banner(lang: str) -> str:
    """The static copy's notice, at the top of every page's <main>."""
    mark = "\x00"
    words = html.escape(t("export.banner", lang, cmd=mark)).replace(mark, "<code>attnlab serve</code>")
    return f'<p class="note warn" id="{BANNER_ID}" role="note">{words}</p>'


# ---- rendering the site -------------------------------------------------------------------------------

CSS_URL = re.compile(r"""url\(\s*["']?([^"')]+)["']?\s*\)""")  # a url(...) in a style sheet


def _kind(content_type: str) -> str:
    media = content_type.split(";")[0].strip().lower()
    return {"text/html": "html", "application/json": "json"}.get(media, "other")


States = Callable[[Target], bool]  # which pages reached only through a form (a state) the export renders


def render_site(
    langs: Iterable[str] = LANGS, progress: Progress | None = None, states: bool | States = True
) -> tuple[dict[str, bytes], Report]:
    """Every file of the static site, {site-relative path: bytes}, rendered by the app (nothing written).
    `states`: also the states the pages' forms reach (attnlab.web.export.states), all of them (True), none
    (False), or those a predicate keeps (a smaller site, for tests)."""
    from fastapi.testclient import TestClient

    from attnlab.web.app import create_app
    from attnlab.web.export.states import extras as page_extras

    langs = _langs(langs)
    keep_state = (lambda target: True) if states is True else (lambda target: False) if not states else states
    report = Report(Path())
    fetched: dict[Target, tuple[str, bytes]] = {}
    added: dict[Target, object] = {}  # each page's attnlab.web.export.states.Extras
    moved: dict[Target, Target] = {}  # a form's URL the lab redirects (a preset) -> where it lands
    reached_by_form: set[Target] = set()
    sections: dict[Target, dict[str, str]] = {}  # a sectioned page's {query key: its part} (attnlab.web.export.axes)
    seeds = [Target("/", (), lang) for lang in langs]
    queue, seen = deque(seeds), set(seeds)
    with TestClient(create_app(), follow_redirects=False) as client:

        def get(target: Target):
            response = client.get(target.url, headers={"accept": "text/html,*/*"})
            while response.status_code == 202:  # a lesson still training its models shows its progress: ask again
                response = client.get(target.url, headers={"accept": "text/html,*/*"})
            if response.status_code != 200 and not (response.is_redirect and target in reached_by_form):
                raise ExportError(
                    f"GET {target.url} answered {response.status_code}, expected 200: {response.text[:200]}"
                )
            return response

        def from_here(found: Target | None, source: Target) -> Target | None:
            """What a link on `source` leads to in the copy: on a sectioned page, only the part it changes."""
            if found is None or found.path != source.path or source not in sections:
                return found
            try:
                return Target(found.path, narrow(found.query, source.query, sections[source]), found.lang)
            except TwoParts as err:
                raise ExportError(f"{source.url}: {err}; the copy renders one part of this page at a time") from None

        def visit(found: Target | None, state: bool = False) -> None:
            if found is None or found in seen or (found.lang and found.lang not in langs):
                return
            if state and not keep_state(found):
                return
            seen.add(found)
            queue.append(found)
            if state:
                reached_by_form.add(found)
            if len(seen) > MAX_FILES:
                raise ExportError(f"more than {MAX_FILES} pages and files are linked; is there a link loop?")

        trained = _train(client, report) if states is not False else None
        while queue:
            target = queue.popleft()
            if progress:
                progress(len(fetched), len(fetched) + len(queue) + 1, target.url)
            response = get(target)
            if response.is_redirect:
                landed = target_of(response.headers["location"], target.path)
                if landed is None:
                    raise ExportError(f"GET {target.url} leaves the lab for {response.headers['location']}")
                moved[target] = landed
                visit(landed, state=True)
                continue
            kind = _kind(response.headers.get("content-type", ""))
            fetched[target] = (kind, response.content)
            if target.path.endswith(".css"):  # the web font fonts.css names, and its licence beside it
                for url in CSS_URL.findall(response.text):
                    font = target_of(url, target.path)
                    visit(font)
                    if font is not None and font.path.startswith("/static/fonts/"):
                        visit(target_of("/static/fonts/OFL.txt"))
            if kind != "html":
                continue
            if target.path in SECTIONED:
                sections[target] = parts(response.text)
            for tag, attr, value in references(response.text):
                visit(from_here(target_of(value, target.path), target) if (tag, attr) in FOLLOW else None)
            if states is not False:
                more = page_extras(response.text, target.path, dict(target.query), target.lang, target.url, trained)
                added[target] = more
                for url in more.urls():
                    visit(from_here(target_of(url, target.path), target), state=True)

        # Each page /x in its default state with a JSON API /api/x: that answer, beside the page.
        pages = [tg for tg, (kind, _) in fetched.items() if kind == "html" and not tg.query and tg.path != "/"]
        for i, page in enumerate(pages):
            if progress:
                progress(len(fetched) + i, len(fetched) + len(pages), "/api" + page.path)
            api = Target("/api" + page.path, (), page.lang)
            response = client.get(api.url)
            if response.status_code == 200 and _kind(response.headers.get("content-type", "")) == "json":
                fetched[api] = ("json", response.content)

    files: dict[str, bytes] = {}
    alias = {trained.run: trained.corpus} if trained else {}
    names = {tg: file_for(_aliased(tg, alias), kind, langs) for tg, (kind, _) in fetched.items()}
    names.update({tg: names[landed] for tg, landed in moved.items() if landed in names})
    owners: dict[str, Target] = {}
    for tg, name in names.items():
        if name in owners and tg not in moved and owners[name] not in moved:
            raise ExportError(f"{owners[name].url} and {tg.url} would both be written to {name}")
        owners.setdefault(name, tg)
    for tg, (kind, body) in fetched.items():
        name = names[tg]
        if kind == "html":

            def link(target: Target, name: str = name, tg: Target = tg) -> str | None:
                target = from_here(target, tg)
                return relative(names[target], name) if target in names else None

            body = static_page(body.decode("utf-8"), tg.url, tg.lang, link, added.get(tg)).encode("utf-8")
            report.pages.append(name)
        elif tg.path.startswith("/api/"):
            report.api.append(name)
        else:
            report.assets.append(name)
        files[name] = body
    if progress:
        progress(len(fetched), len(fetched), "done")
    return files, report


def _aliased(target: Target, alias: dict[str, str]) -> Target:
    """The target with a run id named by what it is (run=poem): the id is random, the file name is not."""
    return Target(target.path, tuple((k, alias.get(v, v) if k == "run" else v) for k, v in target.query), target.lang)


def _train(client, report: Report):
    """Train the poem model with the lab's seeded defaults (POST /api/train, as the page does) and wait for
    it: /pipeline's steps ① to ⑥ in the copy show this model."""
    from attnlab.web import runs
    from attnlab.web.export.states import Trained
    from attnlab.web.pages.pipeline import PROMPTS

    corpus = "poem"
    response = client.post("/api/train", json={"corpus": corpus})
    if response.status_code != 202:
        raise ExportError(f"POST /api/train answered {response.status_code}: {response.text[:200]}")
    started = response.json()
    bg = runs.RUNS.get(started["id"])
    bg.wait()
    status = client.get(f"/api/train/{started['id']}").json()
    if status["status"] != "done":
        raise ExportError(f"training the poem model for /pipeline ended {status['status']}: {status['error']}")
    report.trained = Trained(started["id"], corpus, status["settings"]["seed"], status["steps"], PROMPTS[corpus])
    return report.trained


def _langs(langs: Iterable[str]) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(langs))
    if not chosen or any(lang not in LANGS for lang in chosen):
        raise ExportError(f"languages must be some of {', '.join(LANGS)}, got {', '.join(chosen) or 'none'}")
    return tuple(lang for lang in LANGS if lang in chosen)  # Chinese first: it takes the root


# ---- writing it ---------------------------------------------------------------------------------------


def check_destination(dest: str | Path, force: bool = False) -> Path:
    """The folder the site goes to, resolved; refused if it is a file, or holds anything and not `force`."""
    try:
        out = real_path(Path(dest).expanduser())
    except LinkLoop as err:
        raise ExportError(str(err)) from None
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a folder; choose a new or empty folder for the site")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise ExportError(
                f"{out} is not empty; choose a new or empty folder, or pass --force to replace "
                "everything in it with the site"
            )
        cwd = Path.cwd().resolve()
        if out == Path(out.anchor) or out == Path.home().resolve() or out == cwd or out in cwd.parents:
            raise ExportError(
                f"refusing to replace {out} even with --force: it is the root, your home folder, "
                "or holds the current folder; give the site a folder of its own"
            )
    return out


def write_site(dest: str | Path, files: dict[str, bytes], *, force: bool = False) -> Path:
    """Write `files` into `dest` atomically: into a temporary folder beside it, then renamed into place;
    a failure leaves `dest` as it was and no temporary folder behind."""
    out = check_destination(dest, force)
    for name in files:
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise ExportError(f"a site file must be a relative path inside the folder, got {name!r}")
    with atomic_dir(out) as tmp:
        for name, body in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body)
    return out


def export_site(
    dest: str | Path,
    langs: Iterable[str] = LANGS,
    *,
    force: bool = False,
    progress: Progress | None = None,
    states: bool | States = True,
) -> Report:
    """Render the lab (see the module docstring) and write it to `dest` atomically."""
    check_destination(dest, force)  # refuse before the rendering, which takes seconds
    files, report = render_site(langs, progress, states)
    report.dir = write_site(dest, files, force=force)
    return report
