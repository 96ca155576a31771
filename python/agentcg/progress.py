# SPDX-License-Identifier: GPL-2.0-only
"""Progress bars (tqdm, on stderr) for work that takes more than a moment.

Bars are shown only when stderr is a terminal and not silenced (the CLI's
--quiet calls set_quiet(True)); output files never depend on them. Used by
compare(progress=True), sweep(progress=True) and the CLI.
"""
from __future__ import annotations

import sys
TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional

_quiet = False


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def enabled() -> bool:
    return not _quiet and sys.stderr.isatty()


def bar(iterable: Optional[Iterable[Any]] = None, total: Optional[int] = None, desc: str = "",
        unit: str = "it") -> Any:
    """A tqdm bar over `iterable` (or a manual one with update()), or a no-op."""
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr,
                disable=not enabled(), leave=False, dynamic_ncols=True)
