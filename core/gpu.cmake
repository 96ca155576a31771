# SPDX-License-Identifier: GPL-2.0-only
# core/gpu: the GPU policies (nvshare baseline, memory-aware, compute-limit and
# their composition), C++ without I/O, behind core/include/agentcg/gpu/policy.h.
# Included by core/CMakeLists.txt; used by sim/ (agentcg_sim) and live/gpud.
add_library(agentcg_core_gpu STATIC ${CMAKE_CURRENT_SOURCE_DIR}/gpu/policy.cc)
target_include_directories(agentcg_core_gpu PUBLIC
  ${CMAKE_CURRENT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR})

agentcg_add_test(core_gpu_tests SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/gpu/policy_test.cc
  LIBS agentcg_core_gpu LABELS gpu)
