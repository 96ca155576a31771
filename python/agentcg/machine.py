# SPDX-License-Identifier: GPL-2.0-only
"""Machine profiles from Python: `--machine PROFILE` for run, compare, sweep
and fidelity, and the writer `agentcg fidelity` uses.

A profile (format documented in sim/calibrate/profile.h and the README,
"Fidelity") is YAML: `format: agentcg-machine-profile`, `version: 1`, a
`machine:` section with the config's machine keys, and an optional `fit:`
section saying what it was fitted on and which scenarios were held out.
Loading goes through the C++ loader (agentcg._core.load_machine_profile),
so errors name FILE:LINE and the key exactly as `agentcg-sim --machine`
does. Applying a profile overrides the machine keys it names: precedence
--set > --machine > --config > the trace's machine section.

Who calls it: cli.py (run, compare, sweep, fidelity), fidelity.py, tests.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:  # pathlib (with urllib, ipaddress) is imported only where a profile is written
    from pathlib import Path
    from typing import Any, Dict, Optional, Sequence

FORMAT = "agentcg-machine-profile"
VERSION = 1
# the order machine keys are written in (others, e.g. keys the model gains, follow sorted)
KEY_ORDER = ("cpus", "context_switch_ns", "wakeup_overhead_ns", "speed_pct")

__all__ = ["FORMAT", "VERSION", "config_with_profile", "load_profile", "overrides", "profile_text", "write_profile"]


def load_profile(path: str) -> Dict[str, Any]:
    """{machine: {key: value}, fit: {...}, source}; raises ConfigError (FILE:LINE: key ...)."""
    from . import _core

    return dict(_core.load_machine_profile(os.fspath(path)))


def overrides(path: Optional[str]) -> Dict[str, Any]:
    """The profile's machine keys as dotted config overrides ({} without a profile)."""
    if not path:
        return {}
    return {f"machine.{k}": v for k, v in load_profile(path)["machine"].items()}


def config_with_profile(config: Any, path: Optional[str]) -> Any:
    """CONFIG (None, a YAML path or a dict, as api.run takes it) with the
    profile's machine keys laid over it, as a dict of sections (a file is
    validated by the C++ loader first, so its errors keep their line)."""
    over = overrides(path)
    if not over:
        return config
    from . import api

    base: Dict[str, Any] = {}
    if isinstance(config, (str, os.PathLike)):
        import yaml  # python3-yaml

        api.load_config(config)  # raises ConfigError naming FILE:LINE
        with open(config, encoding="utf-8") as f:
            base = yaml.safe_load(f) or {}
    elif isinstance(config, Mapping):
        base = api._nest(config)  # noqa: SLF001 - the one nesting rule of config dicts
    return api._merge(base, api._nest(over))  # noqa: SLF001


def _scalar(v: Any) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    return json.dumps(str(v))  # a JSON string is a YAML string


def profile_text(machine: Mapping[str, Any], fit: Optional[Mapping[str, Any]] = None,
                 comment: Sequence[str] = ()) -> str:
    """A profile's YAML text (deterministic: fixed key order)."""
    lines = [f"# {c}" for c in comment]
    lines += [f"format: {FORMAT}", f"version: {VERSION}", "machine:"]
    keys = [k for k in KEY_ORDER if k in machine] + sorted(k for k in machine if k not in KEY_ORDER)
    lines += [f"  {k}: {_scalar(machine[k])}" for k in keys]
    if fit:
        lines.append("fit:")
        for k in ("tool", "fitted", "held_out", "targets", "sq_log_error_before", "sq_log_error_after"):
            if fit.get(k) is not None:
                v = fit[k]
                lines.append(f"  {k}: " + (f"{v:.6g}" if isinstance(v, float) else _scalar(v)))
    return "\n".join(lines) + "\n"


def write_profile(path: Path, machine: Mapping[str, Any], fit: Optional[Mapping[str, Any]] = None,
                  comment: Sequence[str] = ()) -> None:
    """Writes the profile and reads it back through the C++ loader (a
    profile this writes must load)."""
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(profile_text(machine, fit, comment), encoding="utf-8")
    os.replace(tmp, path)
    load_profile(str(path))
