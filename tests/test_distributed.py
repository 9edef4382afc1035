"""Training in several processes (DDP under torchrun) on the CPU with gloo: one model, the same as one process.

Three levels: the batch split alone (no processes); two processes started with torch.multiprocessing that
train through the real Trainer and are compared with a single process trained on their two batches
together; and `torchrun -m attnlab train` as a learner types it (rank 0 saves, generate recites, the
same seed gives the same files, Ctrl+C stops every rank and --resume continues).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.text import JINGYESI
from attnlab.train import distributed, get_batch, new_run, resume_run

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
ATTNLAB = [*TORCHRUN, "-m", "attnlab"]

# a tiny model on a text longer than its context, so the ranks' windows differ; B windows per rank
B = 3
SMALL = dict(layers=1, heads=2, d_model=16, context=8, steps=6, lr=1e-2, eval_iters=3, eval_interval=3)


def corpus(tmp_path: Path) -> str:
    path = tmp_path / "lines.txt"
    path.write_text("\n".join([JINGYESI, "床前明月光", "举头望明月", "低头思故乡"] * 6), encoding="utf-8")
    return str(path)


# --- the batch split (no processes) --------------------------------------------------------------------


def test_each_rank_takes_its_own_share_of_one_global_batch():
    stream = torch.arange(200)

    def draw(**kw):
        return get_batch(stream, 8, B, torch.Generator().manual_seed(7), **kw)

    (x0, y0), (x1, y1) = draw(rank=0, world_size=2), draw(rank=1, world_size=2)
    x_all, y_all = get_batch(stream, 8, 2 * B, torch.Generator().manual_seed(7))  # one process, 2B windows
    assert x0.shape == x1.shape == (B, 8)
    assert torch.equal(torch.cat([x0, x1]), x_all) and torch.equal(torch.cat([y0, y1]), y_all)
    assert not torch.equal(x0, x1)  # different windows on each rank
    assert torch.equal(y0[:, :-1], x0[:, 1:])  # still the next-token targets
    # the same seed and rank give the same batch: a run is reproducible
    assert torch.equal(draw(rank=1, world_size=2)[0], x1)
    # a text that fits one window is that window on every rank
    short = torch.arange(6)
    assert torch.equal(get_batch(short, 8, B, torch.Generator(), rank=1, world_size=2)[0], short[None, :-1])
    with pytest.raises(ValueError, match="rank"):
        get_batch(stream, 8, B, torch.Generator(), rank=2, world_size=2)


def test_outside_torchrun_the_helpers_change_nothing(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert not distributed.launched() and not distributed.active()
    assert distributed.rank() == 0 and distributed.world_size() == 1 and distributed.is_main()
    assert distributed.all_mean(0.1) == 0.1 and distributed.all_sum([0.1, 2]) == [0.1, 2]
    assert distributed.any_rank(True) and not distributed.any_rank(False)
    model = torch.nn.Linear(2, 2)
    assert distributed.wrap(model) is model
    seeds = {distributed.rank_seed(0, r, s) for r in range(4) for s in (0, 10)}
    assert len(seeds) == 8 and all(0 <= s < 2**63 for s in seeds)


def test_torchrun_refuses_a_device_it_cannot_share(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "0")
    with pytest.raises(ValueError, match="MPS"):
        distributed.setup("mps")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            distributed.setup("cuda")
    assert not torch.distributed.is_initialized()  # refused before joining any process group


# --- two processes through the real Trainer -----------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, text: str, out: str) -> None:
    """One torchrun-like process: the environment torchrun would set, then what `attnlab train` does."""
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank)
    )
    torch.set_num_threads(1)
    assert distributed.launched()
    device = distributed.setup("cpu")
    try:
        assert distributed.rank() == rank and distributed.world_size() == world
        facts = {
            "mean": distributed.all_mean(float(rank + 1)),
            "sum": distributed.all_sum([rank, 1.0]),
            "any": distributed.any_rank(rank == 1),
            "none": distributed.any_rank(False),
        }

        run = new_run(text, **SMALL, batch_size=B, device=device)
        assert isinstance(run.trainer.train_model, torch.nn.parallel.DistributedDataParallel)
        result = run.trainer.run()
        flat = torch.cat([p.detach().flatten() for p in run.model.parameters()])
        copies = [torch.empty_like(flat) for _ in range(world)]
        torch.distributed.all_gather(copies, flat)
        facts["same_weights"] = all(torch.equal(c, copies[0]) for c in copies)

        # one rank asks to stop: every rank stops after the same step; rank 0 saves; all resume from it
        half = new_run(text, **SMALL, batch_size=B, device=device)
        stopped = half.trainer.run(should_stop=lambda: rank == 1 and half.trainer.step >= 2)
        facts["stopped_at"] = stopped.step
        if distributed.is_main():
            half.save(Path(out) / "half")
        distributed.barrier()
        resumed = resume_run(Path(out) / "half", device=device)
        resumed.trainer.run()
        facts["resumed_equal"] = all(
            torch.equal(a, b) for a, b in zip(resumed.model.parameters(), run.model.parameters())
        )
        if distributed.is_main():
            save_file(
                {k: v.contiguous() for k, v in run.model.state_dict().items()}, str(Path(out) / "ddp.safetensors")
            )
            losses = [h["loss"] for h in result.history]
            (Path(out) / "facts.json").write_text(json.dumps({**facts, "losses": losses, "val": result.val_loss}))
        distributed.barrier()  # leave together, as `attnlab train` does: gloo may abort a rank whose peer left
    finally:
        distributed.teardown()


def test_two_processes_train_the_model_one_process_trains_on_both_batches(tmp_path):
    """DDP's averaged gradient of two B-window batches is the gradient of the 2B-window batch: so the two
    ranks end equal to each other and to one process trained with batch 2B (up to rounding)."""
    import torch.multiprocessing as mp

    text = corpus(tmp_path)
    mp.spawn(_worker, args=(2, _free_port(), text, str(tmp_path)), nprocs=2, join=True)
    facts = json.loads((tmp_path / "facts.json").read_text())
    assert facts["mean"] == 1.5 and facts["sum"] == [1.0, 2.0]
    assert facts["any"] is True and facts["none"] is False
    assert facts["same_weights"]  # the ranks saw different windows, yet hold one model
    assert facts["stopped_at"] == 2  # rank 1 asked, both stopped
    assert facts["resumed_equal"]  # stopped + saved + resumed under DDP == trained straight through

    one = new_run(text, **SMALL, batch_size=2 * B, device="cpu")
    single = one.trainer.run()
    ddp = load_file(str(tmp_path / "ddp.safetensors"))
    for name, w in one.model.state_dict().items():
        # the key bias's gradient is zero in exact arithmetic (softmax ignores a shift shared by all scores),
        # so what Adam makes of its rounding noise differs in the last digits; every other weight agrees to 1e-6
        atol = 1e-3 if name.endswith("W_K.bias") else 1e-6
        torch.testing.assert_close(ddp[name], w, atol=atol, rtol=0, msg=name)
    assert facts["losses"] == pytest.approx([h["loss"] for h in single.history], rel=1e-5)
    # validation: the ranks split the same eval_iters batches of B windows that one process would evaluate
    one.trainer.cfg = dataclasses.replace(one.trainer.cfg, batch_size=B)
    assert facts["val"] == pytest.approx(one.trainer.estimate_val_loss(), rel=1e-5)
    assert single.val_loss is not None


# --- torchrun -m attnlab train, as typed ---------------------------------------------------------------


def torchrun_train(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ATTNLAB, "train", *args, "--device", "cpu", "--lang", "en"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout,
    )


def whole(stderr: str) -> str:
    """Every rank's own lines come before torchrun's summary: keep both ends of a long stderr."""
    return stderr if len(stderr) <= 12000 else stderr[:6000] + "\n[...]\n" + stderr[-6000:]


def test_torchrun_trains_one_model_rank_0_saves_it_and_generate_recites(tmp_path):
    first = torchrun_train("--corpus", "poem", "--out", str(tmp_path / "a" / "ck"))
    assert first.returncode == 0, whole(first.stderr)
    assert first.stdout.count("saved ") == 1 and "step 60/60" in first.stdout  # rank 0 alone reports
    assert first.stderr.count("corpus poem:") == 1
    assert "DDP, 2 processes × batch 12" in " ".join(first.stderr.split())  # rich wraps lines at 80 columns
    assert os.listdir(tmp_path / "a") == ["ck"]  # one checkpoint, no temporary leftovers
    assert sorted(os.listdir(tmp_path / "a" / "ck"))[:3] == ["config.json", "model.safetensors", "tokenizer.json"]

    generated = CliRunner().invoke(
        app, ["generate", "--checkpoint", str(tmp_path / "a" / "ck"), "--prompt", "床前", "--greedy"]
    )  # loads the checkpoint unchanged: plain GPT weights
    assert generated.exit_code == 0, generated.output
    assert generated.stdout == "床前明月光\n"

    # the poem is one window, so both ranks hold the same batch and DDP's average of two equal gradients is
    # that gradient: the checkpoint is bit for bit the single-process one
    single = new_run("poem", device="cpu")
    single.trainer.run()
    saved = load_file(str(tmp_path / "a" / "ck" / "model.safetensors"))
    assert all(torch.equal(saved[k], v) for k, v in single.model.state_dict().items() if k in saved)

    again = torchrun_train("--corpus", "poem", "--out", str(tmp_path / "b" / "ck"))
    assert again.returncode == 0, whole(again.stderr)
    for name in os.listdir(tmp_path / "a" / "ck"):  # the same seed: the same files, byte for byte
        assert (tmp_path / "a" / "ck" / name).read_bytes() == (tmp_path / "b" / "ck" / name).read_bytes(), name


def test_ctrl_c_stops_every_rank_rank_0_saves_and_resume_continues(tmp_path):
    out = tmp_path / "ck"
    # a new session, so the signal goes to torchrun and both ranks, as a terminal's Ctrl+C does
    proc = subprocess.Popen(
        [
            *ATTNLAB,
            "train",
            "--corpus",
            corpus(tmp_path),  # a file: a built-in text stops at 5000 steps, which a fast machine may finish
            "--layers",
            "1",
            "--heads",
            "2",
            "--d-model",
            "16",
            "--context",
            "8",
            "--steps",
            "200000",
            "--device",
            "cpu",
            "--out",
            str(out),
            "--lang",
            "en",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        start_new_session=True,
    )
    try:
        for line in proc.stderr:  # printed once every rank catches Ctrl+C
            if "Ctrl+C stops" in line:
                break
        assert proc.poll() is None, "torchrun ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        stdout, rest = proc.communicate(timeout=180)  # no rank left waiting for another
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # torchrun itself reports the signal with a non-zero status; the ranks stopped after a step and saved
    assert stdout.count("saved ") == 1 and "stopped early" in stdout, stdout + whole(rest)
    step = json.loads((out / "config.json").read_text(encoding="utf-8"))["step"]
    assert 0 < step < 200_000

    resumed = torchrun_train("--resume", "--steps", str(step + 3), "--out", str(out))
    assert resumed.returncode == 0, whole(resumed.stderr)
    assert f"step {step + 3}/{step + 3}" in resumed.stdout
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["step"] == step + 3
