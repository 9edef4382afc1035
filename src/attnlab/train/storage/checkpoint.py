"""Checkpoints: a directory with config.json, model.safetensors, tokenizer.json (+ the state to resume).

Written atomically (attnlab.io.atomic): a crash at any moment leaves the old checkpoint or the new one, whole.
config.json records the sha256 of every other file; loading checks the config (types and size, before any
weight is allocated), the files' checksums, the JSON files' size and nesting before parsing them (io.safe_read
beside it), and each weight's shape, number type and that it holds no NaN or inf (weights), and says what is
wrong in one line; a link that loops is said too (links).
Files of the user's own in the directory (notes, samples) are kept when it is saved again.
safetensors, never pickle.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file, save_model

from attnlab.io import safe_read
from attnlab.io.atomic import atomic_dir, recover
from attnlab.models import GPT, GPTConfig
from attnlab.text import save_tokenizer, tokenizer_from_dict
from attnlab.train.size import check_loadable
from attnlab.train.storage.integrity import changed_files, is_sha256, sha256_file, stored_numbers
from attnlab.train.storage.links import LinkLoop, is_loop, real_path
from attnlab.train.storage.weights import WeightsError, load_weights

FORMAT = "attnlab.gpt"
FORMAT_VERSION = 1
CONFIG, MODEL, TOKENIZER = "config.json", "model.safetensors", "tokenizer.json"
TRAIN_STATE, TRAIN_TENSORS = "train_state.json", "train_state.safetensors"
OWN_FILES = (CONFIG, MODEL, TOKENIZER, TRAIN_STATE, TRAIN_TENSORS)  # anything else in the folder is the user's


class CheckpointError(ValueError):
    """A checkpoint directory that is missing, incomplete or corrupt."""


@dataclass
class Checkpoint:
    path: Path
    model: GPT
    tokenizer: object
    meta: dict  # config.json: model config, training settings, corpus, step, losses, checksums
    warnings: list[str] = field(default_factory=list)  # loaded, but said once (an older checkpoint's)


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def _finish_files(directory: Path, names) -> None:
    """Flush our files to disk (so the rename publishes complete files) and give them the usual mode."""
    umask = os.umask(0)
    os.umask(umask)
    for name in names:
        f = directory / name
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
        f.chmod(0o666 & ~umask)


def _keep_users_files(out: Path, tmp: Path) -> None:
    """Carry everything in the old checkpoint folder that is not ours into the new one (hard links: no copy)."""
    if not out.is_dir():
        return

    def link_or_copy(src, dst):
        try:
            os.link(src, dst, follow_symlinks=False)
        except OSError:
            shutil.copy2(src, dst, follow_symlinks=False)

    for entry in out.iterdir():
        if entry.name in OWN_FILES:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, tmp / entry.name, symlinks=True, copy_function=link_or_copy)
        else:
            link_or_copy(entry, tmp / entry.name)


def is_checkpoint(path: Path) -> bool:
    try:
        return safe_read.read_json(Path(path) / CONFIG).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def check_out_dir(out_dir: str | Path) -> Path:
    """The resolved folder a checkpoint will be written to, or a CheckpointError saying why it cannot be:
    asked before training, so no run is thrown away at the end."""
    try:
        out = real_path(Path(out_dir).expanduser())
    except LinkLoop as err:
        raise CheckpointError(str(err)) from None
    try:
        recover(out)  # a save that was interrupted: the checkpoint it leaves is what we check
    except OSError:
        pass
    if out.exists() and not out.is_dir():
        raise CheckpointError(f"{out} exists and is a file, not a folder; choose a new or empty --out directory")
    if out.is_dir() and any(out.iterdir()) and not is_checkpoint(out):
        raise CheckpointError(f"{out} exists and is not an attnlab checkpoint; choose a new or empty --out directory")
    existing = out if out.exists() else next(p for p in out.parents if p.exists())
    if not existing.is_dir():
        raise CheckpointError(f"cannot create {out}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CheckpointError(f"cannot write in {existing}: permission denied")
    return out


def _write_error(out: Path, err: Exception) -> OSError:
    """An OSError for any failure to write (safetensors reports a full disk as its own error type)."""
    if isinstance(err, OSError):
        return err
    m = re.search(r"os error (\d+)", str(err))
    code = int(m[1]) if m else errno.EIO
    return OSError(code, os.strerror(code), str(out))


def save_checkpoint(
    out_dir: str | Path, model: GPT, tokenizer, meta: dict, train_state: tuple[dict, dict] | None = None
) -> Path:
    """Write the checkpoint to `out_dir` atomically; an existing checkpoint there is replaced, the user's other
    files in the folder are kept.

    Refuses to replace a directory that holds anything but an attnlab checkpoint (CheckpointError); a
    failure to write (a full disk: OSError) leaves the folder as it was.
    """
    out = check_out_dir(out_dir)
    ours = [MODEL, TOKENIZER]
    try:
        with atomic_dir(out) as tmp:
            save_model(model, str(tmp / MODEL))  # handles a tied embedding / LM-head weight
            save_tokenizer(tokenizer, tmp / TOKENIZER)
            if train_state is not None:
                scalars, tensors = train_state
                _write_json(tmp / TRAIN_STATE, scalars)
                save_file(tensors, str(tmp / TRAIN_TENSORS))
                ours += [TRAIN_STATE, TRAIN_TENSORS]
            checksums = {name: sha256_file(tmp / name) for name in ours}
            _write_json(
                tmp / CONFIG,
                {
                    "format": FORMAT,
                    "format_version": FORMAT_VERSION,
                    "model": model.config.to_dict(),
                    **meta,
                    "sha256": checksums,
                },
            )
            _finish_files(tmp, [CONFIG, *ours])
            _keep_users_files(out, tmp)
    except SafetensorError as err:
        raise _write_error(out, err) from None
    return out


def _check_meta(path: Path, meta) -> dict:
    where = path / CONFIG
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("model"), dict):
        raise CheckpointError(f"{where} is not an attnlab GPT checkpoint config")
    version = meta.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckpointError(f"{where} is corrupt: format_version must be a whole number >= 1, got {version!r}")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"{path} was written by a newer attnlab (format {version}); update attnlab to load it")
    expected = {"corpus": str, "corpus_sha256": str, "train": dict, "sha256": dict}
    for key, kind in expected.items():
        if meta.get(key) is not None and not isinstance(meta[key], kind):
            raise CheckpointError(f"{where} is corrupt: {key} must be a {kind.__name__}, got {meta[key]!r:.80}")
    if meta.get("corpus") is not None and not meta["corpus"].isprintable():
        raise CheckpointError(f"{where} is corrupt: corpus must be a printable name, got {meta['corpus']!r:.80}")
    sums = meta.get("sha256") or {}
    if not all(is_sha256(v) for v in sums.values()) or (sums and not {MODEL, TOKENIZER} <= set(sums)):
        raise CheckpointError(f"{where} is corrupt: sha256 must give the checksum of {MODEL} and {TOKENIZER}")
    return meta


def read_meta(path: str | Path) -> dict:
    """config.json of a checkpoint, checked (a save interrupted by a crash is recovered first)."""
    path = Path(path)
    try:
        recover(path)
    except OSError:
        pass
    for looping in (path, *(path / name for name in (CONFIG, MODEL, TOKENIZER))):
        if is_loop(looping):  # else said as "does not exist" or "missing"
            raise CheckpointError(str(LinkLoop(looping)))
    if not path.is_dir():
        raise CheckpointError(
            f"no checkpoint at {path}: the directory does not exist (train one with `attnlab train --out {path}`)"
        )
    missing = [name for name in (CONFIG, MODEL, TOKENIZER) if not (path / name).is_file()]
    if missing:
        raise CheckpointError(f"{path} is not a complete checkpoint: missing {', '.join(missing)}")
    return _check_meta(path, _read_json(path / CONFIG))


def _read_json(file: Path):
    """A checkpoint's JSON file, bounded in size and nesting before it is parsed (attnlab.io.safe_read)."""
    try:
        return safe_read.read_json(file)
    except safe_read.ReadRefused as e:
        raise CheckpointError(str(e)) from None
    except (ValueError, OSError) as e:  # invalid JSON or UTF-8; a file that went away
        raise CheckpointError(f"{file} is corrupt: {str(e)[:200]}") from None


