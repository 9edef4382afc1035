"""Honest rounding, shared by the CLI and the web pages: a number that is not exactly 0 or a whole number is
never shown as one. p = 0.99998 at 3 decimals would read "1" and −log p = 2e-5 would read "0"; `fixed`
shows "0.99998" and "2e-5" instead.
"""

from __future__ import annotations

import math

MAX_DECIMALS = 12  # beyond this a float's own noise would show


def strip(text: str) -> str:
    """'1.2500' -> '1.25', '2.000' -> '2', '-0' -> '0'."""
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def tiny(x: float, significant: int = 2) -> str:
    """2.3e-05 -> '2.3e-5' (no padded exponent, trailing zeros of the mantissa dropped)."""
    mantissa, exponent = f"{x:.{significant - 1}e}".split("e")
    return f"{strip(mantissa)}e{int(exponent)}"


def fixed(x: float, digits: int = 3) -> str:
    """x with up to `digits` decimals (trailing zeros dropped), but honest: when that rounds a number that is
    not whole to a whole one, more decimals (0.99998 -> '0.99998'), or for a tiny one, 2 significant digits in
    e-notation (0.00002 -> '2e-5'). Plain ASCII minus; callers swap in their own typography."""
    text = strip(f"{x:.{digits}f}")
    if "." in text or x == int(x) or not math.isfinite(x):
        return text
    if text == "0":
        return tiny(x)
    for more in range(digits + 1, MAX_DECIMALS + 1):
        text = strip(f"{x:.{more}f}")
        if "." in text:
            return text
    return text


def prob(p: float) -> str:
    """A probability at 3 significant digits: 0.512, 0.0312, 0.000312 (never '0.000' for a p that is not 0),
    2.3e-7 below 0.0001; honest as `fixed` is near 1 (0.99998, never '1'). Exactly 0 and 1 read '0' and '1'."""
    if not 0 < p < 1:
        return fixed(p)
    if p < 1e-4:
        return tiny(p, 3)
    return fixed(p, max(3, 2 - math.floor(math.log10(p))))


def rounded(x: float, digits: int = 3) -> float:
    """x rounded to `digits` decimals for a result (a dataclass, JSON), honest as `fixed` is: a number that is not
    whole never becomes whole, so the pages and the API cannot show it as one (0.99980 -> 0.9998, not 1.0;
    0.00004 -> 4e-05, not 0.0, which would read as masked)."""
    if not math.isfinite(x):
        return x
    return float(fixed(x, digits))


MINUS = "\u2212"


def num(x: float | None, digits: int = 3) -> str:
    """0.87157 -> '0.872', 2.0 -> '2', -0.5 -> '−0.5', 0.99998 -> '0.99998', 2e-5 -> '2e−5',
    None (a masked score) -> '−∞' (`fixed` with a typographic minus; the pages' lab.js attnlabNum is the same
    rule, and the terminal views use it too, so terminal and page read alike)."""
    if x is None or x == float("-inf"):
        return f"{MINUS}∞"
    if x == float("inf"):
        return "∞"
    if math.isnan(x):
        return "NaN"
    return fixed(x, digits).replace("-", MINUS)  # honest: 0.99998 is never '1', 2e-5 never '0'
