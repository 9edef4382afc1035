"""Bytes measured on the lab's own GPT, to hold the formulas of models/memory.py to.

- parameters, gradients (after one backward) and AdamW's state (after one step): the tensors' own bytes;
- the KV cache after decoding T tokens one at a time with `model.new_kv_cache()`, as sampling.py does, and one
  attention layer of a published model's shape reading T tokens on the meta device (shapes only: nothing allocated);
- activations: every tensor autograd saves for the backward pass (torch.autograd.graph.saved_tensors_hooks sees
  each one), counted once per storage (q and its transposed view are one buffer), parameters left out;
- peak: the live bytes of one training step, from `LiveBytes`, a TorchDispatchMode. We chose it over the profiler's
  memory view because it is exact at the granularity we need and simple to read: every op's output storage is
  counted when it appears and uncounted, through a weak reference, when the last tensor using it dies, so `live`
  is what the step holds after each op. It sees what torch allocates, not what the allocator keeps cached or
  rounds up to, so a GPU's `torch.cuda.max_memory_allocated` reads a little higher.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from attnlab.models import GPT, GPTConfig


class LiveBytes(TorchDispatchMode):
    """Tracks the bytes of every storage an op creates until it is freed; `peak` is the most held at once."""

    def __init__(self) -> None:
        super().__init__()
        self.live = self.peak = 0
        self.phase = self.peak_phase = ""  # the caller names the phase it is in; peak_phase is where the peak came
        self._refs: dict[int, weakref.ref] = {}  # data pointer -> the storage, while it lives

    def track(self, tensor: torch.Tensor) -> None:
        storage = tensor.untyped_storage()
        ptr, size = storage.data_ptr(), storage.nbytes()
        held = self._refs.get(ptr)
        if size == 0 or (held is not None and held() is not None):
            return  # empty, or a view of a storage already counted

        def freed(_ref, ptr=ptr, size=size) -> None:
            self.live -= size
            self._refs.pop(ptr, None)

        self._refs[ptr] = weakref.ref(storage, freed)
        self.live += size
        if self.live > self.peak:
            self.peak, self.peak_phase = self.live, self.phase

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.track(t)
        return out


def tensor_bytes(tensors) -> int:
    """Bytes of distinct storages (a tied weight or a view counted once)."""
    seen = {}
    for t in tensors:
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
    return sum(seen.values())


def loss_of(model: GPT, idx: torch.Tensor, targets: torch.Tensor, *, explicit: bool = False) -> torch.Tensor:
    """Cross-entropy of the logits against `targets`; explicit=True passes a recorder, which sends attention down the
    written-out path that materializes the (B, H, T, T) weights."""
    logits = model(idx, record=(lambda name, tensor: None) if explicit else None)  # (B, T, vocab)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def saved_activation_bytes(model: GPT, idx: torch.Tensor, targets: torch.Tensor, *, explicit: bool = False) -> int:
    """Bytes of the tensors autograd saves for backward in one forward pass and loss (parameters excluded)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        if s.data_ptr() not in params:
            saved[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss_of(model, idx, targets, explicit=explicit)
    return sum(saved.values())


def kv_cache_bytes_after(model: GPT, batch: int, tokens: int) -> int:
    """Bytes the KV cache holds after decoding `tokens` tokens one at a time (no gradients, as in generation)."""
    cache = model.new_kv_cache()
    ids = torch.zeros(batch, 1, dtype=torch.long)
    with torch.no_grad():
        for _ in range(tokens):
            logits = model(ids, kv_cache=cache)  # (B, 1, vocab)
            ids = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1) the next token, greedy
    return tensor_bytes([t for layer in cache.layers for t in (layer.k, layer.v)])


