"""Issue 23, items 5 and 6: links in the runs folder (loops are 404, a file linking outside is refused like a
folder linking outside) and damaged checkpoints (deep or huge JSON, NaN/inf weights, changed dtypes, wrong
shapes) are each said in one line, never a traceback or a 500."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.io import safe_read
from attnlab.train import CheckpointError, load_checkpoint, new_run
from attnlab.train.storage.integrity import sha256_file
from attnlab.web.app import create_app

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: see attnlab.io.threads

runner = CliRunner()
ROUTES = ("/runs/{}", "/api/runs/{}", "/api/runs/{}/generate")


def attnlab(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output and not isinstance(result.exception, RecursionError)
    return result


def one_line(result) -> str:
    said = result.stderr.strip()
    assert result.exit_code == 2 and said.count("\n") == 0, result.output
    return said


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A tiny checkpoint (poem, one step), kept outside every test's runs folder."""
    run = new_run("poem", steps=1, seed=0, device="cpu")
    run.trainer.run()
    return run.save(tmp_path_factory.mktemp("saved") / "ck")


@pytest.fixture
def runs(tmp_path, saved) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copytree(saved, folder / "good")
    return folder


def answers(runs: Path, name: str) -> list[int]:
    client = TestClient(create_app(runs_dir=runs), raise_server_exceptions=False)
    return [
        client.post(r.format(name), json={"prompt": "床"}).status_code
        if r.endswith("generate")
        else client.get(r.format(name)).status_code
        for r in ROUTES
    ]


def listing(runs: Path) -> dict:
    client = TestClient(create_app(runs_dir=runs), raise_server_exceptions=False)
    assert client.get("/runs").status_code == 200
    got = client.get("/api/runs")
    assert got.status_code == 200
    return {r["name"]: r for r in got.json()["runs"]}


# --- 5. links in the runs folder ----------------------------------------------------------------------------


def make_loop(runs: Path, kind: str) -> str:
    if kind == "self":
        (runs / "loop").symlink_to(runs / "loop")
    elif kind == "pair":
        (runs / "loop").symlink_to(runs / "other")
        (runs / "other").symlink_to(runs / "loop")
    else:  # a real folder whose weights file is a link to itself
        shutil.copytree(runs / "good", runs / "loop")
        (runs / "loop" / kind).unlink()
        (runs / "loop" / kind).symlink_to(kind)
    return "loop"


@pytest.mark.parametrize("kind", ["self", "pair", "model.safetensors", "config.json"])
def test_a_link_loop_is_404_and_the_listing_still_answers(runs, kind):
    name = make_loop(runs, kind)
    assert answers(runs, name) == [404, 404, 404]
    assert listing(runs)["good"]["problem"] is None
    assert answers(runs, "good") == [200, 200, 200]


@pytest.mark.parametrize("target", ["the folder", "."])
def test_the_cli_says_one_line_for_a_loop(runs, target):
    make_loop(runs, "self")
    where = runs / "loop" if target == "the folder" else runs / "loop" / "x"
    said = one_line(attnlab("generate", "--checkpoint", where, "--prompt", "床"))
    assert "symbolic link that loops" in said
    said = one_line(attnlab("train", "--corpus", "poem", "--steps", "1", "--out", where))
    assert "symbolic link that loops" in said and "smaller model" not in said


@pytest.mark.parametrize("linked", ["model.safetensors", "tokenizer.json", "config.json", "hop"])
def test_a_file_linking_outside_the_runs_folder_is_refused(runs, saved, linked):
    """The issue's case: a real folder whose files are links to a checkpoint elsewhere opened with 200."""
    folder = runs / "escape"
    folder.mkdir()
    for f in saved.iterdir():
        if linked == "hop" and f.name == "model.safetensors":  # through a link inside that leads outside
            (runs / "hop").symlink_to(f)
            (folder / f.name).symlink_to(runs / "hop")
        elif f.name == linked:
            (folder / f.name).symlink_to(f)
        else:
            shutil.copy(f, folder / f.name)
    assert answers(runs, "escape") == [403, 403, 403]
    assert "outside the runs folder" in listing(runs)["escape"]["problem"]


def test_links_that_stay_inside_the_runs_folder_are_followed(runs):
    folder = runs / "alias"
    folder.mkdir()
    for f in (runs / "good").iterdir():
        (folder / f.name).symlink_to(Path("..") / "good" / f.name)
    assert answers(runs, "alias") == [200, 200, 200]
    assert listing(runs)["alias"]["problem"] is None


# --- 6. damaged checkpoints ------------------------------------------------------------------------------


