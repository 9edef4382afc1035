"""What the flash lesson measures: the peak memory of one attention call, the clock, and what a mask lets through.

Peak memory on CPU is read with a TorchDispatchMode that sees every tensor an op makes (`PeakBytes`). Each new
storage is counted when an op returns it and uncounted once nothing holds it any more (a weak reference to the
storage, checked before every op), so `peak` is the most bytes the call held alive at once, beyond the inputs,
which are registered first and never counted. This was picked over torch.profiler's memory view because it is
exact and the same on every run (the profiler reads the allocator, whose reuse of freed blocks varies with
what ran before), and it sees the tensors themselves: the largest one made is kept too. What it cannot see is
memory inside one op (a kernel's own scratch space), which neither attention path here uses beyond its result.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from attnlab.nn import attention, flash_attention


class PeakBytes(TorchDispatchMode):
    """`with PeakBytes(q, k, v) as p: f(q, k, v)`: p.peak = the most bytes of new tensors alive at once,
    p.largest = the bytes of the largest single storage made."""

    def __init__(self, *inputs: torch.Tensor):
        super().__init__()
        self.live: dict[int, tuple[StorageWeakRef, int]] = {}
        self.known = {x.untyped_storage().data_ptr() for x in inputs}  # the inputs: there before, not counted
        self.now = self.peak = self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for x in (out,) if isinstance(out, torch.Tensor) else tree_leaves(out):
            if isinstance(x, torch.Tensor):
                storage = x.untyped_storage()
                key, size = storage.data_ptr(), storage.nbytes()
                counted = self.live.get(key)
                if not size or key in self.known or (counted is not None and not counted[0].expired()):
                    continue  # an input, or a view of a storage already counted
                for gone in [k for k, (ref, _) in self.live.items() if ref.expired()]:
                    self.now -= self.live.pop(gone)[1]  # freed since the last count (its address may be reused)
                self.live[key] = (StorageWeakRef(storage), size)
                self.now += size
                self.peak = max(self.peak, self.now)
                self.largest = max(self.largest, size)
        return out


@dataclass
class MemoryPoint:
    n: int
    plain_bytes: int  # peak of attention(): the (n, n) scores and weights
    tiled_bytes: int  # peak of flash_attention(): the output and one tile's blocks
    plain_largest: int  # bytes of the largest tensor attention() made
    tiled_largest: int  # bytes of the largest tensor flash_attention() made
    scores_bytes: int  # n * n * 4: one (n, n) float32 matrix, for scale
    max_abs_diff: float  # |flash - attention|, largest entry


def inputs(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v of one head: (n, d) each, standard normal."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(3, n, d, generator=g).unbind(0)  # 3 x (n, d)


def memory_point(n: int, d: int, tile: int, seed: int = 0) -> MemoryPoint:
    """Peak bytes of one call of each version at length n (tile <= 0: one tile of n, the untiled null)."""
    q, k, v = inputs(n, d, seed)
    with torch.no_grad():
        with PeakBytes(q, k, v) as plain:
            ref = attention(q, k, v)[0]
        with PeakBytes(q, k, v) as tiled:
            out = flash_attention(q, k, v, tile=tile if tile > 0 else n)
    return MemoryPoint(
        n, plain.peak, tiled.peak, plain.largest, tiled.largest, 4 * n * n, float((out - ref).abs().max())
    )


def growth_order(ns: list[int], peaks: list[int]) -> float:
    """How a peak grows with n, read from its increments: log2 of (M(4n) - M(2n)) / (M(2n) - M(n)), averaged over
    the consecutive doublings. A constant part (one tile's blocks) cancels: M = a + b n gives 1, M = a + c n^2
    gives 2, and a mix lies between."""
    orders = []
    for i in range(len(ns) - 2):
        low, high = peaks[i + 1] - peaks[i], peaks[i + 2] - peaks[i + 1]
        orders.append(math.log2(high / low) if low > 0 and high > 0 else float("nan"))
    return float(sum(orders) / len(orders)) if orders else float("nan")


def loglog_slope(ns: list[int], peaks: list[int]) -> float:
    """Least-squares slope of log(peak) against log(n): what the figure's straight lines show."""
    x = [math.log(n) for n in ns]
    y = [math.log(p) for p in peaks]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)


@dataclass
class Timing:
    name: str  # attention | flash | sdpa
    seconds: float  # best of REPEATS, one thread: a clock reading, shown and never judged
    label: str = ""


REPEATS = 3


def best_time(fn, repeats: int = REPEATS) -> float:
    fn()  # warm-up
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def timings(n: int, d: int, tile: int, seed: int = 0) -> list[Timing]:
    """One head at length n: our explicit attention, our tiled loop, and torch's fused kernel."""
    q, k, v = inputs(n, d, seed)
    with torch.no_grad():
        return [
            Timing("attention", best_time(lambda: attention(q, k, v))),
            Timing("flash", best_time(lambda: flash_attention(q, k, v, tile=tile))),
            Timing("sdpa", best_time(lambda: F.scaled_dot_product_attention(q, k, v))),
        ]


def reached(mask: torch.Tensor, layers: int) -> list[torch.Tensor]:
    """For the last query: after each of 1..layers stacked layers with this mask, which key positions' information
    has reached it ((T,) bool each). A layer moves information from key j to query i where mask[i, j]."""
    seen = torch.zeros(mask.shape[-1], dtype=torch.bool)
    seen[-1] = True
    out = []
    for _ in range(layers):
        seen = seen | mask[seen].any(dim=0)  # (T,) every key some reached position reads
        out.append(seen.clone())
    return out
