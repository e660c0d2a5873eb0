"""One module (or package) per command.

A command plans in terms of files and actions, hands the data work to an executor and commits one
transaction.
"""

from __future__ import annotations
