# SPDX-License-Identifier: GPL-2.0-only
# The BPF-safety check of core/'s CPU headers (CTest core_cpu_bpf_check,
# registered by core/cpu.cmake): run with
#   cmake -DCLANG=... -DSRC=<repo> -DOUT=<dir> -P bpf_check.cmake
# It compiles (1) every header of core/include/agentcg/ alone, as its own
# translation unit, and (2) core/cpu/bpf_check.c, which calls every entry
# point, with `clang -target bpf -O2 -c` and no system headers. Exit code 77
# (CTest SKIP_RETURN_CODE) when clang is missing.
if(NOT CLANG)
  message("SKIP: clang not found (install it: scripts/setup.sh with the group that has clang)")
  cmake_language(EXIT 77)
endif()
set(flags -target bpf -mcpu=v3 -O2 -std=c99 -nostdinc -Wall -Wextra -Werror
  -I${SRC}/core/include)
file(MAKE_DIRECTORY ${OUT})
file(GLOB headers ${SRC}/core/include/agentcg/*.h)
list(SORT headers)
foreach(h IN LISTS headers)
  get_filename_component(n ${h} NAME_WE)
  # GPU policy headers are C++ (not BPF code): only the C ones are checked.
  file(READ ${h} text)
  if(text MATCHES "#include <" OR text MATCHES "namespace ")
    if(NOT n STREQUAL "types")
      message("note: ${n}.h is not a C header, not checked")
      continue()
    endif()
  endif()
  execute_process(COMMAND ${CLANG} ${flags} -Wno-unused-function -x c -c ${h} -o ${OUT}/${n}.o
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "BPF compile of ${h} failed:\n${err}")
  endif()
  message("ok: ${n}.h")
endforeach()
execute_process(COMMAND ${CLANG} ${flags} -c ${SRC}/core/cpu/bpf_check.c -o ${OUT}/bpf_check.o
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "BPF compile of core/cpu/bpf_check.c failed:\n${err}")
endif()
message("ok: bpf_check.c (every entry point code-generated for BPF)")
