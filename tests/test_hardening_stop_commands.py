"""Every long command stops the same way on Ctrl+C and on SIGTERM (attnlab.commands.signals): it keeps what is done,
says so in one line and exits 130 or 143; and `scale` / `export-site` refuse what they cannot do in one line, before
any work: an --out that is a file, a budget that is not a number of minutes, a folder behind a link that loops.
The signals here are real ones, sent to this process's main thread while the command runs (the long work itself is replaced by a
step that sends the signal and waits for it)."""

from __future__ import annotations

import signal
import threading

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.commands.signals import Terminated, exit_code, terminating
from attnlab.lessons.scale import planning, sweep
from attnlab.train.run import load_corpus
from attnlab.web.export import site as export

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"),
    reason="signals are delivered to the main thread",
)


def signalled(signum):
    """A stand-in for a command's long work: it sends `signum` to this process and waits for it to arrive."""

    def work(*args, **kwargs):
        # to the main thread, where Python runs its handlers: sent to the process, the kernel may hand it to any
        # thread (torch's, a test lab's), and the main thread's wait would not be interrupted
        signal.pthread_kill(threading.main_thread().ident, signum)
        threading.Event().wait(60)  # the handler raises during the wait; it returns at once on a fast machine
        raise AssertionError(f"signal {signum} did not stop the command")

    return work


