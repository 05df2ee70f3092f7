"""Benchmarks for convrisk: `python -m bench` (see bench/__main__.py)."""
