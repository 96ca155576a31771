#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Scenario tests of libagentcg-cuda.so + agentcg-gpud without a GPU.

Each case starts the real daemon (a Unix socket in a private temp dir) and
real client processes (tests/shim/shim_client.cc) under LD_PRELOAD of the
shim against the fake libcuda.so.1, whose GPUs are a timeline shared through
/dev/shm (a unique segment per case). The fake logs who ran when; the checks
read that log (fake_gpu_dump), the daemon's Prometheus metrics and
agentcg-gpuctl. Registered with CTest by tests/shim/CMakeLists.txt, one test
per case; exit status 0 = pass, 1 = fail, 77 = skip (no /dev/shm).
"""
import argparse
import itertools
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

MB = 1 << 20
MAGIC = 0x47434741


class Fail(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Env:
    def __init__(self, args, case):
        self.a = args
        self.case = case
        self.tmp = tempfile.mkdtemp(prefix="agentcg-shim-")
        self.sock = os.path.join(self.tmp, "run", "gpud.sock")
        self.shm = "/agentcg-%s-%d" % (case, os.getpid())
        self.procs = []
        self.daemon = None
        self.port = None
        self.fake_env = {"AGENTCG_FAKE_GPU_SHM": self.shm, "AGENTCG_FAKE_GPU_MEMORY": "1G"}

    def start_daemon(self, policy, gpu_memory="1G", quantum_ms=None, config=None, metrics=True,
                     extra=(), nofile=None):
        cmd = [self.a.gpud, "--socket", self.sock, "--policy", policy, "--gpu-memory", gpu_memory]
        cmd += [str(x) for x in extra]
        if quantum_ms is not None:
            cmd += ["--quantum-ms", str(quantum_ms)]
        if config is not None:
            path = os.path.join(self.tmp, "config.yaml")
            with open(path, "w") as f:
                f.write("gpu:\n" + "".join("  %s: %s\n" % kv for kv in config.items()))
            cmd += ["--config", path]
        if self.port is None:
            self.port = free_port() if metrics else 0
        cmd += ["--metrics-port", str(self.port)]
        log = open(os.path.join(self.tmp, "gpud.log"), "a")
        pre = None
        if nofile is not None:
            import resource
            pre = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        self.daemon = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=pre)
        self.procs.append(self.daemon)
        deadline = time.time() + 10
        while not os.path.exists(self.sock):
            check(self.daemon.poll() is None, "agentcg-gpud exited: " + self.daemon_log())
            check(time.time() < deadline, "agentcg-gpud did not create its socket")
            time.sleep(0.02)
        if metrics:
            while True:
                try:
                    self.metrics()
                    break
                except OSError:
                    check(time.time() < deadline, "metrics endpoint did not come up")
                    time.sleep(0.05)
        return self.daemon

    def daemon_log(self):
        try:
            with open(os.path.join(self.tmp, "gpud.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def client(self, *opts, env=None, preload=True):
        e = dict(os.environ)
        e.update(self.fake_env)
        e["LD_LIBRARY_PATH"] = self.a.fake_dir
        e["AGENTCG_GPU_SOCKET"] = self.sock
        if preload:
            # An ASan build (--asan-runtime): libasan first, or the shim's
            # own dependency on it comes after the shim and ASan refuses to
            # start ("ASan runtime does not come first").
            e["LD_PRELOAD"] = ":".join(p for p in (self.a.asan_runtime, self.a.shim) if p)
        e.update(env or {})
        p = subprocess.Popen([self.a.client] + [str(o) for o in opts], env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def result(self, p, timeout=60, expect_rc=0):
        out, err = p.communicate(timeout=timeout)
        check(p.returncode == expect_rc, "client exited %s (want %s): %s %s" % (p.returncode, expect_rc, out, err))
        p.stderr_text = err
        return json.loads(out.strip().splitlines()[-1]) if expect_rc == 0 else None

    def dump(self):
        out = subprocess.run([self.a.dump, self.shm], capture_output=True, text=True, check=True).stdout
        return json.loads(out)

    def gpuctl(self, *args):
        r = subprocess.run([self.a.gpuctl, "--socket", self.sock] + [str(x) for x in args],
                           capture_output=True, text=True, timeout=10)
        return r.returncode, r.stdout + r.stderr

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=5) as r:
            text = r.read().decode()
        vals = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            name = line.split("{")[0].split(" ")[0]
            vals[name] = vals.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
        return vals

    def client_id(self, pid, timeout=5):
        deadline = time.time() + timeout
        while time.time() < deadline:
            rc, out = self.gpuctl("list")
            for line in out.splitlines()[1:]:
                f = line.split()
                if len(f) > 1 and f[1] == str(pid):
                    return int(f[0])
            time.sleep(0.05)
        raise Fail("client pid %d not listed by agentcg-gpuctl" % pid)

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run([self.a.dump, self.shm, "--unlink"], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---- timeline analysis ------------------------------------------------------

def segs(d, pid):
    return [(s[2], s[3]) for s in d["segments"] if s[0] == pid]


def runs(d, pid, gap_ms=20):
    out = []
    for a, b in segs(d, pid):
        if out and a - out[-1][1] <= gap_ms * 1000000:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(spans, t0, t1):
    """The time the (start, end) spans cover in [t0, t1) (spans disjoint)."""
    return sum(max(0, min(b, t1) - max(a, t0)) for a, b in spans)


def busy(d, pid, t0, t1):
    return covered(segs(d, pid), t0, t1)


def overlap(d, p1, p2):
    tot = 0
    s2 = segs(d, p2)
    for a, b in segs(d, p1):
        for c, e in s2:
            tot += max(0, min(b, e) - max(a, c))
    return tot


def ms(ns):
    return ns / 1e6


# ---- raw wire clients (the attacks and the latency probe) ----------------------

HDR = struct.Struct("<IHHI")
T_REGISTER, T_REGISTERED, T_REQLOCK, T_LOCKOK, T_RELEASED, T_CTLLIST = 1, 2, 4, 5, 7, 20


def frame(typ, payload):
    return HDR.pack(MAGIC, 1, typ, len(payload)) + payload


def register_payload(name=b"probe", device=0, limit=100):
    return struct.pack("<QQQII32s", 1234, 0, 0, device, limit, name)


def recv_msg(s):
    h = b""
    while len(h) < HDR.size:
        chunk = s.recv(HDR.size - len(h))
        if not chunk:
            raise Fail("daemon closed the probe's connection")
        h += chunk
    magic, ver, typ, length = HDR.unpack(h)
    body = b""
    while len(body) < length:
        chunk = s.recv(length - len(body))
        if not chunk:
            raise Fail("daemon closed the probe's connection mid-message")
        body += chunk
    return typ, body


def probe_ms(env, timeout=5):
    """A legitimate client's register -> REQ_LOCK -> LOCK_OK round trip, in ms."""
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(env.sock)
        s.sendall(frame(T_REGISTER, register_payload()))
        typ, _ = recv_msg(s)
        check(typ == T_REGISTERED, "probe: want REGISTERED, got type %d" % typ)
        s.sendall(frame(T_REQLOCK, struct.pack("<Q", 0)))
        while True:
            typ, body = recv_msg(s)
            if typ == T_LOCKOK:
                break
        dt = (time.monotonic() - t0) * 1000
        s.sendall(frame(T_RELEASED, body[:8]))
        return dt
    except socket.timeout:
        raise Fail("probe: no grant within %d s" % timeout)
    finally:
        s.close()


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---- cases --------------------------------------------------------------------

