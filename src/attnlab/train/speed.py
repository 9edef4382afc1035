"""How the one loop runs fast without changing what it computes: number format, optimizer kernel, compile.

- precision: 'fp32', or 'bf16' (torch.autocast: matmuls in bfloat16, weights and optimizer state stay fp32).
  'auto' picks bf16 on CUDA and fp32 on the CPU: on a CPU, autocast makes nanoGPT's CPU-recipe step slower
  (its casts cost more than its small matmuls save; README: Train fast).
- TF32 matmuls on CUDA (fp32 tensors, 10-bit mantissa products on the tensor cores).
- AdamW: fused on CUDA; on the CPU the 'foreach' kernels (one call for all parameters) when it measured faster.
- compile: torch.compile, opt-in; the first step then waits for the compiler (long on a CPU).
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

PRECISIONS = ("auto", "fp32", "bf16")


def resolve_precision(precision: str, device: torch.device | str) -> str:
    """'fp32' or 'bf16' for this device; 'auto' means bf16 on CUDA only."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    device = torch.device(device)
    if precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    if precision == "bf16" and device.type == "mps" and not hasattr(torch, "mps"):
        raise ValueError("bf16 autocast needs a newer PyTorch on MPS")
    return precision


def autocast(precision: str, device: torch.device | str):
    """The context a forward pass (and its loss) runs in: bf16 autocast, or nothing at all for fp32."""
    device = torch.device(device)
    if precision != "bf16":
        return nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def use_tf32(device: torch.device | str) -> None:
    """Let fp32 matmuls and convolutions use TF32 tensor cores on CUDA (process-wide; no effect elsewhere)."""
    if torch.device(device).type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


def adamw_kernel(device: torch.device | str, n_params: int) -> dict:
    """Keyword for torch.optim.AdamW: which kernel runs the same update.

    fused (one kernel for all parameters and all of Adam's arithmetic) on CUDA, and on the CPU for models of
    SMALL_MODEL parameters or more: at nanoGPT's CPU recipe it cuts the optimizer's CPU time a step several-fold
    (README: Train fast). Its rounding differs from the reference loop in the last bits, so the lab's tiny
    models use foreach instead (one call per operation for all parameters, bitwise the reference loop's
    result, and faster than it): their seeded runs stay exactly what they were.
    """
    from attnlab.io.threads import SMALL_MODEL

    kind = torch.device(device).type
    if kind == "cuda" or (kind == "cpu" and n_params >= SMALL_MODEL and _fused_on_cpu()):
        return {"fused": True}
    return {"foreach": True}


def _fused_on_cpu() -> bool:
    """torch >= 2.4 has a fused CPU AdamW; older versions refuse fused=True for CPU tensors."""
    try:
        torch.optim.AdamW([torch.zeros(1, requires_grad=True)], fused=True)
    except (RuntimeError, ValueError, TypeError):
        return False
    return True


def maybe_compile(module: torch.nn.Module, enabled: bool):
    """torch.compile(module) when asked; the module itself otherwise."""
    return torch.compile(module) if enabled else module
