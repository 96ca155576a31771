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

from . import _core

TraceError = _core.TraceError
ConfigError = _core.ConfigError


class AgentcgError(ValueError):
    """Bad input detected by the Python layer (what, where, what was expected)."""


__all__ = ["AgentcgError", "ConfigError", "TraceError"]
