"""word2vec's page offers the corpora of `attnlab serve --data DIR` by name (issue 36, item 6): its analogies
have no chance on the built-in 静夜思 (24 characters), and the web never takes a path. web/lesson_data.py turns
`data=NAME` into the file's path after the request's own values were checked."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from attnlab.i18n import t
from attnlab.lessons.common import disk_cache
from attnlab.lessons.explain import get_topic
from attnlab.web.app import create_app

# Four quatrains typed from memory (public domain), enough characters for the plumbing, not for analogies.
POEMS = [
    "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",
    "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。",
    "红豆生南国，春来发几枝。愿君多采撷，此物最相思。",
    "床前明月光，疑是地上霜。举头望明月，低头思故乡。",
]
SMALL = {"train_steps": "50", "gpt_steps": "20", "top_k": "3", "chars": "春月", "lang": "en"}


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "poems.txt").write_text("\n".join(POEMS), encoding="utf-8")
    (folder / "folder").mkdir()  # a chinese-poetry folder: /scale's, not a file word2vec reads
    (folder / ".hidden.txt").write_text("床前", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("\n".join(POEMS), encoding="utf-8")
    (folder / "link.txt").symlink_to(tmp_path / "outside.txt")  # leads out of the folder: never offered
    return folder


def options(page: str) -> list[str]:
    select = re.search(r'<select id="p-data" name="data">(.*?)</select>', page, re.S)
    return re.findall(r'<option value="([^"]*)"', select.group(1)) if select else []


def test_the_form_offers_the_folders_files_and_only_with_a_data_folder(data):
    with TestClient(create_app(data_dir=data)) as client:
        page = client.get("/explain/word2vec", params={"lang": "en"}).text
        assert options(page) == ["", "poems.txt"]
        assert t("explain.data.builtin", "en") in page and t("explain.param.data", "en") in page
        assert options(client.get("/explain/one-hot", params={"lang": "en"}).text) == []  # reads no data corpus
    with TestClient(create_app()) as client:
        assert options(client.get("/explain/word2vec", params={"lang": "en"}).text) == []


def test_a_corpus_chosen_by_name_is_the_file_the_lesson_reads(data, monkeypatch):
    stored = []
    monkeypatch.setattr(disk_cache, "store", lambda key, result, *where: stored.append(repr(key)))
    with TestClient(create_app(data_dir=data)) as client:
        answer = client.get("/api/explain/word2vec", params={**SMALL, "data": "poems.txt"})
        assert answer.status_code == 200, answer.text
        got = answer.json()
        page = client.get("/explain/word2vec", params={**SMALL, "data": "poems.txt"}).text
        progress = client.get("/api/explain/word2vec/progress", params={**SMALL, "data": "poems.txt"}).json()
    settings = {k: v for k, v in SMALL.items() if k != "lang"}
    direct = get_topic("word2vec").run(lang="en", corpus=str(data / "poems.txt"), **settings)
    assert got["corpus"] == direct.corpus == "poems.txt"
    assert got["n_chars"] == direct.n_chars > 4 * len(POEMS[0]) - 4 and got["vocab_size"] == direct.vocab_size
    assert got["loss_last"] == pytest.approx(direct.loss_last, rel=1e-9)
    assert [q["char"] for q in got["queries"]] == ["春", "月"]
    assert all(c["null"] is None or c["null"]["measured"] is not None for c in got["claims"])  # its nulls ran too
    assert t("explain.word2vec.note.small", "en", n_chars=24) not in got["note"]  # not the built-in text
    assert '<option value="poems.txt" selected>' in page and ">poems.txt</b>" in page
    assert progress["status"] in ("done", "idle")
    assert not [k for k in stored if "poems.txt" in k]  # a file's result is never kept on disk: the file may change


@pytest.mark.parametrize(
    ("topic", "params", "name"),
    [
        ("word2vec", {"data": "missing.txt"}, "data"),
        ("word2vec", {"data": "../outside.txt"}, "data"),
        ("word2vec", {"data": "link.txt"}, "data"),
        ("word2vec", {"data": "folder"}, "data"),
        ("word2vec", {"corpus": "poems.txt"}, "corpus"),  # a path is still for the CLI only
        ("one-hot", {"data": "poems.txt"}, "data"),  # a topic whose corpus is not offered
    ],
)
def test_anything_else_is_refused_in_one_line_naming_it(data, topic, params, name):
    with TestClient(create_app(data_dir=data)) as client:
        answer = client.get(f"/api/explain/{topic}", params={**params, "lang": "en"})
        page = client.get(f"/explain/{topic}", params={**params, "lang": "en"})
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["query", name], answer.text
    assert page.status_code == 422 and 'id="explain-error"' in page.text


def test_without_a_data_folder_a_name_is_refused(data):
    with TestClient(create_app()) as client:
        answer = client.get("/api/explain/word2vec", params={"data": "poems.txt", "lang": "en"})
    assert answer.status_code == 422 and "serve --data" in answer.json()["detail"][0]["msg"]


def test_the_default_page_says_why_its_text_is_too_small():
    from results import result

    for lang in ("zh", "en"):
        r = result("word2vec", lang, **get_topic("word2vec").quick)
        assert r.corpus == "静夜思" and r.note.endswith(t("explain.word2vec.note.small", lang, n_chars=r.n_chars))