def rewrite(folder: Path, *, tokenizer=None, weights=None, checksums=True) -> Path:
    """Change tokenizer.json (text) or the weights (a function of the tensors) of a checkpoint; record the new
    checksums as someone editing it on purpose would, or drop them (an older attnlab's checkpoint)."""
    if tokenizer is not None:
        (folder / "tokenizer.json").write_text(tokenizer, encoding="utf-8")
    if weights is not None:
        save_file(weights(load_file(str(folder / "model.safetensors"))), str(folder / "model.safetensors"))
    meta = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if checksums:
        meta["sha256"] = {name: sha256_file(folder / name) for name in meta["sha256"]}
    else:
        del meta["sha256"]
    (folder / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def refused_everywhere(runs: Path, message: str) -> None:
    """Refused in one line by the loader, the CLI and the web (4xx naming the problem)."""
    with pytest.raises(CheckpointError, match=re.escape(message)):
        load_checkpoint(runs / "good")
    assert message in one_line(attnlab("generate", "--checkpoint", runs / "good", "--prompt", "床"))
    client = TestClient(create_app(runs_dir=runs), raise_server_exceptions=False)
    api = client.get("/api/runs/good")
    assert api.status_code == 422 and message in api.json()["message"]
    assert client.post("/api/runs/good/generate", json={"prompt": "床"}).status_code == 422
    assert client.get("/runs/good").status_code == 422


def test_a_deeply_nested_tokenizer_in_an_old_checkpoint_is_refused(runs):
    deep = '{"type": "char", "chars": ' + "[" * 100_000 + "]" * 100_000 + ', "eot": true}'
    rewrite(runs / "good", tokenizer=deep, checksums=False)
    refused_everywhere(runs, "tokenizer.json nests deeper than")


def test_a_deeply_nested_config_is_not_taken_for_a_checkpoint(runs):
    folder = runs / "good"
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    said = one_line(attnlab("train", "--corpus", "poem", "--steps", "1", "--out", folder))
    assert "is not an attnlab checkpoint" in said
    said = one_line(attnlab("generate", "--checkpoint", folder, "--prompt", "床"))
    assert "nests deeper than" in said


@pytest.mark.parametrize(
    "text, depth",
    [
        ('{"a": "' + "[{" * 5000 + '"}', 1),  # brackets inside a string do not nest
        ('["\\"' + "[" * 5000 + '", 1]', 1),  # nor after an escaped quote
        ('[[["\\\\"], [[]]]]', 4),
        ("[" * 5000 + "}" * 5000, 5000),  # mismatched: still counted (json would recurse before noticing)
        ("[1, {}, [2]]", 2),
        ('["", "[[[", ""]', 1),  # empty strings beside one holding brackets
        ('["\\\\", "[[", {"k\\"": "]"}]', 2),  # an escaped backslash ends no string early, nor does \"
    ],
)
def test_the_depth_scan_skips_strings(text, depth):
    assert safe_read.nesting(text, limit=10**6) == depth


def test_a_json_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    outcome = []

    def read():
        try:
            safe_read.read_json(fifo)
        except ValueError as err:
            outcome.append(str(err))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=120)  # answers at once; a reader blocked on the FIFO would wait forever
    assert outcome and "is not a regular file" in outcome[0]


def test_a_json_over_its_size_limit_is_refused_before_parsing(runs, monkeypatch):
    monkeypatch.setattr(safe_read, "json", None)  # parsing would fail loudly
    monkeypatch.setitem(safe_read.LIMITS, "tokenizer.json", 10)
    with pytest.raises(ValueError, match="tokenizer.json is bigger than"):
        safe_read.read_json(runs / "good" / "tokenizer.json", "tokenizer.json")


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_weights_that_are_not_numbers_are_refused_even_with_a_matching_checksum(runs, value):
    def poison(tensors):
        tensors["blocks.1.attn.W_V.weight"][3, 4] = value
        return tensors

    rewrite(runs / "good", weights=poison)
    refused_everywhere(runs, "blocks.1.attn.W_V.weight")
    with pytest.raises(CheckpointError, match="NaN or infinite"):
        load_checkpoint(runs / "good")


def test_integer_weights_are_refused(runs):
    rewrite(runs / "good", weights=lambda ts: {k: (v.to(torch.int8) if "W_Q" in k else v) for k, v in ts.items()})
    refused_everywhere(runs, "stores blocks.0.attn.W_Q.bias as int8 but the model expects float32")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_changed_float_type_loads_with_one_warning(runs, dtype):
    rewrite(runs / "good", weights=lambda ts: {k: (v.to(dtype) if "ffn" in k else v) for k, v in ts.items()})
    warnings = load_checkpoint(runs / "good").warnings
    name = str(dtype).removeprefix("torch.")
    assert len(warnings) == 1 and f"blocks.0.ffn.W_1.weight ({name})" in warnings[0] and "float32" in warnings[0]
    result = attnlab("generate", "--checkpoint", runs / "good", "--prompt", "床", "--greedy")
    assert result.exit_code == 0 and result.stderr.count(f"({name})") >= 1 and result.stdout.startswith("床")


def test_a_shape_mismatch_names_the_tensor_and_both_shapes(runs):
    rewrite(
        runs / "good",
        weights=lambda ts: {k: (v.T.contiguous() if k == "blocks.0.ffn.W_1.weight" else v) for k, v in ts.items()},
    )
    refused_everywhere(runs, "blocks.0.ffn.W_1.weight is stored as [32, 128] but the model expects [128, 32]")


def test_serve_says_one_line_for_a_runs_folder_that_loops(tmp_path):
    from typer.testing import CliRunner

    from attnlab.cli import app

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    result = CliRunner().invoke(app, ["serve", "--port", "0", "--runs", str(tmp_path / "a")])
    assert result.exit_code == 2 and "loops back on itself" in result.output
    assert "Traceback" not in result.output
