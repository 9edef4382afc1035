"""atomic_dir: the folder is replaced whole or not at all (checkpoints and exported sites use it)."""

import os

import pytest

from attnlab.io import atomic
from attnlab.io.atomic import atomic_dir


def test_replaces_the_folder_and_leaves_nothing_beside_it(tmp_path):
    out = tmp_path / "ck"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with atomic_dir(out) as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in out.iterdir()] == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["ck"]


def test_an_error_inside_keeps_the_old_folder(tmp_path):
    out = tmp_path / "ck"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_dir(out) as tmp:
        (tmp / "half.txt").write_text("half")
        raise RuntimeError("crash while writing")
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["ck"]


def test_a_failed_swap_puts_the_old_folder_back(tmp_path, monkeypatch):
    out = tmp_path / "ck"
    out.mkdir()
    (out / "old.txt").write_text("old")
    real = os.rename

    def rename(src, dst):
        if dst == out and ".new-" in str(src):  # the new folder into place (putting the old one back works)
            raise OSError("rename failed")
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "rename", rename)
    with pytest.raises(OSError, match="rename failed"), atomic_dir(out) as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in out.iterdir()] == ["old.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["ck"]
