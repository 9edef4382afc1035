"""Issue 13, "the lab opens any model": a checkpoint written by `attnlab train` into a runs folder, opened through
HTTP (/api/runs..., /runs...): ① ids ② embeddings ③ every layer's and head's attention on a typed text ④ the next
token ⑥ generation, 月 in 床前明月光; and names that lead outside the runs folder are refused."""

from __future__ import annotations

import html
import math
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from attnlab.cli import app as cli
from attnlab.lessons.pipeline.open_model import MAX_TEXT
from attnlab.sampling import generate
from attnlab.train.storage.checkpoint import load_checkpoint
from attnlab.web.app import create_app

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads
TEXT = "明月光床"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A runs folder as a learner makes it: `attnlab train --out runs/poem`, plus a damaged copy, a link to a
    real checkpoint outside the folder, and a folder that is not a checkpoint."""
    top = tmp_path_factory.mktemp("lab")
    folder = top / "runs"
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "--corpus",
            "poem",
            "--steps",
            "30",
            "--layers",
            "2",
            "--heads",
            "2",
            "--d-model",
            "16",
            "--seed",
            "0",
            "--out",
            str(folder / "poem"),
        ],
    )
    assert result.exit_code == 0, result.output
    shutil.copytree(folder / "poem", top / "outside")  # a valid checkpoint, but not inside the runs folder
    (folder / "escape").symlink_to(top / "outside", target_is_directory=True)
    shutil.copytree(folder / "poem", folder / "damaged")
    weights = folder / "damaged" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-64])
    (folder / "notes").mkdir()
    return folder


@pytest.fixture(scope="module")
def client(runs) -> TestClient:
    return TestClient(create_app(runs_dir=runs))


@pytest.fixture(scope="module")
def ckpt(runs):
    return load_checkpoint(runs / "poem")


def test_the_listing_reads_each_config_and_says_what_cannot_be_opened(client, runs, ckpt):
    listing = client.get("/api/runs").json()
    assert listing["folder"] == str(runs.resolve())
    by_name = {r["name"]: r for r in listing["runs"]}
    assert set(by_name) == {"poem", "damaged", "escape"}  # notes/ holds no checkpoint file
    poem = by_name["poem"]
    c = ckpt.model.config
    assert (poem["layers"], poem["heads"], poem["d_model"], poem["context"], poem["vocab_size"]) == (
        c.n_layers,
        c.n_heads,
        c.d_model,
        c.context_length,
        c.vocab_size,
    )
    assert poem["step"] == ckpt.meta["step"] == 30 and poem["problem"] is None
    assert "outside the runs folder" in by_name["escape"]["problem"]
    page = client.get("/runs", params={"lang": "en"}).text
    assert 'href="/runs/poem?lang=en"' in page and "Open a trained model" in page
    assert 'href="/runs/escape' not in page  # listed with its problem, not as a link


def _layer0_weights(model, ids: list[int]) -> torch.Tensor:
    """Layer 1's attention weights, recomputed from the checkpoint's parameters with torch's own functions."""
    c, blk = model.config, model.blocks[0]
    idx = torch.tensor(ids)
    x = model.embed.tok.weight[idx] + model.embed.pos.weight[: len(ids)]  # (T, d_model): E[id] + P[pos]
    h = F.layer_norm(x, (c.d_model,), blk.ln_1.gamma, blk.ln_1.beta, c.ln_eps) if c.norm_first else x
    d_k = c.d_model // c.n_heads
    q = F.linear(h, blk.attn.W_Q.weight, blk.attn.W_Q.bias).view(len(ids), c.n_heads, d_k).transpose(0, 1)
    k = F.linear(h, blk.attn.W_K.weight, blk.attn.W_K.bias).view(len(ids), c.n_heads, d_k).transpose(0, 1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d_k)  # (H, T, T)
    causal = torch.ones(len(ids), len(ids), dtype=torch.bool).tril()
    return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)


