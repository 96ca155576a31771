#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Debian packages agentcg needs, by purpose. `scripts/setup.sh GROUP...`
# installs the union of the named groups; each list is the single source of
# truth for what that part of the project needs from Debian.
#
# build:  the C++ build and the simulator (Boost.Graph, Eigen, nlohmann_json,
#         yaml-cpp, GoogleTest, Google Benchmark).
# python: the pybind11 extension, the Python CLI, plots, notebooks, sweeps.
# live:   the sched_ext scheduler (clang, libelf, zlib, zstd), the daemons' HTTP
#         (cpp-httplib; libssl-dev: its HTTPS client to the Kubernetes API server)
#         and the VM tests
#         (qemu, busybox, cpio) and the workloads run inside the VM.
# gpu:    libsystemd-dev (agentcg-gpud readiness, Type=notify) and prometheus
#         (promtool, to check the daemons' metrics in the tests); the shim
#         builds against cuda.h when it is present.
# fuzz:   clang-14 with its libFuzzer/ASan/UBSan runtimes for the `fuzz`
#         preset (fuzz/README.md); the `ci` build runs the same targets
#         through a gcc replay driver without these.

AGENTCG_PKGS_build="build-essential cmake ninja-build pkg-config git libboost-graph-dev libeigen3-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libgtest-dev libgmock-dev googletest libbenchmark-dev"
AGENTCG_PKGS_python="python3 python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pandas python3-matplotlib python3-jinja2 python3-pytest python3-tqdm python3-yaml python3-jsonschema python3-distributed python3-nbclient python3-nbformat python3-ipykernel jupyter-nbconvert"
AGENTCG_PKGS_live="clang llvm libelf-dev zlib1g-dev libzstd-dev zstd qemu-system-x86 busybox-static cpio libcpp-httplib-dev libssl-dev rt-tests stress-ng"
AGENTCG_PKGS_gpu="libsystemd-dev prometheus"
AGENTCG_PKGS_fuzz="clang-14 libclang-rt-14-dev"
