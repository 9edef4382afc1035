"""Benchmark (not a test): how fast the toy lab page appears and updates, measured in Chromium.

    python benchmarks/bench_toy_page.py [--runs 7] [--clicks 24]

Prints the median time to first render of /toy in a fresh browser context (first contentful paint, and
the load event), the median time from a click on a query button to the updated page being painted with
JavaScript (lab.js fetches the page and swaps <main>), the same click without JavaScript (a full page
load), and their ratio. The server runs in this process on a free loopback port.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

CLICK_AND_PAINT = """async (id) => {
  const t0 = performance.now();
  const updated = new Promise(r => document.addEventListener('lab:updated', r, {once: true}));
  document.getElementById(id).click();
  await updated;
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));  // painted
  return performance.now() - t0;
}"""


def first_render(browser, base: str, runs: int) -> tuple[list[float], list[float]]:
    fcp, load = [], []
    for _ in range(runs):
        context = browser.new_context(viewport={"width": 1300, "height": 900})
        page = context.new_page()
        page.goto(base + "/toy", wait_until="load")
        page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0")
        fcp.append(page.evaluate("performance.getEntriesByName('first-contentful-paint')[0].startTime"))
        load.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        context.close()
    return fcp, load


def click_updates(browser, base: str, clicks: int, js: bool) -> list[float]:
    context = browser.new_context(java_script_enabled=js, viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.goto(base + "/toy")
    times = []
    for i in range(clicks):
        button = f"q-{i % 4 + 1}"
        if js:
            times.append(page.evaluate(CLICK_AND_PAINT, button))
        else:
            t0 = time.perf_counter()
            page.click(f"#{button}")  # a form submission: Playwright waits for the new page to load
            page.wait_for_load_state("load")
            times.append((time.perf_counter() - t0) * 1000)
    context.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--clicks", type=int, default=24)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from attnlab.web.server import background

    with background() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        click_updates(browser, base, 4, js=True)  # warm up the server (torch, templates) and the browser
        fcp, load = first_render(browser, base, args.runs)
        live = click_updates(browser, base, args.clicks, js=True)
        reload = click_updates(browser, base, args.clicks, js=False)
        browser.close()

    med = statistics.median
    print(f"toy page, Chromium headless, {args.runs} fresh loads, {args.clicks} clicks (median ms)")
    print(f"  first contentful paint      {med(fcp):8.1f}")
    print(f"  load event                  {med(load):8.1f}")
    print(f"  click -> painted, JS on     {med(live):8.1f}   (p90 {sorted(live)[int(0.9 * len(live))]:.1f})")
    print(f"  click -> loaded, JS off     {med(reload):8.1f}")
    print(f"  live update / full reload   {med(live) / med(reload):8.2f}x")


if __name__ == "__main__":
    main()
