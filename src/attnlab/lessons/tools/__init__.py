"""⑦ Use it: a tool the model learns to call (attnlab explain tools)."""
