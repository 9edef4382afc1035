"""Importance is measured, not read off the weights: ablation, activation patching and rollout on a small GPT."""
