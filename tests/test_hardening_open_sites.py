"""Issue 37: every place under src/attnlab that opens a file either goes through attnlab.io.safe_read (regular files
only, never blocking on a FIFO, inside their root, bounded) or is listed below with why it need not.

The places are found in the source with the ast module, by what a call opens a file with: open(), os.open,
Path.open / .read_text / .read_bytes, json.load, torch.load, np.load / np.memmap, safetensors' loaders, a
tokenizers or fontTools file, shutil's copies, a FileResponse. A call goes through the reader when it is a
safe_read call itself or when the path it is given comes straight from one (`load_file(str(safe_read.regular(p)))`).
A new bare open fails this test until it uses the reader or gets an entry here, keyed by file and function.
"""

from __future__ import annotations

import ast
import os
import threading
from pathlib import Path

import pytest

import attnlab
from attnlab.io import safe_read
from attnlab.lessons.common import disk_cache
from attnlab.train.storage.integrity import sha256_file

SRC = Path(attnlab.__file__).parent
READER = "io/safe_read.py"

OPENING_ATTRS = {"open", "read_text", "read_bytes"}  # os.open, Path.open, io.open, Image.open ...
OPENING_DOTTED = {
    "json.load",
    "torch.load",
    "np.load",
    "numpy.load",
    "np.memmap",
    "np.fromfile",
    "pickle.load",
    "Tokenizer.from_file",
    "shutil.copy",
    "shutil.copy2",
    "shutil.copyfile",
    "shutil.copytree",
}
# bare names that open a path when imported from these modules
OPENING_IMPORTS = {
    "safetensors": {"safe_open"},
    "safetensors.torch": {"load_file", "load_model", "load"},
    "fontTools.ttLib": {"TTFont"},
    "fastapi.responses": {"FileResponse"},
    "starlette.responses": {"FileResponse"},
}

# (file under src/attnlab, function) -> why a bare open is right there. Files the lab ships or writes itself,
# folders it does not read, and readers with the same defences of their own.
ALLOWED = {
    ("i18n/__init__.py", "catalog"): "package data: the lab's own strings.json files",
    ("io/atomic.py", "_fsync_dir"): "opens a folder the lab has just written, to fsync it; reads nothing",
    ("io/atomic.py", "_saving_lock"): "a lock on the folder being saved; reads nothing",
    ("io/atomic.py", "check_writable"): "writes only: a new probe file (O_CREAT | O_EXCL)",
    ("io/atomic.py", "atomic_file"): "the temporary file this function has just created",
    ("lessons/bpe/runs.py", "our_words"): "package data: the lab's own words, frozen in lessons/bpe/words.json",
    ("lessons/common/disk_cache.py", "lab_version"): "package data: hashes the lab's own source files",
    ("lessons/common/disk_cache.py", "computing"): "a lock file opened to append; nothing is read from it",
    ("lessons/data_parallel/launch.py", "_step_of"): "the lesson's own temporary folder (its torchrun ranks write it)",
    ("lessons/data_parallel/launch.py", "_tail"): "the lesson's own temporary folder (torchrun's log)",
    ("lessons/data_parallel/launch.py", "start_ranks"): "writes only: torchrun's log in the lesson's temporary folder",
    ("lessons/data_parallel/launch.py", "compare"): "the lesson's own temporary folder (the ranks' results)",
    (
        "train/data.py",
        "read_bounded",
    ): "a corpus reader with the same defences (O_NONBLOCK, S_ISREG on the open file, bounded)",
    ("train/storage/checkpoint.py", "_finish_files"): "fsyncs the files save_checkpoint has just written",
    (
        "train/storage/checkpoint.py",
        "link_or_copy",
    ): "keeps the user's own files of --out in the new save, links as links",
    ("train/storage/checkpoint.py", "_keep_users_files"): "as link_or_copy: copytree with symlinks=True",
    ("train/token_cache.py", "cached_token_stream"): "the lab's own token cache file, named by a hash and written here",
    ("display/glyphs.py", "_cmap"): "a font file of the lab's or the system's (fontconfig), never a request's",
    ("display/glyphs.py", "subset"): "a font file of the lab's or the system's (fontconfig), never a request's",
    ("web/app.py", "favicon"): "package data: the lab's own icon",
}


