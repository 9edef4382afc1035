"""Files the CLI opens and writes (issue 23, items 2 and 8): a corpus is checked before it is read and read
no further than its limit; `--out` is proven writable before training; `explain --plot` writes atomically."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnlab.cli import app

pytestmark = pytest.mark.slow  # starts processes

runner = CliRunner()
POEM = ["床前明月光，疑是地上霜。", "举头望明月，低头思故乡。"]


def attnlab(*args) -> object:
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def attnlab_process(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    """The real CLI in its own process, with its data memory capped at 1.5 GB: a regression that reads
    /dev/zero dies of MemoryError instead of eating the machine, and one that blocks fails at the timeout."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (1_500_000_000, 1_500_000_000))

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "attnlab", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        preexec_fn=cap,
    )


def within(seconds: float, fn, *args, **kwargs):
    """fn(*args, **kwargs) in a thread: its exception or result, or a failure if it blocks (a FIFO opened)."""
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 (handed back to the test)
            box["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn.__name__} blocked for {seconds} s"
    return box


def poems_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "poems"
    folder.mkdir()
    poem = [{"author": "李白", "title": "静夜思", "paragraphs": POEM}]
    (folder / "poet.tang.0.simplified.json").write_text(json.dumps(poem, ensure_ascii=False), encoding="utf-8")
    return folder


# ---------------------------------------------------------------------------------------------- corpus
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused_at_once_by_the_real_cli(tmp_path):
    done = attnlab_process("train", "--corpus", "/dev/zero", "--steps", "1", "--out", tmp_path / "ck")
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert "/dev/zero" in line and "not a regular file" in line
    assert not (tmp_path / "ck").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_being_opened_by_the_real_cli(tmp_path):
    fifo = tmp_path / "corpus.txt"
    os.mkfifo(fifo)
    done = attnlab_process("train", "--corpus", fifo, "--steps", "1", "--out", tmp_path / "ck")
    assert done.returncode == 2, done.stderr
    line = one_line(done.stderr)
    assert str(fifo) in line and "FIFO" in line


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_a_poetry_folder_is_named_not_skipped(tmp_path):
    from attnlab.train import new_run

    folder = poems_folder(tmp_path)
    os.mkfifo(folder / "poet.tang.1.simplified.json")
    box = within(60, new_run, str(folder), steps=1, device="cpu")
    assert isinstance(box.get("error"), ValueError), box
    assert "poet.tang.1.simplified.json" in str(box["error"]) and "FIFO" in str(box["error"])


def test_a_link_to_a_device_is_refused(tmp_path):
    link = tmp_path / "corpus.txt"
    link.symlink_to("/dev/null")
    result = attnlab("train", "--corpus", link, "--steps", "1", "--out", tmp_path / "ck")
    assert result.exit_code == 2
    assert str(link) in one_line(result.stderr) and "not a regular file" in result.stderr


def test_a_corpus_over_the_limit_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("床前明月光\n" * 200_000, encoding="utf-8")  # 3.2 MB
    result = attnlab("train", "--corpus", big, "--max-corpus-mb", "1", "--steps", "1", "--out", tmp_path / "ck")
    assert result.exit_code == 2
    line = one_line(result.stderr)
    assert str(big) in line and "1 MB" in line and "--max-corpus-mb" in line
    assert not (tmp_path / "ck").exists()


def test_a_poetry_folder_counts_all_its_files_against_the_limit(tmp_path):
    from attnlab.train.data import check_corpus

    folder = poems_folder(tmp_path)
    poem = [{"author": "李白", "title": "静夜思", "paragraphs": POEM}] * 10_000  # ~0.7 MB a file
    for i in (1, 2):
        (folder / f"poet.tang.{i}.simplified.json").write_text(json.dumps(poem, ensure_ascii=False), encoding="utf-8")
    assert check_corpus(str(folder), max_corpus_mb=10) > 1_000_000
    with pytest.raises(ValueError, match="over the 1 MB limit"):
        check_corpus(str(folder), max_corpus_mb=1)


def test_the_max_corpus_mb_option_is_checked():
    result = attnlab("train", "--corpus", "poem", "--max-corpus-mb", "0", "--out", "never")
    assert result.exit_code == 2 and "--max-corpus-mb must be a number of megabytes above 0" in result.output


def test_a_file_that_grows_while_read_stops_at_the_limit(tmp_path, monkeypatch):
    import attnlab.train.run as run_module

    grows = tmp_path / "grows.txt"
    grows.write_text("床前明月光\n", encoding="utf-8")
    checked = run_module.check_corpus

    def check_then_grow(*args, **kwargs):  # the file passes the check, then a writer appends 3 MB
        size = checked(*args, **kwargs)
        with open(grows, "a", encoding="utf-8") as f:
            f.write("疑是地上霜\n" * 200_000)
        return size

    monkeypatch.setattr(run_module, "check_corpus", check_then_grow)
    with pytest.raises(ValueError, match="grew past the 1 MB limit"):
        run_module.load_corpus(str(grows), max_corpus_mb=1)


@pytest.mark.parametrize("where", ["train_tokenizer", "token_data"])
def test_memory_error_on_the_corpus_blames_the_corpus_not_the_model(tmp_path, monkeypatch, where):
    import attnlab.train.run as run_module

    def out_of_memory(*args, **kwargs):
        raise MemoryError()

    if where == "train_tokenizer":
        monkeypatch.setattr(run_module, "train_tokenizer", out_of_memory)
    else:
        monkeypatch.setattr(run_module.Corpus, "token_data", out_of_memory)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("床前明月光\n", encoding="utf-8")
    result = attnlab("train", "--corpus", corpus, "--steps", "1", "--out", tmp_path / "ck")
    assert result.exit_code != 0
    line = one_line(result.stderr)
    assert "too big" in line and "--max-corpus-mb" in line and "smaller corpus" in line
    assert "smaller model" not in line


# ------------------------------------------------------------------------------------------------- out
@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc")
def test_out_in_proc_fails_before_training(tmp_path, monkeypatch):
    import attnlab.commands.train as train_cmd

    trained = []
    monkeypatch.setattr(train_cmd, "_train", lambda run, out: trained.append(out))
    result = attnlab("train", "--corpus", "poem", "--steps", "1", "--out", "/proc/attnlab-x")
    assert result.exit_code == 2
    line = one_line(result.stderr)
    assert "/proc/attnlab-x" in line and "training is lost" not in line
    assert trained == []


def test_the_writable_probe_leaves_nothing_behind(tmp_path):
    from attnlab.io.atomic import check_writable

    check_writable(tmp_path / "a" / "b" / "ck")
    assert [p.name for p in tmp_path.iterdir()] == ["a"]  # the folders above stay, as a save makes them
    assert list((tmp_path / "a" / "b").iterdir()) == []  # no probe left, and no `ck`
    (tmp_path / "ck").mkdir()
    check_writable(tmp_path / "ck")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "ck"]


