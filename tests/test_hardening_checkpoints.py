"""Issue 14, items 9-11: checkpoints survive crashes, signals and full disks, and hostile or damaged ones are
refused in one line before anything big is allocated."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from safetensors import SafetensorError
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.io import atomic
from attnlab.train import CheckpointError, load_checkpoint, new_run, resume_run
from attnlab.train.storage import checkpoint as checkpoint_module
from attnlab.train.storage.integrity import sha256_file

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.slow,
]  # trains or starts processes; tiny models: see attnlab.io.threads

runner = CliRunner()


def attnlab(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory) -> tuple[Path, Path]:
    """The same tiny poem run saved after 1 step (A) and after 3 steps (B): every file differs."""
    root = tmp_path_factory.mktemp("saved")
    run = new_run("poem", steps=3, seed=0, device="cpu")
    run.trainer.run(should_stop=lambda: run.trainer.step >= 1)
    a = run.save(root / "a")
    run.trainer.run()
    b = run.save(root / "b")
    return a, b


# --- 9. a crash at any point of a save leaves the old checkpoint or the new one, whole --------------------

CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from attnlab.io import atomic

    out, source, crash_at = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

    def step(name, folder):
        print(name, flush=True)
        if name == crash_at:
            if name == "retired":  # die half-way through removing the old folder
                next(iter(sorted(folder.iterdir()))).unlink()
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9: no cleanup of any kind runs

    atomic._after_step = step
    with atomic.atomic_dir(out) as tmp:
        for i, f in enumerate(sorted(source.iterdir())):
            (tmp / f.name).write_bytes(f.read_bytes())
            if i == 0:
                step("writing", tmp)  # one file of the new checkpoint written, the others not yet
""")
REPLACE_STEPS = ["created", "writing", "written", "sealed", "moved-aside", "published", "retired"]
FIRST_STEPS = ["created", "writing", "written", "sealed", "published"]


def save_in_child(out: Path, source: Path, crash_at: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(out), str(source), crash_at],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_the_save_passes_every_crash_point_in_order(tmp_path, two_checkpoints):
    a, b = two_checkpoints
    out = tmp_path / "ck"
    first = save_in_child(out, a, crash_at="never")
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == FIRST_STEPS
    again = save_in_child(out, b, crash_at="never")
    assert again.stdout.split() == REPLACE_STEPS
    assert files(out) == files(b) and os.listdir(tmp_path) == ["ck"]


@pytest.mark.parametrize("crash_at", REPLACE_STEPS)
def test_kill_9_while_replacing_a_checkpoint(tmp_path, two_checkpoints, crash_at):
    a, b = two_checkpoints
    out = tmp_path / "ck"
    shutil.copytree(a, out)
    crashed = save_in_child(out, b, crash_at)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    # until the new folder is complete the old one stays; once the old one is moved aside, the new one wins
    expected = a if REPLACE_STEPS.index(crash_at) < REPLACE_STEPS.index("moved-aside") else b
    ckpt = load_checkpoint(out)  # the next reader recovers
    assert ckpt.meta["step"] == json.loads((expected / "config.json").read_text(encoding="utf-8"))["step"]
    assert files(out) == files(expected)
    assert os.listdir(tmp_path) == ["ck"]  # no .tmp/.new/.old/.del folder left
    run = new_run("poem", steps=1, device="cpu")
    run.trainer.run()
    run.save(out)  # and the next save works, leaving nothing beside it
    assert load_checkpoint(out).meta["step"] == 1 and os.listdir(tmp_path) == ["ck"]


@pytest.mark.parametrize("crash_at", FIRST_STEPS)
def test_kill_9_while_writing_the_first_checkpoint(tmp_path, two_checkpoints, crash_at):
    _, b = two_checkpoints
    out = tmp_path / "ck"
    crashed = save_in_child(out, b, crash_at)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    if FIRST_STEPS.index(crash_at) < FIRST_STEPS.index("sealed"):
        with pytest.raises(CheckpointError, match="no checkpoint at"):
            load_checkpoint(out)
    else:  # complete: rolled forward
        assert files(load_checkpoint(out).path) == files(b)
    assert os.listdir(tmp_path) == (["ck"] if out.exists() else [])


def test_leftovers_of_an_older_attnlab_are_recovered(tmp_path, two_checkpoints):
    """The issue's case: killed between the two renames of the old code, only `.ck.old-*` remained."""
    a, _ = two_checkpoints
    shutil.copytree(a, tmp_path / ".ck.old-1a2b3c4d")
    (tmp_path / ".ck.tmp-5e6f7a8b").mkdir()  # a half-written one
    assert files(load_checkpoint(tmp_path / "ck").path) == files(a)
    assert os.listdir(tmp_path) == ["ck"]


