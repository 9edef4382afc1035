"""⑧ Induction heads forming: prefix-matching and in-context learning of a 2-layer attention-only GPT against a 1-layer control."""
