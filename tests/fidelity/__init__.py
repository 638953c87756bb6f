"""Fidelity corpus: kube-scheduler plugin unit tests replayed through ``explain``."""