def _changed_message(path: Path, names: list[str]) -> str:
    return (
        f"{path}: {' and '.join(names)} {'does' if len(names) == 1 else 'do'} not match the sha256 recorded in "
        f"config.json when the checkpoint was saved: damaged or changed since; train it again or restore a copy"
    )


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> Checkpoint:
    """Model (eval mode), tokenizer and config.json of a checkpoint directory, or a CheckpointError.

    Everything is checked before the model is allocated: the config (types, and a size attnlab could have
    trained), that the file holds at least as many numbers as the model needs, and the files' checksums; then
    each tensor's shape and type (a float type other than the model's is converted, with a warning) and that
    every number is finite.
    """
    path = Path(path)
    meta = read_meta(path)
    try:
        config = GPTConfig.from_dict(meta["model"])
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{path / CONFIG} has an invalid model config: {e}") from None
    try:
        floor = check_loadable(config)  # counted by formula: nothing is allocated
    except ValueError as e:
        raise CheckpointError(f"{path / CONFIG} describes a model too big to load: {e}") from None
    warnings = []
    sums = meta.get("sha256")
    if sums is None:
        warnings.append(
            f"{path} has no checksums (saved by an older attnlab), so damage to its files cannot be "
            f"detected; saving it again (attnlab train --resume) adds them"
        )
    try:
        stored = stored_numbers(path / MODEL)
    except safe_read.ReadRefused as e:  # swapped for a FIFO or a device since read_meta looked
        raise CheckpointError(str(e)) from None
    except (SafetensorError, OSError) as e:
        size = (path / MODEL).stat().st_size
        raise CheckpointError(
            f"{path / MODEL} is corrupt or truncated ({size} bytes) and cannot be loaded: {str(e).splitlines()[0]}"
        ) from None
    if stored < floor:  # the model would be bigger than the file: refused before allocating it
        raise CheckpointError(
            f"{path / MODEL} does not match the model in config.json: the file holds "
            f"{stored:,} numbers, the model needs at least {floor:,}"
        )
    if sums is not None and (changed := changed_files(path, sums, (MODEL, TOKENIZER))):
        raise CheckpointError(_changed_message(path, changed))
    tokenizer = _load_tokenizer(path / TOKENIZER)
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(
            f"{path}: tokenizer.json has {tokenizer.vocab_size} tokens but the model expects {config.vocab_size}"
        )
    model = GPT(config)
    try:
        warnings += load_weights(model, path / MODEL)
    except WeightsError as e:
        raise CheckpointError(f"{path / MODEL} {e}") from None
    except safe_read.ReadRefused as e:
        raise CheckpointError(str(e)) from None
    except (SafetensorError, OSError) as e:
        size = (path / MODEL).stat().st_size
        raise CheckpointError(
            f"{path / MODEL} is corrupt or truncated ({size} bytes) and cannot be loaded: {str(e).splitlines()[0]}"
        ) from None
    except (RuntimeError, ValueError) as e:  # torch's message: a first line, then one line per tensor
        raise CheckpointError(
            f"{path / MODEL} does not match the model in config.json: {' '.join(str(e).split())[:300]}"
        ) from None
    model.to(device).eval()
    return Checkpoint(path=path, model=model, tokenizer=tokenizer, meta=meta, warnings=warnings)


