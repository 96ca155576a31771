# SPDX-License-Identifier: GPL-2.0-only
"""The `agentcg` command line (the ./agentcg launcher runs
`python3 -m agentcg.cli "$@"` with PYTHONPATH=python).

Subcommands: demo, run, compare, sweep, fleet, trace {generate,import,validate,
convert,stats,merge}, plot, report, policies, live compare, fidelity. run/compare/trace keep the C++ CLI's
options, output and exit codes (sim/cli/main.cc): 0 ok, 1 invalid input
(trace, config, files), 2 usage error (bad arguments, unknown policy or
generator option). Errors are one line on stderr ("agentcg: ..."); --debug
shows the traceback instead. Progress bars go to stderr, only on a terminal
and never with --quiet. `trace` subcommands run the C++ implementations
compiled into agentcg._core when present, so they behave exactly alike.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
TYPE_CHECKING = False  # typing is imported by static checkers only: ~2.5 ms of start-up (issue 21)
if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence


EXIT_OK = 0
EXIT_INPUT = 1
EXIT_USAGE = 2
EXIT_LIVE_SKIP = 77  # live commands: no qemu, kernel or live binaries here (the reason is printed)


class UsageError(Exception):
    """Bad command-line arguments (exit status 2)."""


class _Formatter(argparse.HelpFormatter):
    """argparse.HelpFormatter without its `import shutil` (with zlib, bz2,
    lzma): argparse builds a formatter on every add_argument, so the stock
    one pulls shutil into every command's start-up (issue 21). The width is
    shutil.get_terminal_size()'s: $COLUMNS, else the terminal's, else 80."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: Optional[int] = None) -> None:
        if width is None:
            try:
                width = int(os.environ.get("COLUMNS", "0"))
            except ValueError:
                width = 0
            if width <= 0:
                try:
                    width = os.get_terminal_size(sys.__stdout__.fileno()).columns
                except (AttributeError, ValueError, OSError):
                    width = 0
            width = (width or 80) - 2
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> "Any":  # argparse's own usage errors -> exit 2
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: {message}")


def _ms(ns: Any) -> str:
    ns = int(ns or 0)
    return f"{ns / 1e6:.3f}" if ns < 10_000_000 else f"{ns / 1e6:.1f}"


def _pct(v: Any) -> str:
    return f"{float(v or 0.0) * 100:.1f}%"


def _num(v: Any) -> str:
    return json.dumps(v)


def _split(s: str) -> List[str]:
    return [x for x in s.split(",") if x]


# Printing lives in agentcg.table (print_summary, print_compare) and file
# writing in agentcg._files, both below cli and demo: cli -> demo -> table,
# arrows downward only. Imports stay inside the commands so `--help` and
# `--version` load neither the extension nor pandas.


# --- commands -------------------------------------------------------------------

CPU_POLICY_HELP = ("eevdf (the kernel's default since 6.6: the baseline), cfs (pre-6.6 reference), "
                   "fifo, flatcg, agentcg")
GPU_POLICY_HELP = "none, nvshare, memory-aware, compute-limit, memory-aware+compute-limit"


def _seed_arg(text: str) -> int:
    """argparse type for --seed: 0..2**64-1 (the simulator's u64)."""
    from .api import SEED_MAX

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer (expected 0 to 2**64-1)") from None
    if not 0 <= v <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"{text} is out of range (expected an integer from 0 to 2**64-1)")
    return v


def _add_run_options(p: argparse.ArgumentParser, compare: bool) -> None:
    p.add_argument("trace", metavar="TRACE",
                   help="trace file (JSON format v1, or its binary form from trace convert; see traces/README.md)")
    if compare:
        p.add_argument("--policies", default="eevdf,flatcg,agentcg",
                       help="comma-separated CPU policies (default: eevdf,flatcg,agentcg; eevdf is the "
                            "baseline of the verdicts, cfs the pre-6.6 reference). Policies: " + CPU_POLICY_HELP)
        p.add_argument("--gpu-policy", default=None, help="one GPU policy for every run (default none): "
                       + GPU_POLICY_HELP)
        p.add_argument("--gpu-policies", default=None,
                       help="comma-separated GPU policies to compare (with one CPU policy)")
        p.add_argument("--seeds", default=None, metavar="LIST",
                       help="repeat every policy over these seeds, e.g. 1-5 or 1,2,3: the table shows the "
                            "median [95 %% bootstrap interval] and a verdict against eevdf")
        p.add_argument("--per-cgroup", action="store_true",
                       help=f"every cgroup's rows (by default shown up to {4} leaf cgroups; above that only "
                            "aggregate rows: p50/p99 over the cgroups and the worst one)")
    else:
        p.add_argument("--policy", default="eevdf", help="CPU policy (default eevdf): " + CPU_POLICY_HELP)
        p.add_argument("--gpu-policy", default="none",
                       help="GPU policy (default none; traces with GPU jobs only): " + GPU_POLICY_HELP)
        p.add_argument("--perfetto", metavar="FILE", default=None,
                       help="also write the schedule: Chrome/Perfetto trace-event JSON (`plot DIR` reads it "
                            "beside DIR/results.json), or ftrace/systrace text with sched_switch lines when FILE "
                            "ends in .txt or .systrace (Perfetto opens it as a kernel capture)")
        p.add_argument("--per-cgroup", action="store_true", help="every cgroup's rows in the summary")
    p.add_argument("--config", metavar="FILE", default=None, help="YAML config: scheduler, machine, cfs, gpu keys (README.md, \"Configuration\")")
    p.add_argument("--machine", metavar="PROFILE", default=None,
                   help="machine profile fitted by `agentcg fidelity` (its machine keys win over --config's)")
    p.add_argument("--set", metavar="KEY=VALUE", action="append", default=[],
                   help="override one config key, e.g. scheduler.fork_storm_threshold=16 (repeatable)")
    p.add_argument("--seed", type=_seed_arg, default=None, help="run seed, 0 to 2**64-1 (default 1)")
    p.add_argument("--out", metavar="DIR", required=True, help="output directory")
    p.add_argument("--json", action="store_true",
                   help="print the results as JSON on stdout instead of the table (files are written as usual)")
    p.add_argument("--quiet", action="store_true", help="no summary, no progress bars")


