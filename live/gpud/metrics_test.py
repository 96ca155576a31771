#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""agentcg-gpud's metrics pass `promtool check metrics` and its CLIs answer
--help with exit 0 (CTest gpud_metrics_promtool).

Starts the daemon on a private socket with one registered client (a raw
wire client, so that every per-client family has a sample), scrapes
/metrics and pipes it to promtool. Exit 0 pass, 1 fail, 77 skip (promtool
missing: Debian package prometheus). Usage: metrics_test.py GPUD GPUCTL
"""
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


def main():
    gpud, gpuctl = sys.argv[1], sys.argv[2]
    for prog in (gpud, gpuctl):
        r = subprocess.run([prog, "--help"], capture_output=True, text=True, timeout=10)
        if r.returncode != 0 or "usage" not in r.stdout.lower():
            print("FAIL: %s --help exited %d: %s" % (prog, r.returncode, r.stderr))
            return 1
    promtool = shutil.which("promtool")
    if promtool is None:
        print("SKIP: promtool not installed (Debian package prometheus)")
        return 77
    tmp = tempfile.mkdtemp(prefix="agentcg-gpud-metrics-")
    sock = os.path.join(tmp, "gpud.sock")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = subprocess.Popen([gpud, "--socket", sock, "--gpu-memory", "1G", "--policy", "compute-limit",
                          "--metrics-port", str(port)], stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 10
        text = None
        while time.time() < deadline and text is None:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as r:
                    text = r.read().decode()
            except OSError:
                time.sleep(0.05)
        if text is None:
            print("FAIL: no metrics endpoint")
            return 1
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(sock)
        payload = struct.pack("<QQQII32s", 1, 4096, 0, 0, 50, b"probe")
        c.sendall(struct.pack("<IHHI", 0x47434741, 1, 1, len(payload)) + payload)
        c.recv(64)
        time.sleep(0.3)  # the snapshot is refreshed every 100 ms
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as r:
            text = r.read().decode()
        if 'agentcg_gpu_client_memory_bytes{' not in text:
            print("FAIL: the client's samples are missing:\n" + text[:2000])
            return 1
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
        print(r.stdout + r.stderr)
        if r.returncode != 0:
            print("FAIL: promtool check metrics")
            return 1
        print("PASS")
        return 0
    finally:
        d.terminate()
        d.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
