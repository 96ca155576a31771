// SPDX-License-Identifier: GPL-2.0-only
// Cgroup path -> pod (see pod_map.h for the layouts of both drivers).
#include "live/monitor/pod_map.h"

#include <cctype>
#include <sstream>

namespace agentcg::monitor {

const char* qos_name(QosClass q) {
  switch (q) {
    case QosClass::kGuaranteed: return "Guaranteed";
    case QosClass::kBurstable: return "Burstable";
    case QosClass::kBestEffort: return "BestEffort";
  }
  return "Guaranteed";
}

namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(path);
  while (std::getline(in, part, '/'))
    if (!part.empty()) out.push_back(part);
  return out;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// A pod uid is 36 characters of hex and dashes (RFC 4122 form); anything
// else under kubepods is not a pod cgroup.
bool valid_uid(const std::string& u) {
  if (u.size() != 36) return false;
  for (size_t i = 0; i < u.size(); i++) {
    const char c = u[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// "cri-containerd-<id>.scope", "crio-<id>.scope", "docker-<id>.scope" ->
// "<id>"; systemd scopes of other kinds (e.g. crio-conmon-) are not
// containers.
std::string container_of_scope(const std::string& unit) {
  if (!ends_with(unit, ".scope")) return "";
  const std::string base = unit.substr(0, unit.size() - 6);
  for (const char* p : {"cri-containerd-", "crio-", "docker-", "cri-o-"}) {
    if (starts_with(base, p)) {
      const std::string id = base.substr(std::string(p).size());
      if (id.empty() || id.find('-') != std::string::npos) return "";
      return id;
    }
  }
  return "";
}

std::optional<PodRef> systemd_pod(const std::vector<std::string>& parts, size_t i) {
  // parts[i] == "kubepods.slice"
  PodRef r;
  r.driver = "systemd";
  size_t j = i + 1;
  if (j < parts.size() && (parts[j] == "kubepods-burstable.slice" || parts[j] == "kubepods-besteffort.slice")) {
    r.qos = parts[j] == "kubepods-burstable.slice" ? QosClass::kBurstable : QosClass::kBestEffort;
    j++;
  }
  if (j >= parts.size()) return std::nullopt;
  const std::string& pod = parts[j];
  const std::string prefix = r.qos == QosClass::kBurstable    ? "kubepods-burstable-pod"
                             : r.qos == QosClass::kBestEffort ? "kubepods-besteffort-pod"
                                                              : "kubepods-pod";
  if (!starts_with(pod, prefix) || !ends_with(pod, ".slice")) return std::nullopt;
  std::string uid = pod.substr(prefix.size(), pod.size() - prefix.size() - 6);
  for (char& c : uid)
    if (c == '_') c = '-';  // systemd escapes '-' in unit names as '_'
  if (!valid_uid(uid)) return std::nullopt;
  r.pod_uid = uid;
  if (j + 1 < parts.size()) r.container_id = container_of_scope(parts[j + 1]);
  return r;
}

std::optional<PodRef> cgroupfs_pod(const std::vector<std::string>& parts, size_t i) {
  // parts[i] == "kubepods"
  PodRef r;
  r.driver = "cgroupfs";
  size_t j = i + 1;
  if (j < parts.size() && (parts[j] == "burstable" || parts[j] == "besteffort")) {
    r.qos = parts[j] == "burstable" ? QosClass::kBurstable : QosClass::kBestEffort;
    j++;
  }
  if (j >= parts.size() || !starts_with(parts[j], "pod")) return std::nullopt;
  r.pod_uid = parts[j].substr(3);
  if (!valid_uid(r.pod_uid)) return std::nullopt;
  if (j + 1 < parts.size()) r.container_id = parts[j + 1];
  return r;
}

}  // namespace

std::optional<PodRef> pod_of_cgroup_path(const std::string& path) {
  const auto parts = split_path(path);
  // kubepods may sit below a parent (a nested container runtime's own
  // cgroup); the first kubepods component decides.
  for (size_t i = 0; i < parts.size(); i++) {
    if (parts[i] == "kubepods.slice") return systemd_pod(parts, i);
    if (parts[i] == "kubepods") return cgroupfs_pod(parts, i);
  }
  return std::nullopt;
}

void PodDirectory::upsert(PodInfo p) {
  const std::string uid = p.uid;
  pods_[uid] = std::move(p);
}

const PodInfo* PodDirectory::find(const std::string& uid) const {
  auto it = pods_.find(uid);
  return it == pods_.end() ? nullptr : &it->second;
}

bool pod_selected(const std::vector<PodMetricsSelector>& selectors, const PodInfo* info) {
  if (selectors.empty()) return true;
  if (!info) return false;
  for (const auto& s : selectors) {
    if (s.ns != info->ns) continue;
    bool all = true;
    for (const auto& [k, v] : s.labels) {
      auto it = info->labels.find(k);
      all = all && it != info->labels.end() && it->second == v;
    }
    if (all) return true;
  }
  return false;
}

std::string strip_runtime_prefix(const std::string& container_id) {
  const auto p = container_id.find("://");
  return p == std::string::npos ? container_id : container_id.substr(p + 3);
}

}  // namespace agentcg::monitor