@pytest.fixture(autouse=True)
def ctrl_c_as_in_a_fresh_process():
    """Ctrl+C raises KeyboardInterrupt here as in the command's own process, whatever a library that an earlier
    test of this worker ran left as its SIGINT handler."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "abc.txt"
    path.write_text("床前明月光，疑是地上霜。举头望明月，低头思故乡。\n" * 400, encoding="utf-8")
    return path


def test_sigterm_raises_a_keyboard_interrupt_inside_the_block_only():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated) as caught, terminating():
        signalled(signal.SIGTERM)()
    assert isinstance(caught.value, KeyboardInterrupt) and exit_code(caught.value) == 143
    assert exit_code(KeyboardInterrupt()) == 130
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is put back after the block


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_scale_keeps_its_finished_runs_on_either_signal(text, tmp_path, monkeypatch, signum, code):
    monkeypatch.setattr(sweep, "train_point", signalled(signum))
    monkeypatch.setattr(planning, "step_seconds", lambda *a, **kw: dict.fromkeys(planning.LADDER, 1e-4))
    out = tmp_path / "s"
    got = CliRunner().invoke(app, ["scale", "--corpus", str(text), "--out", str(out), "--minutes", "1", "--lang", "en"])
    assert got.exit_code == code, got.output
    assert "0 finished runs are kept" in got.output and "Traceback" not in got.output
    assert (out / "plan.json").exists()  # the plan is kept: the same command continues


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_export_site_stops_on_either_signal_and_writes_nothing(tmp_path, monkeypatch, signum, code):
    monkeypatch.setattr(export, "render_site", signalled(signum))
    dest = tmp_path / "site"
    got = CliRunner().invoke(app, ["export-site", str(dest)])
    assert got.exit_code == code, got.output
    assert "stopped; nothing was written" in got.output and not dest.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary folder left beside it either


@pytest.mark.parametrize("minutes", ["inf", "nan", "-inf"])
def test_scale_refuses_a_budget_that_is_not_a_number_of_minutes(text, tmp_path, minutes):
    got = CliRunner().invoke(app, ["scale", "--corpus", str(text), "--out", str(tmp_path / "s"), "--minutes", minutes])
    assert got.exit_code == 2 and "Traceback" not in got.output
    assert not (tmp_path / "s").exists()


def test_scale_refuses_an_out_that_is_a_file(text, tmp_path):
    taken = tmp_path / "taken.txt"
    taken.write_text("mine", encoding="utf-8")
    got = CliRunner().invoke(app, ["scale", "--corpus", str(text), "--out", str(taken)])
    assert got.exit_code == 2 and "is a file" in got.output and taken.read_text(encoding="utf-8") == "mine"


def test_export_site_on_a_link_that_loops_says_so_in_one_line(tmp_path):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    got = CliRunner().invoke(app, ["export-site", str(tmp_path / "loop")])
    assert got.exit_code == 1 and "loops" in got.output and "Traceback" not in got.output


def test_a_budget_too_small_is_refused_after_timing_one_size(text, monkeypatch):
    """The smallest plan of the sizes timed so far is a lower bound of every plan's time: once it is over the
    budget, timing the other sizes cannot help (it took 44 s to refuse 0.05 minutes)."""
    from attnlab.text import train_tokenizer

    source = load_corpus(str(text))
    tokenizer = train_tokenizer("char", source.texts)
    data = source.token_data(tokenizer, planning.CONTEXT)
    made, timed = planning.new_trainer, []
    monkeypatch.setattr(planning, "new_trainer", lambda cfg, *a, **kw: timed.append(cfg) or made(cfg, *a, **kw))
    with pytest.raises(ValueError, match="no sweep fits"):
        planning.step_seconds(data, tokenizer.vocab_size, planning.LADDER, "cpu", minutes=1e-4)
    assert len(timed) == 1
    every = planning.step_seconds(data, tokenizer.vocab_size, planning.LADDER[:2], "cpu")  # no budget: all timed
    assert set(every) == set(planning.LADDER[:2])
    assert planning.smallest_plan_s(data, tokenizer.vocab_size, every, planning.LADDER[:2]) > 0


@pytest.mark.parametrize("body", ["a", "a\n", "ééééé\n"])
def test_a_corpus_of_one_kind_of_character_is_refused_before_training(tmp_path, body):
    corpus = tmp_path / "one.txt"
    corpus.write_text(body, encoding="utf-8")
    got = CliRunner().invoke(app, ["train", "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--steps", "3"])
    assert got.exit_code == 2 and "at least two different characters" in got.output, got.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_explain_stops_a_lesson_in_training_on_either_signal_and_keeps_nothing(tmp_path, monkeypatch, signum, code):
    """A heavy lesson trains for minutes from the terminal: Ctrl+C or SIGTERM stops it, says that nothing was kept
    (a lesson goes into the cache only whole) and exits 130 / 143, no traceback."""
    from attnlab.lessons.common import disk_cache
    from attnlab.lessons.explain import TOPICS
    from attnlab.train import progress

    def trains(*args, **kwargs):
        progress.report("causal", 0, 600)  # as a lesson's first step reports
        signalled(signum)()

    monkeypatch.setattr(type(TOPICS["mlm"]), "explained", lambda self, **kw: trains())
    with disk_cache.using(tmp_path / "cache"):
        got = CliRunner().invoke(app, ["explain", "mlm", "--lang", "en"])
    assert got.exit_code == code, got.output
    assert "stopped before the lesson finished; nothing was kept" in got.output and "Traceback" not in got.output
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_explain_says_what_trains_while_it_trains(capsys):
    """The first training step prints what trains and that Ctrl+C stops it (stderr), before the lesson is done."""
    from attnlab.commands.lesson_progress import shown
    from attnlab.train import progress

    with shown("mlm", "en"):
        progress.report("causal", 1, 600)
        printed = ""
        for _ in range(20 * 300):  # until the watcher has printed (it looks four times a second)
            printed += capsys.readouterr().err
            if "Ctrl+C stops" in printed:
                break
            threading.Event().wait(0.05)
    assert "attnlab explain mlm: training the lesson's models (Ctrl+C stops" in " ".join(printed.split())


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_generate_keeps_the_text_so_far_on_either_signal(tmp_path, monkeypatch, signum, code):
    """A long generation (up to 100,000 tokens) stopped by Ctrl+C or SIGTERM prints what it wrote so far, says
    so, and exits 130 / 143."""
    from attnlab import sampling

    real = sampling.generate

    def stopped_after_three(*args, on_step=None, **kwargs):
        count = [0]

        def step(s):
            on_step(s)
            count[0] += 1
            if count[0] == 3:
                signalled(signum)()

        return real(*args, on_step=step, **kwargs)

    ck = tmp_path / "ck"
    assert CliRunner().invoke(app, ["train", "--corpus", "poem", "--steps", "60", "--out", str(ck)]).exit_code == 0
    monkeypatch.setattr(sampling, "generate", stopped_after_three)
    got = CliRunner().invoke(app, ["generate", "--checkpoint", str(ck), "--prompt", "床前", "--greedy", "-n", "50"])
    assert got.exit_code == code, got.output
    assert got.stdout.splitlines()[0] == "床前明月光" and "stopped after 3 new tokens" in got.stderr
    assert "Traceback" not in got.output


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_real_stops_on_either_signal_in_one_line(monkeypatch, signum, code):
    from attnlab.lessons.real import lesson

    monkeypatch.setattr(lesson, "analyse", signalled(signum))
    got = CliRunner().invoke(app, ["real", "--text", "the cat sat"])
    assert got.exit_code == code and "attnlab real: stopped" in got.output and "Traceback" not in got.output
