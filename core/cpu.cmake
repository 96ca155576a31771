# SPDX-License-Identifier: GPL-2.0-only
# core/ CPU policy (included by core/CMakeLists.txt): the unit tests of the
# C99 headers (core/cpu/*_test.cc, C++ GoogleTest) and the BPF-safety check
# (every header and core/cpu/bpf_check.c compiled with clang -target bpf;
# SKIP when clang is missing).
file(GLOB AGENTCG_CORE_CPU_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cpu/*_test.cc)
if(AGENTCG_CORE_CPU_TESTS)
  agentcg_add_test(core_cpu_tests SOURCES ${AGENTCG_CORE_CPU_TESTS}
    LIBS agentcg_core_cpu LABELS core)
endif()

find_program(AGENTCG_CLANG NAMES clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14)
set(_clang_arg "")
if(AGENTCG_CLANG)
  set(_clang_arg -DCLANG=${AGENTCG_CLANG})
endif()
add_test(NAME core_cpu_bpf_check
  COMMAND ${CMAKE_COMMAND} ${_clang_arg} -DSRC=${PROJECT_SOURCE_DIR}
    -DOUT=${CMAKE_CURRENT_BINARY_DIR}/bpf_check -P ${CMAKE_CURRENT_SOURCE_DIR}/cpu/bpf_check.cmake)
set_tests_properties(core_cpu_bpf_check PROPERTIES SKIP_RETURN_CODE 77 LABELS "unit;core;bpf")
