"""The write side's data plane: Arrow in, Parquet data files and their ``add`` actions out."""

from __future__ import annotations
