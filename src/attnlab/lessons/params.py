"""A lesson's parameters, declared once: the CLI options, the API's query parameters and the page's sliders
all come from these specs, and every value is checked against them with one readable message.
"""

from __future__ import annotations

import functools
import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from attnlab.threads import one_thread


class ParamError(ValueError):
    """A parameter value a lesson cannot take; the message names the parameter, what it expects and what came.
    `name` is the parameter at fault when there is one (the API reports it as the query parameter)."""

    def __init__(self, message: str, name: str | None = None):
        super().__init__(message)
        self.name = name


@dataclass(frozen=True)
class Param:
    name: str  # Python name (d_k); the CLI option is --d-k, the query parameter d_k (d-k accepted too)
    kind: str  # "int" | "float" | "bool" | "choice" | "str"
    default: Any
    lo: float | None = None  # inclusive range for int/float
    hi: float | None = None
    step: float | None = None  # a slider's step on the page
    choices: tuple = ()
    max_len: int | None = None  # for str
    help: str = ""  # one line, English; the page uses the i18n key explain.param.<name>
    log: bool = False  # a slider over powers of two reads better for sizes like d_k and n

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    def expects(self) -> str:
        if self.kind == "int":
            return f"an integer from {int(self.lo)} to {int(self.hi)}"
        if self.kind == "float":
            return f"a number from {self.lo:g} to {self.hi:g}"
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(str(c) for c in self.choices)
        return f"text of at most {self.max_len} characters"

    def parse(self, raw: Any) -> Any:
        """Convert a raw value (a string from a URL or the command line, or a Python value) and check it."""
        try:
            value = self._convert(raw)
        except (TypeError, ValueError):
            raise ParamError(f"{self.name} must be {self.expects()}, got {raw!r}", self.name) from None
        if self.kind in ("int", "float"):
            if not (self.lo <= value <= self.hi):
                raise ParamError(f"{self.name} must be {self.expects()}, got {raw!r}", self.name)
        elif self.kind == "choice" and value not in self.choices:
            raise ParamError(f"{self.name} must be {self.expects()}, got {raw!r}", self.name)
        elif self.kind == "str" and self.max_len is not None and len(value) > self.max_len:
            raise ParamError(f"{self.name} must be {self.expects()}, got {len(value)} characters", self.name)
        return value

    def _convert(self, raw: Any) -> Any:
        if self.kind == "int":
            if isinstance(raw, bool):
                raise TypeError
            if isinstance(raw, float):
                if not raw.is_integer():
                    raise ValueError
                return int(raw)
            return int(str(raw).strip())
        if self.kind == "float":
            if isinstance(raw, bool):
                raise TypeError
            value = float(str(raw).strip()) if isinstance(raw, str) else float(raw)
            if not math.isfinite(value):
                raise ValueError
            return value
        if self.kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off", ""):
                return False
            raise ValueError
        if self.kind == "choice":
            for c in self.choices:
                if str(c) == str(raw).strip():
                    return c
            raise ValueError
        if not isinstance(raw, str):
            raise TypeError
        return raw

    def spec(self) -> dict:
        """Plain data for the page (sliders) and the API."""
        return {
            "name": self.name, "kind": self.kind, "default": self.default, "min": self.lo, "max": self.hi,
            "step": self.step, "choices": list(self.choices), "help": self.help, "log": self.log,
        }


@dataclass
class Claim:
    """One quantitative statement of the course, checked on numbers the lesson just computed."""

    id: str
    text: str  # in the requested language
    measured: float | None
    bound: float | None  # the threshold or the value it is compared with
    holds: bool


def check(params: tuple[Param, ...], values: dict[str, Any]) -> dict[str, Any]:
    """Parse every declared parameter from `values` (missing ones take their default); unknown names fail."""
    names = {p.name for p in params}
    unknown = [k for k in values if k not in names]
    if unknown:
        raise ParamError(f"unknown parameter(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(names)) or 'none'}")
    return {p.name: p.parse(values[p.name]) if p.name in values else p.default for p in params}


@contextmanager
def seeded(seed: int):
    """Run a block under torch.manual_seed(seed) without disturbing the caller's random state."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def lesson(fn):
    """Decorator for a lesson function: it runs under one_thread()."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with one_thread():
            return fn(*args, **kwargs)

    return run


MEMORY_LIMIT = 512 * 2**20  # bytes a lesson may ask for: comfortable on a laptop


def largest_square(bytes_per_n2: float, limit_bytes: float = MEMORY_LIMIT) -> int:
    """The largest n whose n x n tensors (bytes_per_n2 * n^2 bytes in all) stay within limit_bytes."""
    return math.isqrt(int(limit_bytes // bytes_per_n2))


def memory_guard(n_bytes: float, what: str, limit_bytes: float = MEMORY_LIMIT, name: str | None = None,
                 largest: int | None = None) -> None:
    """Refuse a computation whose tensors would not fit comfortably in a laptop's memory; `largest` is the
    largest value of the parameter `name` that would fit with the other settings unchanged."""
    if n_bytes > limit_bytes:
        hint = f"; with the other settings unchanged {name} can be at most {largest}" if largest is not None else ""
        raise ParamError(
            f"too large for memory: {what} would need {n_bytes / 2**20:,.0f} MiB, more than this lesson allows "
            f"({limit_bytes / 2**20:,.0f} MiB){hint}; choose smaller sizes",
            name,
        )


__all__ = ["Param", "ParamError", "Claim", "MEMORY_LIMIT", "check", "largest_square", "lesson", "memory_guard", "one_thread",
           "seeded"]
