"""The read side: scans of data files into Arrow (deletion vectors, column mapping), the change-data reader."""

from __future__ import annotations