def layer_kv_cache_bytes_meta(d_model: int, heads: int, kv_heads: int, tokens: int, dtype: torch.dtype) -> int:
    """Bytes one of our MultiHeadAttention layers (d_model, heads, kv_heads K/V heads) keeps in its KV cache after
    reading `tokens` tokens, built and run on the meta device: every tensor has its shape and dtype and no memory,
    so a 7B model's layer at context 2048 costs nothing."""
    from attnlab.nn import MultiHeadAttention
    from attnlab.nn.multihead import LayerKVCache

    cache = LayerKVCache()
    with torch.device("meta"), torch.no_grad():
        layer = MultiHeadAttention(d_model, heads, n_kv_heads=kv_heads).to(dtype)
        layer(torch.empty(1, tokens, d_model, dtype=dtype), kv_cache=cache, causal=True)
    return sum(t.numel() * t.element_size() for t in (cache.k, cache.v))  # meta storages have no data pointer


@dataclass
class TrainStep:
    params: int
    param_tensors: int
    weights: int  # bytes of the parameters
    gradients: int  # bytes of .grad after one backward
    adamw: int  # bytes of AdamW's state after one step
    activations: int  # bytes autograd saved (fused attention, what training runs)
    activations_explicit: int  # the same forward on the written-out attention path
    peak: int  # LiveBytes' peak over one whole step (forward, backward, AdamW), state included
    peak_phase: str  # where it came: "forward", "backward" or "step"
    moments: dict  # live bytes at: start (weights, buffers, AdamW, the batch's ids), the end of forward, backward, step
    cuda_peak: int | None  # torch.cuda.max_memory_allocated over the same step, where a GPU is present


def train_step(config: GPTConfig, batch: int, seed: int = 0) -> TrainStep:
    """One model, one batch: the bytes of each part, and the live peak of a second training step (the first one
    creates AdamW's state; the second is what every later step looks like)."""
    torch.manual_seed(seed)
    model = GPT(config)
    idx = torch.randint(0, config.vocab_size, (batch, config.context_length))  # (B, T)
    targets = torch.randint(0, config.vocab_size, (batch, config.context_length))  # (B, T)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    params = list(model.parameters())
    loss_of(model, idx, targets).backward()
    gradients = tensor_bytes(p.grad for p in params)
    opt.step()
    opt.zero_grad(set_to_none=True)  # what the training loop does: gradients are created anew by each backward
    adamw = tensor_bytes(t for state in opt.state.values() for t in state.values())
    activations = saved_activation_bytes(model, idx, targets)
    explicit = saved_activation_bytes(model, idx, targets, explicit=True)

    live = LiveBytes()
    for t in [*params, *model.buffers(), *(t for state in opt.state.values() for t in state.values()), idx, targets]:
        live.track(t)  # what exists before the step (buffers: RoPE's frequencies, the sinusoidal table)
    moments = {"start": live.live}
    with live:
        live.phase = "forward"
        loss = loss_of(model, idx, targets)
        moments["forward"] = live.live  # the saved activations (and the loss) on top of the state
        live.phase = "backward"
        loss.backward()
        del loss
        moments["backward"] = live.live  # activations freed, gradients held
        live.phase = "step"
        opt.step()
        opt.zero_grad(set_to_none=True)
        moments["step"] = live.live
    cuda_peak = cuda_step_peak(config, batch, seed) if torch.cuda.is_available() else None
    return TrainStep(
        sum(p.numel() for p in params),
        len(params),
        tensor_bytes(params),
        gradients,
        adamw,
        activations,
        explicit,
        live.peak,
        live.peak_phase,
        moments,
        cuda_peak,
    )


def cuda_step_peak(config: GPTConfig, batch: int, seed: int) -> int:
    """The same second step on the GPU, read by torch.cuda.max_memory_allocated (never needed to pass CI)."""
    torch.manual_seed(seed)
    model = GPT(config).cuda()
    idx = torch.randint(0, config.vocab_size, (batch, config.context_length), device="cuda")
    targets = torch.randint(0, config.vocab_size, (batch, config.context_length), device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for i in range(2):
        if i == 1:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        loss_of(model, idx, targets).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()
