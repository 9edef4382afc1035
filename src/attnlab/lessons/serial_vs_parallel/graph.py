"""The dependency graph a layer actually ran, recorded op by op: what the serial-vs-parallel lesson counts.

`OpTrace` is a TorchDispatchMode: every aten operation that runs inside it becomes a node, linked to the nodes that
produced the tensors it read (parameters and inputs made outside have no node). After the layer has run,
`dependencies(trace, outputs)` reads, for the layer's per-position outputs (an RNN's states h_1 .. h_n, one tensor
each; attention's output, one tensor for every position), which output each one had to wait for and how long the
longest such chain is: n for the RNN, 1 for attention. Nothing here is assumed about either layer: a "recurrent"
layer that computed every position at once would show a chain of 1, and one that built its outputs one after the
other would show n.
"""

from __future__ import annotations

from collections import deque

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.weak import WeakIdKeyDictionary


class OpTrace(TorchDispatchMode):
    """Counts every aten operation that runs inside it and records which earlier operations each one read."""

    def __init__(self):
        super().__init__()
        self.count = 0
        self.parents: list[set[int]] = []  # node -> the nodes whose outputs it read
        self.producer = WeakIdKeyDictionary()  # tensor -> the node that produced it, while the tensor lives

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.count += 1
        inputs = [x for x in tree_flatten((args, kwargs or {}))[0] if isinstance(x, torch.Tensor)]
        node = len(self.parents)
        self.parents.append({self.producer[x] for x in inputs if x in self.producer})
        for x in tree_flatten(out)[0]:
            if isinstance(x, torch.Tensor):
                self.producer[x] = node
        return out

    def node_of(self, tensor: torch.Tensor) -> int:
        return self.producer[tensor]


def dependencies(trace: OpTrace, outputs: list[torch.Tensor]) -> tuple[int, dict[int, list[int]]]:
    """(the longest chain of outputs each waiting for the one before, edges i -> j where output j's operations read
    output i directly, not through another output), the outputs indexed by position in `outputs`."""
    at: dict[int, list[int]] = {}  # node -> the output positions it produced
    for i, x in enumerate(outputs):
        at.setdefault(trace.node_of(x), []).append(i)
    chain: list[int] = []  # node -> outputs on the longest chain of outputs that ends in it
    nearest: list[set[int]] = []  # node -> the output nodes it read last, not through another output
    edges: dict[int, list[int]] = {}
    for node, parents in enumerate(trace.parents):  # recorded in the order they ran: parents come first
        read = set().union(*({p} if p in at else nearest[p] for p in parents)) if parents else set()
        chain.append(max((chain[p] for p in parents), default=0) + (node in at))
        nearest.append(read)
        for before in read if node in at else ():
            for i in at[before]:
                edges.setdefault(i, []).extend(at[node])
    longest = max((chain[node] for node in at), default=0)
    return longest, edges


def shortest_path(edges: dict[int, list[int]], start: int, goal: int) -> int:
    """Breadth-first search: the fewest edges from start to goal (-1 if unreachable)."""
    seen, queue = {start: 0}, deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            return seen[node]
        for nxt in edges.get(node, ()):
            if nxt not in seen:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    return -1
