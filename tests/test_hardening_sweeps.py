"""The sweep reader and the data folder read files as the checkpoint reader does (attnlab.io.safe_read): a FIFO
named scale.json never blocks /scale, a deeply nested or huge one is refused with a sentence (never a 500 or a
RecursionError), a link out of the folder is neither listed nor read, and a save's hidden leftover is no sweep."""

from __future__ import annotations

import json
import os
import threading

import pytest
from fastapi.testclient import TestClient

from attnlab.io import safe_read
from attnlab.lessons.common.params import ParamError
from attnlab.lessons.scale.lesson import read_sweep
from attnlab.web import sweeps
from attnlab.web.app import create_app

SCALE_JSON = {"corpus": "poems", "runs": [], "fit": {"shown": False, "reason": "few"}, "optimum": []}
PATIENCE_S = 300.0  # how long a listing may take before the test calls it blocked (it takes milliseconds)


@pytest.fixture
def folders(tmp_path):
    data, runs = tmp_path / "data", tmp_path / "runs"
    data.mkdir()
    (runs / "good").mkdir(parents=True)
    (runs / "good" / "scale.json").write_text(json.dumps(SCALE_JSON), encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "scale.json").write_text(json.dumps(SCALE_JSON), encoding="utf-8")
    (outside / "secret.txt").write_text("not a corpus of this lab " * 20, encoding="utf-8")
    return data, runs, outside


def listed(client) -> list[str]:
    return [s["name"] for s in client.get("/api/scale/sweeps").json()["finished"]]


def not_blocked(call, fifo):
    """call()'s answer; if it is still waiting after PATIENCE_S (blocked on the FIFO), the FIFO is opened for
    writing to free it and the test fails: a reader that blocks would otherwise hang the suite."""
    answer = {}

    def run():
        try:
            answer["got"] = call()
        except Exception as err:  # noqa: BLE001 - raised again in the test's thread
            answer["error"] = err

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(PATIENCE_S)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the blocked open returns, then reads nothing
        worker.join()
        pytest.fail(f"blocked on the FIFO {fifo}")
    if "error" in answer:
        raise answer["error"]
    return answer["got"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_named_scale_json_blocks_nothing(folders):
    data, runs, _ = folders
    (runs / "trap").mkdir()
    fifo = runs / "trap" / "scale.json"
    os.mkfifo(fifo)
    with TestClient(create_app(runs_dir=runs, data_dir=data)) as client:
        for _ in range(3):
            assert not_blocked(lambda: listed(client), fifo) == ["good"]
            page = not_blocked(lambda: client.get("/scale"), fifo)
            assert page.status_code == 200
            assert not_blocked(lambda: client.get("/scale?sweep=trap"), fifo).status_code == 404
    with pytest.raises(ParamError, match="not a regular file"):
        not_blocked(lambda: read_sweep(str(fifo)), fifo)


def test_a_deeply_nested_scale_json_is_refused_with_a_sentence(folders):
    data, runs, _ = folders
    (runs / "deep").mkdir()
    (runs / "deep" / "scale.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with TestClient(create_app(runs_dir=runs, data_dir=data)) as client:
        assert listed(client) == ["good"]
        assert client.get("/scale").status_code == 200
        assert client.get("/scale?sweep=deep").status_code == 404
    with pytest.raises(ParamError, match="nests deeper than"):
        read_sweep(str(runs / "deep"))


def test_a_huge_scale_json_is_refused_before_it_is_read(folders, monkeypatch):
    _, runs, _ = folders
    monkeypatch.setitem(safe_read.LIMITS, "scale.json", 1000)  # the real bound is 16 MiB; the same code path
    (runs / "huge").mkdir()
    (runs / "huge" / "scale.json").write_text(json.dumps({**SCALE_JSON, "pad": "x" * 2000}), encoding="utf-8")
    assert [s["name"] for s in sweeps.finished(runs)] == ["good"]
    with pytest.raises(ParamError, match="bigger than"):
        read_sweep(str(runs / "huge"))
    with pytest.raises(ParamError, match="not a regular file"):
        read_sweep("/dev/zero")  # a device: refused, never read until memory runs out


def test_links_out_of_the_folders_are_not_offered_nor_read(folders):
    data, runs, outside = folders
    (runs / "linked").symlink_to(outside, target_is_directory=True)
    (runs / "half").mkdir()
    (runs / "half" / "scale.json").symlink_to(outside / "scale.json")
    (data / "system.txt").symlink_to(outside / "secret.txt")
    (data / "inside.txt").write_text("床前明月光" * 20, encoding="utf-8")
    (data / "alias.txt").symlink_to(data / "inside.txt")  # a link that stays inside is followed
    (data / "loop.txt").symlink_to(data / "loop.txt")
    if hasattr(os, "mkfifo"):
        os.mkfifo(data / "pipe.txt")
    assert sweeps.corpora(data) == ["alias.txt", "inside.txt"]
    assert [s["name"] for s in sweeps.finished(runs)] == ["good"]
    with pytest.raises(sweeps.NotFound):
        sweeps.corpus_path(data, "system.txt")


def test_a_hidden_leftover_of_a_save_is_no_sweep(folders):
    _, runs, _ = folders
    (runs / ".good.old").mkdir()
    (runs / ".good.old" / "scale.json").write_text(json.dumps(SCALE_JSON), encoding="utf-8")
    assert [s["name"] for s in sweeps.finished(runs)] == ["good"]


def test_a_scale_json_of_another_shape_is_left_out(folders):
    _, runs, _ = folders
    for name, body in {"num": {"runs": 3}, "fit": {"runs": [], "fit": 7}, "list": [1, 2]}.items():
        (runs / name).mkdir()
        (runs / name / "scale.json").write_text(json.dumps(body), encoding="utf-8")
    assert [s["name"] for s in sweeps.finished(runs)] == ["fit", "good"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_or_a_device_given_as_a_corpus_is_refused_not_waited_on(tmp_path):
    from attnlab.text.corpus import read_corpus

    for name in ("pipe.txt", "pipe.json"):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        with pytest.raises(ValueError, match="not a regular file"):
            not_blocked(lambda fifo=fifo: read_corpus(fifo), fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        read_corpus("/dev/zero")
