// SPDX-License-Identifier: GPL-2.0-only
// Tests of the monitor's kernel-free parts: cgroup path -> pod for both
// cgroup drivers and every QoS class, per-CPU sums, the Prometheus text
// (labels from the pod directory, uid-only without it, cumulative
// histogram), and finding the cgroup v2 mount in a hybrid layout.
#include "live/monitor/monitor_logic.h"

#include <gtest/gtest.h>

namespace agentcg::monitor {
namespace {

const char* kUid = "0a1b2c3d-4e5f-6789-abcd-ef0123456789";

TEST(PodMap, SystemdBurstableContainer) {
  const auto r = pod_of_cgroup_path(
      "/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/cri-containerd-abc123.scope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pod_uid, kUid);
  EXPECT_EQ(r->qos, QosClass::kBurstable);
  EXPECT_EQ(r->container_id, "abc123");
  EXPECT_EQ(r->driver, "systemd");
}

TEST(PodMap, SystemdGuaranteedAndBestEffortPodLevel) {
  auto g = pod_of_cgroup_path("/kubepods.slice/kubepods-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->qos, QosClass::kGuaranteed);
  EXPECT_EQ(g->container_id, "");
  auto b = pod_of_cgroup_path(
      "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/"
      "crio-ffee.scope");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->qos, QosClass::kBestEffort);
  EXPECT_EQ(b->container_id, "ffee");
  // conmon is not a container
  auto c = pod_of_cgroup_path(
      "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/"
      "crio-conmon-ffee.scope");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->container_id, "");
}

TEST(PodMap, Cgroupfs) {
  auto r = pod_of_cgroup_path("/kubepods/besteffort/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/deadbeef");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pod_uid, kUid);
  EXPECT_EQ(r->qos, QosClass::kBestEffort);
  EXPECT_EQ(r->container_id, "deadbeef");
  EXPECT_EQ(r->driver, "cgroupfs");
  auto g = pod_of_cgroup_path("/kubepods/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->qos, QosClass::kGuaranteed);
}

TEST(PodMap, NotAPod) {
  EXPECT_FALSE(pod_of_cgroup_path("/"));
  EXPECT_FALSE(pod_of_cgroup_path("/system.slice/sshd.service"));
  EXPECT_FALSE(pod_of_cgroup_path("/kubepods.slice/kubepods-burstable.slice"));
  EXPECT_FALSE(pod_of_cgroup_path("/kubepods/burstable/podnot-a-uid/x"));
  EXPECT_FALSE(pod_of_cgroup_path("/kubepods.slice/kubepods-burstable.slice/kubepods-pod" + std::string(kUid) + ".slice"));
}

TEST(MonitorLogic, SumPerCpu) {
  agentcg_mon_cgrp_stat per[3]{};
  for (int c = 0; c < 3; c++) {
    per[c].runtime_ns = 100u * (c + 1);
    per[c].nvcsw = 1;
    per[c].lat_hist[AGENTCG_MON_LAT_BUCKETS - 1] = 2;
  }
  const auto s = sum_percpu(per, 3);
  EXPECT_EQ(s.runtime_ns, 600u);
  EXPECT_EQ(s.nvcsw, 3u);
  EXPECT_EQ(s.lat_hist[AGENTCG_MON_LAT_BUCKETS - 1], 6u);
  EXPECT_EQ(s.lat_hist[0], 0u);
}

TEST(MonitorLogic, MetricsLabelsAndHistogram) {
  MonitorSnapshot s;
  s.loaded = true;
  MonitoredCgroup plain;
  plain.path = "/agents/a";
  plain.stat.runtime_ns = 5000;
  plain.stat.lat_hist[0] = 1;  // < 1 us
  plain.stat.lat_hist[3] = 2;  // < 8 us
  plain.stat.lat_sum_ns = 12000;
  MonitoredCgroup pod;
  pod.path = "/kubepods/burstable/pod" + std::string(kUid) + "/c1";
  pod.stat.runtime_ns = 7;
  pod.stat.nivcsw = 4;
  s.cgroups = {plain, pod};

  PodDirectory none;
  const std::string bare = render_monitor_metrics(s, none);
  EXPECT_NE(bare.find("agentcg_sched_runtime_ns_total{cgroup=\"/agents/a\"} 5000\n"), std::string::npos) << bare;
  EXPECT_NE(bare.find("agentcg_sched_involuntary_switches_total{cgroup=\"/kubepods/burstable/pod" + std::string(kUid) +
                      "/c1\",pod_uid=\"" + kUid + "\",qos=\"Burstable\",container_id=\"c1\"} 4\n"),
            std::string::npos)
      << bare;
  // cumulative buckets: le=1e-06 -> 1, le=8e-06 -> 3, +Inf -> 3
  EXPECT_NE(bare.find("agentcg_sched_wakeup_latency_seconds_bucket{cgroup=\"/agents/a\",le=\"1e-06\"} 1\n"),
            std::string::npos);
  EXPECT_NE(bare.find("agentcg_sched_wakeup_latency_seconds_bucket{cgroup=\"/agents/a\",le=\"4e-06\"} 1\n"),
            std::string::npos);
  EXPECT_NE(bare.find("agentcg_sched_wakeup_latency_seconds_bucket{cgroup=\"/agents/a\",le=\"8e-06\"} 3\n"),
            std::string::npos);
  EXPECT_NE(bare.find("agentcg_sched_wakeup_latency_seconds_count{cgroup=\"/agents/a\"} 3\n"), std::string::npos);
  EXPECT_NE(bare.find("agentcg_pod_sched_involuntary_switches_total{pod_uid=\"" + std::string(kUid) +
                      "\",qos=\"Burstable\"} 4\n"),
            std::string::npos);

  PodDirectory dir;
  PodInfo info;
  info.uid = kUid;
  info.ns = "agents";
  info.name = "coder-0";
  info.containers["c1"] = "main";
  dir.upsert(info);
  const std::string named = render_monitor_metrics(s, dir);
  EXPECT_NE(named.find("agentcg_sched_runtime_ns_total{cgroup=\"/kubepods/burstable/pod" + std::string(kUid) +
                       "/c1\",namespace=\"agents\",pod=\"coder-0\",pod_uid=\"" + kUid +
                       "\",qos=\"Burstable\",container_id=\"c1\",container=\"main\"} 7\n"),
            std::string::npos)
      << named;
}

TEST(MonitorLogic, PodSchedulingMetricsSelectsPodSeries) {
  MonitorSnapshot s;
  MonitoredCgroup pod;
  pod.path = "/kubepods/burstable/pod" + std::string(kUid) + "/c1";
  pod.stat.runtime_ns = 7;
  s.cgroups = {pod};
  PodDirectory dir;
  PodInfo info;
  info.uid = kUid;
  info.ns = "agents";
  info.name = "coder-0";
  info.labels = {{"app", "coder"}};
  dir.upsert(info);
  const std::string series = "agentcg_pod_sched_runtime_ns_total{namespace=\"agents\"";
  EXPECT_NE(render_monitor_metrics(s, dir).find(series), std::string::npos);  // no selectors: all pods
  EXPECT_NE(render_monitor_metrics(s, dir, {{"agents", {{"app", "coder"}}}}).find(series), std::string::npos);
  EXPECT_EQ(render_monitor_metrics(s, dir, {{"agents", {{"app", "other"}}}}).find(series), std::string::npos);
  EXPECT_EQ(render_monitor_metrics(s, dir, {{"default", {}}}).find(series), std::string::npos);
  // the cgroup series stay
  EXPECT_NE(render_monitor_metrics(s, dir, {{"default", {}}}).find("agentcg_sched_runtime_ns_total{cgroup="), std::string::npos);
}

TEST(MonitorLogic, Cgroup2MountHybrid) {
  const std::string mi =
      "25 30 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
      "26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw\n"
      "27 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
  EXPECT_EQ(cgroup2_mount_of(mi), "/sys/fs/cgroup/unified");
  EXPECT_EQ(cgroup2_mount_of("27 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"), "");
  EXPECT_EQ(cgroup2_mount_of("26 25 0:23 /sub /mnt rw - cgroup2 cgroup2 rw\n"), "");
}

}  // namespace
}  // namespace agentcg::monitor
