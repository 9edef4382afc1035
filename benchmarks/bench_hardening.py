"""Benchmark (not a test): does the lab stay responsive and bounded while people try to overload it?

    python benchmarks/bench_hardening.py [--seconds 20] [--burst 45]
    python benchmarks/bench_hardening.py --gets [--concurrent 32] [--src OTHER_CHECKOUT/src]

With --gets: waves of `--concurrent` simultaneous hostile GETs of every kind that builds or trains a model (the
pipeline page and its first-step API at their largest model with distinct seeds, heavy lessons with distinct
seeds from the lab's own page and from another site, a figure at its largest, clients that hang up on a lesson
that trains for minutes, and every topic at its heaviest accepted settings, tests/cost_peaks.py), one kind after
another, while a separate process keeps asking GET /api/toy. `--src` serves another checkout's lab with the same
requests (a before and after). Prints each
kind's statuses, the /api/toy p95 during the waves, and the lab process's memory: fresh, idle (after one request of
each kind, alone: imports and the pretrained model are loaded once and kept), peak, and after the waves.

Without:
it starts the lab (`attnlab.web.server.background()`) in a child process on a free 127.0.0.1 port, then for
`--seconds`: every second a burst of `--burst` concurrent no-JS form posts (`corpus=poem&steps=60`, the
issue's reproducer) plus a few API training requests and hostile ones (a 2 MB body, a lone surrogate, a
foreign Host, a cross-site Origin), while a separate client process keeps asking GET /api/toy and a static
file, one request after another.
Prints the number of requests, the 5xx count, p50/p95 of /api/toy during the load, the longest a cheap
request waited, how training requests were answered, and the lab process's resident memory (start, peak).
Everything stays on loopback and stops by itself (bounded by time and by request count).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
CHILD = """
import sys
from attnlab.web.server import background
from attnlab.train.background import wait_all
from attnlab.web.runs import RUNS
with background() as url:
    print(url, flush=True)
    sys.stdin.read()  # serve until the benchmark closes this pipe
wait_all(RUNS)  # stop the runs still training before the interpreter exits under them
"""
FORM = "application/x-www-form-urlencoded"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def request(
    url: str, data: bytes | None = None, headers: dict | None = None, method: str | None = None, timeout: float = 60
):
    """(status, seconds); status 0 when the connection itself failed or the client gave up after `timeout`."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    start = time.perf_counter()
    try:
        with OPENER.open(req, timeout=timeout) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as err:
        err.read()
        status = err.code
    except OSError:
        status = 0
    return status, time.perf_counter() - start


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak resident set) of a process, in KiB (Linux /proc)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def probe(base: str) -> None:
    """GET /api/toy and a static file, one after another each, until stdin closes; prints [kind, status, s]."""
    found, stop = [], threading.Event()

    def loop(kind: str, path: str) -> None:
        while not stop.is_set():
            found.append((kind, *request(base + path)))

    threads = [
        threading.Thread(target=loop, args=("GET /api/toy", "/api/toy")),
        threading.Thread(target=loop, args=("GET static", "/static/lab.css")),
    ]
    for th in threads:
        th.start()
    sys.stdin.read()
    stop.set()
    for th in threads:
        th.join()
    print(json.dumps(found))


CROSS = {"Sec-Fetch-Site": "cross-site"}
OWN = {"Sec-Fetch-Site": "same-origin"}
BIG = "layers=8&heads=8&d_model=256"
# (kind, path with {i} for a distinct seed, headers, client timeout in s): what a hostile page or a careless script
# can make the lab compute with GETs alone.
GETS = [
    ("first-step, largest model", "/api/pipeline/first-step?" + BIG + "&seed={i}", {}, 120),
    ("/pipeline, largest model", "/pipeline?" + BIG + "&seed={i}", {}, 120),
    ("mlm at its largest, from another site", "/api/explain/mlm?steps=1000&d_model=128&seed={i}", CROSS, 120),
    ("mlm figure, from another site (<img>)", "/explain/mlm/figure.png?steps=1000&seed={i}", CROSS, 120),
    ("sqrt-dk near its memory limit", "/api/explain/sqrt-dk?n_keys=256&d_k=1024&n_samples=100&seed={i}", OWN, 120),
    ("multihead, distinct seeds", "/api/explain/multihead?seed={i}", OWN, 120),
    (
        "positional figure at its largest",
        "/explain/positional/figure.png?n_positions=512&d_model=512&n_check=100000",
        OWN,
        120,
    ),
    ("/real, distinct sentences", "/real?text=the+cat+{i}+sat+on+the+mat+because+it+was+tired&layer=3&head=5", {}, 120),
    ("mlm, client hangs up after 3 s", "/api/explain/mlm?steps=1000&seed={i}", OWN, 3),
]


