"""Sinusoidal positions: the table, a few of its columns as curves, and the rotation property.

For every frequency omega_i = 10000^(-2i/d) the pair (PE[pos, 2i], PE[pos, 2i+1]) = (sin, cos)(omega_i pos)
moves to PE[pos + delta] by the 2x2 rotation R_i(delta) = [[cos, sin], [-sin, cos]](omega_i delta), the same
matrix for every pos. The lesson applies R(delta) to PE[pos] for many pos and reports the largest error
against PE[pos + delta], in float64, computed here from the formula with NumPy independently of
`attnlab.nn.sinusoidal_positions`, which is then compared with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlab.i18n import t
from attnlab.lessons.common.claims import Claim, within
from attnlab.lessons.common.cost import DEFAULT, Cost
from attnlab.lessons.common.params import Param, ParamError, check, lesson
from attnlab.lessons.common.result import Shown

PARAMS = (
    Param("n_positions", "int", 64, 2, 512, step=1, help="positions in the table (rows)"),
    Param("d_model", "int", 64, 2, 512, step=2, help="width of a position vector (even)"),
    Param("delta", "int", 5, 0, 4096, step=1, help="the shift delta of the rotation property"),
    Param("n_check", "int", 1000, 1, 100000, step=1, log=True, help="positions pos = 0 .. n_check-1 checked"),
)
QUICK = {"n_positions": 16, "d_model": 16, "n_check": 50}
COURSE = ("lecture06", 70)  # the course map's section (web/course_map.py) and place in it

BASE = 10000.0
ROTATION_TOL = 1e-6  # float64 sin/cos at positions up to ~10^5: rounding is ~1e-11, far below this
LAYER_TOL = 1e-6  # the layer is float32: rounding ~1e-7


@dataclass
class Rotation:
    i: int  # frequency index: dims (2i, 2i+1)
    omega: float  # 10000^(-2i/d)
    angle: float  # omega * delta, radians
    matrix: list[list[float]]  # [[cos, sin], [-sin, cos]]
    max_error: float  # max over pos of |R PE[pos] - PE[pos + delta]| on this pair of dims


@dataclass
class PositionalResult(Shown):
    topic: str
    params: dict
    table: list[list[float]]  # (n_positions, d_model) heatmap: position x dimension
    curves: dict[str, list[float]]  # "dim 0" -> PE[:, 0] over positions
    rotations: list[Rotation]  # one per frequency
    max_rotation_error: float  # over every pair and every checked pos
    wavelengths: list[float]  # 2 pi / omega_i: the period, in positions, of each pair
    layer_max_diff: float  # |attnlab.nn.sinusoidal_positions - this table|, the layer is float32 by default
    note: str  # computing a position is not extrapolating to it
    claims: list[Claim]


def pe_table(n_positions: int, d_model: int) -> np.ndarray:
    """PE[pos, 2i] = sin(pos omega_i), PE[pos, 2i+1] = cos(pos omega_i), float64, straight from the formula."""
    pos = np.arange(n_positions, dtype=np.float64)[:, None]  # (n, 1)
    omega = BASE ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # (d/2,)
    pe = np.empty((n_positions, d_model))
    pe[:, 0::2] = np.sin(pos * omega)
    pe[:, 1::2] = np.cos(pos * omega)
    return pe


def rotation(omega: float, delta: int) -> np.ndarray:
    """R(delta) with (sin, cos)(omega (pos + delta)) = R(delta) (sin, cos)(omega pos)."""
    c, s = np.cos(omega * delta), np.sin(omega * delta)
    return np.array([[c, s], [-s, c]])


def cost(p: dict) -> Cost:
    """The shown table (float64, then as Python floats for the page and its JSON) and one frequency's checked
    columns at a time."""
    table = p["n_positions"] * p["d_model"] * (8 + 3 * 32)
    checked = (p["n_check"] + p["delta"]) * 8 * 6  # the positions, the angles, sin, cos and their stack
    return Cost.of_bytes(table + checked, extra_mb=DEFAULT.mb)


@lesson
def positional(
    n_positions: int = 64, d_model: int = 64, delta: int = 5, n_check: int = 1000, *, lang: str = "zh"
) -> PositionalResult:
    """The sinusoidal table and the check that a shift by delta is one fixed rotation per frequency."""
    p = check(PARAMS, dict(n_positions=n_positions, d_model=d_model, delta=delta, n_check=n_check))
    n_positions, d_model, delta, n_check = p["n_positions"], p["d_model"], p["delta"], p["n_check"]
    if d_model % 2:
        raise ParamError(
            f"d_model must be even (sin and cos come in pairs), got {d_model}",
            "d_model",
            "explain.error.even",
            got=d_model,
        )

    table = pe_table(n_positions, d_model)
    omegas = BASE ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)
    pos = np.arange(n_check + delta, dtype=np.float64)  # positions 0 .. n_check-1+delta
    rotations = []
    for i, omega in enumerate(omegas):  # one frequency at a time: two columns, never the whole checked table
        R = rotation(omega, delta)
        angle = pos * omega  # (n_check + delta,)
        both = np.stack([np.sin(angle), np.cos(angle)], axis=1)  # (n_check + delta, 2) = (sin, cos)(omega pos)
        pairs, shifted = both[:n_check], both[delta : delta + n_check]  # (n_check, 2) at pos and at pos + delta
        error = np.abs(pairs @ R.T - shifted).max()  # R @ (sin, cos)^T for every pos at once
        rotations.append(Rotation(i, float(omega), float(omega * delta), R.tolist(), float(error)))
    max_err = max(r.max_error for r in rotations)

    from attnlab.nn import sinusoidal_positions  # the layer the models use

    layer = sinusoidal_positions(n_positions, d_model).double().numpy()
    layer_diff = float(np.abs(layer - table).max())
    dims = sorted(
        {2 * (d_model // 16), 2 * (d_model // 8), 2 * (d_model // 8) + 1, 2 * (d_model // 4) + 1, d_model - 2}
    )
    claims = [
        within(
            "rotation",
            t("explain.positional.claim.rotation", lang, delta=delta, n=n_check, err=max_err, tol=ROTATION_TOL),
            lang,
            measured=max_err,
            expected=0.0,
            tol=ROTATION_TOL,
            control=t("explain.positional.control.shifted", lang),
            values={"max_error": max_err, "delta": delta, "n_check": n_check},
        ),
        within(
            "layer",
            t("explain.positional.claim.layer", lang, diff=layer_diff, tol=LAYER_TOL),
            lang,
            measured=layer_diff,
            expected=0.0,
            tol=LAYER_TOL,
            control=t("explain.positional.control.formula", lang),
            values={"max_diff": layer_diff},
        ),
    ]
    return PositionalResult(
        topic="positional",
        params=p,
        table=table.tolist(),
        curves={f"{d}": table[:, d].tolist() for d in dims},
        rotations=rotations,
        max_rotation_error=max_err,
        wavelengths=(2 * np.pi / omegas).tolist(),
        layer_max_diff=layer_diff,
        note=t("explain.positional.note", lang),
        claims=claims,
    )
