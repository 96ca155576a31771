# SPDX-License-Identifier: GPL-2.0-only
"""File helpers shared by the commands (cli.py, demo.py): below both, so
neither imports the other for them.

atomic_write: a results or table file is either the old one or the whole
new one, never half written (a crash or ^C between write and rename leaves
only PATH.tmp).
"""
from __future__ import annotations

import os

__all__ = ["atomic_write"]


def atomic_write(path: str, text: str) -> None:
    """Writes TEXT to PATH through PATH.tmp and a rename."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)
