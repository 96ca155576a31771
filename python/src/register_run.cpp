// SPDX-License-Identifier: GPL-2.0-only
// Bindings of the simulator entry point (sim/api.h). run() returns the
// results document as the exact text dump_results() produces, so a run from
// Python writes the same results.json bytes as the C++ CLI. The GIL is
// released for the whole load-config + simulate + serialise step so other
// Python threads (progress bars, Dask workers) keep running.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "config/config.h"
#include "python/src/bindings.h"
#include "sim/api.h"
#include "sim/metrics.h"

namespace py = pybind11;

namespace agentcg::python {
namespace {

// The options of one run, as run() and run_with_histograms() both take them
// (config from a file, else from YAML text, else the defaults).
sim::RunOptions run_options(const std::string& policy, const std::string& gpu_policy, std::uint64_t seed,
                            const std::string& config_path, const std::string& config_yaml,
                            const std::string& config_source, const std::string& perfetto_path, bool histograms) {
  sim::RunOptions options;
  options.policy = policy;
  options.gpu_policy = gpu_policy;
  options.seed = seed;
  options.perfetto_path = perfetto_path;
  options.histograms = histograms;
  if (!config_path.empty()) {
    options.config = config::load_file(config_path);
  } else if (!config_yaml.empty()) {
    options.config = config::load_string(config_yaml, config_source);
  }
  return options;
}

}  // namespace

void register_run(py::module_& m) {
  m.def(
      "run",
      [](const trace::Trace& trace, const std::string& policy, const std::string& gpu_policy,
         std::uint64_t seed, const std::string& config_path, const std::string& config_yaml,
         const std::string& config_source, const std::string& perfetto_path, bool histograms) {
        py::gil_scoped_release release;
        return sim::dump_results(sim::run(
            trace, run_options(policy, gpu_policy, seed, config_path, config_yaml, config_source, perfetto_path,
                               histograms)));
      },
      py::arg("trace"), py::arg("policy") = "cfs", py::arg("gpu_policy") = "none",
      py::arg("seed") = 1, py::arg("config_path") = "", py::arg("config_yaml") = "",
      py::arg("config_source") = "<config>", py::arg("perfetto_path") = "",
      py::arg("histograms") = false,
      "Runs one simulation; returns results.json text (with histograms=True, plus "
      "the mergeable latency histograms under \"histograms\"). Raises ValueError for an "
      "unknown policy, TraceError/ConfigError for bad input.");
  // The same run, with the machine's latency histograms handed back beside
  // the results instead of inside them: results.json stays byte-identical
  // to a run without them (and to the C++ CLI's), while the CDF plots
  // (python/agentcg/plots.py) get every sample's bucket from the side file
  // histograms.json. Bounded: LatencyHistogram keeps <= 1024 exact samples,
  // then 64 buckets per power of two (a few thousand counts at most).
  m.def(
      "run_with_histograms",
      [](const trace::Trace& trace, const std::string& policy, const std::string& gpu_policy,
         std::uint64_t seed, const std::string& config_path, const std::string& config_yaml,
         const std::string& config_source, const std::string& perfetto_path) {
        std::string results, histograms;
        {
          py::gil_scoped_release release;
          auto options = run_options(policy, gpu_policy, seed, config_path, config_yaml, config_source,
                                     perfetto_path, /*histograms=*/true);
          options.cgroup_histograms = true;
          nlohmann::json r = sim::run(trace, options);
          histograms = sim::dump_histograms(r["histograms"]);
          r.erase("histograms");
          results = sim::dump_results(r);
        }
        return py::make_tuple(results, histograms);
      },
      py::arg("trace"), py::arg("policy") = "cfs", py::arg("gpu_policy") = "none",
      py::arg("seed") = 1, py::arg("config_path") = "", py::arg("config_yaml") = "",
      py::arg("config_source") = "<config>", py::arg("perfetto_path") = "",
      "Like run(), but returns (results.json text without histograms, histograms.json text: the machine's and "
      "every cgroup's latency histograms, sim/metrics.h dump_histograms).");
  // A histogram's points for a CDF: (low_ns, high_ns, count) per exact sample
  // (low == high) or per non-empty bucket (its value range, clipped to the
  // histogram's min and max), ascending; the bucket edges are the simulator's
  // (LatencyHistogram::bucket_low/bucket_width), not re-derived in Python.
  m.def(
      "histogram_points",
      [](const std::string& text) {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
          throw std::invalid_argument(std::string("histogram: not JSON: ") + e.what());
        }
        const sim::LatencyHistogram h = sim::LatencyHistogram::from_json(j, "histogram");
        std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> pts;
        if (j.contains("samples")) {
          for (const auto& v : j["samples"]) {
            const auto x = v.get<std::uint64_t>();
            pts.emplace_back(x, x, 1);
          }
        } else {
          const auto first = j["first_bucket"].get<std::size_t>();
          const auto& counts = j["counts"];
          for (std::size_t i = 0; i < counts.size(); ++i) {
            const auto n = counts[i].get<std::uint64_t>();
            if (n == 0) continue;
            const std::size_t b = first + i;
            const std::uint64_t lo = std::max(sim::LatencyHistogram::bucket_low(b), h.min());
            const std::uint64_t hi =
                std::min(sim::LatencyHistogram::bucket_low(b) + sim::LatencyHistogram::bucket_width(b) - 1, h.max());
            pts.emplace_back(lo, std::max(lo, hi), n);
          }
        }
        return pts;
      },
      py::arg("histogram"),
      "(low_ns, high_ns, count) per sample or bucket of a LatencyHistogram JSON text, ascending. "
      "Raises ValueError on a malformed histogram.");
  m.def("cpu_policies", &sim::cpu_policies, "The CPU policies, in display order.");
  // The fleet merge (python/agentcg/fleet.py): LatencyHistogram::to_json()
  // texts in, {"histogram": merged to_json(), "summary": its results.json
  // summary} out, so fleet percentiles use the simulator's one definition.
  m.def(
      "merge_histograms",
      [](const std::vector<std::string>& texts) {
        sim::LatencyHistogram all;
        for (std::size_t i = 0; i < texts.size(); ++i) {
          const std::string where = "histogram " + std::to_string(i);
          nlohmann::json j;
          try {
            j = nlohmann::json::parse(texts[i]);
          } catch (const nlohmann::json::parse_error& e) {
            throw std::invalid_argument(where + ": not JSON: " + e.what());
          }
          all.merge(sim::LatencyHistogram::from_json(j, where));
        }
        nlohmann::json out;
        out["histogram"] = all.to_json();
        out["summary"] = all.summary();
        return out.dump();
      },
      py::arg("histograms"),
      "Merges LatencyHistogram JSON texts; returns {histogram, summary} as JSON text. "
      "Raises ValueError on a malformed histogram.");
}

}  // namespace agentcg::python