def test_a_save_in_progress_is_left_alone(tmp_path, two_checkpoints):
    """While a save runs (here paused in a thread, half written), what lies beside the target is its work."""
    import threading

    a, b = two_checkpoints
    out = tmp_path / "ck"
    shutil.copytree(a, out)
    writing, finish = threading.Event(), threading.Event()

    def save():
        with atomic.atomic_dir(out) as tmp:
            shutil.copy(b / "config.json", tmp / "config.json")
            writing.set()
            finish.wait()
            for f in b.iterdir():
                shutil.copy(f, tmp / f.name)

    saver = threading.Thread(target=save)
    saver.start()
    try:
        writing.wait()
        half = [p for p in tmp_path.iterdir() if p.name != "ck"]
        assert len(half) == 1 and ".ck.tmp-" in half[0].name
        assert not atomic.recover(out)
        assert files(load_checkpoint(out).path) == files(a) and half[0].is_dir()  # readers get the old one
    finally:
        finish.set()
        saver.join()
    assert files(out) == files(b) and os.listdir(tmp_path) == ["ck"]


def test_a_leftover_whose_process_id_is_taken_again_is_recovered(tmp_path, two_checkpoints):
    """A container restarted after a crash gives the same small process ids again: the lock, not the id, says
    whether a save still runs."""
    a, _ = two_checkpoints
    shutil.copytree(a, tmp_path / f".ck.old-{os.getpid()}-0123abcd")  # "alive" by its id, but nobody saves
    assert atomic.recover(tmp_path / "ck")
    assert files(tmp_path / "ck") == files(a) and os.listdir(tmp_path) == ["ck"]


# --- 10. runs are not lost ---------------------------------------------------------------------------------


def console_script() -> str:
    exe = str(Path(sys.executable).with_name("attnlab"))
    if not Path(exe).exists():
        reason = "the attnlab console script is not installed next to this Python"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return exe