def shim_basic_unscheduled(env):
    # No daemon, fail-open: the application runs unscheduled with one warning.
    r = env.result(env.client("--alloc-mb", 16, "--duration-ms", 300, env={"AGENTCG_GPU_ON_UNREACHABLE": "open"}))
    p = env.procs[-1]
    check(r["kernels"] > 100, "unscheduled client barely ran: %s" % r)
    check(p.stderr_text.count("not reachable") == 1, "want exactly one warning, got: %r" % p.stderr_text)


def shim_basic_managed(env):
    env.fake_env["AGENTCG_FAKE_GPU_MEMORY"] = "256M"
    # Without the shim a 512 MiB cuMemAlloc exceeds the 256 MiB device.
    env.result(env.client("--alloc-mb", 512, "--iters", 5, preload=False), expect_rc=3)
    # With it the allocation is managed memory: it succeeds and pages in
    # (no daemon here: fail-open).
    r = env.result(env.client("--alloc-mb", 512, "--iters", 5, env={"AGENTCG_GPU_ON_UNREACHABLE": "open"}))
    d = env.dump()
    me = [p for p in d["procs"] if p["pid"] == r["pid"]][0]
    check(me["paged_in"] >= 256 * MB, "managed memory was not paged in: %s" % me)
    check(me["device"] == 0, "shim left a plain device allocation: %s" % me)


def shim_basic_resolve(env):
    env.start_daemon("nvshare", quantum_ms=1000)
    modes = [("direct",), ("procaddr",), ("dlsym",), ("procaddr", "--ptds"), ("dlsym", "--ptds")]
    for i, m in enumerate(modes):
        r = env.result(env.client("--resolve", *m, "--alloc-mb", 64, "--iters", 20))
        me = [p for p in env.dump()["procs"] if p["pid"] == r["pid"]][0]
        check(me["device"] == 0 and me["paged_in"] >= 64 * MB,
              "resolve %s: allocation not turned into managed memory: %s" % (m, me))
        time.sleep(0.3)  # the metrics snapshot is refreshed every 100 ms
        v = env.metrics()
        check(v["agentcg_gpu_registrations_total"] == i + 1, "resolve %s: not registered: %s" % (m, v))
        check(v["agentcg_gpu_grants_total"] >= i + 1, "resolve %s: work was not gated: %s" % (m, v))


def shim_basic_meminfo(env):
    env.start_daemon("nvshare", gpu_memory="2G", quantum_ms=1000)
    r = env.result(env.client("--alloc-mb", 128, "--meminfo", env={"AGENTCG_GPU_MEMORY_LIMIT": "512M"}))
    check(r["total"] == 512 * MB and r["free"] == 384 * MB, "limited meminfo wrong: %s" % r)
    r = env.result(env.client("--alloc-mb", 128, "--meminfo"))
    check(r["total"] == 2048 * MB and r["free"] == 1920 * MB, "meminfo not against the scheduled 2G: %s" % r)
    env.result(env.client("--alloc-mb", 600, "--iters", 1, env={"AGENTCG_GPU_MEMORY_LIMIT": "512M"}), expect_rc=3)


