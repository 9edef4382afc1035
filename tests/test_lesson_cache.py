"""Issue 22 item 8: lesson results kept on disk (lessons/common/disk_cache.py), read back to the same API JSON and
page, never trusted when damaged or foreign, safe with two writers; and `attnlab serve`'s background warm-up
(web/warm.py), which gives way to every request and stops when asked. The slow lesson here is held at a gate
(events, not sleeps), so nothing depends on the machine's speed."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from attnlab.lessons.common import disk_cache
from attnlab.lessons.explain import TOPICS, as_dict
from attnlab.lessons.norms import lesson as norms_lesson
from attnlab.train.progress import Cancelled, report
from attnlab.web import budget, lesson_cache, warm, warm_gate
from attnlab.web.app import create_app

pytestmark = pytest.mark.slow  # starts processes

NEVER_S = 120  # a bound on waits for events that come at once on any machine


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A disk cache of this test's own; every result kept, however quick."""
    disk_cache.use(tmp_path / "cache")
    monkeypatch.setattr(lesson_cache, "CACHE_MIN_S", 0.0)
    yield tmp_path / "cache"
    disk_cache.use()


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app()) as c:
        yield c


def forget(topic: str, lang: str, **raw) -> None:
    """Drop one lesson's result from the server's memory (as a restart would), leaving the disk."""
    with lesson_cache._lock:
        lesson_cache._cache.pop(lesson_cache.lesson_key(TOPICS[topic], raw, lang), None)


def stores(monkeypatch) -> threading.Event:
    """Set once a result has been written to disk (after its requests were answered)."""
    done, real = threading.Event(), disk_cache.store
    monkeypatch.setattr(disk_cache, "store", lambda *a: (real(*a), done.set())[0])
    return done


def refuse_to_compute(monkeypatch) -> list:
    """The norms lesson, counting its runs."""
    runs, real = [], norms_lesson.norms
    monkeypatch.setattr(norms_lesson, "norms", lambda **kw: runs.append(kw) or real(**kw))
    return runs


@dataclass(frozen=True)
class _Inner:
    pair: tuple
    by_id: dict


def test_the_format_holds_what_results_hold_and_reads_back_equal():
    from attnlab.lessons.common.claims import Claim  # a dataclass of attnlab.lessons, as every result is

    claim = Claim.__new__(Claim)
    for f in Claim.__dataclass_fields__:
        object.__setattr__(claim, f, None)
    value = {
        "list": [1, 2.5, -0.0, None, True, "字"],
        "tuple": (1, (2, 3)),
        3: "int key",
        "nan": math.nan,
        "inf": [math.inf, -math.inf],
        "claims": [claim],
    }
    back = disk_cache.decode(json.loads(disk_cache.dumps(value)))
    assert back[3] == "int key" and back["tuple"] == (1, (2, 3)) and type(back["claims"][0]) is Claim
    assert math.isnan(back["nan"]) and back["inf"] == [math.inf, -math.inf] and back["list"] == value["list"]
    with pytest.raises(disk_cache.Unstorable):  # a class outside attnlab.lessons is not stored
        disk_cache.dumps(_Inner((1,), {}))


def test_a_stored_result_gives_the_same_api_json_and_page(client, cache, monkeypatch):
    params = {"seed": 2201, "lang": "en"}
    stored = stores(monkeypatch)
    api, page = client.get("/api/explain/norms", params=params), client.get("/explain/norms", params=params)
    assert api.status_code == page.status_code == 200 and stored.wait(NEVER_S)
    assert list(cache.glob("results/explain-norms/*.json")), "nothing was written"
    forget("norms", "en", seed=2201)
    runs = refuse_to_compute(monkeypatch)
    again = client.get("/api/explain/norms", params=params)
    assert again.status_code == 200 and again.json() == api.json() and not runs  # from disk, not computed
    forget("norms", "en", seed=2201)
    assert client.get("/explain/norms", params=params).text == page.text and not runs


