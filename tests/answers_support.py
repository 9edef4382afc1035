"""Every /api/... JSON answer and every CLI --json output at each topic's defaults, as text, so that a move of
code can be checked to change no answer by a byte (tests/test_same_answers.py).

    python tests/answers_support.py            # records tests/answers/defaults.json at this commit

and the fingerprint of the arithmetic it was recorded with (tests/answers/arithmetic.txt; answers_compare.probe).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RECORD = Path(__file__).parent / "answers" / "defaults.json"
ARITHMETIC = RECORD.with_name("arithmetic.txt")

GETS = [
    "/api/toy",
    "/api/toy?query=2&causal=true",
    "/api/toy/check?question=keys&answer=1",
    "/api/toy/check?question=future&answer=0",
    "/api/lookup",
    "/api/lookup/importance",
    "/api/ledger",
    "/api/pipeline/neg-log",
    "/api/pipeline/first-step",
    "/api/pipeline/focus",
    "/api/explain",
    "/api/explain?lang=en",
    "/api/real",
    "/api/real/coreference",
    "/api/real/embeddings",
]
MIX = {"scores": [0, "ln 3"], "values": [[2, 0], [0, 2]]}
POSTS = [("/api/toy/mix", MIX), ("/api/toy/hand", MIX)]
CLI = [["toy", "--json"], ["toy", "--json", "--query", "它", "--causal"], ["real", "--json"]]


def topics() -> list[str]:
    from attnlab.lessons.explain import TOPICS

    return list(TOPICS)


def answers(keys: set[str] | None = None) -> dict[str, str]:
    """{request or command line: the answer's text}; `keys` limits it to those recorded."""
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from attnlab.cli import app as cli
    from attnlab.web.app import create_app

    want = (lambda k: True) if keys is None else (lambda k: k in keys)
    out: dict[str, str] = {}
    client = TestClient(create_app())
    # a topic's progress is asked right after its answer: "done" then, whatever the cache evicted before
    gets = (
        GETS
        + [u for t in topics() for u in (f"/api/explain/{t}", f"/api/explain/{t}/progress")]
        + [f"/api/explain/{t}?lang=en" for t in topics()]
    )
    for url in gets:
        if want(f"GET {url}"):
            r = client.get(url)
            out[f"GET {url}"] = f"{r.status_code} {r.text}"
    for url, body in POSTS:
        if want(f"POST {url}"):
            r = client.post(url, json=body)
            out[f"POST {url}"] = f"{r.status_code} {r.text}"
    runner = CliRunner()
    for args in CLI + [["explain", t, "--json"] for t in topics()]:
        key = "attnlab " + " ".join(args)
        if want(key):
            r = runner.invoke(cli, args)
            out[key] = f"{r.exit_code} {r.stdout}"
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    got = answers()
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps(got, ensure_ascii=False, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    from answers_compare import probe

    ARITHMETIC.write_text(probe() + "\n", encoding="utf-8")
    print(
        f"{len(got)} answers -> {RECORD} ({RECORD.stat().st_size:,} bytes); arithmetic {ARITHMETIC.read_text().strip()}"
    )
