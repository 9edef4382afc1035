"""Inside a trained model: what each layer would predict, which heads matter, what patching restores.

Built on attnlab.trace and one intervention hook (attnlab.nn.multihead.hooked), never on a second copy of a
model. `run_with` edits named activations; the methods are short uses of it:

    logit_lens(model, ids)                      # (layers + 1, T, vocab)
    head_effects(model, ids, target, how="zero")  # (layers, heads) of Δ log p(target)
    patch(model, clean, corrupt, "layers.1.output")  # corrupt run's logits with one clean activation
    rollout(model, ids)                         # (T, T) attention rollout
"""

from attnlab.inspect.effects import HOWS, head_effects, log_prob
from attnlab.inspect.hooks import as_batch, evaluating, knock_out, replace_at, run_with, zero_head
from attnlab.inspect.lens import answer_by_layer, logit_lens, residual_streams, unembed
from attnlab.inspect.patching import Site, patch, restoration
from attnlab.inspect.rollout import rollout

__all__ = [
    "logit_lens",
    "head_effects",
    "patch",
    "rollout",
    "run_with",
    "replace_at",
    "zero_head",
    "knock_out",
    "as_batch",
    "evaluating",
    "answer_by_layer",
    "residual_streams",
    "unembed",
    "HOWS",
    "log_prob",
    "Site",
    "restoration",
]