def test_a_lesson_that_trains_is_kept_however_quick_and_one_that_does_not_is_not(client, tmp_path, monkeypatch):
    """A trained lesson's second language comes back at once from the models its first one trained (kept in
    memory), but a fresh process would train them again to compute it: kept on disk whatever its time. A lesson
    that trains nothing is kept only when it took CACHE_MIN_S (here: never)."""
    disk_cache.use(tmp_path / "cache")
    monkeypatch.setattr(lesson_cache, "CACHE_MIN_S", math.inf)
    try:
        quick = {"train_steps": "41"}  # settings no other test asks for: computed here
        assert TOPICS["break"].cost(**quick).trains and not TOPICS["norms"].cost().trains
        for topic, params in (("break", quick), ("norms", {"seed": "2207"})):
            for lang in ("zh", "en"):
                stored = stores(monkeypatch)
                assert client.get(f"/api/explain/{topic}", params={**params, "lang": lang}).status_code == 200
                if topic == "break":
                    assert stored.wait(NEVER_S)
                key = TOPICS[topic].stored_key(lesson_cache.lesson_key(TOPICS[topic], params, lang))
                assert (disk_cache.load(key) is disk_cache.MISS) == (topic == "norms"), (topic, lang)
    finally:
        disk_cache.use()


def test_what_changes_after_the_answer_does_not_redirect_its_write(client, tmp_path, monkeypatch):
    """Whether and where a result is written is settled before its requests are answered: a caller that then
    chooses another folder or keeps everything (as the next test's fixture does) finds no stray file there."""
    import concurrent.futures

    first, later = tmp_path / "first", tmp_path / "later"
    disk_cache.use(first)
    monkeypatch.setattr(lesson_cache, "CACHE_MIN_S", math.inf)  # a quick lesson: not kept

    class Answered(concurrent.futures.Future):
        def set_result(self, result):  # the moment the request has its answer
            lesson_cache.CACHE_MIN_S = 0.0
            disk_cache.use(later)
            super().set_result(result)

    from types import SimpleNamespace

    monkeypatch.setattr(lesson_cache, "concurrent", SimpleNamespace(futures=SimpleNamespace(Future=Answered)))
    try:
        params = {"seed": 2208, "lang": "en"}
        assert client.get("/api/explain/norms", params=params).status_code == 200
        for worker in threading.enumerate():  # its thread has done all it will do, a write included
            if worker.name == "attnlab-lesson-norms":
                worker.join(NEVER_S)
    finally:
        disk_cache.use()
    assert not list(later.glob("results/**/*.json")) and not list(first.glob("results/**/*.json"))


def damage(path, how: str) -> None:
    stored = json.loads(path.read_text(encoding="utf-8"))
    if how == "truncated":
        path.write_text(path.read_text(encoding="utf-8")[:-40], encoding="utf-8")
    elif how == "other JSON":
        path.write_text('{"result": [1, 2, 3]}', encoding="utf-8")
    elif how == "another version":
        stored["key"]["lab"] = "attnlab 0.0.1+0000"
        path.write_text(json.dumps(stored), encoding="utf-8")
    elif how == "a foreign class":  # what pickle would have run: never imported, never called
        stored["result"] = {"c": "subprocess:Popen", "f": {"args": ["false"]}}
        path.write_text(json.dumps(stored), encoding="utf-8")
    elif how == "other fields":
        del stored["result"]["f"][next(iter(stored["result"]["f"]))]
        path.write_text(json.dumps(stored), encoding="utf-8")


@pytest.mark.parametrize("how", ["truncated", "other JSON", "another version", "a foreign class", "other fields"])
def test_a_damaged_or_foreign_file_is_computed_again(client, cache, monkeypatch, how):
    params = {"seed": 2202, "lang": "en"}
    forget("norms", "en", seed=2202)  # the case before kept it in memory
    stored = stores(monkeypatch)
    first = client.get("/api/explain/norms", params=params).json()
    assert stored.wait(NEVER_S)
    stored.clear()
    (path,) = cache.glob("results/explain-norms/*.json")
    damage(path, how)
    key = lesson_cache._on_disk(lesson_cache.lesson_key(TOPICS["norms"], {"seed": 2202}, "en"))
    assert disk_cache.load(key) is disk_cache.MISS
    forget("norms", "en", seed=2202)
    runs = refuse_to_compute(monkeypatch)
    again = client.get("/api/explain/norms", params=params)
    assert again.status_code == 200 and again.json() == first and len(runs) == 1  # computed again, same numbers
    assert stored.wait(NEVER_S)
    # and stored whole again (the run itself: the API adds its claims' nulls, here worked out with no other run)
    assert not TOPICS["norms"].null_settings(disk_cache.load(key), {"seed": 2202})
    assert as_dict(TOPICS["norms"].with_nulls(disk_cache.load(key), {"seed": 2202}, "en", [])) == first


