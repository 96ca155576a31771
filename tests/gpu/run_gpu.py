#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Real-GPU run of the live GPU backend: agentcg-gpud + N gpu_job clients
under LD_PRELOAD=libagentcg-cuda.so on a real NVIDIA GPU.

The rule for real GPUs (docs/sources.md): never ask for more managed memory in
total than the card has free. So the daemon is told a capacity BELOW the real
one (--capacity-mb, default 40 % of free) while the clients together take at
most 80 % of free memory: the policy sees oversubscription (clients wait and
switch) but the card never does. Prints makespan, switches, drops, prefetched
bytes and each client's achieved share, as one JSON object.

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
    ap.add_argument("--policy", default="memory-aware")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--memory-mb", type=int, default=0, help="per client; default: 60 %% of the capacity")
    ap.add_argument("--capacity-mb", type=int, default=0, help="scheduled capacity; default 40 %% of free")
    ap.add_argument("--kernel-ms", type=int, default=50)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--quantum-ms", type=int, default=2000)
    ap.add_argument("--core-limits", default="", help="comma list of AGENTCG_GPU_CORE_LIMIT per client")
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
    mem = a.memory_mb << 20 or int(cap * 0.6)
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
    d = subprocess.Popen([a.gpud, "--socket", sock, "--policy", a.policy, "--gpu-memory", "%dM" % (cap >> 20),
                          "--quantum-ms", str(a.quantum_ms), "--metrics-port", str(port), "--config", cfg],
                         stdout=log, stderr=subprocess.STDOUT)
    procs = []
    try:
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        limits = a.core_limits.split(",") if a.core_limits else []
        t0 = time.monotonic_ns()
        for i in range(a.clients):
            env = dict(os.environ, LD_PRELOAD=a.shim, AGENTCG_GPU_SOCKET=sock)
            if i < len(limits):
                env["AGENTCG_GPU_CORE_LIMIT"] = limits[i]
            procs.append(subprocess.Popen([a.job, "--memory-mb", str(mem >> 20), "--kernel-ms", str(a.kernel_ms),
                                           "--iters", str(a.iters)], env=env, stdout=subprocess.PIPE, text=True))
        results = []
        for p in procs:
            out, _ = p.communicate(timeout=1800)
            if p.returncode != 0:
                print("FAIL: gpu_job exited %d" % p.returncode)
                return 1
            results.append(json.loads(out.strip().splitlines()[-1]))
        makespan = time.monotonic_ns() - t0
        m = metrics(port)
        report = {
            "gpu_free_bytes": free, "gpu_total_bytes": total, "scheduled_capacity_bytes": cap,
            "client_memory_bytes": mem, "policy": a.policy, "makespan_s": makespan / 1e9,
            "switches": m.get("agentcg_gpu_switches_total", 0), "drops": m.get("agentcg_gpu_drops_total", 0),
            "prefetched_bytes": m.get("agentcg_gpu_prefetched_bytes_total", 0),
            "clients": [{"pid": r["pid"], "wall_s": (r["end_ns"] - r["start_ns"]) / 1e9,
                         "share": r["kernel_ns"] / max(1, r["end_ns"] - r["start_ns"])} for r in results],
        }
        print(json.dumps(report, indent=1))
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        d.terminate()
        d.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
