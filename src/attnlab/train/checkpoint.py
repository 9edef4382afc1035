"""Checkpoints: a directory with config.json, model.safetensors, tokenizer.json (+ the state to resume).

Written atomically: everything goes into a temporary directory beside the target, which is renamed into
place only when complete, so a crash leaves the old checkpoint (or none), never a half-written one.
Loading checks every file and says which one is missing or corrupt. safetensors, never pickle.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, load_model, save_file, save_model

from attnlab.atomic import atomic_dir
from attnlab.models import GPT, GPTConfig
from attnlab.text import load_tokenizer, save_tokenizer

FORMAT = "attnlab.gpt"
FORMAT_VERSION = 1
CONFIG, MODEL, TOKENIZER = "config.json", "model.safetensors", "tokenizer.json"
TRAIN_STATE, TRAIN_TENSORS = "train_state.json", "train_state.safetensors"


class CheckpointError(ValueError):
    """A checkpoint directory that is missing, incomplete or corrupt."""


@dataclass
class Checkpoint:
    path: Path
    model: GPT
    tokenizer: object
    meta: dict  # config.json: model config, training settings, corpus, step, losses


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def _finish_files(directory: Path) -> None:
    """Flush every file to disk (so the rename publishes complete files) and give them the usual mode."""
    umask = os.umask(0)
    os.umask(umask)
    for f in directory.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
        f.chmod(0o666 & ~umask)


def is_checkpoint(path: Path) -> bool:
    try:
        return json.loads((Path(path) / CONFIG).read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def save_checkpoint(out_dir: str | Path, model: GPT, tokenizer, meta: dict,
                    train_state: tuple[dict, dict] | None = None) -> Path:
    """Write the checkpoint to `out_dir` atomically; an existing checkpoint there is replaced.

    Refuses to replace a directory that holds anything but an attnlab checkpoint.
    """
    out = Path(out_dir).resolve()
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not is_checkpoint(out))):
        raise CheckpointError(f"{out} exists and is not an attnlab checkpoint; choose a new or empty --out directory")
    with atomic_dir(out) as tmp:
        _write_json(tmp / CONFIG, {"format": FORMAT, "format_version": FORMAT_VERSION,
                                   "model": model.config.to_dict(), **meta})
        save_model(model, str(tmp / MODEL))  # handles a tied embedding / LM-head weight
        save_tokenizer(tokenizer, tmp / TOKENIZER)
        if train_state is not None:
            scalars, tensors = train_state
            _write_json(tmp / TRAIN_STATE, scalars)
            save_file(tensors, str(tmp / TRAIN_TENSORS))
        _finish_files(tmp)
    return out


def read_meta(path: str | Path) -> dict:
    """config.json of a checkpoint, checked."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"no checkpoint at {path}: the directory does not exist (train one with `attnlab train --out {path}`)")
    missing = [name for name in (CONFIG, MODEL, TOKENIZER) if not (path / name).is_file()]
    if missing:
        raise CheckpointError(f"{path} is not a complete checkpoint: missing {', '.join(missing)}")
    try:
        meta = json.loads((path / CONFIG).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path / CONFIG} is corrupt: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not isinstance(meta.get("model"), dict):
        raise CheckpointError(f"{path / CONFIG} is not an attnlab GPT checkpoint config")
    if meta.get("format_version", 0) > FORMAT_VERSION:
        raise CheckpointError(f"{path} was written by a newer attnlab (format {meta['format_version']})")
    return meta


def load_checkpoint(path: str | Path, device: torch.device | str = "cpu") -> Checkpoint:
    """Model (eval mode), tokenizer and config.json of a checkpoint directory, or a CheckpointError."""
    path = Path(path)
    meta = read_meta(path)
    try:
        config = GPTConfig.from_dict(meta["model"])
    except (ValueError, TypeError) as e:
        raise CheckpointError(f"{path / CONFIG} has an invalid model config: {e}") from None
    try:
        tokenizer = load_tokenizer(path / TOKENIZER)
    except ValueError as e:
        raise CheckpointError(f"{path / TOKENIZER} is corrupt: {e}") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"{path}: tokenizer.json has {tokenizer.vocab_size} tokens but the model expects "
                              f"{config.vocab_size}")
    model = GPT(config)
    try:
        load_model(model, str(path / MODEL), strict=True, device=str(device))
    except (SafetensorError, OSError) as e:
        size = (path / MODEL).stat().st_size
        raise CheckpointError(f"{path / MODEL} is corrupt or truncated ({size} bytes) and cannot be loaded: "
                              f"{str(e).splitlines()[0]}") from None
    except (RuntimeError, ValueError) as e:
        raise CheckpointError(f"{path / MODEL} does not match the model in config.json: "
                              f"{str(e).splitlines()[0][:300]}") from None
    model.to(device).eval()
    return Checkpoint(path=path, model=model, tokenizer=tokenizer, meta=meta)


def load_train_state(path: str | Path) -> tuple[dict, dict]:
    """The optimizer and RNG state saved beside a checkpoint, for --resume."""
    path = Path(path)
    if not (path / TRAIN_STATE).is_file() or not (path / TRAIN_TENSORS).is_file():
        raise CheckpointError(f"{path} has no training state to resume from ({TRAIN_STATE}, {TRAIN_TENSORS})")
    try:
        scalars = json.loads((path / TRAIN_STATE).read_text(encoding="utf-8"))
        tensors = load_file(str(path / TRAIN_TENSORS))
    except (ValueError, SafetensorError, OSError) as e:
        raise CheckpointError(f"the training state in {path} is corrupt: {str(e).splitlines()[0]}") from None
    return scalars, tensors
