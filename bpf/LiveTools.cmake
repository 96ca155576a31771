# SPDX-License-Identifier: GPL-2.0-only
# Detects (and fetches into the cache) what the live CPU backend needs:
# clang for -target bpf, bookworm-backports' bpftool + static libbpf 1.4+
# (scripts/fetch-bpf-tools.sh), a sched_ext kernel's vmlinux for its BTF
# (scripts/fetch-kernel.sh), static libelf/libz/libzstd, cpp-httplib.
# Included by bpf/ and live/ (whichever comes first does the work). Sets
# AGENTCG_LIVE_ENABLED (ON/OFF) and AGENTCG_LIVE_WHY; when a tool is missing
# the live backend is silently disabled with one STATUS line saying why, and
# everything else still builds.
include_guard(GLOBAL)

set(AGENTCG_LIVE_ENABLED OFF)
set(AGENTCG_LIVE_WHY "")
set(AGENTCG_CACHE_DIR "$ENV{AGENTCG_CACHE}")
if(NOT AGENTCG_CACHE_DIR)
  set(AGENTCG_CACHE_DIR "$ENV{HOME}/.cache/agentcg")
endif()

function(_agentcg_live_detect)
  if(NOT AGENTCG_BUILD_LIVE)
    set(AGENTCG_LIVE_WHY "AGENTCG_BUILD_LIVE=OFF" PARENT_SCOPE)
    return()
  endif()
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux" OR NOT CMAKE_SYSTEM_PROCESSOR STREQUAL "x86_64")
    set(AGENTCG_LIVE_WHY "needs Linux x86_64" PARENT_SCOPE)
    return()
  endif()
  find_program(AGENTCG_BPF_CLANG NAMES clang-14 clang clang-16 clang-19)
  if(NOT AGENTCG_BPF_CLANG)
    set(AGENTCG_LIVE_WHY "clang not found (scripts/setup.sh live)" PARENT_SCOPE)
    return()
  endif()
  find_file(AGENTCG_HTTPLIB_H httplib.h)
  find_library(AGENTCG_HTTPLIB_SO NAMES cpp-httplib)
  foreach(lib elf z zstd yaml-cpp)
    find_library(AGENTCG_STATIC_${lib} NAMES lib${lib}.a)
    if(NOT AGENTCG_STATIC_${lib})
      set(AGENTCG_LIVE_WHY "static lib${lib}.a not found (scripts/setup.sh live)" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  if(NOT AGENTCG_HTTPLIB_H OR NOT AGENTCG_HTTPLIB_SO)
    set(AGENTCG_LIVE_WHY "cpp-httplib not found (libcpp-httplib-dev, scripts/setup.sh live)" PARENT_SCOPE)
    return()
  endif()
  foreach(what bpf-tools kernel)
    execute_process(
      COMMAND ${PROJECT_SOURCE_DIR}/scripts/fetch-${what}.sh
      OUTPUT_VARIABLE dir ERROR_VARIABLE err RESULT_VARIABLE rc
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      string(REGEX REPLACE "\n.*" "" err "${err}")
      set(AGENTCG_LIVE_WHY "scripts/fetch-${what}.sh failed (${err})" PARENT_SCOPE)
      return()
    endif()
    set(dir_${what} "${dir}")
  endforeach()
  set(AGENTCG_BPFTOOL "${dir_bpf-tools}/bin/bpftool" CACHE INTERNAL "")
  set(AGENTCG_LIBBPF_A "${dir_bpf-tools}/lib/libbpf.a" CACHE INTERNAL "")
  set(AGENTCG_LIBBPF_INCLUDE "${dir_bpf-tools}/include" CACHE INTERNAL "")
  set(AGENTCG_KERNEL_DIR "${dir_kernel}" CACHE INTERNAL "")
  set(AGENTCG_LIVE_ENABLED ON PARENT_SCOPE)
endfunction()

_agentcg_live_detect()
if(AGENTCG_LIVE_ENABLED)
  message(STATUS "agentcg live backend: ON (kernel ${AGENTCG_KERNEL_DIR}, bpftool ${AGENTCG_BPFTOOL})")
else()
  message(STATUS "agentcg live backend: OFF: ${AGENTCG_LIVE_WHY}")
endif()
set(AGENTCG_LIVE_ENABLED ${AGENTCG_LIVE_ENABLED} CACHE INTERNAL "")
set(AGENTCG_LIVE_WHY "${AGENTCG_LIVE_WHY}" CACHE INTERNAL "")