def topic_gets() -> list[tuple[str, str, dict, float]]:
    """Every topic at its heaviest accepted settings (tests/cost_peaks.py: sizes at their largest, time parameters
    small), distinct seeds where it has one: what a script can ask of each lesson with GETs alone."""
    from urllib.parse import urlencode

    sys.path.insert(0, str(SRC.parent / "tests"))
    from cost_peaks import heaviest

    from attnlab.lessons.explain import TOPICS

    gets = []
    for name, topic in TOPICS.items():
        settings = {k: v for k, v in heaviest(topic).items() if k != "seed"}
        seeded = "&seed={i}" if any(p.name == "seed" for p in topic.params) else ""
        query = urlencode({k: str(v).lower() if isinstance(v, bool) else v for k, v in settings.items()})
        gets.append((f"{name} at its heaviest", f"/api/explain/{name}?{query}{seeded}", OWN, 300))
    return gets


def hostile_gets(base: str, pid: int, concurrent: int) -> None:
    settle = lambda: time.sleep(3)  # noqa: E731 - let computations stop and memory be given back
    fresh = memory_kib(pid)["VmRSS"]
    gets = GETS + topic_gets()
    for _kind, path, headers, timeout in gets:  # warm: each kind once, alone (imports, the pretrained model)
        if headers is not CROSS and timeout > 3:
            request(base + path.format(i=0), headers=headers, timeout=300)
    settle()
    idle = memory_kib(pid)["VmRSS"]
    prober = subprocess.Popen(
        [sys.executable, __file__, "--probe", base], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    rows = []
    with ThreadPoolExecutor(concurrent) as pool:
        for kind, path, headers, timeout in gets:
            start = time.monotonic()
            outcomes = list(
                pool.map(
                    lambda i: request(base + path.format(i=1000 + i), headers=headers, timeout=timeout),
                    range(concurrent),
                )
            )
            rows.append((kind, Counter(status for status, _ in outcomes), time.monotonic() - start))
    probed, _ = prober.communicate(timeout=120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and request(f"{base}/api/toy")[0] != 200:  # noqa: PLR2004
        time.sleep(0.5)
    settle()
    after = memory_kib(pid)
    toy = [seconds for kind, status, seconds in json.loads(probed) if kind == "GET /api/toy"]
    print(f"{concurrent} concurrent GETs of each kind (status 0 = the client gave up):")
    for kind, statuses, seconds in rows:
        print(f"  {kind}: {dict(sorted(statuses.items()))} in {seconds:.0f} s")
    print(
        f"GET /api/toy during the waves: n={len(toy)}  p50={statistics.median(toy) * 1000:.1f} ms  "
        f"p95={percentile(toy, 0.95) * 1000:.1f} ms  (target < 200 ms)"
    )
    print(
        f"lab process memory: fresh {fresh / 1024:.0f} MiB, idle after one request of each kind {idle / 1024:.0f} MiB, peak {after['VmHWM'] / 1024:.0f} MiB (VmHWM; target "
        f"< 1536), after the waves {after['VmRSS'] / 1024:.0f} MiB ({(after['VmRSS'] - idle) / 1024:+.0f} MiB; "
        "target within 200 of idle)"
    )


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        probe(sys.argv[2])
        return
    if "--gets" in sys.argv:
        concurrent = int(sys.argv[sys.argv.index("--concurrent") + 1]) if "--concurrent" in sys.argv else 32
        lab_src = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv else str(SRC)  # another checkout's
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [lab_src, os.environ.get("PYTHONPATH")]))}
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        try:
            base = child.stdout.readline().strip()
            request(f"{base}/api/toy")
            hostile_gets(base, child.pid, concurrent)
        finally:
            child.stdin.close()
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the load lasts")
    parser.add_argument("--burst", type=int, default=45, help="concurrent form posts each second")
    parser.add_argument("--max-requests", type=int, default=5000, help="stop the load after this many requests")
    args = parser.parse_args()

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
    prober = None
    try:
        base = child.stdout.readline().strip()
        if not base.startswith("http://127.0.0.1:"):
            raise SystemExit(f"the lab did not start (got {base!r})")
        request(f"{base}/api/toy")  # warm up imports and the first page
        idle = [request(f"{base}/api/toy")[1] for _ in range(20)]  # how fast this machine is without the load
        start_mem = memory_kib(child.pid)
        results: list[tuple[str, int, float]] = []  # (kind, status, seconds)
        lock, stop = threading.Lock(), threading.Event()

        def record(kind: str, outcome: tuple[int, float]) -> None:
            with lock:
                results.append((kind, *outcome))
                if len(results) >= args.max_requests:
                    stop.set()

        json_type = {"content-type": "application/json"}
        hostile = [  # (what, path, data, headers)
            ("hostile 2 MB body", "/api/train", b"x" * (2 << 20), json_type),
            ("hostile surrogate", "/api/train", b'{"corpus": "\\ud800"}', json_type),
            (
                "hostile cross-site form",
                "/pipeline/train",
                b"corpus=poem&steps=60",
                {"content-type": FORM, "origin": "http://evil.example"},
            ),
            ("hostile Host", "/api/toy", None, {"host": "evil.example"}),
        ]
        # The cheap requests come from a process of their own, so that this one's 50 threads do not delay them.
        prober = subprocess.Popen(
            [sys.executable, __file__, "--probe", base], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        with ThreadPoolExecutor(args.burst + 16) as pool:
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline and not stop.is_set():
                started = time.monotonic()
                jobs = [
                    pool.submit(
                        lambda: record(
                            "POST /pipeline/train (form)",
                            request(f"{base}/pipeline/train", b"corpus=poem&steps=60", {"content-type": FORM}),
                        )
                    )
                    for _ in range(args.burst)
                ]
                jobs += [
                    pool.submit(
                        lambda: record(
                            "POST /api/train",
                            request(f"{base}/api/train", b'{"corpus": "poem", "steps": 60}', json_type),
                        )
                    )
                    for _ in range(5)
                ]
                jobs += [pool.submit(lambda h=h: record(h[0], request(base + h[1], h[2], h[3]))) for h in hostile]
                for job in jobs:
                    job.result()
                time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        probed, _ = prober.communicate(timeout=120)  # closing its stdin ends the probe
        results += [(kind, status, seconds) for kind, status, seconds in json.loads(probed)]
        end_mem = memory_kib(child.pid)
    finally:
        if prober is not None and prober.poll() is None:
            prober.kill()
        child.stdin.close()
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    statuses = Counter(status for _, status, _ in results)
    toy = [s for kind, status, s in results if kind == "GET /api/toy"]
    cheap = [s for kind, status, s in results if kind in ("GET /api/toy", "GET static")]
    print(f"requests: {len(results)} in {args.seconds:.0f} s (bursts of {args.burst} form posts a second)")
    print(
        f"5xx errors: {sum(n for code, n in statuses.items() if code >= 500)}   "
        f"failed connections: {statuses.get(0, 0)}   statuses: {dict(sorted(statuses.items()))}"
    )
    print(f"GET /api/toy before the load: p50={statistics.median(idle) * 1000:.1f} ms  max={max(idle) * 1000:.1f} ms")
    print(
        f"GET /api/toy during the load: n={len(toy)}  p50={statistics.median(toy) * 1000:.1f} ms  "
        f"p95={percentile(toy, 0.95) * 1000:.1f} ms"
    )
    print(f"longest stall of a cheap request (/api/toy, a static file): {max(cheap) * 1000:.0f} ms")
    by_kind: dict[str, Counter] = {}
    times: dict[str, list[float]] = {}
    for kind, status, seconds in results:
        by_kind.setdefault(kind, Counter())[status] += 1
        times.setdefault(kind, []).append(seconds)
    for kind in sorted(by_kind):
        if kind.startswith("GET"):
            continue
        print(f"  {kind}: {dict(sorted(by_kind[kind].items()))}  p95 {percentile(times[kind], 0.95) * 1000:.0f} ms")
    print(
        f"lab process memory: {start_mem['VmRSS'] / 1024:.0f} MiB before the load, "
        f"peak {end_mem['VmHWM'] / 1024:.0f} MiB (VmHWM), {end_mem['VmRSS'] / 1024:.0f} MiB at the end"
    )


if __name__ == "__main__":
    main()