def test_sigterm_stops_after_the_step_and_saves(tmp_path):
    out = tmp_path / "ck"
    proc = subprocess.Popen(
        [console_script(), "train", "--corpus", "jingyesi", "--steps", "5000", "--out", str(out), "--lang", "en"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        for line in proc.stderr:  # printed once the signals are caught
            if "Ctrl+C stops" in line:
                break
        proc.terminate()  # SIGTERM, as kill, timeout and systemd send
        stdout, _ = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert "stopped early" in stdout
    step = json.loads((out / "config.json").read_text(encoding="utf-8"))["step"]
    assert 0 < step < 5000  # 5000: the most a built-in text trains for (train.run.MAX_STEPS)
    load_checkpoint(out)


@pytest.mark.parametrize(
    "error",
    [
        OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
        # what safetensors 0.8 raises when the disk fills (measured on a full 64 kB tmpfs)
        SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)"),
    ],
    ids=["OSError", "SafetensorError"],
)
def test_a_full_disk_is_one_line_and_changes_nothing(tmp_path, monkeypatch, error):
    out = tmp_path / "ck"
    assert attnlab("train", "--corpus", "poem", "--steps", "2", "--out", out).exit_code == 0
    before = files(out)

    def full(*args, **kwargs):
        raise error

    monkeypatch.setattr(checkpoint_module, "save_model", full)
    result = attnlab("train", "--corpus", "poem", "--steps", "3", "--out", out)
    assert result.exit_code == 1
    said = result.stderr.strip().splitlines()[-1]  # after the progress lines, the one line of error
    assert said.startswith("attnlab train: could not write the checkpoint") and "No space left on device" in said
    assert files(out) == before and os.listdir(tmp_path) == ["ck"]


@pytest.mark.parametrize("kind", ["foreign folder", "file"])
def test_a_bad_out_is_refused_before_training(tmp_path, monkeypatch, kind):
    import attnlab.train as train_package

    out = tmp_path / "mine"
    if kind == "file":
        out.write_text("keep me", encoding="utf-8")
    else:
        out.mkdir()
        (out / "notes.txt").write_text("keep me", encoding="utf-8")

    def must_not_train(*args, **kwargs):
        raise AssertionError("a run was built although --out cannot take its checkpoint")

    monkeypatch.setattr(train_package, "new_run", must_not_train)
    result = attnlab("train", "--corpus", "poem", "--out", out)
    assert result.exit_code == 2, result.output
    assert ("is not an attnlab checkpoint" if kind != "file" else "is a file") in result.stderr
    assert (out if kind == "file" else out / "notes.txt").read_text(encoding="utf-8") == "keep me"


def test_saving_again_keeps_the_users_other_files(tmp_path):
    out = tmp_path / "ck"
    assert attnlab("train", "--corpus", "jingyesi", "--steps", "2", "--out", out).exit_code == 0
    (out / "notes.txt").write_text("我的笔记", encoding="utf-8")
    (out / "samples").mkdir()
    (out / "samples" / "1.txt").write_text("床前明月光", encoding="utf-8")
    assert attnlab("train", "--corpus", "jingyesi", "--steps", "3", "--out", out).exit_code == 0  # retrain
    assert attnlab("train", "--resume", "--steps", "4", "--out", out).exit_code == 0  # and resume
    assert (out / "notes.txt").read_text(encoding="utf-8") == "我的笔记"
    assert (out / "samples" / "1.txt").read_text(encoding="utf-8") == "床前明月光"
    assert load_checkpoint(out).meta["step"] == 4


# --- 11. corrupt or hostile checkpoints ----------------------------------------------------------------------


def tamper(src: Path, dest: Path, *, model=None, top=None, write=None, rehash=True) -> Path:
    """A copy of a checkpoint with config.json (model fields, top-level fields) or files changed; `rehash`
    records the new checksums too, as someone editing it on purpose would."""
    shutil.copytree(src, dest)
    for name, data in (write or {}).items():
        (dest / name).write_bytes(data)
    meta = json.loads((dest / "config.json").read_text(encoding="utf-8"))
    meta["model"].update(model or {})
    meta.update(top or {})
    if rehash and isinstance(meta.get("sha256"), dict):
        meta["sha256"] = {name: sha256_file(dest / name) for name in meta["sha256"]}
    (dest / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    return dest


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(top={"format_version": "x"}), "format_version must be a whole number"),
        (dict(top={"format_version": None}), "format_version must be a whole number"),
        (dict(model={"d_model": 10**6}), "more than attnlab trains"),
        (dict(model={"context_length": 10**9}), "more than attnlab trains"),
        (dict(model={"n_layers": 10**9}), "layers are more than attnlab trains"),
        (dict(model={"vocab_size": 10**12}), "more than attnlab trains"),
        (dict(model={"n_layers": 200}), "the model needs at least"),  # allowed, but far more than the file holds
        (dict(top={"sha256": [1]}), "sha256 must be a dict"),
        (dict(top={"corpus": "poem\x1b[2J"}), "corpus must be a printable name"),
    ],
    ids=["version-x", "version-null", "d_model", "context", "layers", "vocab", "bigger", "sha256", "corpus"],
)
def test_hostile_configs_are_refused_before_allocating(tmp_path, two_checkpoints, monkeypatch, change, message):
    _, b = two_checkpoints
    bad = tamper(b, tmp_path / "bad", **change)

    def allocate(config):
        raise AssertionError(f"a model was allocated for {config}")

    monkeypatch.setattr(checkpoint_module, "GPT", allocate)  # the loader's only real allocation
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(bad)
    result = attnlab("generate", "--checkpoint", bad, "--prompt", "床")
    assert result.exit_code == 2 and result.stderr.strip().count("\n") == 0 and message in result.stderr


@pytest.mark.parametrize(
    "sizes",
    [
        dict(),
        dict(tie_weights=True),
        dict(positions="rope", n_layers=3),
        dict(positions="sinusoidal", d_ff=40, bias=False),
        dict(d_model=64, n_heads=4),
        dict(ablations=("ffn-only",)),
        dict(ablations=("attention-only",)),
        dict(ablations=("one-head", "no-positions")),
    ],
)
def test_the_parameter_floor_is_a_close_lower_bound_of_what_torch_builds(sizes):
    """The loader's size check counts by formula; the real model has at least that many parameters (and at most
    what biases and norms add)."""
    from attnlab.models import GPT, preset
    from attnlab.train.size import parameter_floor

    cfg = preset("poem-tiny", vocab_size=11, **sizes)
    real = sum(p.numel() for p in GPT(cfg).parameters())
    assert parameter_floor(cfg) <= real <= 1.1 * parameter_floor(cfg)


