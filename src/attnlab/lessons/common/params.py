"""A lesson's parameters, declared once: the CLI options, the API's query parameters and the page's sliders
all come from these specs, and every value is checked against them with one readable message.
"""

from __future__ import annotations

import functools
import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from attnlab.io.threads import one_thread
from attnlab.lessons.common.claims import Claim  # noqa: F401  (re-exported: lessons import it from here)


class ParamError(ValueError):
    """A parameter value a lesson cannot take; the message names the parameter, what it expects and what came.
    `name` is the parameter at fault when there is one (the API reports it as the query parameter). The
    message (str) is English, for the CLI and the API; `key` and `fields` give the same sentence from the
    catalog (explain.error.*) in the page's language: `localized(lang)`."""

    def __init__(self, message: str, name: str | None = None, key: str | None = None, **fields: Any):
        super().__init__(message)
        self.name = name
        self.key = key
        self.fields = fields

    def localized(self, lang: str) -> str:
        """The message in `lang` from the catalog, naming the parameter by its name and its page label."""
        from attnlab.i18n import catalog, t

        if self.key is None:  # every ParamError raised by the lessons has a key; this is only a fallback
            return str(self)
        param = self.name or ""
        label_key = f"explain.param.{param}"
        if param and label_key in catalog():
            label = t(label_key, lang)  # "d_k（q、k 的维数）" already names it; "随机种子" does not
            if not label.startswith(param):
                label = f"{param}（{label}）" if lang == "zh" else f"{param} ({label})"
        else:
            label = param
        return t(self.key, lang, param=label, **self.fields)


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
    cli_only: bool = (
        False  # a file path: the CLI and Python take it; the web refuses it (it would read the server's files)
    )
    from_data: bool = False  # cli_only, and the web may fill it with a file of `serve --data DIR` chosen by name

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
            raise self._error(raw) from None
        if self.kind in ("int", "float"):
            if not (self.lo <= value <= self.hi):
                raise self._error(raw)
        elif self.kind == "choice" and value not in self.choices:
            raise self._error(raw)
        elif self.kind == "str" and self.max_len is not None and len(value) > self.max_len:
            raise ParamError(
                f"{self.name} must be {self.expects()}, got {len(value)} characters",
                self.name,
                "explain.error.text_len",
                max_len=self.max_len,
                n=len(value),
            )
        return value

    def _error(self, raw: Any) -> ParamError:
        fields: dict[str, Any] = {"got": repr(raw)}
        if self.kind == "int":
            fields.update(lo=int(self.lo), hi=int(self.hi))
        elif self.kind == "float":
            fields.update(lo=f"{self.lo:g}", hi=f"{self.hi:g}")
        elif self.kind == "choice":
            fields.update(choices=", ".join(str(c) for c in self.choices))
        return ParamError(
            f"{self.name} must be {self.expects()}, got {raw!r}", self.name, f"explain.error.{self.kind}", **fields
        )

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
            "name": self.name,
            "kind": self.kind,
            "default": self.default,
            "min": self.lo,
            "max": self.hi,
            "step": self.step,
            "choices": list(self.choices),
            "help": self.help,
            "log": self.log,
            "cli_only": self.cli_only,
        }


def refuse_cli_only(params: tuple[Param, ...], raw: dict[str, Any]) -> None:
    """The web's guard: a parameter that names a file on this machine is for the CLI and Python only."""
    for p in params:
        if p.cli_only and p.name in raw and str(raw[p.name]).strip() != str(p.default):
            raise ParamError(
                f"{p.name} names a file on this machine: only the CLI (attnlab explain ... {p.option}) "
                f"and Python take it, not the web",
                p.name,
                "explain.error.cli_only",
                option=p.option,
            )


def heads_divide(d_model: int, n_heads: int, name: str = "n_heads") -> None:
    """ParamError unless n_heads heads split d_model evenly, naming `name` (the heads, or a width whose head count
    is fixed); a lesson's cost() calls it, so the refusal comes before the lesson waits for a slot."""
    if d_model % n_heads == 0:
        return
    said = (
        f"d_model must be divisible by n_heads, got d_model={d_model}, n_heads={n_heads}"
        if name == "n_heads"
        else f"d_model must be even ({n_heads} heads), got {d_model}"
    )
    key = (
        "explain.error.divisible" if name == "n_heads" else "explain.error.heads_split"
    )  # "d_model must divide d_model" reads wrong
    raise ParamError(said, name, key, width="d_model", d=d_model, h=n_heads)


def check(params: tuple[Param, ...], values: dict[str, Any]) -> dict[str, Any]:
    """Parse every declared parameter from `values` (missing ones take their default); unknown names fail."""
    names = {p.name for p in params}
    unknown = [k for k in values if k not in names]
    if unknown:
        raise ParamError(
            f"unknown parameter(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(names)) or 'none'}",
            sorted(unknown)[0],
            "explain.error.unknown",
            names=", ".join(sorted(unknown)),
            known=", ".join(sorted(names)) or "—",
        )
    return {p.name: p.parse(values[p.name]) if p.name in values else p.default for p in params}


_SEEDED = threading.RLock()  # torch has one global generator per process, and the web computes lessons on threads


@contextmanager
def seeded(seed: int):
    """Run a block under torch.manual_seed(seed) without disturbing the caller's random state. One seeded block
    at a time in the process: two lessons computing at once on the web's threads would otherwise reseed the one
    generator under each other, and a model would be drawn from the other's seed (keep such blocks short: a
    model's construction)."""
    import torch

    with _SEEDED, torch.random.fork_rng(devices=[]):
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


def memory_guard(n_bytes: float, what: str, limit_bytes: float, name: str, value: Any, largest: int) -> None:
    """Refuse a computation whose tensors would not fit comfortably in a laptop's memory. `name` = `value` is
    the parameter blamed; `largest` the largest value of it that would fit with the other settings unchanged."""
    if n_bytes > limit_bytes:
        need, limit = f"{n_bytes / 2**20:,.0f}", f"{limit_bytes / 2**20:,.0f}"
        raise ParamError(
            f"too large for memory: {what} would need {need} MiB, more than this lesson allows ({limit} MiB); "
            f"with the other settings unchanged {name} can be at most {largest}; choose smaller sizes",
            name,
            "explain.error.memory",
            value=value,
            need=need,
            limit=limit,
            largest=largest,
        )


__all__ = [
    "Param",
    "ParamError",
    "Claim",
    "MEMORY_LIMIT",
    "check",
    "largest_square",
    "lesson",
    "memory_guard",
    "one_thread",
    "refuse_cli_only",
    "heads_divide",
    "seeded",
]
