# SPDX-License-Identifier: GPL-2.0-only
"""The one duration grammar and the one size grammar, in Python.

Accepts exactly the language of core/units/units.h (the C++ definition used
by every agentcg binary); core/units/units_table.json lists accepted and
rejected forms and tests/python/test_units.py checks this module against it,
as core/units/units_test.cc checks the C++ one.

    duration := NUMBER UNIT      UNIT: ns us ms s m (minutes) h
    size     := NUMBER [UNIT]    no unit or B: bytes; K M G T P (any case) and
                                 KiB..PiB: binary; kB KB MB GB TB PB: SI
    NUMBER   := DIGITS ["." DIGITS]   at most 9 fractional digits

The value must be a whole number of ns / bytes and fit in 64 bits; the
arithmetic is exact (fractions.Fraction, no floating point). Who uses it:
traces.parse_duration, fidelity, the CLI.
"""
from __future__ import annotations

import re
TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:
    from typing import Dict, List, Optional

from ._errors import AgentcgError

__all__ = ["DURATION_FORMS", "SIZE_FORMS", "parse_duration_ns", "parse_size_bytes",
           "try_parse_duration_ns", "try_parse_size_bytes", "SEEDS_FORMS", "try_parse_seeds"]

DURATION_FORMS = "a duration with a unit: ns, us, ms, s, m or h (e.g. 500ms, 2.5s, 10s)"
SIZE_FORMS = ("a size: bytes, or a number with K/M/G/T (binary), KiB/MiB/GiB/TiB (binary) or "
              "kB/MB/GB/TB (10^3..) (e.g. 4096, 512MiB, 16G, 1.5GiB)")

_U64_MAX = 2**64 - 1
# [0-9] not \d: \d also matches other scripts' digits, which C++ rejects.
_NUMBER = re.compile(r"([0-9]+(?:\.[0-9]{1,9})?)(.*)", re.DOTALL)
_DURATION_UNITS: Dict[str, int] = {
    "ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_SIZE_UNITS: Dict[str, int] = {"": 1, "B": 1}
for _i, _letter in enumerate("KMGTP", start=1):
    _SIZE_UNITS[_letter] = _SIZE_UNITS[_letter.lower()] = _SIZE_UNITS[_letter + "iB"] = 1 << (10 * _i)
    _SIZE_UNITS[_letter + "B"] = 10 ** (3 * _i)
_SIZE_UNITS["kB"] = 1000


def _scaled(text: str, units: Dict[str, int]) -> Optional[int]:
    m = _NUMBER.fullmatch(text)
    if not m or m.group(2) not in units:
        return None
    from fractions import Fraction  # here: fractions pulls decimal, ~2 ms of start-up

    v = Fraction(m.group(1)) * units[m.group(2)]
    if v.denominator != 1 or v > _U64_MAX:
        return None
    return int(v)


def try_parse_duration_ns(text: str) -> Optional[int]:
    """Nanoseconds, or None when TEXT is not in the duration grammar."""
    return _scaled(text, _DURATION_UNITS) if isinstance(text, str) else None


def try_parse_size_bytes(text: str) -> Optional[int]:
    """Bytes, or None when TEXT is not in the size grammar."""
    return _scaled(text, _SIZE_UNITS) if isinstance(text, str) else None


def parse_duration_ns(text: str, what: str = "duration") -> int:
    """'10s', '500ms', '2.5s', '250us', '1000ns', '2m', '1h' -> ns (AgentcgError otherwise)."""
    v = try_parse_duration_ns(text)
    if v is None:
        raise AgentcgError(f"{what}: expected {DURATION_FORMS}, got {text!r}")
    return v


def parse_size_bytes(text: str, what: str = "size") -> int:
    """'4096', '512MiB', '16G', '16GB' (10^9), '1.5GiB' -> bytes (AgentcgError otherwise)."""
    v = try_parse_size_bytes(text)
    if v is None:
        raise AgentcgError(f"{what}: expected {SIZE_FORMS}, got {text!r}")
    return v


SEEDS_FORMS = "seeds from 0 to 2**64-1 such as 1,2,3 or 1-5"


def try_parse_seeds(text: str) -> Optional[List[int]]:
    """'1-5', '1,2,3', '1-3,7' -> the seeds in order; None when TEXT is not
    such a list (empty, a range backwards or over 10,000 wide, a seed
    outside 0..2**64-1). The seed list of compare, sweep, demo and fidelity."""
    out: List[int] = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        try:
            if "-" in part.lstrip("-"):
                lo, hi = part.split("-", 1)
                a, b = int(lo), int(hi)
                if b < a or b - a > 10_000:
                    return None
                out.extend(range(a, b + 1))
            else:
                out.append(int(part))
        except ValueError:
            return None
    if not out or any(not 0 <= x < 2**64 for x in out):
        return None
    return out