def shim_nvshare_alternate(env):
    env.start_daemon("nvshare", quantum_ms=200)
    a = env.client("--alloc-mb", 64, "--duration-ms", 2000)
    b = env.client("--alloc-mb", 64, "--duration-ms", 2000)
    ra, rb = env.result(a), env.result(b)
    d = env.dump()
    t0, t1 = max(ra["start_ns"], rb["start_ns"]), min(ra["end_ns"], rb["end_ns"])
    check(overlap(d, ra["pid"], rb["pid"]) < 0.01 * (t1 - t0), "nvshare clients ran at the same time")
    runs_all = sorted([(x[0], x[1], ra["pid"]) for x in runs(d, ra["pid"])] +
                      [(x[0], x[1], rb["pid"]) for x in runs(d, rb["pid"])])
    inside = [x for x in runs_all if x[1] > t0 and x[0] < t1]
    switches = sum(1 for i in range(1, len(inside)) if inside[i][2] != inside[i - 1][2])
    check(switches >= 4, "want >= 4 switches in %.0f ms, got %d: %s" % (ms(t1 - t0), switches, inside))
    lens = sorted(ms(x[1] - x[0]) for x in inside[1:-1])
    med = lens[len(lens) // 2] if lens else 0
    check(150 <= med <= 500, "median run %.0f ms, want about the 200 ms quantum: %s" % (med, lens))
    for r in (ra, rb):
        s = busy(d, r["pid"], t0, t1) / (t1 - t0)
        check(0.3 <= s <= 0.7, "pid %d share %.2f while alternating" % (r["pid"], s))
    print("switches %d, median run %.0f ms" % (switches, med))


def shim_nvshare_lone_drop(env):
    env.start_daemon("nvshare", quantum_ms=200)
    r = env.result(env.client("--alloc-mb", 16, "--duration-ms", 1300))
    time.sleep(0.2)
    v = env.metrics()
    check(4 <= v["agentcg_gpu_drops_total"] <= 9, "lone client: %d drops in 1.3 s at TQ 200 ms" % v["agentcg_gpu_drops_total"])
    check(r["busy_ns"] / (r["end_ns"] - r["start_ns"]) > 0.8, "lone client lost too much time: %s" % r)
    print("drops %d" % v["agentcg_gpu_drops_total"])


MEM_CFG = {"memory_reserve_mb": 0, "context_overhead_mb": 0}


def shim_memaware_fit(env):
    env.start_daemon("memory-aware", quantum_ms=200, config=MEM_CFG)
    a = env.client("--alloc-mb", 300, "--duration-ms", 1500)
    b = env.client("--alloc-mb", 300, "--duration-ms", 1500)
    ra, rb = env.result(a), env.result(b)
    d = env.dump()
    t0, t1 = max(ra["start_ns"], rb["start_ns"]) + 50000000, min(ra["end_ns"], rb["end_ns"])
    step = 200000000
    buckets = [(t, t + step) for t in range(t0, t1 - step, step)]
    both = sum(1 for u, w in buckets if busy(d, ra["pid"], u, w) > 0 and busy(d, rb["pid"], u, w) > 0)
    check(both >= 0.9 * len(buckets), "clients that fit did not run together: %d/%d buckets" % (both, len(buckets)))
    v = env.metrics()
    check(v["agentcg_gpu_drops_total"] == 0, "co-located clients were dropped: %s" % v["agentcg_gpu_drops_total"])
    # The first grant prefetches what the client allocated: its kernels fault nothing in.
    procs = {p["pid"]: p for p in d["procs"]}
    for r in (ra, rb):
        p = procs[r["pid"]]
        check(p["prefetched"] >= 300 * MB and p["paged_in"] == 0,
              "first grant did not prefetch the allocation: %s" % p)


def shim_memaware_switch(env):
    env.start_daemon("memory-aware", quantum_ms=300, config=MEM_CFG)
    a = env.client("--alloc-mb", 700, "--duration-ms", 2500)
    time.sleep(0.1)
    b = env.client("--alloc-mb", 700, "--duration-ms", 2500)
    time.sleep(0.1)
    rc, listing = env.gpuctl("list")
    check(rc == 0 and "waiting-memory" in listing, "second client not waiting for memory:\n" + listing)
    ra, rb = env.result(a), env.result(b)
    d = env.dump()
    t0, t1 = max(ra["start_ns"], rb["start_ns"]), min(ra["end_ns"], rb["end_ns"])
    check(overlap(d, ra["pid"], rb["pid"]) < 0.02 * (t1 - t0), "clients that do not fit ran together")
    runs_all = sorted([(x[0], x[1], ra["pid"]) for x in runs(d, ra["pid"])] +
                      [(x[0], x[1], rb["pid"]) for x in runs(d, rb["pid"])])
    switches = sum(1 for i in range(1, len(runs_all)) if runs_all[i][2] != runs_all[i - 1][2])
    check(switches >= 4, "want forced switches at the quantum, got %d: %s" % (switches, runs_all))
    procs = {p["pid"]: p for p in d["procs"]}
    check(procs[ra["pid"]]["prefetched"] > 0 and procs[rb["pid"]]["prefetched"] > 0,
          "no prefetch on switch-in: %s" % procs)
    v = env.metrics()
    check(v["agentcg_gpu_prefetched_bytes_total"] > 0, "prefetched bytes not reported")
    check(v["agentcg_gpu_switches_total"] >= 4, "switch counter %s" % v["agentcg_gpu_switches_total"])
    print("switches %d, prefetched %d MiB" % (switches, v["agentcg_gpu_prefetched_bytes_total"] // MB))


def shim_memaware_turns(env):
    """A client granted when the GPU frees up gets a quantum, not the GPU
    until it leaves. A leaves early (done: it does not ask again); whoever
    is granted then must still hand the GPU to the other waiter at its
    quantum's end. (The simulator lost this while the forced switch ran
    only before the grants; the daemon did not: this passes with that
    code too, the clients' own messages call the policy often enough.)"""
    env.start_daemon("memory-aware", quantum_ms=300, config=MEM_CFG)
    a = env.client("--alloc-mb", 700, "--iters", 400)  # 1 ms kernels: 0.4 s of GPU
    time.sleep(0.1)
    b = env.client("--alloc-mb", 700, "--iters", 1500)
    time.sleep(0.1)
    c = env.client("--alloc-mb", 700, "--iters", 1500)
    ra, rb, rc = env.result(a), env.result(b), env.result(c)
    d = env.dump()
    t0, t1 = ra["end_ns"], min(rb["end_ns"], rc["end_ns"])
    check(t1 - t0 > 900000000, "B and C ran together too little after A's end to count turns: %.0f ms" % ms(t1 - t0))
    turns = sorted([(x[0], rb["pid"]) for x in runs(d, rb["pid"]) if t0 <= x[0] < t1] +
                   [(x[0], rc["pid"]) for x in runs(d, rc["pid"]) if t0 <= x[0] < t1])
    switches = sum(1 for i in range(1, len(turns)) if turns[i][1] != turns[i - 1][1])
    check(switches >= 2, "after A's end B and C want turns at the 300 ms quantum, got %d switches in %.0f ms" %
          (switches, ms(t1 - t0)))
    print("switches after A's end: %d in %.0f ms" % (switches, ms(t1 - t0)))


def shim_memaware_release(env):
    env.start_daemon("memory-aware", quantum_ms=5000, config=MEM_CFG)
    a = env.client("--alloc-mb", 700, "--duration-ms", 2000, "--free-after-ms", 500)
    time.sleep(0.15)
    b = env.client("--alloc-mb", 700, "--duration-ms", 800)
    ra, rb = env.result(a), env.result(b)
    d = env.dump()
    first_b = segs(d, rb["pid"])[0][0]
    wait = ms(first_b - ra["start_ns"])
    check(400 <= wait <= 1500, "B started %.0f ms after A; want soon after A's free at 500 ms, "
          "long before the 5 s quantum" % wait)
    print("B waited %.0f ms" % wait)


LIMIT_CFG = {"compute_window_ms": 400, "max_queued_work_ms": 5}
WINDOW_NS = LIMIT_CFG["compute_window_ms"] * 1000000


def whole_windows(t0, t1):
    """The end of the longest span from t0 to at most t1 that is a whole
    number of compute windows. Quotas are spent at the start of each window:
    over whole windows the busy time is the same at any phase, over a part
    window it reads up to (quota / span) high."""
    return t0 + (t1 - t0) // WINDOW_NS * WINDOW_NS


def limit_shares(d, r, skip_ns):
    """(held, busy): the client's shares of its GPU over whole compute
    windows from skip_ns after its start. held: the time in its grants (a
    run of its kernels, from the grant's first launch to the drain's end),
    what the daemon limits; busy: its kernels' time in them, lower by
    whatever kept the client off the CPU while it held the GPU."""
    t0 = r["start_ns"] + skip_ns
    t1 = whole_windows(t0, r["end_ns"])
    held = covered(runs(d, r["pid"]), t0, t1)
    return held / (t1 - t0), busy(d, r["pid"], t0, t1) / (t1 - t0)


def shim_compute_limit(env):
    # The daemon's part is the time the client holds its GPU: within 3
    # points of the limit. What the client makes of it is its own and its
    # CPU's: on 2 cores shared with 2 more clients and the daemon, under
    # ASan, its kernels filled 92-94 % of it (busy 23.1 / 46.4 / 70.7 % for
    # 25 / 50 / 75, held 25.1 / 49.9 / 75.2), which CI failed before the
    # two were told apart. A cap is a cap either way: busy is never over it.
    env.fake_env["AGENTCG_FAKE_GPU_COUNT"] = "3"
    env.start_daemon("compute-limit", gpu_memory="1G,1G,1G", config=LIMIT_CFG)
    ps = []
    for dev, pct in enumerate((25, 50, 75)):
        ps.append((pct, env.client("--device", dev, "--alloc-mb", 64, "--duration-ms", 3000,
                                   env={"AGENTCG_GPU_DEVICE": str(dev), "AGENTCG_GPU_CORE_LIMIT": str(pct)})))
    rs = [(pct, env.result(p)) for pct, p in ps]
    d = env.dump()
    msgs = []
    ok = True
    for pct, r in rs:
        held, used = (x * 100 for x in limit_shares(d, r, WINDOW_NS))
        msgs.append("limit %d%% -> held %.1f%%, busy %.1f%%" % (pct, held, used))
        ok = ok and abs(held - pct) <= 3.0 and used <= pct + 3.0
    print(", ".join(msgs))
    check(ok, "held shares not within 3 points or busy over the limit: " + ", ".join(msgs))


def shim_compute_caps(env):
    # Caps are caps: 25/50/75 on ONE GPU sum to 150 %; each client gets at
    # most its cap and the GPU is shared max-min fairly under the caps:
    # 25 / 37.5 / 37.5 (not scaled down to 16.7 / 33.3 / 50).
    env.start_daemon("compute-limit", config=LIMIT_CFG)
    # 12 s clients: a common span of ~26 windows of 400 ms. Turns do not
    # line up with windows (a turn that straddles a window's end goes on
    # under the next window's quota), so a span cut anywhere counts up to
    # one turn (100-150 ms) more or less for a client than its quotas: up
    # to 2.3 points over the ~16 windows of 8 s clients (quiet host: held
    # 39.5 / 35.4 % for two 37.5 % clients), 1.4 over 26. (4 s clients gave
    # ~6 windows, and a share moved by 4-5 points on a 2-core host.)
    ps = [(pct, want, env.client("--alloc-mb", 64, "--duration-ms", 12000,
                                 env={"AGENTCG_GPU_CORE_LIMIT": str(pct)}))
          for pct, want in ((25, 25.0), (50, 37.5), (75, 37.5))]
    rs = [(pct, want, env.result(p)) for pct, want, p in ps]
    d = env.dump()
    # The common span, from one window after the last start to the first end,
    # cut to whole windows.
    t0 = max(r["start_ns"] for _, _, r in rs) + WINDOW_NS
    t1 = whole_windows(t0, min(r["end_ns"] for _, _, r in rs))
    check(t1 - t0 >= 2000000000, "common span too short: %.0f ms" % ms(t1 - t0))
    # As in shim_compute_limit, the daemon's part is the time each client
    # holds the GPU: here its turns, from the first to the last kernel of a
    # run of its kernels with nobody else's between them.
    held = turns_held(d, [r["pid"] for _, _, r in rs], t0, t1)
    msgs, ok = [], True
    for pct, want, r in rs:
        h = held[r["pid"]] / (t1 - t0) * 100
        s = busy(d, r["pid"], t0, t1) / (t1 - t0) * 100
        msgs.append("cap %d%% -> held %.1f%%, busy %.1f%% (want %.1f)" % (pct, h, s, want))
        # 3 points, as shim_compute_limit: wall-clock shares on a shared CI
        # machine (the simulator meets 0.1 point). Scaled caps (the old rule)
        # would read 16.7 / 33.3 / 50 and fail this.
        ok = ok and abs(h - want) <= 3.0 and s <= want + 3.0
    print(", ".join(msgs))
    check(ok, "held shares not max-min fair under the caps within 3 points, or busy over: " + ", ".join(msgs))


def turns_held(d, pids, t0, t1):
    """Per pid, the time in its turns on a GPU the pids take turns on, in
    [t0, t1): a turn runs from the start of its first kernel to the end of
    its last, with no other pid's kernel in between."""
    segs_all = sorted((a, b, pid) for pid in pids for a, b in segs(d, pid))
    turns = {pid: [] for pid in pids}
    for pid, run in itertools.groupby(segs_all, key=lambda x: x[2]):
        run = list(run)
        turns[pid].append((run[0][0], max(b for _, b, _ in run)))
    return {pid: covered(t, t0, t1) for pid, t in turns.items()}


def shim_compute_limit_change(env):
    env.start_daemon("compute-limit", config=LIMIT_CFG)
    p = env.client("--alloc-mb", 64, "--duration-ms", 4000, env={"AGENTCG_GPU_CORE_LIMIT": "25"})
    cid = env.client_id(p.pid)
    time.sleep(2.0)
    # "Before" ends when the request is sent, not when gpuctl returns: on a
    # slow host the daemon may open a window under the new limit while
    # gpuctl is still exiting (CI read 30.8 % twice with both errors).
    t_req = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    rc, out = env.gpuctl("set-core-limit", cid, 75)
    check(rc == 0, "gpuctl set-core-limit failed: " + out)
    t_change = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    r = env.result(p)
    d = env.dump()

    def share(t0, t1):
        t1 = whole_windows(t0, t1)
        check(t1 - t0 >= 2 * WINDOW_NS, "span too short to measure a share: %.0f ms" % ms(t1 - t0))
        return busy(d, r["pid"], t0, t1) / (t1 - t0)
    before = share(r["start_ns"] + WINDOW_NS, t_req)
    after = share(t_change + WINDOW_NS, r["end_ns"])
    print("before %.1f%%, after %.1f%%" % (before * 100, after * 100))
    check(abs(before * 100 - 25) <= 5, "share before the change %.1f%%, want 25%%" % (before * 100))
    check(abs(after * 100 - 75) <= 5, "share one window after the change %.1f%%, want 75%%" % (after * 100))


def shim_basic_fail_closed(env):
    # Default (fail-closed): without a daemon GPU work waits, with one
    # warning, and runs once the daemon is there.
    p = env.client("--alloc-mb", 16, "--iters", 20)
    time.sleep(1.0)
    check(p.poll() is None, "client finished without a daemon under fail-closed")
    d = env.dump()
    check(not segs(d, p.pid), "fail-closed client launched work without a daemon: %s" % segs(d, p.pid)[:3])
    t_daemon = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    env.start_daemon("nvshare", quantum_ms=200)
    r = env.result(p, timeout=30)
    check(segs(env.dump(), p.pid)[0][0] >= t_daemon, "work ran before the daemon was started")
    time.sleep(0.3)  # the metrics snapshot is refreshed every 100 ms
    check(p.stderr_text.count("not reachable") == 1, "want one warning, got %r" % p.stderr_text)
    check("waits until it returns" in p.stderr_text, "warning does not say work waits: %r" % p.stderr_text)
    v = env.metrics()
    check(v["agentcg_gpu_grants_total"] >= 1, "client ran without a grant after the daemon came")
    print("blocked until the daemon came, then %d kernels" % r["kernels"])


def gpud_attack_frames(env):
    # Garbage, a 2^32-1 length, half frames: each bad connection is dropped,
    # half frames are closed at the handshake timeout, a legitimate client
    # is served within 100 ms throughout, RSS stays under 64 MB.
    env.start_daemon("nvshare", quantum_ms=200, extra=["--handshake-timeout-ms", 500])
    bad = [HDR.pack(MAGIC, 1, T_REQLOCK, 0xFFFFFFFF), HDR.pack(MAGIC, 1, T_REGISTER, 0xFFFFFFFF) + b"x" * 64,
           os.urandom(4096), b"\xff" * 12]
    for g in bad:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(env.sock)
        s.sendall(g)
        try:
            check(s.recv(64) == b"", "daemon answered garbage %r" % g[:12])
        except socket.timeout:
            raise Fail("daemon kept a connection that sent %r" % g[:12])
        except ConnectionResetError:
            pass
        s.close()
    halves = []
    for i in range(50):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(env.sock)
        full = frame(T_REGISTER, register_payload())
        s.sendall(full[:6] if i % 2 else full[:40])  # half a header / half a payload
        halves.append(s)
    lat = [probe_ms(env) for _ in range(10)]
    time.sleep(1.0)
    closed = 0
    for s in halves:
        s.settimeout(2)
        try:
            closed += s.recv(16) == b""
        except (socket.timeout, ConnectionResetError):
            pass
        s.close()
    check(closed == len(halves), "half frames kept open past the handshake timeout: %d/%d closed" % (closed, len(halves)))
    rss = rss_mb(env.daemon.pid)
    print("probe max %.1f ms, RSS %.1f MB, half frames closed %d" % (max(lat), rss, closed))
    check(max(lat) < 100, "legitimate client waited %.1f ms" % max(lat))
    check(rss < 64, "daemon RSS %.1f MB" % rss)
    check(env.daemon.poll() is None, "daemon died")


def gpud_attack_connections(env):
    # 1,100 connections against a daemon whose fd limit is 256: the limit
    # (RLIMIT_NOFILE - 32) holds, the oldest silent connections are evicted,
    # the daemon does not spin, and a legitimate client is served < 100 ms.
    env.start_daemon("nvshare", quantum_ms=200, nofile=256)
    c0 = cpu_s(env.daemon.pid)
    t0 = time.monotonic()
    conns, lat = [], []
    for i in range(1100):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(env.sock)
        except (BlockingIOError, ConnectionRefusedError, OSError):
            pass
        conns.append(s)
        if i % 100 == 99:
            lat.append(probe_ms(env))
    time.sleep(1.0)
    lat.append(probe_ms(env))
    busy = cpu_s(env.daemon.pid) - c0
    wall = time.monotonic() - t0
    v = env.metrics()
    rss = rss_mb(env.daemon.pid)
    for s in conns:
        s.close()
    print("probe max %.1f ms, open %d, daemon CPU %.2f s in %.1f s, RSS %.1f MB" %
          (max(lat), v["agentcg_gpu_connections"], busy, wall, rss))
    check(v["agentcg_gpu_connections"] <= 256 - 32, "connection limit not held: %d" % v["agentcg_gpu_connections"])
    check(max(lat) < 100, "legitimate client waited %.1f ms" % max(lat))
    check(busy < 0.5 * wall, "daemon spun: %.2f s CPU in %.1f s" % (busy, wall))
    check(rss < 64, "daemon RSS %.1f MB" % rss)


def gpud_attack_unread(env):
    # 20,000 list requests that are never read: the connection is dropped
    # once its unread replies pass the per-connection bound; memory stays low.
    # Policy none: the probe's grant does not queue behind the holders.
    env.start_daemon("none")
    holders = [env.client("--alloc-mb", 16, "--duration-ms", 4000) for _ in range(3)]
    for p in holders:
        env.client_id(p.pid)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(env.sock)
    req = frame(T_CTLLIST, struct.pack("<Q", 0))
    s.settimeout(5)
    sent = 0
    try:
        for _ in range(20000):
            s.sendall(req)
            sent += 1
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    lat = [probe_ms(env) for _ in range(5)]
    time.sleep(0.3)
    v = env.metrics()
    rss = rss_mb(env.daemon.pid)
    s.close()
    print("sent %d requests, slow clients dropped %d, RSS %.1f MB, probe max %.1f ms" %
          (sent, v["agentcg_gpu_slow_clients_total"], rss, max(lat)))
    check(v["agentcg_gpu_slow_clients_total"] >= 1, "the non-reading client was not dropped")
    check(rss < 64, "daemon RSS %.1f MB" % rss)
    check(max(lat) < 100, "legitimate client waited %.1f ms" % max(lat))
    for p in holders:
        env.result(p)


def gpud_attack_stopped_holder(env):
    # A SIGSTOPped holder keeps the lock after DROP_LOCK; the default release
    # timeout (max(10 s, 2 x quantum) with no flag) takes it back, with a
    # metric and a log line.
    env.start_daemon("nvshare", quantum_ms=200)
    a = env.client("--alloc-mb", 16, "--duration-ms", 20000)
    env.client_id(a.pid)
    deadline = time.time() + 5
    while time.time() < deadline and not segs(env.dump(), a.pid):
        time.sleep(0.02)
    os.kill(a.pid, signal.SIGSTOP)
    t_stop = time.monotonic()
    b = env.client("--alloc-mb", 16, "--iters", 10)
    rb = env.result(b, timeout=30)
    waited = time.monotonic() - t_stop
    os.kill(a.pid, signal.SIGCONT)
    v = env.metrics()
    log = env.daemon_log()
    print("B finished %.2f s after A was stopped; release timeouts %d" % (waited, v["agentcg_gpu_release_timeouts_total"]))
    check(v["agentcg_gpu_release_timeouts_total"] == 1, "release timeout not counted: %s" % v)
    check(v["agentcg_gpu_release_timeout_seconds"] == 10.0, "default timeout not max(10 s, 2 x 200 ms quantum)")
    check("did not release within 10000 ms" in log, "no log line for the release timeout:\n" + log)
    check(waited < 0.2 + 10.0 + 2.0, "B waited %.2f s for a stopped holder" % waited)
    check(rb["kernels"] > 0, "B did not run")


def gpud_attack_other_uid(env):
    # Another uid sees only its own clients and may register at most
    # --max-clients-per-uid of them. Needs root (to become uid 65534).
    if os.geteuid() != 0:
        raise Skip("needs root to run a client as another uid")
    env.start_daemon("nvshare", quantum_ms=200, extra=["--max-clients-per-uid", 2])
    os.chmod(os.path.dirname(env.sock), 0o777)
    os.chmod(env.sock, 0o666)
    os.chmod(env.tmp, 0o755)
    mine = env.client("--alloc-mb", 16, "--duration-ms", 3000)
    env.client_id(mine.pid)
    nobody = 65534
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--as-other-uid", env.sock],
                       preexec_fn=lambda: (os.setgid(nobody), os.setuid(nobody)),
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "other-uid probe failed: %s %s" % (r.stdout, r.stderr))
    out = json.loads(r.stdout.strip().splitlines()[-1])
    print("other uid: sees %d clients (root's hidden), registrations %s" % (out["listed"], out["registered"]))
    check(out["listed"] == 2, "uid 65534 saw %d clients, want only its own 2" % out["listed"])
    check(out["uids"] == [nobody], "uid 65534 saw other uids: %s" % out["uids"])
    check(out["registered"] == [True, True, False], "per-uid limit of 2 not applied: %s" % out["registered"])
    v = env.metrics()
    check(v["agentcg_gpu_uid_limit_refusals_total"] == 1, "refusal not counted")
    rc, listing = env.gpuctl("list")
    check(str(mine.pid) in listing, "root's list lacks its own client")
    env.result(mine)


def other_uid_main(sock):
    """Runs as uid 65534: register three clients, then list."""
    regs, keep = [], []
    for i in range(3):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(sock)
        s.sendall(frame(T_REGISTER, register_payload(b"other%d" % i)))
        try:
            typ, _ = recv_msg(s)
            regs.append(typ == T_REGISTERED)
        except (Fail, socket.timeout, ConnectionResetError):
            regs.append(False)
        keep.append(s)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(sock)
    s.sendall(frame(T_CTLLIST, struct.pack("<Q", 0)))
    typ, body = recv_msg(s)
    uids = sorted({struct.unpack_from("<I", body, off + 44)[0] for off in range(0, len(body), 96)})
    print(json.dumps({"listed": len(body) // 96, "uids": uids, "registered": regs}))
    return 0


def shim_placement_two_devices(env):
    # Live placement: the daemon chooses each unpinned process's GPU at
    # registration (idle first, then the least memory in use) and the shim
    # shows the process that GPU as its only device, ordinal 0, before its
    # first context exists. The fake driver has two devices and records
    # where each process's allocations and launches land.
    env.fake_env["AGENTCG_FAKE_GPU_COUNT"] = "2"
    env.start_daemon("memory-aware", gpu_memory="1G,1G", config=MEM_CFG)
    a = env.client("--alloc-mb", 300, "--duration-ms", 2500)
    env.client_id(a.pid)
    time.sleep(0.2)
    b = env.client("--alloc-mb", 100, "--duration-ms", 2500)
    env.client_id(b.pid)
    time.sleep(0.2)
    c = env.client("--alloc-mb", 50, "--duration-ms", 1500)
    # Pinned: AGENTCG_GPU_DEVICE keeps the driver's ordinals (no remapping).
    d = env.client("--alloc-mb", 50, "--duration-ms", 500, "--device", 1, env={"AGENTCG_GPU_DEVICE": "1"})
    rs = {name: env.result(p) for name, p in (("a", a), ("b", b), ("c", c), ("d", d))}
    dump = env.dump()
    procs = {p["pid"]: p for p in dump["procs"]}
    where = {}
    for name, r in rs.items():
        p = procs[r["pid"]]
        launched = sorted({seg[1] for seg in dump["segments"] if seg[0] == r["pid"]})
        where[name] = (r["devices"], r["device"], p["alloc_devices"], p["launch_devices"], launched)
    print("devices seen, CUdevice, alloc mask, launch mask, timeline devices: %s" % where)
    # a: first, both idle -> GPU 0; b: GPU 1 is idle -> GPU 1; c: both busy,
    # GPU 1 holds less memory (100 MB vs 300 MB) -> GPU 1.
    want = {"a": 0, "b": 1, "c": 1}
    for name, g in want.items():
        devices, cudev, amask, lmask, launched = where[name]
        check(devices == 1, "%s sees %d devices, want 1 (remapped)" % (name, devices))
        check(cudev == g, "%s's ordinal 0 is device %d, want %d" % (name, cudev, g))
        check(amask == 1 << g, "%s allocated on device mask %d, want only GPU %d" % (name, amask, g))
        check(lmask == 1 << g and launched == [g], "%s launched on %s / mask %d, want GPU %d" % (name, launched, lmask, g))
    devices, cudev, amask, lmask, launched = where["d"]
    check(devices == 2 and cudev == 1 and amask == 2 and launched == [1],
          "pinned client was remapped: %s" % (where["d"],))
    rc, listing = env.gpuctl("list")
    check(rc == 0, "gpuctl list failed: " + listing)


def gpud_fault_daemon_restart(env):
    # Fail-open: the client runs on while the daemon is away.
    env.start_daemon("nvshare", quantum_ms=200)
    p = env.client("--alloc-mb", 64, "--duration-ms", 3000, env={"AGENTCG_GPU_ON_UNREACHABLE": "open"})
    env.client_id(p.pid)
    time.sleep(0.6)
    env.daemon.kill()
    env.daemon.wait()
    time.sleep(0.8)
    env.start_daemon("nvshare", quantum_ms=200)
    cid = env.client_id(p.pid, timeout=3)  # re-registered with the new daemon
    r = env.result(p)
    check(p.stderr_text.count("not reachable") == 1, "want one warning, got %r" % p.stderr_text)
    share = r["busy_ns"] / (r["end_ns"] - r["start_ns"])
    check(share > 0.8, "client stalled while the daemon was away: share %.2f" % share)
    v = env.metrics()
    check(v["agentcg_gpu_grants_total"] >= 1, "re-registered client got no grant from the new daemon")
    print("re-registered as client %d, share %.2f" % (cid, share))


def gpud_fault_client_killed(env):
    env.start_daemon("nvshare", quantum_ms=5000)
    a = env.client("--alloc-mb", 64, "--duration-ms", 10000)
    env.client_id(a.pid)
    time.sleep(0.3)
    b = env.client("--alloc-mb", 64, "--duration-ms", 800)
    time.sleep(0.5)
    t_kill = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    a.kill()
    a.wait()
    rb = env.result(b)
    d = env.dump()
    first_b = segs(d, rb["pid"])[0][0]
    check(first_b >= t_kill - 5000000, "B ran before A was killed (lock not exclusive)")
    check(ms(first_b - t_kill) < 500, "B waited %.0f ms after A died holding the lock" % ms(first_b - t_kill))
    v = env.metrics()
    # A's reclaim at least (B ran within 500 ms of A's death, so A's lock was
    # taken back); B may add one when it exits while still holding the lock,
    # which happens when a loaded machine delays its last release (seen in CI).
    check(v["agentcg_gpu_reclaimed_locks_total"] >= 1, "reclaim not counted: %s" % v)
    print("B ran %.0f ms after the kill" % ms(first_b - t_kill))


def gpud_fault_garbage(env):
    env.start_daemon("nvshare", quantum_ms=200)
    a = env.client("--alloc-mb", 64, "--duration-ms", 1500)
    env.client_id(a.pid)
    hdr = lambda magic, ver, typ, length: struct.pack("<IHHI", magic, ver, typ, length)
    garbage = [
        b"\xde\xad\xbe\xef" * 8,                       # bad magic
        hdr(MAGIC, 9, 4, 8) + b"\0" * 8,               # unsupported version
        hdr(MAGIC, 1, 4, 100) + b"\0" * 100,           # ReqLock with a wrong length
        hdr(MAGIC, 1, 5, 24) + b"\0" * 24,             # a daemon->client type (LockOk)
        hdr(MAGIC, 1, 3, 8) + b"\0" * 8,               # MemUpdate before Register
    ]
    for g in garbage:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(env.sock)
        s.sendall(g)
        try:
            check(s.recv(64) == b"", "daemon answered garbage %r instead of dropping it" % g[:12])
        except socket.timeout:
            raise Fail("daemon kept a connection that sent %r" % g[:12])
        s.close()
    r = env.result(a)
    share = r["busy_ns"] / (r["end_ns"] - r["start_ns"])
    check(share > 0.8, "good client suffered from the garbage: share %.2f" % share)
    v = env.metrics()
    check(v["agentcg_gpu_protocol_errors_total"] == len(garbage), "protocol errors %s" % v["agentcg_gpu_protocol_errors_total"])
    rc, out = env.gpuctl("list")
    check(rc == 0, "gpuctl list failed after garbage: " + out)


CASES = {f.__name__: f for f in [
    shim_basic_unscheduled, shim_basic_managed, shim_basic_resolve, shim_basic_meminfo,
    shim_nvshare_alternate, shim_nvshare_lone_drop,
    shim_memaware_fit, shim_memaware_switch, shim_memaware_release, shim_memaware_turns,
    shim_compute_limit, shim_compute_limit_change, shim_compute_caps,
    gpud_fault_daemon_restart, gpud_fault_client_killed, gpud_fault_garbage,
    shim_basic_fail_closed, gpud_attack_frames, gpud_attack_connections, gpud_attack_unread,
    gpud_attack_stopped_holder, gpud_attack_other_uid, shim_placement_two_devices]}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--as-other-uid":
        return other_uid_main(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    for opt in ("shim", "fake-dir", "client", "dump", "gpud", "gpuctl"):
        ap.add_argument("--" + opt, required=True)
    ap.add_argument("--asan-runtime", default="",
                    help="libasan.so to preload before the shim (the sanitize preset's AGENTCG_ASAN_RUNTIME)")
    args = ap.parse_args()
    if not os.path.isdir("/dev/shm"):
        print("SKIP: no /dev/shm for the fake GPU's shared timeline")
        return 77
    # The accuracy cases measure wall-clock shares on a shared 2-core CI
    # machine; a run disturbed by other load is retried once (and says so).
    attempts = 2 if args.case.startswith("shim_compute") else 1
    for attempt in range(1, attempts + 1):
        env = Env(args, args.case)
        try:
            CASES[args.case](env)
            print("PASS %s" % args.case)
            return 0
        except Skip as e:
            print("SKIP %s: %s" % (args.case, e))
            return 77
        except Fail as e:
            print("FAIL %s (attempt %d/%d, load %.1f): %s" % (args.case, attempt, attempts, os.getloadavg()[0], e))
            print("--- agentcg-gpud log ---\n" + env.daemon_log())
        finally:
            env.cleanup()
    return 1


if __name__ == "__main__":
    sys.exit(main())
