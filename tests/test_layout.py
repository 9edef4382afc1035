"""The shape of the code: one folder per lesson, one registry, imports that flow one way, short files.

The import rules are import-linter contracts in pyproject.toml (layers, the lessons' independence, no import
circles at any depth); this test runs `lint-imports` so CI checks them. The folder contract is checked here:
every registered topic's folder holds its computation, figure, terminal view, page and strings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.lessons.explain import FOLDER, PIECES, TOPICS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "attnlab"
MAX_LINES = 450
PAGE_LESSONS = {"toy", "pipeline", "real", "ledger"}  # lessons with pages of their own (/toy, /pipeline, ...)


@pytest.mark.slow  # starts lint-imports, which imports and graphs the whole package
def test_the_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        pytest.fail(f"import-linter is not installed beside {sys.executable}: pip install -e '.[test]'")
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 kept, 0 broken" in done.stdout


@pytest.mark.parametrize("name", list(TOPICS))
def test_every_topic_folder_holds_its_pieces(name):
    topic = TOPICS[name]
    assert topic.folder == FOLDER / topic.slug and topic.folder.is_dir()
    missing = [p for p in PIECES if not (topic.folder / p).is_file()]
    assert not missing, f"lessons/{topic.slug}/ lacks {missing}"
    assert callable(topic.lesson) and topic.params is topic.piece("lesson").PARAMS
    assert callable(topic.piece("figure").plot) and callable(topic.view)
    strings = json.loads((topic.folder / "strings.json").read_text(encoding="utf-8"))
    for key in ("title", "summary", "lead", "figure_alt"):
        assert f"explain.{topic.slug}.{key}" in strings, (
            f"lessons/{topic.slug}/strings.json lacks explain.{topic.slug}.{key}"
        )
    assert (topic.folder / "page.html").read_text(encoding="utf-8").strip()


def test_every_lesson_folder_is_a_registered_topic_or_a_page_lesson():
    folders = {d.name for d in FOLDER.iterdir() if d.is_dir() and d.name not in ("common", "__pycache__")}
    topics = {t.slug for t in TOPICS.values()}
    assert folders == topics | PAGE_LESSONS
    for name in folders:
        assert (FOLDER / name / "__init__.py").is_file() and (FOLDER / name / "lesson.py").is_file(), name
        assert (FOLDER / name / "strings.json").is_file(), name


def test_the_package_top_holds_only_what_a_user_imports():
    top = sorted(p.name for p in SRC.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "cli.py", "sampling.py", "trace.py"]


def test_every_file_beside_the_code_is_packaged():
    """A page, a script or a strings file that pyproject's package-data misses would be absent from a wheel."""
    import fnmatch

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"][
        "attnlab"
    ]
    data = [p.relative_to(SRC).as_posix() for p in SRC.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert data and not [
        f for f in data if not any(fnmatch.fnmatch(f, g) and f.count("/") == g.count("/") for g in globs)
    ]


def test_no_source_file_is_over_450_lines():
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines: {long}"


@pytest.mark.slow
def test_a_new_topic_is_one_folder_and_one_registry_line(tmp_path):
    """What README promises: in a copy of the package, copy a topic's folder under a new name, rename its keys,
    add one line to the registry, and the CLI, the API, the page and the figure all find it; the topic's own
    tests, copied beside it as tests/lessons/<slug>/, run against the copy and pass."""
    import shutil

    pkg = tmp_path / "attnlab"
    shutil.copytree(SRC, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    folder = pkg / "lessons" / "zz_demo"
    shutil.copytree(pkg / "lessons" / "sqrt_dk", folder)
    for piece in ("lesson.py", "figure.py", "view.py", "page.html", "strings.json"):
        text = (folder / piece).read_text(encoding="utf-8")
        (folder / piece).write_text(
            text.replace("explain.sqrt_dk", "explain.zz_demo")
            .replace("explain.plot.sqrt.", "explain.plot.zz_sqrt.")
            .replace('"sqrt.', '"zz_sqrt.'),
            encoding="utf-8",
        )
    registry = pkg / "lessons" / "explain.py"
    code = registry.read_text(encoding="utf-8")
    line = '        Topic("sqrt-dk"),\n'
    assert line in code
    registry.write_text(code.replace(line, line + '        Topic("zz-demo", function="sqrt_dk"),\n'), encoding="utf-8")
    script = (
        "import json\n"
        "from fastapi.testclient import TestClient\n"
        "from typer.testing import CliRunner\n"
        "import attnlab\n"
        "from attnlab.cli import app\n"
        "from attnlab.web.app import create_app\n"
        f"assert attnlab.__file__.startswith({str(tmp_path)!r})\n"
        "c = TestClient(create_app())\n"
        "api = c.get('/api/explain/zz-demo?d_k=4')\n"
        "page = c.get('/explain/zz-demo?d_k=4')\n"
        "png = c.get('/explain/zz-demo/figure.png?d_k=4')\n"
        "cli = CliRunner().invoke(app, ['explain', 'zz-demo', '--d-k', '4', '--json'])\n"
        "print(json.dumps([api.status_code, api.json()['params']['d_k'], page.status_code, 'zz-demo' in page.text,\n"
        "                  png.content[:4] == b'\\x89PNG', cli.exit_code, json.loads(cli.stdout)['params']['d_k']]))\n"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [200, 4, 200, True, True, 0, 4]
    # the topic's tests live in its own folder: copied and renamed with it, they test the new topic
    tests = tmp_path / "tests"
    shutil.copytree(
        ROOT / "tests" / "lessons" / "sqrt_dk",
        tests / "lessons" / "zz_demo",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for support in ("conftest.py", "browser_fixtures.py", "browser_support.py", "results.py"):
        shutil.copy(ROOT / "tests" / support, tests / support)
    copied = sorted((tests / "lessons" / "zz_demo").glob("test_*.py"))
    assert copied
    for test in copied:
        text = test.read_text(encoding="utf-8")
        test.write_text(
            text.replace("attnlab.lessons.sqrt_dk", "attnlab.lessons.zz_demo").replace('"sqrt-dk"', '"zz-demo"'),
            encoding="utf-8",
        )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "tests/lessons/zz_demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "attnlab.lessons.zz_demo" in "".join(
        t.read_text(encoding="utf-8") for t in copied
    )