def test_the_writable_probe_survives_another_rank_recovering_the_same_folder(tmp_path, monkeypatch):
    """torchrun's two ranks check one --out at once: one's recover() must not take the other's probe for a
    crashed save's leftover and remove it (CI saw `No such file or directory` from the probe)."""
    from attnlab.io import atomic

    out, real_fsync, seen = tmp_path / "b" / "ck", os.fsync, {}

    def other_rank_recovers(fd):  # called while the probe's file is open inside the probe folder
        if not seen:
            probe = next(p for p in out.parent.iterdir() if p.name.startswith(".ck.tmp-"))
            with atomic._saving_lock(out.parent, wait=False) as held:
                seen["locked"] = held is False  # the probe holds the saving lock, as a save does
            other = threading.Thread(target=atomic.recover, args=(out,))
            other.start()
            other.join(timeout=1.0)  # it waits for the lock (unbounded wait would hang the old code's test)
            seen["probe kept"], seen["other"] = probe.exists(), other
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", other_rank_recovers)
    atomic.check_writable(out)
    seen["other"].join()
    assert seen["locked"] and seen["probe kept"]
    assert list(out.parent.iterdir()) == []


def test_the_writable_probe_says_why_it_cannot(tmp_path):
    from attnlab.io.atomic import check_writable

    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(OSError):
        check_writable(tmp_path / "file" / "ck")


# ------------------------------------------------------------------------------------------------ plot
SQRT_DK = ["explain", "sqrt-dk", "--d-k", "8", "--n-samples", "200", "--n-keys", "8", "--lang", "en"]


def full_disk(monkeypatch) -> None:
    """matplotlib on a full disk: the file is opened (emptied), then writing it fails with ENOSPC."""
    from matplotlib.figure import Figure

    def savefig(self, fname, **kwargs):
        open(fname, "wb").close()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Figure, "savefig", savefig)


@pytest.mark.parametrize("before", [None, b"the old figure"])
def test_plot_on_a_full_disk_leaves_no_empty_file(tmp_path, monkeypatch, before):
    fig = tmp_path / "fig.png"
    if before is not None:
        fig.write_bytes(before)
    full_disk(monkeypatch)
    result = attnlab(*SQRT_DK, "--plot", fig)
    assert result.exit_code != 0
    line = one_line(result.stderr)
    assert str(fig) in line and os.strerror(errno.ENOSPC) in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if before is None else ["fig.png"])
    if before is not None:
        assert fig.read_bytes() == before


@pytest.mark.parametrize("name", ["fig.png", "fig.svg"])
def test_plot_replaces_the_file_whole_and_leaves_nothing_else(tmp_path, name):
    fig = tmp_path / name
    fig.write_bytes(b"old")
    result = attnlab(*SQRT_DK, "--plot", fig)
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.iterdir()] == [name]
    head = fig.read_bytes()[:64]
    assert head.startswith(b"\x89PNG") if name.endswith(".png") else b"<?xml" in head or b"<svg" in head


@pytest.mark.parametrize("topic", ["one-hot", "mlm", "break"])
def test_lessons_refuse_a_fifo_or_device_as_corpus_at_once(topic, tmp_path):
    """`attnlab explain TOPIC --corpus` takes the same checks as `train`: a FIFO would block the read forever,
    /dev/zero would never end."""
    from attnlab.lessons.common.params import ParamError
    from attnlab.lessons.explain import TOPICS

    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    for corpus in (str(fifo), "/dev/zero"):
        outcome = {}

        def call():
            try:
                TOPICS[topic].run(lang="en", corpus=corpus)
            except (ParamError, ValueError) as err:
                outcome["error"] = str(err)

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        worker.join(60)
        assert not worker.is_alive(), f"{topic} blocked on {corpus}"
        assert "error" in outcome and corpus in outcome["error"], outcome