@pytest.mark.parametrize(
    "state", [[], {"step": "x"}, {"step": 1, "param_groups": 3}, {"step": 1, "param_groups": [{}]}]
)
def test_a_broken_train_state_is_refused_on_resume(tmp_path, two_checkpoints, state):
    _, b = two_checkpoints
    bad = tamper(b, tmp_path / "bad", write={"train_state.json": json.dumps(state).encode()})
    result = attnlab("train", "--resume", "--steps", "9", "--out", bad)
    assert result.exit_code == 2, result.output
    assert "training state" in result.stderr and result.stderr.strip().count("\n") == 0


def flip_a_weight_bit(data: bytes) -> bytes:
    header = 8 + int.from_bytes(data[:8], "little")  # safetensors: header length, JSON header, tensor bytes
    i = header + (len(data) - header) // 2
    return data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1 :]


def permute_tokenizer(data: bytes) -> bytes:
    tok = json.loads(data)
    tok["chars"][0], tok["chars"][1] = tok["chars"][1], tok["chars"][0]  # same size: loads and runs, wrongly
    return json.dumps(tok, ensure_ascii=False).encode()


@pytest.mark.parametrize(
    "name, damage", [("model.safetensors", flip_a_weight_bit), ("tokenizer.json", permute_tokenizer)]
)
def test_a_changed_file_is_caught_by_its_checksum(tmp_path, two_checkpoints, name, damage):
    _, b = two_checkpoints
    bad = tamper(b, tmp_path / "bad", write={name: damage((b / name).read_bytes())}, rehash=False)
    with pytest.raises(CheckpointError, match=f"{name} does not match the sha256 recorded"):
        load_checkpoint(bad)
    result = attnlab("generate", "--checkpoint", bad, "--prompt", "床", "--greedy")
    assert result.exit_code == 2 and "does not match the sha256" in result.stderr


def test_a_checkpoint_without_checksums_loads_with_a_warning(tmp_path, two_checkpoints):
    _, b = two_checkpoints
    old = tamper(b, tmp_path / "old", rehash=False)
    meta = json.loads((old / "config.json").read_text(encoding="utf-8"))
    del meta["sha256"]  # as attnlab wrote them before checksums
    (old / "config.json").write_text(json.dumps(meta), encoding="utf-8")
    assert "no checksums" in load_checkpoint(old).warnings[0]
    result = attnlab("generate", "--checkpoint", old, "--prompt", "床", "--greedy")
    assert result.exit_code == 0 and "warning" in result.stderr and result.stdout.startswith("床")
    assert load_checkpoint(b).warnings == []


@pytest.fixture
def corpus_run(tmp_path) -> tuple[Path, Path]:
    corpus = tmp_path / "lines.txt"
    corpus.write_text("床前明月光\n疑是地上霜\n举头望明月\n低头思故乡\n" * 4, encoding="utf-8")
    out = tmp_path / "ck"
    result = attnlab(
        "train",
        "--corpus",
        corpus,
        "--steps",
        "2",
        "--layers",
        "1",
        "--d-model",
        "16",
        "--heads",
        "2",
        "--context",
        "8",
        "--batch-size",
        "2",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    return corpus, out


def test_resume_never_reads_a_corpus_the_checkpoint_merely_names(tmp_path, corpus_run):
    _, out = corpus_run
    secret = tmp_path / "secret.txt"
    secret.write_text("口令甲乙丙丁", encoding="utf-8")  # characters the model never saw
    for top in ({"corpus": str(secret)}, {"corpus": str(secret), "corpus_sha256": None}):
        bad = tamper(out, tmp_path / f"bad{len(top)}", top=top)
        result = attnlab("train", "--resume", "--steps", "4", "--out", bad)
        assert result.exit_code == 2, result.output
        assert "pass --corpus" in result.stderr
        assert not set("口令甲乙丙丁") & set(result.output)  # nothing of the file is shown
    assert resume_run(tmp_path / "bad1", corpus="poem", steps=4, device="cpu").corpus == "poem"


def test_resume_refuses_a_corpus_that_changed_unless_named(corpus_run):
    corpus, out = corpus_run
    assert resume_run(out, steps=3, device="cpu").corpus == str(corpus.resolve())  # unchanged: found by itself
    corpus.write_text(corpus.read_text(encoding="utf-8") + "床前明月光\n", encoding="utf-8")
    result = attnlab("train", "--resume", "--steps", "3", "--out", out)
    assert result.exit_code == 2 and "is not the one" in result.stderr
    named = attnlab("train", "--resume", "--steps", "3", "--corpus", corpus, "--out", out)  # the user's choice
    assert named.exit_code == 0, named.output
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["corpus_sha256"] == sha256_file(corpus)
