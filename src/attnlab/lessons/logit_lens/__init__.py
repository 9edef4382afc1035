"""⑧ The logit lens: what a small GPT would predict if it stopped after each layer."""