def test_two_writers_at_once_leave_a_whole_file(cache):
    key = disk_cache.make_key("explain", "norms", [("seed", 1)], "en")
    a, b = TOPICS["norms"].run(lang="en", seed=1), TOPICS["norms"].run(lang="en", seed=2)
    wanted = [json.dumps(as_dict(r)) for r in (a, b)]
    start, seen, wrote = threading.Barrier(3), [], []

    def write(result):
        start.wait()
        for _ in range(25):
            wrote.append(disk_cache.store(key, result))

    def read():
        start.wait()
        for _ in range(50):
            got = disk_cache.load(key)
            seen.append(None if got is disk_cache.MISS else json.dumps(as_dict(got)))

    threads = [threading.Thread(target=write, args=(r,)) for r in (a, b)] + [threading.Thread(target=read)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(NEVER_S)
    assert wrote == [True] * 50 and json.dumps(as_dict(disk_cache.load(key))) in wanted
    assert all(s is None or s in wanted for s in seen)  # never a mix or a part
    assert [p.name for p in disk_cache.path_of(key).parent.iterdir()] == [disk_cache.path_of(key).name]  # no leftovers


def test_the_key_changes_with_settings_seed_language_and_version(cache, monkeypatch):
    base = disk_cache.make_key("explain", "norms", [("batch", 8), ("seed", 0)], "zh")
    others = [
        disk_cache.make_key("explain", "norms", [("batch", 9), ("seed", 0)], "zh"),
        disk_cache.make_key("explain", "norms", [("batch", 8), ("seed", 1)], "zh"),
        disk_cache.make_key("explain", "norms", [("batch", 8), ("seed", 0)], "en"),
        disk_cache.make_key("explain", "forms", [("batch", 8), ("seed", 0)], "zh"),
    ]
    result = TOPICS["norms"].run(lang="zh")
    assert disk_cache.store(base, result)
    monkeypatch.setattr(disk_cache, "lab_version", lambda *a: "attnlab 9.9.9+ffff")
    others.append(disk_cache.make_key("explain", "norms", [("batch", 8), ("seed", 0)], "zh"))
    paths = {disk_cache.path_of(k) for k in [base, *others]}
    assert len(paths) == 1 + len(others)
    assert all(disk_cache.load(k) is disk_cache.MISS for k in others)


def test_where_the_cache_lives(tmp_path, monkeypatch):
    disk_cache.use()
    monkeypatch.setenv("ATTNLAB_CACHE", str(tmp_path / "mine"))
    assert disk_cache.folder() == tmp_path / "mine"
    monkeypatch.setenv("ATTNLAB_CACHE", "off")
    assert disk_cache.folder() is None
    monkeypatch.delenv("ATTNLAB_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert disk_cache.folder() == tmp_path / "xdg" / "attnlab"
    disk_cache.use(None)  # attnlab serve --no-cache
    assert disk_cache.folder() is None and disk_cache.store(disk_cache.make_key("x", "y", []), 1) is False
    disk_cache.use()


def test_create_app_does_not_warm(client):
    assert client.get("/api/explain/norms").status_code == 200
    assert not any(t.name == "attnlab-warm" for t in threading.enumerate())


def test_a_paused_warm_lesson_waits_for_the_users_requests(monkeypatch):
    monkeypatch.setitem(warm_gate._users, "in_flight", 1)  # a user's request is running
    progress = warm_gate.WarmProgress(lambda: 0)
    stepped = threading.Event()
    worker = threading.Thread(target=lambda: (progress.update("m", 1, 2), stepped.set()), daemon=True)
    worker.start()
    assert not stepped.wait(0.3)  # it waits while the request runs
    monkeypatch.setitem(warm_gate._users, "in_flight", 0)
    assert stepped.wait(NEVER_S)
    joined = warm_gate.WarmProgress(lambda: 1)  # the request waits for this very lesson: it goes on
    monkeypatch.setitem(warm_gate._users, "in_flight", 1)
    joined.update("m", 1, 2)


def hold_norms(monkeypatch):
    """The norms lesson, held in its training loop until `finish` is set (it reports steps, so it can be
    paused and cancelled); `started` is set once it runs."""
    started, finish, runs, real = threading.Event(), threading.Event(), [], norms_lesson.norms

    def slow(**kw):
        runs.append(kw)
        started.set()
        step = 0
        while not finish.wait(0.005):
            step += 1
            report("held", step, 10**9)
        return real(**kw)

    monkeypatch.setattr(norms_lesson, "norms", slow)
    return started, finish, runs


def test_the_warm_up_gives_way_to_requests_and_stops(cache, monkeypatch):
    app = create_app()
    started, finish, runs = hold_norms(monkeypatch)
    warmer = warm.Warmer(app, paths=["/api/explain/norms?seed=2203&lang=en"])
    monkeypatch.setattr(warm, "QUIET_S", 0.0)
    try:
        warmer.start()
        assert started.wait(NEVER_S)
        with TestClient(app) as client:  # the warm-up holds no user's slot: other lessons answer meanwhile
            assert budget.WARM.used == 1 and budget.HEAVY.used == budget.LIGHT.used == 0
            assert client.get("/api/explain/forms", params={"seed": 2203}).status_code == 200
        warmer.stop()
        assert warmer.done.wait(NEVER_S)
    finally:
        finish.set()
    assert warmer.visited[0][1] != 200 and budget.WARM.used == 0  # stopped, nothing kept
    assert not [k for k in lesson_cache._running if k[0] == "norms"]
    assert (
        disk_cache.load(lesson_cache._on_disk(lesson_cache.lesson_key(TOPICS["norms"], {"seed": 2203}, "en")))
        is disk_cache.MISS
    )


def test_a_request_for_the_lesson_being_warmed_joins_it(cache, monkeypatch):
    app = create_app()
    started, finish, runs = hold_norms(monkeypatch)
    warmer = warm.Warmer(app, paths=["/api/explain/norms?seed=2204&lang=en"])
    monkeypatch.setattr(warm, "QUIET_S", 0.0)
    answers = []
    with TestClient(app) as client:
        try:
            warmer.start()
            assert started.wait(NEVER_S)
            user = threading.Thread(
                target=lambda: answers.append(client.get("/api/explain/norms", params={"seed": 2204, "lang": "en"}))
            )
            user.start()
            while not lesson_cache._waiters.get(lesson_cache.lesson_key(TOPICS["norms"], {"seed": 2204}, "en")):
                assert user.is_alive()  # waiting for the warm-up's computation, not another one
                threading.Event().wait(0.01)
        finally:
            finish.set()
        user.join(NEVER_S)
        assert warmer.done.wait(NEVER_S)
    assert answers[0].status_code == 200 and len(runs) == 1 and warmer.visited == [(warmer.paths[0], 200)]


def test_a_figure_is_kept_whole_or_not_at_all(cache):
    key = disk_cache.make_key("figure", "norms", [("seed", 0)], "en", views=True)
    png = disk_cache.PNG + b"\x00 drawn"
    assert disk_cache.store_png(key, png) and disk_cache.load_png(key) == png
    path = disk_cache.path_of(key)
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["result"] = disk_cache.encode({"png": "bm90IGEgUE5H"})  # base64 of "not a PNG"
    path.write_text(json.dumps(stored), encoding="utf-8")
    assert disk_cache.load_png(key) is None


def test_a_request_after_everyone_left_computes_afresh_instead_of_joining_the_stopping_one(cache, monkeypatch):
    # issue 37 (schemathesis, ST101): the last request waiting for a lesson left, so the lesson was told to stop;
    # one more request, come before it had stopped, joined it and got 503 "nobody waits for this computation"
    started, gate, runs, real = threading.Event(), threading.Event(), [], norms_lesson.norms

    def held(**kw):
        runs.append(kw)
        if len(runs) == 1:
            started.set()
            gate.wait(NEVER_S)
            report("held", 1, 1)  # where the first computation finds out it was stopped
        return real(**kw)

    monkeypatch.setattr(norms_lesson, "norms", held)
    topic, raw = TOPICS["norms"], {"seed": 2205}
    key = lesson_cache.lesson_key(topic, raw, "en")
    outcomes = {}

    def ask(who):
        try:
            outcomes[who] = asyncio.run(lesson_cache.lesson(topic, dict(raw), "en"))
        except Exception as err:  # noqa: BLE001 - the outcome under test
            outcomes[who] = err

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    assert started.wait(NEVER_S)
    lesson_cache._leave(key)  # its only request has gone: the computation is told to stop

    class Watched(dict):
        looked = threading.Event()

        def get(self, *args):
            Watched.looked.set()
            return super().get(*args)

    with lesson_cache._lock:
        monkeypatch.setattr(lesson_cache, "_running", Watched(lesson_cache._running))
    second = threading.Thread(target=ask, args=("second",))
    second.start()
    assert Watched.looked.wait(NEVER_S)  # the second request has seen the stopping computation
    gate.set()
    first.join(NEVER_S)
    second.join(NEVER_S)
    assert isinstance(outcomes["first"], Cancelled)
    assert not isinstance(outcomes["second"], BaseException), outcomes["second"]
    assert outcomes["second"].params["seed"] == 2205 and len(runs) == 2  # computed again, from the start
