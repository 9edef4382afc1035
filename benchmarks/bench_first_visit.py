"""Benchmark (not a test): each page's first visit in a fresh `attnlab serve`, with an empty lesson cache and
with the disk cache that run left (issue 22: after the lab has run once, every default page under 2 s; /real
under 5 s in a fresh process).

    python benchmarks/bench_first_visit.py [--lang zh] [--pages /real /explain/multihead ...] [--figures]

Two servers are started one after the other, each a fresh process with the warm-up off (`--no-warm`: the
times are those of a visitor who comes before the warm-up got there), on one temporary cache folder: the
first finds it empty, the second finds what the first computed. A page that answers 202 (a lesson still
training) is asked again until it answers 200, as the page itself does; the time is until then. The time
from starting the process to its first answer is printed apart. Prints times and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

BASE_PAGES = ("/real", "/", "/toy", "/pipeline", "/explain", "/ledger", "/runs")
WAIT_S = 900  # the longest a page may take


def pages(figures: bool) -> list[str]:
    from attnlab.lessons.explain import TOPICS

    out = list(BASE_PAGES)
    for topic in TOPICS:
        out.append(f"/explain/{topic}")
        if figures:
            out.append(f"/explain/{topic}/figure.png")
    return out


def start_lab(cache: Path) -> tuple[subprocess.Popen, str, float]:
    """A fresh `attnlab serve --port 0 --no-warm` on `cache`: (process, base URL, seconds until it answers)."""
    t0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnlab", "serve", "--port", "0", "--no-warm", "--cache", str(cache)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    url = None
    for line in proc.stdout:
        if "http://" in line:
            url = line[line.index("http://") :].split()[0].rstrip("/")
            break
    if url is None:
        raise RuntimeError("the lab did not start: " + proc.stdout.read())
    while True:
        try:
            urllib.request.urlopen(url + "/favicon.ico", timeout=30).read()
            break
        except OSError:
            time.sleep(0.05)
    return proc, url, time.perf_counter() - t0


def first_visit(url: str, path: str, lang: str) -> tuple[float, int]:
    """(seconds until the page answered 200, or gave up; the last status)."""
    sep = "&" if "?" in path else "?"
    full = f"{url}{path}{sep}lang={lang}"
    t0 = time.perf_counter()
    while True:
        try:
            with urllib.request.urlopen(
                urllib.request.Request(full, headers={"Accept": "text/html"}), timeout=WAIT_S
            ) as r:
                r.read()
                status = r.status
        except urllib.error.HTTPError as err:
            status = err.code
        if status != 202 and status != 503 or time.perf_counter() - t0 > WAIT_S:
            return time.perf_counter() - t0, status
        time.sleep(0.25)  # the page's own refresh asks again after a while


def run(cache: Path, paths: list[str], lang: str) -> tuple[float, dict[str, tuple[float, int]]]:
    proc, url, started = start_lab(cache)
    try:
        times = {}
        for path in paths:
            times[path] = first_visit(url, path, lang)
            print(f"  {path:34s} {times[path][0]:7.2f} s  ({times[path][1]})", flush=True)
        return started, times
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lang", default="zh", choices=("zh", "en"))
    ap.add_argument("--pages", nargs="*", help="only these paths (default: every page's default address)")
    ap.add_argument("--figures", action="store_true", help="also each lesson's figure (kept on disk too)")
    args = ap.parse_args()
    paths = args.pages or pages(args.figures)
    with tempfile.TemporaryDirectory(prefix="attnlab-bench-cache-") as cache:
        print(f"cpu cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")
        print("fresh process, empty cache:")
        start_cold, cold = run(Path(cache), paths, args.lang)
        print("fresh process, the disk cache the first one left:")
        start_warm, warm = run(Path(cache), paths, args.lang)
    print(f"\nserver start (import, first answer): {start_cold:.2f} s cold, {start_warm:.2f} s warm disk")
    print(f"{'page':34s} {'empty':>8s} {'disk':>8s} {'ratio':>7s}")
    for path in paths:
        (a, sa), (b, sb) = cold[path], warm[path]
        flag = "" if sa == sb == 200 else f"  (status {sa}, {sb})"
        print(f"{path:34s} {a:7.2f}s {b:7.2f}s {a / b if b else float('inf'):6.1f}x{flag}")
    slowest = max(paths, key=lambda p: warm[p][0])
    print(
        f"slowest with the disk cache: {slowest} {warm[slowest][0]:.2f} s; /real in a fresh process with an "
        f"empty cache: {cold['/real'][0]:.2f} s"
        if "/real" in cold
        else ""
    )


if __name__ == "__main__":
    main()
