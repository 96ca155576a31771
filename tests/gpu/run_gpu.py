#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Real-GPU run of the live GPU backend: agentcg-gpud + N gpu_job clients
under LD_PRELOAD=libagentcg-cuda.so on a real NVIDIA GPU.

The rule for real GPUs (docs/sources.md): never ask for more managed memory in
total than the card has free. So the daemon is told a capacity BELOW the real
one (--capacity-mb, default 40 % of free) while the clients together take at
most 80 % of free memory: the policy sees oversubscription (clients wait and
switch) but the card never does. Prints makespan, switches, drops, prefetched
bytes and each client's achieved share, as one JSON object, and checks what
the policy promises: under nvshare the clients take turns (at least one
switch, and their kernels' time over the makespan at most 1.05: one at a time),
and under memory-aware too when their memory exceeds the scheduled
capacity; when it fits (--fit: each client takes 90 % of the capacity over
the number of clients) memory-aware runs them together (kernels' time over
the makespan at least 1.5) where nvshare still serialises them; under
compute-limit each client's GPU share is no more than 0.08
below its core limit and no more than 0.12 above it (the policy carries a
window's unused budget over: 1 s windows here, runs of 3-12 s). A client's
GPU share is its kernels' own time on the GPU clock (gpu_job's gpu_ns, page
faults included) over its wall time; its share is the GPU work it asked
for (iters x kernel_ms: each kernel spins that long on the GPU clock) over
its wall time. The CUDA events' kernel_ns is reported beside them but
includes the time a launch waited for the lock, so it is not a share.

Exit status 0 = ran, 1 = failed, 77 = skip (no /dev/nvidia* or no loadable
libcuda.so.1). Registered with CTest (label gpu) by tests/gpu/CMakeLists.txt.
"""
import argparse
import ctypes
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_memory():
    """(free, total) bytes of device 0, or a reason string to skip."""
    if not glob.glob("/dev/nvidia[0-9]*"):
        return "no /dev/nvidia* device"
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return "libcuda.so.1 not loadable: %s" % e
    if cu.cuInit(0) != 0:
        return "cuInit failed"
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    if cu.cuDeviceGet(ctypes.byref(dev), 0) != 0 or cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) != 0:
        return "no CUDA device 0"
    cu.cuCtxSetCurrent(ctx)
    if cu.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) != 0:
        return "cuMemGetInfo failed"
    cu.cuDevicePrimaryCtxRelease_v2(dev)
    return free.value, total.value


def metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        vals = {}
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                name = line.split("{")[0].split(" ")[0]
                vals[name] = vals.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        return vals


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpud", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--policy", default="memory-aware",
                    help="agentcg-gpud's policy, or plain: the clients at once, no daemon and no shim "
                         "(the driver's own sharing, the baseline)")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--memory-mb", type=int, default=0, help="per client; default: 60 %% of the capacity")
    ap.add_argument("--capacity-mb", type=int, default=0, help="scheduled capacity; default 40 %% of free")
    ap.add_argument("--kernel-ms", type=int, default=50)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--quantum-ms", type=int, default=2000)
    ap.add_argument("--fit", action="store_true",
                    help="size the clients so that all of them fit the scheduled capacity together")
    ap.add_argument("--core-limits", default="", help="comma list of AGENTCG_GPU_CORE_LIMIT per client")
    ap.add_argument("--job-prefetch", action="store_true",
                    help="each job prefetches its memory to the GPU before its first kernel (gpu_job --prefetch 1), "
                         "so no kernel faults its pages in")
    a = ap.parse_args()
    if not os.path.exists(a.job):
        print("SKIP: %s not built (nvcc missing)" % a.job)
        return 77
    fm = free_memory()
    if isinstance(fm, str):
        print("SKIP: " + fm)
        return 77
    free, total = fm
    cap = a.capacity_mb << 20 or int(free * 0.4)
    mem = a.memory_mb << 20 or (int(cap * 0.9 / a.clients) if a.fit else int(cap * 0.6))
    if mem * a.clients > free * 0.8:  # the card must never be oversubscribed
        mem = int(free * 0.8 / a.clients)
    tmp = tempfile.mkdtemp(prefix="agentcg-gpu-")
    sock = os.path.join(tmp, "gpud.sock")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = os.path.join(tmp, "config.yaml")
    with open(cfg, "w") as f:
        f.write("gpu:\n  memory_reserve_mb: 0\n  context_overhead_mb: 0\n  compute_window_ms: 1000\n")
    log = open(os.path.join(tmp, "gpud.log"), "w")
    plain = a.policy == "plain"
    d = None if plain else subprocess.Popen(
        [a.gpud, "--socket", sock, "--policy", a.policy, "--gpu-memory", "%dM" % (cap >> 20),
         "--quantum-ms", str(a.quantum_ms), "--metrics-port", str(port), "--config", cfg],
        stdout=log, stderr=subprocess.STDOUT)
    procs = []
    try:
        for _ in range(0 if plain else 100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        limits = a.core_limits.split(",") if a.core_limits else []
        t0 = time.monotonic_ns()
        for i in range(a.clients):
            env = dict(os.environ) if plain else dict(os.environ, LD_PRELOAD=a.shim, AGENTCG_GPU_SOCKET=sock)
            if i < len(limits):
                env["AGENTCG_GPU_CORE_LIMIT"] = limits[i]
            procs.append(subprocess.Popen([a.job, "--memory-mb", str(mem >> 20), "--kernel-ms", str(a.kernel_ms),
                                           "--iters", str(a.iters), "--prefetch", "1" if a.job_prefetch else "0"],
                                          env=env, stdout=subprocess.PIPE, text=True))
        results = []
        for p in procs:
            out, _ = p.communicate(timeout=1800)
            if p.returncode != 0:
                print("FAIL: gpu_job exited %d" % p.returncode)
                return 1
            results.append(json.loads(out.strip().splitlines()[-1]))
        makespan = time.monotonic_ns() - t0
        m = {} if plain else metrics(port)
        report = {
            "gpu_free_bytes": free, "gpu_total_bytes": total, "scheduled_capacity_bytes": cap,
            "client_memory_bytes": mem, "policy": a.policy, "makespan_s": makespan / 1e9,
            "switches": m.get("agentcg_gpu_switches_total", 0), "drops": m.get("agentcg_gpu_drops_total", 0),
            "prefetched_bytes": m.get("agentcg_gpu_prefetched_bytes_total", 0),
            "clients": [{"pid": r["pid"], "wall_s": (r["end_ns"] - r["start_ns"]) / 1e9,
                         "share": r["iters"] * a.kernel_ms * 1e6 / max(1, r["end_ns"] - r["start_ns"]),
                         "gpu_share": r["gpu_ns"] / max(1, r["end_ns"] - r["start_ns"]),
                         "event_ns": r["kernel_ns"]} for r in results],
        }
        print(json.dumps(report, indent=1))
        # The limit bounds the GPU time a client takes, page faults included.
        shares = [c["gpu_share"] for c in report["clients"]]
        bad = []
        if a.policy == "compute-limit":
            for i, sh in enumerate(shares):
                if i < len(limits) and not -0.08 <= sh - int(limits[i]) / 100 <= 0.12:
                    bad.append("client %d: share %.3f, core limit %s %%" % (i, sh, limits[i]))
        elif a.clients > 1 and not plain:
            work_s = sum(r["gpu_ns"] for r in results) / 1e9  # the kernels' own time, faults included
            together = work_s / report["makespan_s"]
            if a.policy == "memory-aware" and mem * a.clients <= cap:
                if together < 1.5:
                    bad.append("%.2f s of GPU work in a %.2f s makespan: clients that fit the capacity together "
                               "(%d x %d MiB <= %d MiB) were not run together"
                               % (work_s, report["makespan_s"], a.clients, mem >> 20, cap >> 20))
            else:
                if report["switches"] < 1:
                    bad.append("no switch between %d clients" % a.clients)
                if together > 1.05:
                    bad.append("%.2f s of GPU work in a %.2f s makespan: the clients ran at once"
                               % (work_s, report["makespan_s"]))
        for b in bad:
            print("FAIL: " + b)
        return 1 if bad else 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if d is not None:
            d.terminate()
            d.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
