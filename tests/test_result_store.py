"""The suite's shared result store (tests/conftest.py) and what it stands on: Topic.remembered computes a result
once and reads it back after, a second caller waits for the first's computation instead of making its own, and a
test that patches never reads or leaves a stored result."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from attnlab.lessons.common import disk_cache
from attnlab.lessons.explain import TOPICS, as_dict


def test_the_run_shares_one_store_folder():
    assert disk_cache.folder() == Path(os.environ["ATTNLAB_TEST_STORE"])  # inherited by workers and processes
    assert os.environ["ATTNLAB_CACHE"] == os.environ["ATTNLAB_TEST_STORE"]


def test_a_test_that_patches_runs_with_the_store_off(monkeypatch):
    assert disk_cache.folder() is None


def test_remembered_computes_once_then_reads_back(tmp_path, monkeypatch):
    topic = TOPICS["norms"]
    calls = []
    real = topic.piece("lesson").norms

    def counted(**kw):
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(topic.piece("lesson"), "norms", counted)
    with disk_cache.using(tmp_path):
        first = topic.remembered(lang="en", seed=7)
        again = topic.remembered(lang="en", seed=7)
        other = topic.remembered(lang="zh", seed=7)  # the language is part of the key
    assert len(calls) == 2 and as_dict(first) == as_dict(again) and as_dict(other) != as_dict(first)
    assert list((tmp_path / "results").glob("explain-norms/*.json"))


def test_remembered_never_keeps_a_result_read_from_a_file(tmp_path, monkeypatch):
    """A file's path is in the key, its content is not: such a result is computed every time."""
    topic = TOPICS["one-hot"]
    corpus = tmp_path / "c.txt"
    corpus.write_text("床前明月光，疑是地上霜。" * 4, encoding="utf-8")
    with disk_cache.using(tmp_path / "cache"):
        topic.remembered(lang="en", corpus=str(corpus), train_steps=2, d_model=8, chars="月光")
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_a_second_caller_waits_for_the_first_computation(tmp_path):
    key = disk_cache.make_key("explain", "norms", [("seed", 1)], "en")
    inside, release, second_in = threading.Event(), threading.Event(), threading.Event()
    order = []

    def first():
        with disk_cache.computing(key):
            order.append("first in")
            inside.set()
            release.wait()
            order.append("first out")

    def second():
        inside.wait()
        with disk_cache.computing(key):
            order.append("second in")
            second_in.set()

    with disk_cache.using(tmp_path):
        a, b = threading.Thread(target=first), threading.Thread(target=second)
        a.start()
        b.start()
        inside.wait()
        assert not second_in.is_set()  # the lock is held: the second is still outside
        release.set()
        a.join()
        b.join()
    assert order == ["first in", "first out", "second in"]
