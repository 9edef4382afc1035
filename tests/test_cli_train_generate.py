"""`attnlab train` and `attnlab generate`: memorize and recite, explain, resume, and refuse bad input clearly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.text import JINGYESI

runner = CliRunner()


pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads


def attnlab(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result


@pytest.fixture(scope="module")
def poem(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("poem") / "ckpt"
    result = attnlab("train", "--corpus", "poem", "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_train_then_generate_recites_the_line_as_commands(tmp_path):
    """The issue's test, as a learner types it: two separate processes."""
    exe = [str(Path(sys.executable).with_name("attnlab"))]  # the installed console script
    if not Path(exe[0]).exists():
        exe = [sys.executable, "-c", "from attnlab.cli import app; app()"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "poem"
    trained = subprocess.run(
        [*exe, "train", "--corpus", "poem", "--out", str(out), "--lang", "en"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert trained.returncode == 0, trained.stderr
    assert "loss" in trained.stderr and "p(光|床前明月)" in trained.stderr  # the progress bar's fields
    assert sorted(os.listdir(out))[:3] == ["config.json", "model.safetensors", "tokenizer.json"]
    generated = subprocess.run(
        [*exe, "generate", "--checkpoint", str(out), "--prompt", "床前", "--greedy"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert generated.returncode == 0, generated.stderr
    assert generated.stdout == "床前明月光\n"


def test_jingyesi_is_recited_from_chuang(tmp_path):
    assert attnlab("train", "--corpus", "jingyesi", "--out", tmp_path / "j").exit_code == 0
    result = attnlab("generate", "--checkpoint", tmp_path / "j", "--prompt", "床", "--greedy")
    assert result.exit_code == 0 and result.stdout.strip() == JINGYESI


def test_explain_shows_every_step(poem):
    result = attnlab("generate", "--checkpoint", poem, "--prompt", "床前", "--greedy", "--explain", "--lang", "en")
    assert result.exit_code == 0
    out = result.stdout
    for mark in ("① text → ids", "② ids → embedding", "E[id]", "③ attention", "④ the next token", "⑥ generation"):
        assert mark in out
    assert "layer 2 · head 2" in out  # poem-tiny: 2 layers x 2 heads
    assert out.rstrip().endswith("床前明月光")


def test_seeded_sampling_repeats(poem):
    runs = [
        attnlab(
            "generate",
            "--checkpoint",
            poem,
            "--prompt",
            "床",
            "--temperature",
            "3",
            "--seed",
            "5",
            "--max-new-tokens",
            "12",
        ).stdout
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and runs[0].startswith("床")


def test_long_prompt_is_cropped_and_said_once(poem):
    result = attnlab(
        "generate", "--checkpoint", poem, "--prompt", "床前明月光" * 2, "--max-new-tokens", "5", "--greedy"
    )
    assert result.exit_code == 0
    assert result.stderr.count("longer than the context") == 1
    assert "the model reads only its last 8" in result.stderr


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--temperature", "-1", "--temperature must be >= 0"),
        ("--top-p", "0", "--top-p must be in (0, 1]"),
        ("--top-p", "1.5", "--top-p must be in (0, 1]"),
        ("--top-k", "0", "--top-k must be >= 1"),
        ("--max-new-tokens", "0", "--max-new-tokens"),
        ("--device", "tpu", "--device must be one of"),
    ],
)
def test_generate_refuses_out_of_range_options(poem, option, value, message):
    result = attnlab("generate", "--checkpoint", poem, "--prompt", "床前", option, value)
    assert result.exit_code != 0
    assert message in result.output


def test_generate_names_unseen_characters(poem):
    result = attnlab("generate", "--checkpoint", poem, "--prompt", "床前春风")
    assert result.exit_code == 2
    assert "'春风'" in result.stderr and "never saw" in result.stderr


def test_generate_with_a_missing_or_corrupt_checkpoint(poem, tmp_path):
    result = attnlab("generate", "--checkpoint", tmp_path / "nothing", "--prompt", "床")
    assert result.exit_code == 2 and "no checkpoint at" in result.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in poem.iterdir():
        data = f.read_bytes()
        (broken / f.name).write_bytes(data[: len(data) - 64] if f.name == "model.safetensors" else data)
    result = attnlab("generate", "--checkpoint", broken, "--prompt", "床")
    assert result.exit_code == 2 and "model.safetensors is corrupt or truncated" in result.stderr


def test_resume_continues_to_more_steps(tmp_path):
    out = tmp_path / "ck"
    assert attnlab("train", "--corpus", "jingyesi", "--steps", "20", "--out", out).exit_code == 0
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["step"] == 20
    result = attnlab("train", "--resume", "--steps", "40", "--out", out, "--lang", "en")
    assert result.exit_code == 0, result.output
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["step"] == 40
    assert "step 40/40" in result.stdout
    again = attnlab("train", "--resume", "--steps", "40", "--out", out)
    assert again.exit_code == 2 and "already trained 40 steps" in again.stderr
    sized = attnlab("train", "--resume", "--steps", "50", "--layers", "3", "--out", out)
    assert sized.exit_code == 2 and "keeps the checkpoint's model" in sized.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--corpus", "no/such/file.txt"], "neither a built-in text"),
        (["--tokenizer", "words"], "--tokenizer must be char or bpe"),
        (["--heads", "3"], "divisible"),
        (["--lr", "0"], "--lr must be in (0, 1]"),
        (["--steps", "0"], "--steps"),
        (["--device", "tpu"], "--device must be one of"),
    ],
)
def test_train_refuses_bad_input(tmp_path, args, message):
    result = attnlab("train", "--out", tmp_path / "ck", *args)
    assert result.exit_code != 0
    assert message in result.output
    assert not (tmp_path / "ck").exists()


def test_train_bounds_steps_on_a_built_in_text_as_the_web_api_publishes(tmp_path):
    from attnlab.web.app import create_app

    steps = create_app().openapi()["components"]["schemas"]["TrainRequest"]["properties"]["steps"]
    (most,) = [int(s["maximum"]) for s in steps["anyOf"] if "maximum" in s]  # what POST /api/train publishes
    for corpus, asked in (("poem", most + 1), ("jingyesi", 10**23)):
        result = attnlab("train", "--corpus", corpus, "--steps", asked, "--out", tmp_path / corpus)
        assert result.exit_code == 2 and result.stderr.strip().count("\n") == 0, result.output
        assert f"--steps must be a whole number from 1 to {most}" in result.stderr and str(asked) in result.stderr
        assert not (tmp_path / corpus).exists()
    out = tmp_path / "ck"
    assert attnlab("train", "--corpus", "jingyesi", "--steps", "2", "--out", out).exit_code == 0
    again = attnlab("train", "--resume", "--steps", most + 1, "--out", out)  # the checkpoint's text is built in
    assert again.exit_code == 2 and f"from 1 to {most}" in again.stderr
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["step"] == 2
    shown = " ".join(re.sub(r"[│╭╮╰╯─]", " ", attnlab("train", "--help").output).split())  # rich's panel, unboxed
    assert f"at most {most} for poem and jingyesi" in shown


def test_train_never_overwrites_a_foreign_directory(tmp_path):
    (tmp_path / "mine.txt").write_text("keep me", encoding="utf-8")
    result = attnlab("train", "--corpus", "poem", "--steps", "2", "--out", tmp_path)
    assert result.exit_code != 0 and "not an attnlab checkpoint" in result.output
    assert (tmp_path / "mine.txt").read_text(encoding="utf-8") == "keep me"


def test_resume_without_a_checkpoint(tmp_path):
    result = attnlab("train", "--resume", "--out", tmp_path / "none")
    assert result.exit_code == 2 and "no checkpoint at" in result.stderr


def test_ctrl_c_stops_saves_and_resumes(tmp_path):
    import signal

    exe = str(Path(sys.executable).with_name("attnlab"))
    if not Path(exe).exists():
        reason = "the attnlab console script is not installed next to this Python"
        if os.environ.get("CI") == "true":  # CI installs the package, so the script must be there
            pytest.fail(reason)
        pytest.skip(reason)
    out = tmp_path / "ck"
    proc = subprocess.Popen(
        [exe, "train", "--corpus", "jingyesi", "--steps", "5000", "--out", str(out), "--lang", "en"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        for line in proc.stderr:  # the hint is printed once Ctrl+C is caught
            if "Ctrl+C stops" in line:
                break
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "stopped early" in stdout
    step = json.loads((out / "config.json").read_text(encoding="utf-8"))["step"]
    assert 0 < step < 5000  # 5000: the most a built-in text trains for (train.run.MAX_STEPS)
    resumed = attnlab("train", "--resume", "--steps", str(step + 5), "--out", out, "--lang", "en")
    assert resumed.exit_code == 0 and f"step {step + 5}/{step + 5}" in resumed.stdout


@pytest.mark.parametrize(
    "sizes",
    [
        dict(d_model=48, n_heads=4, n_layers=3),
        dict(d_model=32, n_layers=1, positions="sinusoidal"),
        dict(d_model=64, n_layers=5, context_length=16, positions="rope"),
    ],
)
@pytest.mark.parametrize("build_to_count", [0, 10**9], ids=["meta", "built"])
def test_size_estimate_counts_what_torch_builds(sizes, build_to_count, monkeypatch):
    """The estimate equals the parameters and buffers of the real model, counted on the meta device (large
    models) or by building the one- and two-block models (small ones)."""
    from attnlab.models import GPT, preset
    from attnlab.train import size as size_module
    from attnlab.train.run import estimate_size

    monkeypatch.setattr(size_module, "BUILD_TO_COUNT", build_to_count)
    cfg = preset("poem-tiny", vocab_size=11, **sizes)
    model = GPT(cfg)
    before = torch.random.get_rng_state()
    size = estimate_size(cfg)
    assert torch.equal(torch.random.get_rng_state(), before)  # counting draws nothing from the caller's stream
    assert size.parameters == sum(p.numel() for p in model.parameters())
    assert size.buffers == sum(b.numel() for b in model.buffers())
    assert size.train_bytes >= 16 * size.parameters  # weights, grads and AdamW's two moments in float32


@pytest.mark.parametrize(
    "args, message",
    [
        (["--d-model", "100000"], "too big to train here"),
        (["--context", "100000"], "too big to train here"),
        (["--layers", "100000"], "--layers 100000 is too many: the limit is 256"),
        (["--seed", "99999999999999999999999"], "--seed must be a whole number from 0 to 2147483647"),
    ],
)
def test_train_refuses_sizes_it_cannot_hold(tmp_path, args, message):
    result = attnlab("train", "--corpus", "poem", "--steps", "1", "--out", tmp_path / "ck", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "limit" in result.stderr or "--seed" in args
    assert not (tmp_path / "ck").exists()


def test_train_says_out_of_memory_in_one_line(tmp_path, monkeypatch):
    import attnlab.commands.train as train_cmd

    def oom(*_):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory\nmore")

    monkeypatch.setattr(train_cmd, "_train", oom)
    result = attnlab("train", "--corpus", "poem", "--steps", "1", "--out", tmp_path / "ck")
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "can't allocate memory" in result.stderr
    assert "smaller model" in result.stderr


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--seed", "99999999999999999999999", "--seed must be a whole number from 0 to 2147483647"),
        ("--lang", "fr", "--lang must be zh or en, got 'fr'"),
    ],
)
def test_generate_refuses_bad_seed_and_language(poem, option, value, message):
    result = attnlab("generate", "--checkpoint", poem, "--prompt", "床前", option, value)
    assert result.exit_code == 2
    assert message in result.stderr


def test_explain_marks_kept_and_filtered_without_colour(poem):
    """Piped (no colour, no bold): every candidate row says ✓ kept or × and the filter, with p and p′."""
    from attnlab.sampling import generate as run_generation
    from attnlab.sampling import prob_text
    from attnlab.train import load_checkpoint

    args = ("--prompt", "床", "--top-k", "2", "--temperature", "2", "--seed", "1", "-n", "3")
    result = runner.invoke(
        app,
        ["generate", "--checkpoint", str(poem), *args, "--explain", "--lang", "en"],
        env={"COLUMNS": "80", "NO_COLOR": "1"},
        color=False,
    )
    assert result.exit_code == 0, result.output
    assert "\x1b[" not in result.stdout
    rows = [line for line in result.stdout.splitlines() if "│" in line and ("✓" in line or "×" in line)]
    ckpt = load_checkpoint(poem)
    gen = run_generation(
        ckpt.model, ckpt.tokenizer, "床", max_new_tokens=3, temperature=2, top_k=2, seed=1, n_candidates=5
    )
    expected = [(c, c.id == step.chosen.id) for step in gen.steps for c in step.candidates]
    assert len(rows) == len(expected)
    for line, (c, chosen) in zip(rows, expected):
        cells = [cell.strip() for cell in line.split("│")]
        assert cells[1] == c.token and cells[2] == prob_text(c.prob) and cells[3] == prob_text(c.filtered_prob)
        assert cells[4].startswith("✓ kept" if c.kept else "× cut by top-k")
        assert ("← chosen" in cells[4]) == chosen
    assert sum("✓ kept" in r for r in rows) == 2 * len(gen.steps)  # top-k 2: two survive each step
    assert all(cell != "0" for r in rows if "✓" in r for cell in r.split("│")[2:4])  # a kept p is never "0"


def test_explain_head_titles_fit_80_columns(poem):
    result = runner.invoke(
        app,
        ["generate", "--checkpoint", str(poem), "--prompt", "床", "--greedy", "--explain", "-n", "1"],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    for layer in (1, 2):
        for head in (1, 2):
            assert f"第 {layer} 层 · 第 {head} 个头" in lines
    assert max(len(line) for line in lines) <= 80