def _parse_value(v: str) -> Any:
    low = v.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def _overrides(items: Sequence[str]) -> Dict[str, Any]:
    from ._errors import UnknownNameError
    from .api import check_config_keys

    out: Dict[str, Any] = {}
    for it in items:
        if "=" not in it:
            raise UsageError(f"--set {it}: expected KEY=VALUE, e.g. scheduler.fork_storm_threshold=16")
        k, v = it.split("=", 1)
        k = k.strip()
        try:
            check_config_keys({k: 0}, "--set")
        except UnknownNameError as e:
            raise UsageError(f"--set {it}: {e}") from None
        out[k] = _parse_value(v.strip())
    return out


def _key_values(items: Sequence[str], flag: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for it in items:
        if "=" not in it:
            raise UsageError(f"{flag} {it}: expected KEY=VALUE, e.g. cpus=4")
        k, v = it.split("=", 1)
        out[k.strip()] = _parse_value(v.strip())
    return out


def _check_policies(names: Sequence[str], gpu: bool, flag: str) -> None:
    from . import _core
    from ._errors import unknown_name

    known = list(_core.gpu_policies() if gpu else _core.cpu_policies())
    for n in names:
        if n not in known:
            raise UsageError(f"{flag}: {unknown_name('GPU policy' if gpu else 'CPU policy', n, known)}")


def _check_trace_path(path: str, flag: str = "TRACE") -> None:
    from ._errors import AgentcgError

    if not os.path.exists(path):
        import difflib

        d = os.path.dirname(path) or "."
        near = difflib.get_close_matches(os.path.basename(path), os.listdir(d), n=2) if os.path.isdir(d) else []
        hint = f" (did you mean {' or '.join(os.path.join(os.path.dirname(path), x) for x in near)}?)" if near else ""
        raise AgentcgError(f"{flag} {path}: no such file{hint}")
    if os.path.isdir(path):
        raise AgentcgError(f"{flag} {path}: is a directory, expected a trace file (JSON)")


def _config(a: argparse.Namespace) -> Any:
    """--config with --machine's profile laid over it (agentcg.machine)."""
    from . import machine

    return machine.config_with_profile(a.config, getattr(a, "machine", None))


def cmd_run(a: argparse.Namespace) -> int:
    from . import _files, api
    from .table import print_summary

    _check_policies([a.policy], False, "--policy")
    _check_policies([a.gpu_policy], True, "--gpu-policy")
    over = _overrides(a.set) or None
    _check_trace_path(a.trace)
    from . import _core
    from .traces import load_trace

    trace = load_trace(a.trace)
    if a.gpu_policy != "none" and not _core.trace_has_gpu(trace):
        raise UsageError(f"--gpu-policy {a.gpu_policy}: {a.trace} has no GPU jobs (no 'gpu' section); leave the "
                         "flag out or use a GPU trace (trace generate gpu-oversub ...)")
    os.makedirs(a.out, exist_ok=True)  # --perfetto may point inside it
    r = api.run(trace, a.policy, a.gpu_policy, _config(a), 1 if a.seed is None else a.seed, over,
                perfetto=a.perfetto)
    out = os.path.join(a.out, "results.json")
    _files.atomic_write(out, r.text)
    r.save_histograms(a.out)  # histograms.json: the CDF plots' samples
    if a.json:
        sys.stdout.write(r.text if r.text.endswith("\n") else r.text + "\n")
    elif not a.quiet:
        print_summary(r.data, per_cgroup=a.per_cgroup)
        print(f"wrote {out}")
    return EXIT_OK


def cmd_compare(a: argparse.Namespace) -> int:
    from . import _core, _files, api, progress, table
    from .table import print_compare
    from .traces import load_trace

    policies = _split(a.policies)
    if not policies:
        raise UsageError("--policies: expected a comma-separated list, e.g. eevdf,flatcg,agentcg")
    _check_policies(policies, False, "--policies")
    if a.gpu_policies and a.gpu_policy:
        raise UsageError("give --gpu-policy or --gpu-policies, not both")
    gpols = _split(a.gpu_policies) if a.gpu_policies else [a.gpu_policy or "none"]
    _check_policies(gpols, True, "--gpu-policies" if a.gpu_policies else "--gpu-policy")
    if a.seeds is not None and a.seed is not None:
        raise UsageError("give --seed N or --seeds LIST, not both")
    seeds = _seeds(a.seeds, "--seeds") if a.seeds is not None else [1 if a.seed is None else a.seed]
    over = _overrides(a.set) or None
    _check_trace_path(a.trace)
    trace = load_trace(a.trace)
    if any(g != "none" for g in gpols) and not _core.trace_has_gpu(trace):
        raise UsageError(f"--gpu-polic{'ies' if a.gpu_policies else 'y'}: {a.trace} has no GPU jobs "
                         "(no 'gpu' section); leave it out or use a GPU trace")
    pairs = [(c, g) for c in policies for g in gpols]
    cfg = _config(a)
    runs: Dict[str, List[Dict[str, Any]]] = {}
    work = [(seed, c, g) for seed in seeds for c, g in pairs]
    for seed, c, g in progress.bar(work, desc="compare", unit="run"):
        label = c if len(gpols) == 1 else (g if len(policies) == 1 else f"{c}/{g}")
        # --plots: the first seed's schedule too (timelines, GPU lock holds)
        r = api.run(trace, c, g, cfg, seed, over, label=label, schedule=bool(a.plots) and seed == seeds[0])
        sub = os.path.join(a.out, label.replace("/", "+"))
        os.makedirs(sub, exist_ok=True)
        if seed == seeds[0]:
            _files.atomic_write(os.path.join(sub, "results.json"), r.text)
            r.save_histograms(sub)
            sched = r.schedule_text()
            if sched is not None:
                _files.atomic_write(os.path.join(sub, "schedule.perfetto.json"), sched)
        if len(seeds) > 1:  # every repetition is kept
            _files.atomic_write(os.path.join(sub, f"seed-{seed}.results.json"), r.text)
        runs.setdefault(label, []).append(r.data)
    demand = api.demand_shares(trace, seeds[0], cfg) if trace.nr_processes else None
    labels = list(runs)
    rows = table.build_rows(runs, per_cgroup=a.per_cgroup, demand=demand)
    doc = {"format": "agentcg-compare", "version": 1, "trace": trace.name, "cpus": trace.cpus,
           "seeds": seeds, "baseline": table.baseline_of(labels), "policies": labels,
           "rows": table.rows_json(rows, labels)}
    _files.atomic_write(os.path.join(a.out, "compare.json"), table.dumps(doc))
    if a.plots:
        from . import plots

        cmp = api.Comparison({lbl: api.Result.load(os.path.join(a.out, lbl.replace("/", "+")))
                              for lbl in labels})
        plots.plot_comparison(cmp, os.path.join(a.out, "plots"))
    if a.json:
        sys.stdout.write(table.dumps(doc))
    elif not a.quiet:
        print_compare(trace.name, trace.cpus, seeds, runs, per_cgroup=a.per_cgroup, demand=demand)
        print(f"wrote {a.out}/<policy>/results.json" + (" (and seed-N.results.json per seed)" if len(seeds) > 1
                                                          else "") + f" and {a.out}/compare.json")
    return EXIT_OK


def _seeds(text: str, flag: str = "--seeds") -> List[int]:
    from .units import SEEDS_FORMS, try_parse_seeds
    out = try_parse_seeds(text)
    if out is None:
        raise UsageError(f"{flag} {text}: expected {SEEDS_FORMS}")
    if len(set(out)) != len(out):
        raise UsageError(f"{flag} {text}: a seed is listed twice")
    return out


def cmd_sweep(a: argparse.Namespace) -> int:
    from .sweeps import Generator, sweep

    if bool(a.trace) == bool(a.generate):
        raise UsageError("sweep needs either TRACE or --generate KIND")
    grid: Dict[str, List[Any]] = {}
    for g in a.grid:
        if "=" not in g:
            raise UsageError(f"--grid {g}: expected KEY=V1,V2,... e.g. scheduler.fork_storm_threshold=8,16,32")
        k, v = g.split("=", 1)
        vals = [_parse_value(x) for x in _split(v)]
        if not vals:
            raise UsageError(f"--grid {g}: no values")
        grid[k.strip()] = vals
    if a.policies:
        grid = {"policy": _split(a.policies), **{k: v for k, v in grid.items() if k != "policy"}}
    gen_opts = _key_values(a.gen, "--gen") if a.gen else {}
    target: Any = Generator(a.generate, gen_opts) if a.generate else a.trace
    df = sweep(target, grid=grid, seeds=_seeds(a.seeds), config=_config(a), workers=a.workers,
               scheduler=a.dask, progress=not a.quiet)
    os.makedirs(a.out, exist_ok=True)
    csv = os.path.join(a.out, "sweep.csv")
    df.to_csv(csv, index=False)
    meta = {"format": "agentcg-sweep", "version": 1, "grid": grid, "seeds": _seeds(a.seeds), "machine": a.machine,
            "trace": a.trace, "generator": ({"kind": a.generate, "options": gen_opts}
                                            if a.generate else None)}
    with open(os.path.join(a.out, "sweep.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    if not a.quiet:
        import pandas as pd

        cols = [c for c in list(grid) + ["seed", "wakeup_p99_ns", "tool_call_p99_ns", "jain_fairness",
                                          "gpu_makespan_ns"] if c in df.columns]
        show = df[cols].copy()
        for c in cols:  # the same units as the compare table: ms (sweep.csv keeps ns)
            if c.endswith("_ns") and c not in grid:
                show[c[:-3] + "_ms"] = show.pop(c) / 1e6
        with pd.option_context("display.width", 160, "display.max_rows", 60, "display.float_format",
                               lambda v: f"{v:,.3f}"):
            print(show.to_string(index=False, na_rep="-"))
        print(f"wrote {csv} ({len(df)} simulations)")
    return EXIT_OK


def cmd_fleet(a: argparse.Namespace) -> int:
    from .fleet import run_fleet
    from .sweeps import Generator

    if bool(a.traces) == bool(a.generate):
        raise UsageError("fleet needs either TRACE... (one host each) or --generate KIND --hosts N")
    if a.generate and a.hosts is None:
        raise UsageError("fleet --generate needs --hosts N")
    gen = Generator(a.generate, _key_values(a.gen, "--gen") if a.gen else {}) if a.generate else None
    fs = run_fleet(a.hosts if a.generate else a.traces, gen, a.sessions, policy=a.policy,
                   seed=a.seed, config=a.config, workers=a.workers, scheduler=a.dask,
                   dask_local=a.dask_local, progress=not a.quiet)
    fs.write(a.out)
    if not a.quiet:
        print(fs.text())
        print(f"wrote {os.path.join(a.out, 'fleet.json')} and run.json")
    return EXIT_OK


def cmd_plot(a: argparse.Namespace) -> int:
    from . import plots
    from ._errors import AgentcgError

    formats = tuple(_split(a.formats))
    bad = [f for f in formats if f not in ("png", "svg", "pdf")]
    if bad or not formats:
        raise UsageError(f"--formats {a.formats}: expected a list of png, svg, pdf")
    window = None
    if a.window:
        try:
            lo, hi = a.window.split(":", 1)
            from .traces import parse_duration

            window = (parse_duration(lo), parse_duration(hi))
        except Exception:
            raise UsageError(f"--window {a.window}: expected START:END, e.g. 1s:1.05s") from None
    out = a.out or os.path.join(a.dir, "plots")
    if window is not None:
        from .api import Result

        groups = plots.find_results(a.dir)
        if not any(Result.load(p).has_schedule for g in groups.values() for p in g.values()):
            raise UsageError(f"--window {a.window}: no recorded schedule under {a.dir} (record one with "
                             "`run ... --perfetto DIR/schedule.perfetto.json`)")
    cgroups = _split(a.cgroups) if a.cgroups else None
    try:
        files = plots.plot_directory(a.dir, out, formats=formats, window=window, cgroups=cgroups)
    except AgentcgError as e:
        if a.cgroups and str(e).startswith("--cgroups"):
            raise UsageError(str(e)) from None
        raise
    if not a.quiet:
        for f in files:
            print(f"wrote {f}")
    return EXIT_OK


def cmd_report(a: argparse.Namespace) -> int:
    from . import report

    path = report.write_report(a.dir, a.output)
    if not a.quiet:
        print(f"wrote {path}")
    return EXIT_OK


def cmd_demo(a: argparse.Namespace) -> int:
    from . import demo

    return demo.run_demo(a.out, quiet=a.quiet, root=a.traces, seeds=_seeds(a.seeds))


def _durations(items: Sequence[str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for it in items:
        name, sep, d = it.partition("=")
        if not sep or not name or not d:
            raise UsageError(f"--duration: expected TRACE=DURATION (e.g. agent=30s), got '{it}'")
        from .units import try_parse_duration_ns, DURATION_FORMS
        if try_parse_duration_ns(d) is None:  # checked here, not after the VM booted
            raise UsageError(f"--duration {name}: expected {DURATION_FORMS}, got '{d}'")
        out[name] = d
    return out


def _live_command(what: str, run: Any) -> int:
    """Runs a command that boots the VM; no VM here -> exit 77 with the reason."""
    from . import live

    try:
        run()
    except live.LiveSkip as e:
        print(f"agentcg: {what}: cannot run the live side here: {e}", file=sys.stderr)
        return EXIT_LIVE_SKIP
    return EXIT_OK


def cmd_live(a: argparse.Namespace) -> int:
    from . import live

    if a.action == "agree":
        if len(a.dirs) != 2:
            raise UsageError(f"live agree: expected two live compare output directories, got {len(a.dirs)}")
        _, text = live.verdict_agreement(a.dirs[0], a.dirs[1])
        print(text, end="")
        return EXIT_OK
    if a.action == "idletrace":  # main() hands it its own parser first; this is what reaches here otherwise
        from . import idletrace

        return idletrace.main(a.dirs, prog="agentcg live idletrace")
    if a.dirs:
        raise UsageError(f"live compare: unexpected argument '{a.dirs[0]}' (the output directory is --out)")
    return _live_command("live compare", lambda: live.live_compare(
        a.out, build=a.build, traces=_split(a.traces), schedulers=_split(a.schedulers),
        durations=_durations(a.duration), mem_scale=a.mem_scale, bench_s=a.bench_seconds,
        overhead=not a.no_overhead, timeout_s=a.timeout, quiet=a.quiet, repeat=a.repeat, config=a.config,
        record=not a.no_record, baseline_build=a.baseline_build))


def cmd_fidelity(a: argparse.Namespace) -> int:
    from . import fidelity

    return _live_command("fidelity", lambda: fidelity.fidelity(
        a.traces, a.out, build=a.build, schedulers=_split(a.schedulers), duration=a.duration,
        mem_scale=a.mem_scale, seed=a.seed, profile=a.profile, live_dir=a.live_dir,
        timeout_s=a.timeout, quiet=a.quiet, repeat=a.repeat,
        fit=_split(a.fit) if a.fit is not None else None,
        holdout=_split(a.holdout) if a.holdout is not None else None, machine=a.machine,
        seeds=a.seeds, update_readme=a.update_readme, ablate=not a.no_ablation,
        model=_key_values(a.model, "--model"), captures=a.capture, capture_from=a.capture_from,
        capture_policy=a.capture_policy, capture_unflagged_wakeups=a.capture_unflagged_wakeups,
        capture_machine=a.capture_machine, measured_wakeup=a.measured_wakeup,
        capture_fit=_split(a.capture_fit) if a.capture_fit is not None else None, capture_cv=a.capture_cv))


def cmd_policies(a: argparse.Namespace) -> int:
    from . import api

    for p in api.cpu_policies():
        print(f"cpu {p}")
    for p in api.gpu_policies():
        print(f"gpu {p}")
    return EXIT_OK


TRACE_HELP = {
    "generate": "trace generate KIND --seed N -o FILE [--OPTION VALUE ...]\n"
                "  Writes a synthetic trace. Kinds and options:\n",
    "validate": "trace validate FILE...\n"
                "  Checks trace files; prints 'FILE: valid (N processes, M cgroups)' or the error\n"
                "  'FILE:LINE: POINTER: what, expected ...' (exit 1).\n",
    "convert": "trace convert IN OUT\n"
               "  JSON -> binary or binary -> JSON (IN's first bytes decide; OUT is the other form: NAME.agtb,\n"
               "  or NAME.json or - for stdout). The binary form loads several times faster; every command\n"
               "  that reads a trace takes either, and converting back gives the canonical JSON byte for byte.\n",
    "import": "trace import --from FORMAT INPUT -o OUT [--strict] [--only-cgroup PATH]\n"
              "  Converts a recording (agentcgroup-ebpf, agentcgroup-task, ftrace, perf, agentcg-record,\n"
              "  gpu-csv) into a trace; --only-cgroup keeps one cgroup subtree of an agentcg-record folder.\n",
    "stats": "trace stats FILE [--from FORMAT] [--only-cgroup PATH] [--json]\n"
             "  Summarises a trace or recording (tasks, forks/s, CPU demand, memory, wakeup latency).\n"
             "  --from ftrace|perf --replay [--policy eevdf] [--config PROFILE]: replays a scheduler capture\n"
             "  and prints its wakeup p50/p90/p99, task switches and CPU time next to the simulated ones.\n",
    "merge": "trace merge A B ... [--stagger 5s] -o OUT\n"
              "  Packs several traces onto one machine, each in its own cgroup, starts staggered.\n",
}


def cmd_trace(argv: List[str]) -> int:
    from . import _core

    if not argv or argv[0] in ("-h", "--help"):
        print("usage: agentcg trace {generate,validate,convert,import,stats,merge} ...\n")
        for sub_name, text in TRACE_HELP.items():
            if sub_name == "generate":  # the kinds are listed by `trace generate --help`
                text = text.replace("Kinds and options:\n", "Kinds and their options: agentcg trace generate --help\n")
            print("  " + text.replace("\n", "\n  ").rstrip())
        return EXIT_OK if argv else EXIT_USAGE
    sub, rest = argv[0], argv[1:]
    if sub not in TRACE_HELP:
        raise UsageError(f"unknown trace subcommand '{sub}' (expected generate, validate, convert, import, stats, merge)")
    if "-h" in rest or "--help" in rest:
        print("usage: agentcg " + TRACE_HELP[sub], end="")
        if sub == "generate":
            print(_core.generator_help())
        return EXIT_OK
    sys.stdout.flush()
    sys.stderr.flush()
    if sub in _core.trace_commands():
        return int(_core.trace_command(sub, rest))
    raise UsageError(f"trace {sub}: unknown trace command; expected one of: {', '.join(_core.trace_commands())}")


def _version() -> str:
    try:
        from . import _core

        return str(_core.__version__)
    except ImportError:
        return "(extension not built)"


# The subcommands' parsers, one function each (_SUBPARSERS: `agentcg
# --help` order). build_parser(COMMAND) builds only COMMAND's: building
# all 12 (their arguments, formatters and gettext lookups) was ~5 ms of
# every `./agentcg run`'s start-up (issue 21).
def _parser_demo(sub: Any) -> None:
    d = sub.add_parser("demo", help="compare policies on the bundled traces and GPU scenarios",
                       description="Runs eevdf (the baseline), flatcg, agentcg and cfs (pre-6.6 reference) on "
                       "traces/{agent,fork-storm,io}.json over --seeds, and the GPU policies on generated GPU "
                       "scenarios; prints the tables (median [95 % interval], verdict against eevdf) and "
                       "writes DIR/<scenario>/<policy>/results.json, plots and DIR/report.html.")
    d.add_argument("--out", default=os.path.join("out", "demo"), help="output directory (default out/demo)")
    d.add_argument("--seeds", default="1-3", help="seeds of the repetitions (default 1-3)")
    d.add_argument("--traces", default=None, help="folder of the bundled traces (default: the repository's traces/)")
    d.add_argument("--quiet", action="store_true", help="no tables, no progress bars")
    d.set_defaults(func=cmd_demo)


def _parser_run(sub: Any) -> None:
    r = sub.add_parser("run", help="run one simulation",
                       description="Runs TRACE under one policy; writes DIR/results.json and DIR/histograms.json (every latency sample, for the CDF plots).")
    _add_run_options(r, compare=False)
    r.set_defaults(func=cmd_run)


def _parser_compare(sub: Any) -> None:
    c = sub.add_parser("compare", help="run a trace under several policies",
                       description="Runs TRACE under each policy; writes DIR/<policy>/results.json (and histograms.json) "
                       "and prints a side-by-side table.")
    _add_run_options(c, compare=True)
    c.add_argument("--plots", action="store_true", help="also write DIR/plots/*.png,svg")
    c.set_defaults(func=cmd_compare)


def _parser_sweep(sub: Any) -> None:
    s = sub.add_parser("sweep", help="parameter sweep in parallel (process pool or Dask)",
                       description="Runs the cross product of --grid values x --seeds; writes "
                       "DIR/sweep.csv (one row per simulation) and DIR/sweep.json.")
    s.add_argument("trace", nargs="?", metavar="TRACE", help="trace file (or use --generate)")
    s.add_argument("--generate", metavar="KIND", help="regenerate a KIND trace per seed instead")
    s.add_argument("--gen", metavar="KEY=VALUE", action="append", default=[],
                   help="generator option, e.g. cpus=4 (repeatable)")
    s.add_argument("--grid", metavar="KEY=V1,V2", action="append", default=[],
                   help="grid axis: policy, gpu_policy, gen.<option> or a config key such as "
                        "scheduler.fork_storm_threshold (repeatable)")
    s.add_argument("--policies", help="shorthand for --grid policy=a,b")
    s.add_argument("--seeds", default="1", help="seeds, e.g. 1,2,3 or 1-5 (default 1)")
    s.add_argument("--config", metavar="FILE", help="base YAML config")
    s.add_argument("--machine", metavar="PROFILE", default=None,
                   help="machine profile fitted by `agentcg fidelity` (its machine keys win over --config's)")
    s.add_argument("--workers", type=int, default=None, help="local worker processes (default: CPUs)")
    s.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="run on a Dask cluster at ADDRESS (e.g. tcp://host:8786)")
    s.add_argument("--out", metavar="DIR", required=True)
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=cmd_sweep)


def _parser_fleet(sub: Any) -> None:
    fl = sub.add_parser("fleet", help="many independent hosts in parallel, merged into one fleet summary",
                        description="Runs one simulation per host (a trace file each, or --generate KIND "
                        "--hosts N with seed+i per host) on a process pool or Dask; writes DIR/fleet.json "
                        "(per-host and merged fleet percentiles; deterministic) and DIR/run.json (timings).")
    fl.add_argument("traces", nargs="*", metavar="TRACE", help="one trace file per host (or use --generate)")
    fl.add_argument("--generate", metavar="KIND", help="generate each host's trace (seed + host index)")
    fl.add_argument("--gen", metavar="KEY=VALUE", action="append", default=[],
                    help="generator option, e.g. cpus=64 (repeatable)")
    fl.add_argument("--hosts", type=int, help="number of hosts (with --generate)")
    fl.add_argument("--sessions", type=int, help="total sessions, split evenly over the hosts")
    fl.add_argument("--policy", default="cfs")
    fl.add_argument("--seed", type=int, default=1, help="seed of host 0 (default 1)")
    fl.add_argument("--config", metavar="FILE", help="YAML config for every host")
    fl.add_argument("--workers", type=int, default=None, help="local worker processes (default: CPUs)")
    fl.add_argument("--dask", metavar="ADDRESS", default=None, help="run on the Dask cluster at ADDRESS")
    fl.add_argument("--dask-local", metavar="N", type=int, default=None,
                    help="start a local Dask cluster of N worker processes and run on it")
    fl.add_argument("--out", metavar="DIR", required=True)
    fl.add_argument("--quiet", action="store_true")
    fl.set_defaults(func=cmd_fleet)


def _parser_trace(sub: Any) -> None:
    t = sub.add_parser("trace", help="generate, validate, convert, import, stats, merge traces", add_help=False)
    t.set_defaults(func=None)


def _parser_calibrate(sub: Any) -> None:
    cb = sub.add_parser("calibrate", help="fit a machine profile from measurements (calibrate --help)",
                        add_help=False)
    cb.set_defaults(func=None)


def _parser_plot(sub: Any) -> None:
    pl = sub.add_parser("plot", help="plots from a results directory",
                        description="Finds results.json files (run, compare, demo) and sweep.csv under "
                        "DIR and writes plots (PNG and SVG by default).")
    pl.add_argument("dir", metavar="DIR", help="a run, compare, demo or sweep output directory")
    pl.add_argument("--out", metavar="DIR", default=None, help="plot folder (default DIR/plots)")
    pl.add_argument("--formats", default="png,svg", help="comma-separated: png, svg, pdf")
    pl.add_argument("--window", default=None,
                    help="schedule timeline window START:END (e.g. 1s:1.05s; needs --perfetto runs)")
    pl.add_argument("--cgroups", default=None, metavar="LIST",
                    help="cgroups of the per-cgroup CDF: comma-separated paths or patterns (/s/*); "
                         "default: those of the share plot, at most 8")
    pl.add_argument("--quiet", action="store_true", help="do not list the files written")
    pl.set_defaults(func=cmd_plot)


def _parser_report(sub: Any) -> None:
    rp = sub.add_parser("report", help="write DIR/report.html (tables + embedded plots)",
                        description="Writes a self-contained HTML report (plots embedded as base64, "
                        "readable offline) for the results under DIR.")
    rp.add_argument("dir", metavar="DIR", help="a run, compare or demo output directory")
    rp.add_argument("-o", "--output", default=None, help="output file (default DIR/report.html)")
    rp.add_argument("--quiet", action="store_true", help="do not print the report's path")
    rp.set_defaults(func=cmd_report)


def _parser_live(sub: Any) -> None:
    lv = sub.add_parser("live", help="the live backend in a VM: live compare, live agree, live idletrace",
                        description="live compare: boots the sched_ext kernel under qemu once and runs "
                        "the bundled traces (agentcg-player), cyclictest, hackbench and stress-ng under "
                        "EEVDF, flatcg and agentcg, each --repeat times interleaved, plus the BPF cost per callback next to a FIFO "
                        "scheduler; prints ratios to EEVDF and writes DIR/<trace>/<scheduler>/results.json "
                        "(the simulator's keys), DIR/benchmarks.json, DIR/overhead.json, DIR/table.txt. "
                        "live agree DIR_A DIR_B: the verdicts against EEVDF of two live compare runs side "
                        "by side and how many agree (does a second invocation tell the same story?). "
                        "live idletrace TRACE...: where each of cyclictest's wakeups spends its time, from the "
                        "traces of the guest's opt-in idletrace scenario (live/README.md), and what held the CPU "
                        "in the slowest --slowest percent.")
    # live idletrace has its own parser (agentcg.idletrace.main: main() hands
    # it the arguments); it is a choice here for the help
    lv.add_argument("action", choices=["compare", "agree", "idletrace"])
    lv.add_argument("dirs", nargs="*", metavar="DIR", help="live agree: two live compare output directories")
    lv.add_argument("--out", default=os.path.join("out", "live"), help="output directory (default out/live)")
    lv.add_argument("--build", default=None, help="build directory (default build/default)")
    lv.add_argument("--traces", default="agent,fork-storm", help="bundled traces (default agent,fork-storm)")
    lv.add_argument("--schedulers", default="eevdf,flatcg,agentcg",
                    help="eevdf first (the reference), then any of flatcg, agentcg, fifo (the daemon's "
                    "scx_simple-style FIFO mode: what sched_ext itself costs), eevdf-nohrtick (EEVDF with "
                    "the HRTICK feature off: a diagnostic of the emulator's timer delivery), agentcg-base (with "
                    "--baseline-build); "
                    "default eevdf,flatcg,agentcg")
    lv.add_argument("--duration", action="append", default=[], metavar="TRACE=DUR",
                    help="player --duration for a trace (default agent=30s; repeatable)")
    lv.add_argument("--mem-scale", type=float, default=0.25, help="scale of the traces' memory sizes (default 0.25)")
    lv.add_argument("--bench-seconds", type=int, default=8, help="cyclictest/stress-ng seconds (0: none)")
    lv.add_argument("--no-overhead", action="store_true", help="skip the BPF cost measurement")
    lv.add_argument("--no-record", action="store_true",
                    help="skip recording the cyclictest benchmarks and the fork storm under EEVDF (for fidelity)")
    lv.add_argument("--config", default=None, metavar="FILE",
                    help="YAML added to agentcgroupd's config in every pass (e.g. a scheduler: section to compare "
                         "tuned agentcg/flatcg against EEVDF); checked with agentcgroupd --check-config before the boot")
    lv.add_argument("--baseline-build", default=None, metavar="DIR",
                    help="another build directory (e.g. of the commit before a change): its daemon's agentcg mode "
                         "runs as the scheduler agentcg-base, interleaved with the others, and in the BPF cost "
                         "pass beside agentcg (a '/ base' column): a change measured against the program before "
                         "it in one boot")
    lv.add_argument("--repeat", type=int, default=3,
                    help="runs per scheduler, interleaved A B C C B A ... (default 3): the table shows the median "
                         "[95 %% bootstrap interval] and a verdict against eevdf")
    lv.add_argument("--timeout", type=int, default=None,
                    help="VM timeout in seconds (default 600 + 900 per repetition)")
    lv.add_argument("--quiet", action="store_true")
    lv.set_defaults(func=cmd_live)


def _parser_fidelity(sub: Any) -> None:
    fi = sub.add_parser("fidelity", help="simulated vs live side by side, with a calibrated machine profile",
                        description="Runs each TRACE in the simulator and live (agentcg-player in the VM, "
                        "one boot) under the default scheduler (live: EEVDF, sim: eevdf) and agentcg; prints "
                        "wakeup latency p50/p99, per-cgroup CPU share, tool-call latency and context "
                        "switches with the error in %; fits the simulator's machine parameters to the live "
                        "measurements of the --fit scenarios by least squares, writes the machine profile "
                        "(reuse it with --machine) and reports the error before and after, for fitted and "
                        "held-out scenarios apart; then the ranking agreement (simulated verdicts against eevdf "
                        "over --seeds vs live verdicts over --repeat) and an ablation of the modelled effects. "
                        "--live-dir takes a `live compare` or `fidelity` output directory.")
    fi.add_argument("traces", nargs="*", metavar="TRACE",
                    help="traces replayed live and simulated (none: only the --capture files, no VM)")
    fi.add_argument("--out", default=os.path.join("out", "fidelity"), help="output directory (default out/fidelity)")
    fi.add_argument("--build", default=None, help="build directory (default build/default)")
    fi.add_argument("--schedulers", default="eevdf,agentcg", help="live schedulers (default eevdf,agentcg)")
    fi.add_argument("--duration", default="20s", help="run length of every trace, sim and live (default 20s)")
    fi.add_argument("--mem-scale", type=float, default=0.25, help="scale of the traces' memory sizes")
    fi.add_argument("--seed", type=int, default=1)
    fi.add_argument("--profile", default=None, help="where to write the machine profile (default DIR/machine.yaml)")
    fi.add_argument("--fit", default=None, metavar="SCENARIOS",
                    help="fit the machine profile on these scenarios only (trace names, e.g. hogs,io; default: "
                         "every scenario not in --holdout)")
    fi.add_argument("--holdout", default=None, metavar="SCENARIOS",
                    help="scenarios kept out of the fit: their errors are reported apart (default: those not in "
                         "--fit)")
    fi.add_argument("--machine", default=None, metavar="PROFILE",
                    help="use this saved machine profile instead of fitting one (its fit.fitted names the fitted "
                         "scenarios; the others count as held out)")
    fi.add_argument("--seeds", default="1-5",
                    help="simulator seeds behind the simulated verdicts of the agreement table (default 1-5)")
    fi.add_argument("--update-readme", default=None, metavar="README",
                    help="also put the summary table between README's fidelity-table markers")
    fi.add_argument("--no-ablation", action="store_true", help="skip the ablation table")
    fi.add_argument("--model", metavar="KEY=VALUE", action="append", default=[],
                    help="a machine key held fixed in the fit and saved in the profile, e.g. runqueues=per_cpu "
                         "or idle_exit_ns=50000 (repeatable)")
    fi.add_argument("--measured-wakeup", action="store_true",
                    help="take the wakeup costs (wakeup_overhead_ns, timer_busy_ns, ext_timer_busy_ns, "
                         "idle_exit_ns) from live compare's agentcg-player sleeper passes, held fixed, instead "
                         "of fitting them (and of cyclictest's kick_busy_ns)")
    fi.add_argument("--live-dir", default=None,
                    help="reuse the live results of an earlier run (its DIR) instead of booting the VM")
    fi.add_argument("--capture", metavar="CAPTURE", action="append", default=[],
                    help="a scheduler capture of a real machine (ftrace or perf sched text) as a measured side: "
                         "replayed under --capture-policy and its wakeup p50/p90/p99, task switches and CPU time put beside "
                         "the simulated ones (repeatable)")
    fi.add_argument("--capture-from", default="ftrace", metavar="FORMAT",
                    help="the captures' format: ftrace or perf (default ftrace)")
    fi.add_argument("--capture-policy", default="eevdf", metavar="POLICY",
                    help="the scheduler the captures' kernel ran: eevdf (Linux 6.6 and later, the default) or cfs "
                         "(before 6.6); the replays run under it")
    fi.add_argument("--capture-unflagged-wakeups", default="interrupt", metavar="WHOSE",
                    help="a wakeup printed on a capture line without latency flags (perf script, trace-cmd report "
                         "without -l) is an interrupt's (the default: no waker named) or the line's task's (task)")
    fi.add_argument("--capture-machine", default=None, metavar="PROFILE",
                    help="machine profile or config of the captures' machine (default: the simulator's machine "
                         "with the capture's CPUs; not the VM's fitted profile)")
    fi.add_argument("--capture-fit", default=None, metavar="CAPTURES",
                    help="fit the capture machine's wakeup and switch costs, its fork placement, a deep idle "
                         "state's exit where the captures record idle states and, under energy-aware placement, "
                         "when it balances load (wakeup_overhead_ns, context_switch_ns, ipi_idle_ns, "
                         "task_wakeup_ns, fork_placement, idle_exit_ns, idle_exit_after_ns, balance) on these "
                         "--capture files (paths or file names, comma-separated) over "
                         "--capture-machine; the other captures are held out; the fit is saved as "
                         "DIR/capture-machine.yaml")
    fi.add_argument("--capture-cv", action="store_true",
                    help="leave-one-out: hold out each --capture in turn, fit the capture machine (as --capture-fit "
                         "does) on all the others, and report every capture's held-out errors (profiles in DIR/cv-N/)")
    fi.add_argument("--repeat", type=int, default=3,
                    help="live runs per scheduler, interleaved (default 3); errors against their median")
    fi.add_argument("--timeout", type=int, default=None,
                    help="VM timeout in seconds (default 600 + 900 per repetition)")
    fi.add_argument("--quiet", action="store_true")
    fi.set_defaults(func=cmd_fidelity)


def _parser_policies(sub: Any) -> None:
    po = sub.add_parser("policies", help="list the CPU and GPU policies")
    po.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    po.set_defaults(func=cmd_policies)


_SUBPARSERS = (
    ("demo", _parser_demo),
    ("run", _parser_run),
    ("compare", _parser_compare),
    ("sweep", _parser_sweep),
    ("fleet", _parser_fleet),
    ("trace", _parser_trace),
    ("calibrate", _parser_calibrate),
    ("plot", _parser_plot),
    ("report", _parser_report),
    ("live", _parser_live),
    ("fidelity", _parser_fidelity),
    ("policies", _parser_policies),
)


def build_parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The CLI's parser; with `command` one of the subcommands, only that
    subcommand's parser is built (its help, errors and defaults are the
    same), else all of them (top-level help, an unknown command)."""
    p = _Parser(prog="agentcg", description="agent-aware CPU and GPU scheduling: simulate, compare, "
                "sweep, plot. Global flags: --debug (tracebacks), --quiet (no progress/summary).")
    p.add_argument("--version", action="version", version=f"agentcg {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    known = any(name == command for name, _ in _SUBPARSERS)
    for name, add in _SUBPARSERS:
        if not known or name == command:
            add(sub)
    return p


_argv_seen: List[str] = []


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    _argv_seen[:] = args
    debug = "--debug" in args
    args = [x for x in args if x != "--debug"]
    try:
        # `trace` passes its arguments through untouched (C++ option parsing).
        if args and args[0] == "trace":
            return cmd_trace(args[1:])
        if args and args[0] == "calibrate":  # C++ option parsing, like trace
            from . import _core

            sys.stdout.flush()
            return int(_core.calibrate_command(args[1:]))
        if args[:2] == ["live", "idletrace"]:  # its own parser: options before or after the files
            from . import idletrace

            return idletrace.main(args[2:], prog="agentcg live idletrace")
        if args and args[0] == "--quiet":
            args = args[1:] + ["--quiet"]
        parser = build_parser(args[0] if args else None)
        if not args:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        ns = parser.parse_args(args)
        if getattr(ns, "func", None) is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        from . import progress

        progress.set_quiet(bool(getattr(ns, "quiet", False)))
        return int(ns.func(ns))
    except UsageError as e:
        if debug:
            import traceback  # only here: its import costs start-up

            traceback.print_exc()
        print(f"agentcg: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("agentcg: interrupted", file=sys.stderr)
        return 130
    except SystemExit as e:  # argparse --help
        return int(e.code or 0)
    except Exception as e:  # noqa: BLE001 - the one place errors become exit codes
        if debug:
            import traceback

            traceback.print_exc()
        return _report_error(e)


def _report_error(e: BaseException) -> int:
    try:
        from . import _core
        from ._errors import AgentcgError

        input_errors: tuple = (_core.TraceError, _core.ConfigError, AgentcgError)
    except ImportError:
        input_errors = ()
    try:
        from ._errors import UnknownNameError

        if isinstance(e, UnknownNameError):  # a misspelt name: usage, like the C++ CLI
            print(f"agentcg: {e}", file=sys.stderr)
            return EXIT_USAGE
    except ImportError:
        pass
    if isinstance(e, UnicodeDecodeError):
        # A C++ message quoting bytes of a non-UTF-8 input: name the file and line.
        from .traces import not_utf8_error

        for arg in _argv_seen:
            if os.path.isfile(arg):
                try:
                    with open(arg, "rb") as f:
                        f.read().decode("utf-8")
                except UnicodeDecodeError:
                    print(f"agentcg: {not_utf8_error(arg)}", file=sys.stderr)
                    return EXIT_INPUT
                except OSError:
                    continue
        print(f"agentcg: an input is not UTF-8 text (byte {e.start}: {e.reason})", file=sys.stderr)
        return EXIT_INPUT
    if input_errors and isinstance(e, input_errors):
        print(f"agentcg: {e}", file=sys.stderr)
        return EXIT_INPUT
    if isinstance(e, OSError):
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"agentcg: {where}{e.strerror or e}", file=sys.stderr)
        return EXIT_INPUT
    if isinstance(e, ValueError):  # std::invalid_argument: unknown policy / option (as the C++ CLI)
        print(f"agentcg: {e}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(e, ImportError):
        print(f"agentcg: {e}", file=sys.stderr)
        return EXIT_INPUT
    print(f"agentcg: error: {type(e).__name__}: {e} (run with --debug for the traceback)", file=sys.stderr)
    return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
