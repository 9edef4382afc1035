"""Plumbing the other layers share: folders written whole (`atomic`) and torch's CPU threads (`threads`)."""