def test_the_api_opens_a_cli_checkpoint_on_a_typed_text(client, ckpt):
    got = client.get("/api/runs/poem", params={"text": TEXT}).json()
    model, tok = ckpt.model, ckpt.tokenizer
    ids = tok.encode(TEXT)
    steps = got["steps"]
    assert steps["tokens"]["ids"] == ids and steps["tokens"]["tokens"] == list(TEXT)  # ①
    with torch.no_grad():
        rows = model.embed.tok.weight[ids]  # ② the rows the ids look up
        assert torch.allclose(torch.tensor(steps["embedding"]["token_rows"]), rows, atol=1e-6)
        want = _layer0_weights(model, ids)  # ③ layer 1, every head, against torch's functions
        logits = model(torch.tensor([ids]))[0, -1]  # ④ the model's own forward (no trace)
    maps = steps["attention"]["maps"]
    assert len(maps) == model.config.n_layers * model.config.n_heads == 4
    for m in maps:
        w = torch.tensor(m["weights"])
        assert torch.allclose(w.sum(-1), torch.ones(len(ids)), atol=1e-5) and torch.all(w.triu(1) == 0)
        if m["layer"] == 0:
            assert torch.allclose(w, want[m["head"]], atol=1e-5)
    p = torch.softmax(logits.double(), -1)
    dist = steps["next"]["distribution"]
    assert steps["next"]["context"] == TEXT and steps["next"]["target"] is None
    assert torch.allclose(torch.tensor([d["prob"] for d in dist], dtype=torch.float64), p, atol=1e-6)
    assert steps["next"]["top"][0]["id"] == int(p.argmax())
    # 月 in 床前明月光: one row per layer and head, each naming its largest weight, against the row's next largest
    focus = got["focus"]["focus"]
    assert focus["tokens"] == list("床前明月") and len(focus["heads"]) == 4
    assert all(c["status"] in ("shown", "not_shown") for c in focus["claims"])
    for h in focus["heads"]:
        assert h["top_weight"] == max(h["weights"]) and h["top_token"] == "床前明月"[h["top"]]


def test_generation_through_the_api_is_sampling_generate_on_the_checkpoint(client, ckpt):
    got = client.post(
        "/api/runs/poem/generate", json={"prompt": "床前", "max_new_tokens": 5, "seed": 3, "top_k": 3}
    ).json()
    want = generate(ckpt.model, ckpt.tokenizer, "床前", max_new_tokens=5, seed=3, top_k=3, n_candidates=5)
    assert got["text"] == want.text and len(got["steps"]) == len(want.steps) >= 1
    assert [c["token"] for c in got["steps"][0]["candidates"]] == [c.token for c in want.steps[0].candidates]
    r = client.post("/api/runs/poem/generate", json={"prompt": "狗"})
    assert r.status_code == 422 and "狗" in r.json()["message"]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_page_shows_one_to_six_on_a_typed_line(client, ckpt, lang):
    r = client.get(
        "/runs/poem", params={"text": TEXT, "prompt": "床", "max_new_tokens": "4", "gseed": "1", "lang": lang}
    )
    assert r.status_code == 200
    page = r.text
    ids = ckpt.tokenizer.encode(TEXT)
    assert "".join(f'<td data-value="{i}">{i}</td>' for i in ids) in page  # ①
    assert 'id="emb-token"' in page and 'id="emb-sum"' in page  # ②
    for layer in (1, 2):  # ③ every layer and head
        for head in (1, 2):
            assert f'id="attn-{layer}-{head}"' in page and f'id="focus-{layer}-{head}"' in page
    assert 'id="next-table"' in page and 'id="focus-honest"' in page  # ④ and 月
    want = generate(ckpt.model, ckpt.tokenizer, "床", max_new_tokens=4, seed=1, n_candidates=5)
    assert f'<span class="big" id="gen-text">{want.text}</span>' in page  # ⑥
    assert page.count('class="gen-step"') == len(want.steps) and 'class="cand' in page
    assert ("看它怎么读" if lang == "zh" else "See how it reads it") in page


def test_the_page_says_what_it_cannot_read(client):
    page = html.unescape(client.get("/runs/poem", params={"text": "狗", "lang": "en"}).text)
    assert 'id="text-problem"' in page and "Not in this model's vocabulary: 狗" in page
    assert 'id="focus-table"' in page  # 月 in 床前明月光 is still shown
    page = client.get("/runs/poem", params={"text": "明" * (MAX_TEXT + 1), "lang": "en"}).text
    assert f"at most {MAX_TEXT}" in page
    assert client.get("/api/runs/poem", params={"text": "狗"}).status_code == 422


@pytest.mark.parametrize("name", ["escape", "%2E%2E", "..%5C..%5Cetc", "a%00b", "C:%5CWindows"])
def test_names_leading_outside_the_runs_folder_are_refused(client, name):
    api = client.get(f"/api/runs/{name}")
    assert api.status_code == 403, api.text
    assert "runs folder" in api.json()["message"]
    gen = client.post(f"/api/runs/{name}/generate", json={"prompt": "床"})
    assert gen.status_code == 403
    page = client.get(f"/runs/{name}", params={"lang": "en"})
    assert page.status_code == 403 and "opens only checkpoints inside the folder of models" in page.text


def test_paths_and_missing_names_never_reach_a_checkpoint(client):
    # %2F is a separator once decoded: no route takes it, so the answer is a plain 404
    for path in ("/api/runs/..%2F..%2Fetc", "/api/runs/%2Fetc%2Fpasswd", "/api/runs/nope", "/runs/nope"):
        r = client.get(path)
        assert r.status_code == 404, (path, r.text)
    assert "no checkpoint named 'nope'" in client.get("/api/runs/nope").json()["message"]


