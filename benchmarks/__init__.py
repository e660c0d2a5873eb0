"""Benchmarks comparing the project's Delta log engine with delta-rs (see benchmarks/README.md)."""

from __future__ import annotations
