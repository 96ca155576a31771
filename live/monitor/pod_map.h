// SPDX-License-Identifier: GPL-2.0-only
// Maps a cgroup v2 path to the Kubernetes pod and container it belongs to,
// from the path alone (what the kubelet writes), for both cgroup drivers:
//   systemd:  /kubepods.slice/kubepods-burstable.slice/
//             kubepods-burstable-pod<uid_with_underscores>.slice/
//             cri-containerd-<id>.scope
//             (guaranteed pods: /kubepods.slice/kubepods-pod<uid>.slice/...)
//   cgroupfs: /kubepods/burstable/pod<uid>/<id>
//             (guaranteed pods: /kubepods/pod<uid>/<id>)
// and the PodDirectory that turns a pod uid (and a container id) into
// namespace/name/labels/container name when the node agent has listed the
// pods (live/k8s/); without it only the uid is known.
//
// Invariants: pure string work, no I/O; every output ordered (std::map).
// Called by live/monitor/monitor_logic.cc (metrics labels) and
// live/strategy/ (selector resolution).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace agentcg::monitor {

enum class QosClass { kGuaranteed, kBurstable, kBestEffort };
const char* qos_name(QosClass q);

struct PodRef {
  std::string pod_uid;       // with dashes, as in metadata.uid
  QosClass qos = QosClass::kGuaranteed;
  std::string container_id;  // empty for the pod-level cgroup itself
  std::string driver;        // "systemd" or "cgroupfs"
};

// The pod of a cgroup path (relative to the cgroup v2 root, leading '/'),
// nullopt when the path is not under kubepods.
std::optional<PodRef> pod_of_cgroup_path(const std::string& path);

struct PodInfo {
  std::string uid;
  std::string ns;
  std::string name;
  std::string node;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> containers;  // container id (no runtime prefix) -> name
};

// Pods known on this node, by uid. Filled by the Kubernetes client (list +
// watch of the node's pods); absent pods are reported by uid only.
class PodDirectory {
 public:
  void upsert(PodInfo p);
  void erase(const std::string& uid) { pods_.erase(uid); }
  void clear() { pods_.clear(); }
  const PodInfo* find(const std::string& uid) const;
  const std::map<std::string, PodInfo>& pods() const { return pods_; }

 private:
  std::map<std::string, PodInfo> pods_;
};

// A PodSchedulingMetrics object (deploy/base/crd-podschedulingmetrics.yaml):
// the pods of `ns` with these labels get per-pod series.
struct PodMetricsSelector {
  std::string ns;
  std::map<std::string, std::string> labels;
};
// No selectors: every pod; else a known pod matching one of them.
bool pod_selected(const std::vector<PodMetricsSelector>& selectors, const PodInfo* info);

// "containerd://abc" -> "abc" (containerStatuses[].containerID).
std::string strip_runtime_prefix(const std::string& container_id);

}  // namespace agentcg::monitor
