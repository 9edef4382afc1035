"""Issue 26 on /runs/NAME and /pipeline: the logit lens and head ablation of a checkpoint on the text the learner
types, held to references we did not write: the model's own forward pass (plain, fused attention), the model cut
after l blocks, W_O's columns zeroed by hand, and attnlab.inspect.head_effects on the same checkpoint."""

from __future__ import annotations

import copy
import html
import re
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from attnlab.cli import app as cli
from attnlab.inspect import head_effects
from attnlab.lessons.pipeline.heads import reference_windows
from attnlab.lessons.pipeline.lens import lens_view
from attnlab.lessons.pipeline.open_model import model_view
from attnlab.models import GPT, GPTConfig
from attnlab.train.storage.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from attnlab.web.app import create_app
from attnlab.web.pages import runs as runs_pages

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads
TEXT = "明月光床"


def _spread(model: GPT) -> GPT:
    """Untrained weights are nearly uniform; spread them so heads have visible effects."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model.eval()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """`attnlab train --out runs/poem` (2 layers × 2 heads), and two checkpoints the CLI cannot make: a GQA model
    (4 query heads sharing 2 key/value heads) and a mixture-of-experts one, with the same tokenizer."""
    folder = tmp_path_factory.mktemp("lab") / "runs"
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
    tok = load_checkpoint(folder / "poem").tokenizer
    for name, kw in {"gqa": dict(n_heads=4, n_kv_heads=2), "moe": dict(ffn="moe")}.items():
        cfg = GPTConfig(vocab_size=tok.vocab_size, d_model=16, n_layers=2, context_length=16, **{"n_heads": 2, **kw})
        save_checkpoint(folder / name, _spread(GPT(cfg)), tok, {"corpus": "poem"})
    return folder


@pytest.fixture(scope="module")
def client(runs) -> TestClient:
    return TestClient(create_app(runs_dir=runs))


@pytest.fixture(scope="module")
def ckpt(runs):
    return load_checkpoint(runs / "poem")


def _cells(page: str, table: str) -> list[list[str]]:
    """data-value of every body cell of the table with this id, row by row."""
    body = re.search(rf'id="{table}".*?<tbody>(.*?)</tbody>', page, re.S)[1]
    return [re.findall(r'<td[^>]*data-value="([^"]+)"', row) for row in re.findall(r"<tr.*?</tr>", body, re.S)]


def test_the_lens_last_row_is_the_models_own_next_token(client, ckpt):
    model, tok = ckpt.model, ckpt.tokenizer
    ids = tok.encode(TEXT)
    got = client.get("/api/runs/poem", params={"text": TEXT}).json()
    lens = got["lens"]
    assert got["lens_absent"] is None and lens["tokens"] == list(TEXT)
    assert len(lens["rows"]) == model.config.n_layers + 1 and all(len(r["top"]) == len(ids) for r in lens["rows"])
    with torch.no_grad():
        p = model(torch.tensor([ids]))[0].double().softmax(-1)  # (T, V): the plain forward, fused attention
    last = lens["rows"][-1]["top"]
    assert [c["id"] for c in last] == p.argmax(-1).tolist()  # every position's top token
    torch.testing.assert_close(
        torch.tensor([c["prob"] for c in last], dtype=torch.float64), p.max(-1).values, rtol=0, atol=1e-6
    )
    top = got["steps"]["next"]["top"][0]  # step ④'s own answer
    assert (
        (lens["answer"]["id"], lens["answer"]["token"])
        == (top["id"], top["token"])
        == (last[-1]["id"], last[-1]["token"])
    )
    assert lens["answer"]["prob"] == pytest.approx(top["prob"], abs=1e-9)
    assert lens["answer_rank"][-1] == 0 and lens["answer_prob"][-1] == pytest.approx(top["prob"], abs=1e-9)
    for layer in range(model.config.n_layers + 1):  # row l is the same model stopped after l blocks
        cut = copy.deepcopy(model)
        cut.blocks = cut.blocks[:layer]
        with torch.no_grad():
            q = cut(torch.tensor([ids]))[0, -1].double().softmax(-1)  # (V,)
        assert lens["rows"][layer]["top"][-1]["id"] == int(q.argmax())
        assert lens["answer_prob"][layer] == pytest.approx(float(q[top["id"]]), abs=1e-6)
        assert lens["answer_rank"][layer] == int((q > q[top["id"]]).sum())
    # The page shows the API's numbers: the last row's last cell and the answer's table.
    page = client.get("/runs/poem", params={"text": TEXT, "lang": "en"}).text
    rows = _cells(page, "lens-table")
    assert len(rows) == model.config.n_layers + 1 and float(rows[-1][-1]) == pytest.approx(top["prob"], abs=1e-12)
    assert f'id="lens-row-{model.config.n_layers}"' in page and 'id="lens-honest"' in page
    answer = _cells(page, "lens-answer")
    assert [float(r[1]) for r in answer] == pytest.approx(lens["answer_prob"], abs=1e-12)


def test_the_lens_claim_and_its_null(ckpt):
    """The layers build the answer: shown on the trained checkpoint; an untrained model with the same settings
    moves it by a hair, so it must not be shown there."""
    trained = lens_view(ckpt.model, ckpt.tokenizer, "床前明月", "en").claims[0]
    torch.manual_seed(0)
    untrained = lens_view(GPT(ckpt.model.config).eval(), ckpt.tokenizer, "床前明月", "en").claims[0]
    assert trained.id == untrained.id == "lens_builds"
    assert trained.status == "shown" and untrained.status == "not_shown", (trained.versus, untrained.versus)
    u = 1 / ckpt.tokenizer.vocab_size
    assert untrained.margin == pytest.approx(u) and trained.measured - trained.baseline >= u


@pytest.mark.parametrize("how", ["zero", "mean"])
def test_the_head_table_is_inspect_head_effects_on_the_checkpoint(client, ckpt, how):
    model, tok = ckpt.model, ckpt.tokenizer
    ids = tok.encode(TEXT)
    got = client.get("/api/runs/poem", params={"text": TEXT, "how": how}).json()
    heads = got["heads"]
    target = got["steps"]["next"]["top"][0]["id"]  # the model's own top prediction
    assert got["heads_absent"] is None and heads["how"] == how and heads["answer"]["id"] == target
    reference = reference_windows(ids) if how == "mean" else None
    want = head_effects(model, ids, target, how=how, reference=reference)  # (L, H)
    assert torch.equal(torch.tensor(heads["delta"], dtype=torch.float32), want)
    assert (heads["n_layers"], heads["n_heads"]) == (2, 2) and want.abs().max() > 1e-4
    if how == "mean":
        assert (heads["windows"], heads["window"]) == (3, 2)  # windows of 2 of the 4 tokens, at 3 offsets
    else:  # zeroing a head is zeroing its d_k columns of W_O: the plain forward, edited by hand
        layer, head = heads["largest"]["layer"], heads["largest"]["head"]
        assert heads["largest"]["delta"] == pytest.approx(float(want.min()), abs=1e-9)
        edited, d_k = copy.deepcopy(model), model.config.d_model // model.config.n_heads
        with torch.no_grad():
            edited.blocks[layer].attn.W_O.weight[:, head * d_k : (head + 1) * d_k] = 0
            lp = lambda m: m(torch.tensor([ids]))[0, -1].log_softmax(-1)[target]  # noqa: E731
            assert float(lp(edited) - lp(model)) == pytest.approx(heads["largest"]["delta"], abs=1e-5)
    page = client.get("/runs/poem", params={"text": TEXT, "how": how, "lang": "en"}).text
    cells = _cells(page, "heads-table")
    assert [len(r) for r in cells] == [2, 2]
    assert torch.equal(torch.tensor([[float(x) for x in r] for r in cells], dtype=torch.float32), want)
    assert all(f'id="heads-{i}-{h}"' in page for i in (1, 2) for h in (1, 2))
    assert f'<option value="{how}" selected>' in page and 'id="heads-honest"' in page


def test_bad_text_shows_no_lens_or_heads_and_says_why(client):
    page = html.unescape(client.get("/runs/poem", params={"text": "狗", "lang": "en"}).text)
    assert "Not in this model's vocabulary: 狗" in page
    assert 'id="lens"' not in page and 'id="heads"' not in page
    assert client.get("/api/runs/poem", params={"text": "狗"}).status_code == 422
    assert client.get("/api/runs/poem", params={"text": TEXT, "how": "resample"}).status_code == 422
    page = client.get("/runs/poem", params={"text": TEXT, "how": "nonsense"}).text  # the page reads it as zero
    assert '<option value="zero" selected>' in page


@pytest.mark.parametrize("name, heads", [("gqa", 4), ("moe", 2)])
def test_gqa_and_moe_checkpoints_have_both_cards(client, runs, name, heads):
    got = client.get(f"/api/runs/{name}", params={"text": TEXT}).json()
    assert got["lens"] is not None and len(got["lens"]["rows"]) == 3
    assert (got["heads"]["n_layers"], got["heads"]["n_heads"]) == (2, heads)  # every query head, not the K/V heads
    ck = load_checkpoint(runs / name)
    ids = ck.tokenizer.encode(TEXT)
    want = head_effects(ck.model, ids, got["lens"]["answer"]["id"])
    assert torch.equal(torch.tensor(got["heads"]["delta"], dtype=torch.float32), want) and want.abs().max() > 1e-4
    page = client.get(f"/runs/{name}", params={"text": TEXT}).text
    assert len(_cells(page, "heads-table")) == 2 and len(_cells(page, "lens-table")) == 3


@pytest.mark.parametrize("ablation, heads", [("ffn-only", None), ("one-head", 1), ("attention-only", 2)])
def test_ablated_models_degrade_and_say_why(client, ckpt, monkeypatch, ablation, heads):
    """An ffn-only model has no head to remove: its heads card says so, the lens is still there. (Served through
    the page with the checkpoint handed in, as train/storage/checkpoint.py cannot reopen a checkpoint whose blocks
    lack a sublayer yet.)"""
    cfg = GPTConfig(**{**ckpt.model.config.to_dict(), "ablations": (ablation,)})
    ablated = Checkpoint(path=Path("x"), model=_spread(GPT(cfg)), tokenizer=ckpt.tokenizer, meta=ckpt.meta)
    view = model_view("x", ablated.model, ablated.tokenizer, ablated.meta, TEXT, lang="en")
    assert view.lens is not None and view.lens_absent is None
    monkeypatch.setattr(runs_pages, "open_run", lambda root, name: ablated)
    page = html.unescape(client.get("/runs/poem", params={"text": TEXT, "lang": "en"}).text)
    assert 'id="lens-table"' in page
    if heads is None:
        assert view.heads is None and view.heads_absent == "no_attention"
        assert 'id="heads-absent"' in page and "no attention (the ffn-only ablation)" in page
        assert 'id="heads-table"' not in page
    else:
        assert view.heads.n_heads == heads and len(_cells(page, "heads-table")) == 2
        assert [len(r) for r in _cells(page, "heads-table")] == [heads, heads]


def test_the_pipeline_page_has_the_lens_of_its_own_model():
    """/pipeline (the untrained tiny GPT until a run is trained): the lens card on ④'s context, 床前明月, whose last
    row is ④'s distribution's top; untrained, the layers are not shown to build the answer (the claim's null)."""
    page = TestClient(create_app()).get("/pipeline", params={"lang": "en"}).text
    assert 'id="lens-table"' in page
    rows = _cells(page, "lens-table")
    assert len(rows) >= 2 and len(rows[0]) == len("床前明月")
    top = max(
        float(v)
        for v in re.findall(
            r'<td data-value="([^"]+)">[^<]*<span class="bar"', re.search(r'id="next-table".*?</table>', page, re.S)[0]
        )
    )
    assert float(rows[-1][-1]) == pytest.approx(top, abs=1e-6)
    assert (
        'data-id="lens_builds"' in page
        and 'data-status="not_shown"' in re.search(r'id="lens-claims".*?</ul>', page, re.S)[0]
    )


def test_a_model_with_too_many_heads_to_measure_says_so(client, monkeypatch):
    from attnlab.lessons.pipeline import heads as heads_lesson

    monkeypatch.setattr(heads_lesson, "MAX_PASSES", 3)  # the 2 × 2 checkpoint is over it
    got = client.get("/api/runs/poem", params={"text": TEXT}).json()
    assert got["heads"] is None and got["heads_absent"] == "too_big" and got["lens"] is not None
    page = client.get("/runs/poem", params={"text": TEXT, "lang": "en"}).text
    assert 'id="heads-absent"' in page and "too many layers × heads" in page and 'id="heads-table"' not in page
