// SPDX-License-Identifier: GPL-2.0-only
// Machine profiles: the simulator's machine parameters fitted once for one
// machine (`agentcg fidelity`, `agentcg calibrate`) and reused by `run`,
// `compare`, `sweep` and `fidelity` with `--machine PROFILE`.
//
// The file is YAML:
//
//   format: agentcg-machine-profile      # required, exactly this
//   version: 1                           # required, 1
//   machine:                             # required: the config's `machine:` keys
//     cpus: 2                            #   (same names, ranges and errors: the
//     context_switch_ns: 2000            #   config loader's parse_machine_section)
//     wakeup_overhead_ns: 1000000
//     speed_pct: 110
//   fit:                                 # optional provenance, checked for types
//     tool: agentcg fidelity             #   what wrote it
//     fitted: [fid-hogs, fid-io]         #   scenarios the parameters were fitted on
//     held_out: [fid-agent]              #   scenarios kept out of the fit
//     targets: 12                        #   measurements fitted
//     sq_log_error_before: 1598.1        #   objective before / after the fit
//     sq_log_error_after: 501.2
//
// Invariants: keys not listed above are errors; every error is a
// config::ConfigError "FILE:LINE: key 'a.b': what was expected"; nothing is
// applied from a profile that fails; the file is capped at 1 MiB (a device
// or a huge file is an error, not an allocation); a scenario may not be both
// fitted and held out. Applying a profile overwrites exactly the machine keys
// it names: precedence --set > --machine > --config > the trace's machine.
// Who calls it: sim/cli/main.cc (--machine), the Python bindings
// (agentcg._core.load_machine_profile), calibrate_command, tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"

namespace agentcg::calibrate {

struct ProfileFit {
  std::string tool;
  std::vector<std::string> fitted;
  std::vector<std::string> held_out;
  std::uint64_t targets = 0;
  double sq_log_error_before = -1;  // -1: not given
  double sq_log_error_after = -1;
};

struct MachineProfile {
  config::MachineConfig machine;        // defaults overwritten by the keys given
  std::vector<std::string> machine_keys;  // the `machine:` keys the file gives, in file order
  ProfileFit fit;
  std::string source;  // the file it came from
  std::string text;    // its validated YAML text (apply_profile parses its machine: again)
};

inline constexpr const char* kProfileFormat = "agentcg-machine-profile";
inline constexpr int kProfileVersion = 1;

// Parses profile text; SOURCE names it in errors. Throws config::ConfigError.
MachineProfile parse_profile(const std::string& yaml, const std::string& source);
// Reads and parses a profile file. Throws config::ConfigError.
MachineProfile load_profile(const std::string& path);
// Overwrites in M the machine keys the profile gives (and marks them set, so
// they win over the trace's machine section like a config file's would).
void apply_profile(const MachineProfile& p, config::MachineConfig& m);
// The profile as YAML text that parse_profile() reads back to the same
// values (keys in a fixed order; deterministic).
std::string profile_text(const MachineProfile& p, const std::string& comment = "");

}  // namespace agentcg::calibrate
