"""Loading model.safetensors into a model, checked tensor by tensor: shape, number type, and that every number
is a number.

A checksum says the file is the one that was saved, not that what was saved makes sense: an edited file with
its checksum updated, or an older checkpoint without one, may hold NaN (a model that writes 床床床床床), int8
or float16 tensors (torch would cast them without a word), or a tensor of the wrong shape (torch says only
"Error(s) in loading state_dict" on its first line). Each is named here, with the tensor.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_model

from attnlab.io import safe_read

# safetensors' names for its number types, as torch calls them
TYPE_NAMES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
}
SHOWN = 4  # tensors named in a warning; the rest are counted


class WeightsError(ValueError):
    """The weights do not fit the model, or are not numbers (the message names the tensor)."""


def _is_float(code: str) -> bool:
    return code.startswith("F") or code == "BF16"


def _check_header(file: Path, expected: dict[str, torch.Tensor]) -> list[str]:
    """Every stored tensor against the model's, from the file's header (nothing loaded yet): a wrong shape or
    an integer type for a float parameter is refused; 'name (type)' of each float tensor of another type."""
    converted = []
    with safe_open(str(safe_read.regular(file)), "pt") as f:  # safetensors maps it: a regular file only
        for name in f.keys():
            want = expected.get(name)
            if want is None:
                raise WeightsError(
                    f"does not match the model in config.json: it holds a tensor {name!r} that the model does not have"
                )
            part = f.get_slice(name)
            shape, code = list(part.get_shape()), part.get_dtype()
            if shape != list(want.shape):
                raise WeightsError(
                    f"does not match the model in config.json: {name} is stored as {shape} but the "
                    f"model expects {list(want.shape)}"
                )
            stored, wanted = TYPE_NAMES.get(code, code.lower()), str(want.dtype).removeprefix("torch.")
            if stored == wanted:
                continue
            # integers for float weights are quantized values without their scale, or not weights at all:
            # cast, they would be numbers of another size altogether, so the model would only seem to work
            if not (want.is_floating_point() and _is_float(code)):
                raise WeightsError(
                    f"stores {name} as {stored} but the model expects {wanted}: not weights attnlab "
                    f"saved (quantized or converted?); train it again or restore a copy"
                )
            converted.append(f"{name} ({stored})")
    return converted


def _not_finite(model: torch.nn.Module) -> str | None:
    """The first tensor of the model holding NaN or ±inf, with how many, else None."""
    for name, t in model.state_dict().items():
        if t.is_floating_point() and not (finite := torch.isfinite(t)).all():
            return f"holds NaN or infinite numbers in {name} ({int((~finite).sum()):,} of {t.numel():,})"
    return None


def load_weights(model: torch.nn.Module, file: Path) -> list[str]:
    """Load `file` into `model` (on the CPU), checked; the warnings to say once (float tensors converted).
    WeightsError names what is wrong; safetensors' and torch's own errors pass through."""
    expected = model.state_dict()
    converted = _check_header(file, expected)
    load_model(
        model, str(safe_read.regular(file)), strict=True, device="cpu"
    )  # handles a tied embedding / LM-head weight
    if (bad := _not_finite(model)) is not None:  # after the cast: a float64 too big for float32 is inf too
        raise WeightsError(
            f"{bad}; a model with them writes nonsense, so it is not loaded: train it again or restore a copy"
        )
    if not converted:
        return []
    wanted = sorted({str(t.dtype).removeprefix("torch.") for t in expected.values()})
    more = f" and {len(converted) - SHOWN} more" if len(converted) > SHOWN else ""
    return [
        f"{file}: {len(converted)} tensors are stored in another number type than the model's "
        f"{'/'.join(wanted)} and were converted on loading: {', '.join(converted[:SHOWN])}{more}"
    ]
