// SPDX-License-Identifier: GPL-2.0-only
// flatcg_test.cc's tests on the simulator's build of core/include/agentcg/
// flatcg.h: with AGENTCG_SINGLE_THREADED the counters, active sums and the
// generation change by plain adds instead of locked ones (sim/CMakeLists.txt
// builds agentcg_sim so), and every walk must give what the locked build
// gives: an add that returned the new value instead of the old one would
// miss every 0 <-> 1 flip and fail them.
#define AGENTCG_SINGLE_THREADED
#define AGENTCG_FLATCG_SUITE FlatcgSingleThreaded
#include "flatcg_test.cc"  // NOLINT(bugprone-suspicious-include)
