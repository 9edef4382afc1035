"""Activation patching (Meng et al. 2022; Wang et al. 2022): run a corrupted input, but with one activation taken
from the clean run, and see how much of the clean answer comes back.

    restored = (log p_patched - log p_corrupt) / (log p_clean - log p_corrupt)    1 = all of it, 0 = none

A site is a trace name, optionally narrowed to one head and/or one position.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlab.inspect.effects import head_site, log_prob, ref_heads
from attnlab.inspect.hooks import as_batch, replace_at, run_with
from attnlab.inspect.lens import n_layers


@dataclass(frozen=True)
class Site:
    name: str  # e.g. "layers.1.output" (the residual stream) or "layers.0.attn.head_outputs"
    head: int | None = None  # head_outputs only: one head
    position: int | None = None  # one position (the token axis); None = every position


def patch(model: nn.Module, clean, corrupt, site: Site | str) -> Tensor:
    """Logits (B, T, vocab) of the corrupt input with `site` set to its value in the clean run."""
    site = Site(site) if isinstance(site, str) else site
    clean, corrupt = as_batch(clean), as_batch(corrupt)
    if clean.shape != corrupt.shape:
        raise ValueError(
            f"clean and corrupt inputs must have the same shape, got {tuple(clean.shape)} and {tuple(corrupt.shape)}"
        )
    return patched_run(model, run_with(model, clean)[1], corrupt, site)


def patched_run(model: nn.Module, clean_trace, corrupt: Tensor, site: Site) -> Tensor:
    """The corrupt run's logits with `site` taken from an already recorded clean run's trace."""
    edit = replace_at(clean_trace[site.name], head=site.head, position=site.position)
    return run_with(model, corrupt, {site.name: edit})[0]


def restoration(model: nn.Module, clean, corrupt, target: int, what: str = "resid", *, position: int = -1) -> Tensor:
    """The share of log p(target at position) restored by patching each site:
    what="resid": (layers + 1, T), the residual stream at each layer and token position;
    what="heads": (layers, heads), each head's output at every position."""
    clean, corrupt = as_batch(clean), as_batch(corrupt)
    if clean.shape != corrupt.shape:
        raise ValueError(
            f"clean and corrupt inputs must have the same shape, got {tuple(clean.shape)} and {tuple(corrupt.shape)}"
        )
    clean_logits, clean_trace = run_with(model, clean)  # recorded once, patched from at every site
    clean_lp = log_prob(clean_logits, target, position)
    corrupt_lp = log_prob(run_with(model, corrupt)[0], target, position)
    gap = clean_lp - corrupt_lp
    if gap.abs().item() < 1e-9:
        raise ValueError("the clean and corrupt inputs give the answer the same probability: nothing to restore")

    def share(site: Site) -> float:
        return ((log_prob(patched_run(model, clean_trace, corrupt, site), target, position) - corrupt_lp) / gap).item()

    L, T = n_layers(model), as_batch(clean).shape[1]
    if what == "resid":
        names = ["embed.output"] + [f"layers.{i}.output" for i in range(L)]
        return torch.tensor([[share(Site(name, position=t)) for t in range(T)] for name in names])  # (L+1, T)
    if what == "heads":
        return torch.tensor(
            [[share(Site(head_site(i), head=h)) for h in range(ref_heads(model))] for i in range(L)]
        )  # (L, H)
    raise ValueError(f'what must be "resid" or "heads", got {what!r}')
