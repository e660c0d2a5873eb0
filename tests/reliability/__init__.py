"""Reliability tests: kill -9 at every storage step, hostile logs, and a bounded soak."""
