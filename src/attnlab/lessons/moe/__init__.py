"""⑦ Mixture of experts: a top-k routed FFN trained beside dense models of equal active and equal total parameters."""