def _imported_openers(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in OPENING_IMPORTS:
            names |= {a.asname or a.name for a in node.names if a.name in OPENING_IMPORTS[node.module]}
    return names


def _from_reader(node: ast.AST) -> bool:
    """Whether this expression is, or contains, a call to safe_read."""
    return any(isinstance(n, ast.Call) and ast.unparse(n.func).split(".")[0] == "safe_read" for n in ast.walk(node))


def open_sites(path: Path) -> list[tuple[str, int, str, bool]]:
    """(function, line, call, through the reader) for every call in the file that opens a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bare = _imported_openers(tree) | {"open"}
    found = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Call):
                func = ast.unparse(child.func)
                opens = (
                    (isinstance(child.func, ast.Name) and child.func.id in bare)
                    or func in OPENING_DOTTED
                    or (isinstance(child.func, ast.Attribute) and child.func.attr in OPENING_ATTRS)
                )
                if opens:
                    args = [*child.args, *(k.value for k in child.keywords)]
                    through = func.split(".")[0] == "safe_read" or any(_from_reader(a) for a in args)
                    found.append((where, child.lineno, ast.unparse(child)[:100], through))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def every_site() -> dict[tuple[str, str], list[tuple[int, str, bool]]]:
    sites: dict[tuple[str, str], list[tuple[int, str, bool]]] = {}
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name == READER:
            continue
        for function, line, call, through in open_sites(path):
            sites.setdefault((name, function), []).append((line, call, through))
    return sites


def test_every_open_goes_through_the_safe_reader_or_says_why_not():
    bare = {
        f"{name}:{line} in {function}(): {call}"
        for (name, function), calls in every_site().items()
        if (name, function) not in ALLOWED
        for line, call, through in calls
        if not through
    }
    assert not bare, "open these with attnlab.io.safe_read, or add them to ALLOWED with a reason:\n" + "\n".join(
        sorted(bare)
    )


def test_every_allowed_place_still_opens_a_file_and_says_why():
    sites = every_site()
    stale = [key for key in ALLOWED if not any(not through for _, _, through in sites.get(key, []))]
    assert not stale, f"these entries of ALLOWED open nothing bare any more: remove them: {stale}"
    assert all(len(why) > 20 for why in ALLOWED.values())


def test_the_finder_sees_each_kind_of_open(tmp_path):
    # the finder itself: a bare open of each kind is found, the same through the reader is not bare
    source = tmp_path / "example.py"
    source.write_text(
        "import json, shutil\nfrom pathlib import Path\nfrom safetensors.torch import load_file as lf\n"
        "from attnlab.io import safe_read\n"
        "def reads(p):\n"
        "    open(p); Path(p).read_text(); p.read_bytes(); json.load(p); lf(p); shutil.copy2(p, p)\n"
        "def safe(p):\n"
        "    safe_read.read_text(p, 10); lf(str(safe_read.regular(p)))\n",
        encoding="utf-8",
    )
    sites = open_sites(source)
    assert [(f, through) for f, _, _, through in sites] == [("reads", False)] * 6 + [("safe", True)] * 2


def test_the_readers_refuse_a_fifo_without_waiting_for_a_writer(tmp_path):
    # what going through the reader buys: the checksum and the library paths refuse a FIFO at once
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    for read in (sha256_file, safe_read.regular):
        with pytest.raises(safe_read.ReadRefused, match="not a regular file"):
            read(fifo)


def test_a_fifo_in_the_lesson_cache_is_a_miss_not_a_wait(tmp_path):
    disk_cache.use(tmp_path / "cache")
    try:
        key = disk_cache.make_key("explain", "norms", [("seed", 1)], "en")
        path = disk_cache.path_of(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)  # a --cache folder is the user's: anything can sit there
        found = []
        reader = threading.Thread(target=lambda: found.append(disk_cache.load(key)), daemon=True)
        reader.start()
        reader.join(300)  # only turns a hang (a bare open waits for a writer forever) into a failure
        assert found == [disk_cache.MISS]
    finally:
        disk_cache.use()