def _load_tokenizer(file: Path):
    d = _read_json(file)
    try:
        return tokenizer_from_dict(d)
    except MemoryError:
        raise
    except Exception as e:  # KeyError, TypeError ...; the tokenizers library raises a bare Exception
        raise CheckpointError(f"{file} is corrupt: not a valid tokenizer ({str(e)[:200]})") from None


def load_train_state(path: str | Path) -> tuple[dict, dict]:
    """The optimizer and RNG state saved beside a checkpoint, for --resume, checked."""
    path = Path(path)
    if not (path / TRAIN_STATE).is_file() or not (path / TRAIN_TENSORS).is_file():
        raise CheckpointError(f"{path} has no training state to resume from ({TRAIN_STATE}, {TRAIN_TENSORS})")
    sums = read_meta(path).get("sha256")
    if sums is not None and (changed := changed_files(path, sums, (TRAIN_STATE, TRAIN_TENSORS))):
        raise CheckpointError(_changed_message(path, changed))
    try:
        scalars = _read_json(path / TRAIN_STATE)
    except CheckpointError as e:
        raise CheckpointError(f"the training state cannot be read: {e}") from None
    try:
        tensors = load_file(str(safe_read.regular(path / TRAIN_TENSORS)))
    except (ValueError, SafetensorError, OSError) as e:
        raise CheckpointError(f"the training state in {path} is corrupt: {str(e).splitlines()[0]}") from None
    bad = _train_state_problem(scalars, tensors)
    if bad:
        raise CheckpointError(f"the training state in {path} is corrupt: {bad}")
    return scalars, tensors


def _train_state_problem(scalars, tensors: dict) -> str | None:
    if not isinstance(scalars, dict):
        return f"{TRAIN_STATE} must hold an object, got {type(scalars).__name__}"
    step = scalars.get("step")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        return f"step must be a whole number >= 0, got {step!r:.80}"
    groups = scalars.get("param_groups")
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        return "param_groups must be a list of objects"
    if not isinstance(scalars.get("history", []), list):
        return "history must be a list"
    for key in ("rng.batches", "rng.torch"):
        t = tensors.get(key)
        if t is None or t.dtype != torch.uint8 or t.dim() != 1:
            return f"{TRAIN_TENSORS} has no valid {key}"
    return None
