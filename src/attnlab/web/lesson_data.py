"""A lesson's corpus from the lab's data folder, chosen by name: `?data=NAME` on a topic's page and API.

The web never takes a path (a cli_only parameter would read the server's files), but a lesson whose corpus
parameter is marked `from_data` may read a file of `attnlab serve --data DIR`: the page offers them by name
(web/sweeps.py lists that folder: regular .txt / .json files whose links stay inside it), and the name becomes
the path here, after the request's own values were checked. word2vec needs this: its analogies have no chance
on the built-in 静夜思."""

from __future__ import annotations

from pathlib import Path

from attnlab.i18n import t
from attnlab.io import safe_read
from attnlab.lessons.common.params import ParamError, refuse_cli_only
from attnlab.web import sweeps

DATA = "data"  # the query parameter


def data_dir(request) -> Path | None:
    return getattr(request.app.state, "data_dir", None) if request is not None else None


def _param(topic):
    return next((p for p in topic.params if p.from_data), None)


def offered(topic, folder: Path | None) -> list[str]:
    """The files of the data folder this topic can read, by name ([] for a topic that reads none)."""
    if _param(topic) is None:
        return []
    return [name for name in sweeps.corpora(folder) if (folder / name).resolve().is_file()]


def resolved(topic, raw: dict, folder: Path | None) -> dict:
    """The lesson's values: the request's own (a path refused, as everywhere on the web), with `data=NAME`
    replaced by that file's path. ParamError naming `data` for a name the folder does not offer."""
    name = str(raw.get(DATA, "")).strip()
    values = {k: v for k, v in raw.items() if k != DATA}
    refuse_cli_only(topic.params, values)
    if not name:
        return values
    if name not in offered(topic, folder):
        names = ", ".join(offered(topic, folder)) or "none: start the lab with attnlab serve --data DIR"
        raise ParamError(
            f"data names a corpus of this lab's data folder; {name[:40]!r} is not one (offered: {names})",
            DATA,
            "explain.error.data",
            corpus=name[:40],
        )
    try:
        path = safe_read.inside(folder / name, folder)
    except (safe_read.ReadRefused, OSError):  # changed since it was listed
        raise ParamError(
            f"data: {name[:40]!r} can no longer be read", DATA, "explain.error.data", corpus=name[:40]
        ) from None
    return {**values, _param(topic).name: str(path)}


def as_query(topic, values: dict, raw: dict) -> dict:
    """Lesson values as the web spells them again: a corpus read from the data folder by its name."""
    param = _param(topic)
    if param is None or not str(raw.get(DATA, "")).strip():
        return values
    return {**{k: v for k, v in values.items() if k != param.name}, DATA: raw[DATA]}


def control(topic, raw: dict, lang: str, folder: Path | None) -> list[dict]:
    """The form's choice of a data folder file ([] where there is none to offer): '' is the built-in text."""
    names = offered(topic, folder)
    if not names:
        return []
    return [
        {
            "name": DATA,
            "control": "data",
            "choices": ["", *names],
            "value": str(raw.get(DATA, "")),
            "label": t("explain.param.data", lang),
            "note": t("explain.param.data.note", lang),
            "hidden": False,
            "min": None,
            "max": None,
        }
    ]
