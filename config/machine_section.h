// SPDX-License-Identifier: GPL-2.0-only
// The config's `machine:` section parser, shared with the machine-profile
// loader (sim/calibrate/profile.cc) so that a profile's machine keys have
// the names, ranges and error messages of a config file's. Defined in
// config.cc. Who calls it: config.cc (load_string), sim/calibrate/profile.cc.
#pragma once

#include "config/config.h"

namespace agentcg::config {

// Reads the keys present in NODE into OUT (absent keys keep OUT's values);
// throws ConfigError("FILE:LINE: key 'machine.K': ...").
void parse_machine_section(const YAML::Node& node, const Reader& r, MachineConfig& out);

}  // namespace agentcg::config