def test_a_damaged_checkpoint_says_so(client):
    r = client.get("/api/runs/damaged")
    assert r.status_code == 422 and "corrupt or truncated" in r.json()["message"]
    page = client.get("/runs/damaged", params={"lang": "en"})
    assert page.status_code == 422 and "incomplete or damaged" in page.text


def test_a_lab_started_without_a_runs_folder_says_how_to_give_one():
    client = TestClient(create_app())
    assert client.get("/api/runs").json() == {"folder": None, "runs": []}
    assert client.get("/api/runs/poem").status_code == 404
    assert 'id="runs-no-folder"' in client.get("/runs").text


def test_serve_refuses_a_runs_path_that_is_a_file(tmp_path):
    f = tmp_path / "runs"
    f.write_text("not a folder")
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--runs", str(f)])
    assert result.exit_code == 2 and "is a file, not a folder of checkpoints" in result.output


def test_resolving_names_stays_inside_the_folder(tmp_path):
    from attnlab.train.storage.runs_dir import NoSuchRun, OutsideRuns, resolve

    runs = tmp_path / "runs"
    (runs / "a").mkdir(parents=True)
    (runs / "alias").symlink_to(runs / "a", target_is_directory=True)  # a link that stays inside: fine
    (runs / "up").symlink_to(tmp_path, target_is_directory=True)
    (runs / "self").symlink_to(runs, target_is_directory=True)
    assert resolve(runs, "a") == resolve(runs, "alias") == (runs / "a").resolve()
    for name in ("..", ".", "", "a/..", "../runs/a", str(runs / "a"), "a\\b", "up", "self", "x\x00", "c:a", "é\n"):
        with pytest.raises(OutsideRuns):
            resolve(runs, name)
    with pytest.raises(NoSuchRun):
        resolve(runs, "b")


def test_serve_hands_its_runs_folder_to_the_lab(tmp_path, monkeypatch):
    """`attnlab serve --runs DIR` (default runs/ in the current folder) serves an app that opens DIR."""
    from attnlab.web import server

    seen = {}

    def fake_serve(sock, hosts=(), runs_dir=None, **_):
        seen["app"] = create_app(allowed_hosts=hosts, runs_dir=runs_dir)
        sock.close()

    monkeypatch.setattr(server, "serve", fake_serve)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["serve", "--port", "0"])
    assert result.exit_code == 0, result.output
    assert seen["app"].state.runs_dir == tmp_path.resolve() / "runs" and "/runs" in result.output
    result = CliRunner().invoke(cli, ["serve", "--port", "0", "--runs", "elsewhere"])
    assert seen["app"].state.runs_dir == tmp_path.resolve() / "elsewhere"


def test_a_model_without_the_poem_says_so_and_reads_its_own_text(tmp_path):
    corpus = tmp_path / "abc.txt"
    corpus.write_text("the cat sat on the mat. " * 20, encoding="utf-8")
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "--corpus",
            str(corpus),
            "--steps",
            "3",
            "--layers",
            "1",
            "--heads",
            "1",
            "--d-model",
            "8",
            "--context",
            "16",
            "--out",
            str(runs / "cat"),
        ],
    )
    assert result.exit_code == 0, result.output
    client = TestClient(create_app(runs_dir=runs))
    first = html.unescape(client.get("/runs/cat", params={"lang": "en"}).text)
    assert 'id="text-problem"' not in first and 'id="ids-table"' not in first  # waits for a text
    assert "This model's vocabulary lacks 床前明月" in first  # and says why 月 cannot be asked
    page = client.get("/runs/cat", params={"lang": "en", "text": "the mat"}).text
    assert page.count('class="mat heatmap"') == 1 and 'id="next-table"' in page
    got = client.get("/api/runs/cat", params={"text": "the mat"}).json()
    assert got["focus"]["focus"] is None and got["focus"]["unseen"] == list("床前明月光")


def test_opening_a_checkpoint_waits_in_a_lane_like_a_lesson(client, monkeypatch):
    """Loading a model from its files is work a GET starts: it takes room in a lane (web/budget.py), and while
    that lane is full the answer is 503 with Retry-After, not another model in memory."""
    from attnlab.web import budget

    monkeypatch.setattr(budget, "LESSON_WAIT_S", 0.0)
    taken = [budget.LIGHT.try_take() for _ in range(budget.LIGHT.size)]  # a small checkpoint opens in the light lane
    try:
        r = client.get("/api/runs/poem")
        assert r.status_code == 503 and int(r.headers["retry-after"]) > 0
    finally:
        for _ in taken:
            budget.LIGHT.give_back()
    assert client.get("/api/runs/poem").status_code == 200
