# SPDX-License-Identifier: GPL-2.0-only
"""Exceptions of the agentcg package.

TraceError and ConfigError come from the C++ extension (so a bad trace or
config raised deep inside a simulation keeps its file, line and key); this
module re-exports them next to AgentcgError, the base of errors raised by the
Python layer itself. All three derive from ValueError, so callers can catch
"bad input" with one except clause. Used by every module of the package and
by the CLI, which turns them into one error line and exit status 1.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:
    from typing import Sequence

from . import _core

TraceError = _core.TraceError
ConfigError = _core.ConfigError


class AgentcgError(ValueError):
    """Bad input detected by the Python layer (what, where, what was expected)."""


class UnknownNameError(AgentcgError):
    """A name (policy, config key, generator kind) that does not exist; the
    message lists the close matches. The CLI exits 2 (usage) on it."""


def unknown_name(what: str, name: str, choices: Sequence[str]) -> UnknownNameError:
    """"unknown policy 'agentgc' (did you mean agentcg?); expected one of ..."."""
    import difflib  # only on an error: keeps it out of the CLI's start-up

    close = difflib.get_close_matches(str(name), list(choices), n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return UnknownNameError(f"unknown {what} '{name}'{hint}; expected one of: {', '.join(choices)}")


__all__ = ["AgentcgError", "ConfigError", "TraceError", "UnknownNameError", "unknown_name"]
