// SPDX-License-Identifier: GPL-2.0-only
// Tests of the generators, the bundled traces and the trace commands:
// same (kind, seed, options) -> same bytes, seeds and options matter, every
// kind validates and round-trips, options are checked, the provenance
// reproduces the trace, and traces/*.json never drift from the generators.
#include <gtest/gtest.h>

#include <functional>

#include <filesystem>
#include <sstream>

#include "tests/support/test_paths.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_commands.h"

namespace agentcg::trace {
namespace {

const char* const kKinds[] = {"agent", "fork-storm", "io", "hogs", "mixed"};

std::map<std::string, std::string> opts(const nlohmann::json& j) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) out[k] = v.get<std::string>();
  return out;
}

// Compares two texts, reporting the first differing line (not megabytes).
::testing::AssertionResult same_text(const std::string& a, const std::string& b) {
  if (a == b) return ::testing::AssertionSuccess();
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ga = static_cast<bool>(std::getline(sa, la));
    const bool gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga || !gb || la != lb)
      return ::testing::AssertionFailure() << "texts differ at line " << line << ":\n  " << (ga ? la : "<end>")
                                           << "\n  " << (gb ? lb : "<end>");
  }
}

TEST(Generate, SameSeedSameBytesAndEveryKindValidatesAndRoundTrips) {
  for (const char* kind : kKinds) {
    const Trace a = generate(kind, 7, {});
    const Trace b = generate(kind, 7, {});
    const std::string text = to_json_text(a);
    EXPECT_TRUE(same_text(text, to_json_text(b))) << kind;
    EXPECT_NO_THROW(validate(a)) << kind;
    const Trace parsed = parse_trace(text, kind);
    EXPECT_TRUE(same_text(to_json_text(parsed), text)) << kind;
    EXPECT_EQ(a.name, kind);
    EXPECT_TRUE(a.duration_ns.has_value()) << kind;
    EXPECT_EQ(a.generator["kind"], kind);
    EXPECT_EQ(a.generator["seed"], 7);
    // Provenance reproduces the trace.
    EXPECT_TRUE(same_text(to_json_text(generate(kind, 7, opts(a.generator["options"]))), text)) << kind;
  }
}

TEST(Generate, DifferentSeedGivesDifferentStructure) {
  // agent, io and mixed draw structure from the seed; compare without the
  // provenance (which trivially differs).
  for (const char* kind : {"agent", "io", "mixed"}) {
    Trace a = generate(kind, 1, {});
    Trace b = generate(kind, 2, {});
    a.generator = b.generator = nullptr;
    EXPECT_NE(to_json_text(a), to_json_text(b)) << kind;
  }
  EXPECT_NE(to_json_text(generate("hogs", 1, {})), to_json_text(generate("hogs", 2, {})));
}

TEST(Generate, HogsHaveTheRequestedWeightsGroupsAndTasks) {
  const Trace t = generate("hogs", 1,
                           {{"weights", "100,400"}, {"cpus", "3"}, {"duration", "2s"}, {"cpu-max", "50000,100000"}});
  EXPECT_EQ(t.machine.cpus, 3u);
  EXPECT_EQ(t.duration_ns, 2000000000u);
  ASSERT_EQ(t.cgroups.size(), 2u);
  EXPECT_EQ(t.cgroups[0].path, "/hog-0");
  EXPECT_EQ(t.cgroups[0].cpu_weight, 100u);
  EXPECT_EQ(t.cgroups[1].path, "/hog-1");
  EXPECT_EQ(t.cgroups[1].cpu_weight, 400u);
  ASSERT_TRUE(t.cgroups[1].cpu_max);
  EXPECT_EQ(t.cgroups[1].cpu_max->quota_us, 50000u);
  EXPECT_EQ(t.cgroups[1].cpu_max->period_us, 100000u);
  ASSERT_EQ(t.processes.size(), 6u);  // tasks-per-group defaults to cpus
  for (const ProcessSpec& p : t.processes) {
    ASSERT_EQ(p.ops.size(), 1u);
    EXPECT_EQ(p.ops[0].kind, OpKind::kRun);
    EXPECT_EQ(p.ops[0].amount.a, 2000000000u);
  }
  EXPECT_EQ(t.generator["options"]["tasks-per-group"], "3");
  EXPECT_EQ(generate("hogs", 1, {{"tasks-per-group", "1"}}).processes.size(), 3u);
}

TEST(Generate, ForkStormRateWindowAndVictim) {
  const Trace t = generate("fork-storm", 1, {{"storm-rate", "100"}, {"storm-length", "3s"}, {"storm-start", "1s"}});
  const ProcessSpec* storm = nullptr;
  const ProcessSpec* victim = nullptr;
  for (const ProcessSpec& p : t.processes) (p.cgroup == "/storm" ? storm : victim) = &p;
  ASSERT_TRUE(storm && victim);
  EXPECT_EQ(storm->start_ns, 1000000000u);
  ASSERT_EQ(storm->ops[0].kind, OpKind::kRepeat);
  EXPECT_EQ(storm->ops[0].count(), 300u);  // 100/s for 3 s
  EXPECT_EQ(storm->ops[0].body()[0].kind, OpKind::kFork);
  EXPECT_DOUBLE_EQ(storm->ops[0].body()[1].amount.mean(), 10000000.0);  // one fork per 10 ms on average
  ASSERT_TRUE(victim->agent);
  // The victim's tool calls fork one worker per CPU: alone it could use the
  // whole machine while a tool call runs.
  bool saw_tool = false;
  for (const Op& op : victim->ops)
    if (op.kind == OpKind::kRepeat) {
      EXPECT_EQ(op.count(), t.machine.cpus);
      saw_tool = true;
    }
  EXPECT_TRUE(saw_tool);
  for (const CgroupSpec& c : t.cgroups) EXPECT_EQ(c.cpu_weight, 100u);
}

// Expected CPU time of ops (means, repeat-multiplied, forks included).
double expected_cpu_ns(const std::vector<Op>& ops) {
  double sum = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kRun) sum += op.amount.mean();
    if (op.kind == OpKind::kRepeat) sum += op.count() * expected_cpu_ns(op.body());
    if (op.kind == OpKind::kFork && op.child()) sum += expected_cpu_ns(op.child()->ops);
  }
  return sum;
}

TEST(Generate, AgentSessionsAreAnnotatedAndLimited) {
  const Trace t = generate("agent", 3, {{"sessions", "5"}, {"duration", "30s"}});
  EXPECT_EQ(t.processes.size(), 5u);
  std::set<std::string> sessions;
  double cpu_ns = 0;
  for (const ProcessSpec& p : t.processes) {
    ASSERT_TRUE(p.agent);
    sessions.insert(p.agent->session);
    EXPECT_EQ(p.cgroup, "/agents/" + p.agent->session);
    int begins = 0, ends = 0, steps = 0;
    for (const Op& op : p.ops) {
      begins += op.kind == OpKind::kToolBegin;
      ends += op.kind == OpKind::kToolEnd;
      steps += op.kind == OpKind::kStep;
    }
    EXPECT_EQ(begins, ends);
    EXPECT_EQ(begins, steps);
    EXPECT_GE(steps, 2);
    cpu_ns += expected_cpu_ns(p.ops);
  }
  EXPECT_EQ(sessions.size(), 5u);
  for (const CgroupSpec& c : t.cgroups)
    if (c.path != "/agents") {
      EXPECT_EQ(c.memory_high, std::uint64_t{1} << 30);
    }
  // Realism: agents average a small fraction of one core (the study: 7-13 %);
  // the trace's steps cover at least the run, so this is a per-session upper
  // bound on the order of that figure, far from CPU-bound.
  const double per_session_core = cpu_ns / 5 / 30e9;
  EXPECT_GT(per_session_core, 0.03);
  EXPECT_LT(per_session_core, 0.40);
}

TEST(Generate, MixedScalesTo64CpusAndAboutAThousandTasks) {
  const Trace t = generate("mixed", 1,
                           {{"cpus", "64"}, {"sessions", "200"}, {"io-tasks", "300"}, {"hogs", "300"},
                            {"storm-rate", "2000"}});
  EXPECT_EQ(t.machine.cpus, 64u);
  EXPECT_GE(t.processes.size(), 800u);
  EXPECT_LE(to_json_text(t).size(), 20u << 20);
}

TEST(Generate, BadOptionsNameTheKeyAndTheExpectedForm) {
  const auto message = [](const std::string& kind, std::map<std::string, std::string> o) {
    try {
      generate(kind, 1, o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message("hogs", {{"wieghts", "1"}}).find("unknown option --wieghts"), std::string::npos);
  EXPECT_NE(message("hogs", {{"weights", "100,0"}}).find("--weights"), std::string::npos);
  EXPECT_NE(message("hogs", {{"duration", "10"}}).find("a duration with a unit"), std::string::npos);
  EXPECT_NE(message("hogs", {{"duration", "10 s"}}).find("--duration"), std::string::npos);
  EXPECT_NE(message("hogs", {{"cpus", "0"}}).find("an integer in 1..4096"), std::string::npos);
  EXPECT_NE(message("hogs", {{"cpu-max", "500,100000"}}).find("QUOTA_US,PERIOD_US"), std::string::npos);
  EXPECT_NE(message("fork-storm", {{"child-run", "gauss:1ms"}}).find("--child-run"), std::string::npos);
  EXPECT_NE(message("agent", {{"memory-high", "lots"}}).find("--memory-high"), std::string::npos);
  EXPECT_NE(message("agent", {{"memory-high", "8GiB"}}).find("--memory-max"), std::string::npos);
  EXPECT_NE(message("nope", {}).find("unknown generator kind \"nope\""), std::string::npos);
}

TEST(Generate, DurationsAndDistributionsAcceptTheDocumentedForms) {
  EXPECT_EQ(generate("hogs", 1, {{"duration", "1500ms"}}).duration_ns, 1500000000u);
  EXPECT_EQ(generate("hogs", 1, {{"duration", "2.5s"}}).duration_ns, 2500000000u);
  EXPECT_EQ(generate("hogs", 1, {{"duration", "2000000us"}}).duration_ns, 2000000000u);
  EXPECT_EQ(generate("hogs", 1, {{"duration", "3000000000ns"}}).duration_ns, 3000000000u);
  EXPECT_THROW(generate("hogs", 1, {{"duration", "250us"}}), std::invalid_argument);  // below 1ms
  const auto child_run = [](const std::string& spec) {
    const Trace t = generate("fork-storm", 1, {{"child-run", spec}});
    for (const ProcessSpec& p : t.processes)
      if (p.cgroup == "/storm") return p.ops[0].body()[0].child()->ops[0].amount;
    return Value{};
  };
  const Value fixed = child_run("1000ns");
  EXPECT_EQ(fixed.dist, Value::Dist::kConst);
  EXPECT_EQ(fixed.a, 1000u);
  const Value u = child_run("uniform:1ms:2ms");
  EXPECT_EQ(u.dist, Value::Dist::kUniform);
  EXPECT_EQ(u.a, 1000000u);
  EXPECT_EQ(u.b, 2000000u);
  const Value e = child_run("exp:4ms:20ms");
  EXPECT_EQ(e.dist, Value::Dist::kExponential);
  EXPECT_EQ(e.a, 4000000u);
  EXPECT_EQ(e.max, 20000000u);
  const Value l = child_run("lognormal:8ms:0.25:50ms");
  EXPECT_EQ(l.dist, Value::Dist::kLogNormal);
  EXPECT_EQ(l.a, 8000000u);
  EXPECT_DOUBLE_EQ(l.sigma, 0.25);
  EXPECT_EQ(l.max, 50000000u);
  EXPECT_THROW(child_run("uniform:2ms:1ms"), std::invalid_argument);
  EXPECT_THROW(child_run("lognormal:8ms"), std::invalid_argument);
}

TEST(Generate, GpuKindsAreDispatchedAndRoundTrip) {
  for (const char* kind : {"gpu-oversub", "gpu-fit", "gpu-quota"}) {
    const Trace t = generate(kind, 3, {});
    ASSERT_TRUE(t.extra.contains("gpu")) << kind;
    const std::string text = to_json_text(t);
    const Trace parsed = parse_trace(text, kind);
    EXPECT_EQ(parsed.extra["gpu"], t.extra["gpu"]) << kind;
    EXPECT_TRUE(same_text(to_json_text(parsed), text)) << kind;
  }
}

TEST(Generate, HelpListsEveryKindAndOption) {
  const std::string help = generator_help();
  for (const char* kind : kKinds) EXPECT_NE(help.find(std::string(kind) + ": "), std::string::npos) << kind;
  EXPECT_NE(help.find("--storm-rate"), std::string::npos);
  EXPECT_NE(help.find("--tasks-per-group"), std::string::npos);
}

TEST(BundledTraces, MatchTheGeneratorsByteForByte) {
  for (const char* kind : kKinds) {
    const std::string path = testing::source_path(std::string("traces/") + kind + ".json");
    if (path.empty()) GTEST_SKIP() << "traces/ not found from the working directory";
    const std::string committed = testing::read_file(path);
    ASSERT_LE(committed.size(), 1u << 20) << path << " should stay under 1 MiB";
    const Trace t = parse_trace(committed, path);
    EXPECT_EQ(t.generator["kind"], kind);
    const Trace again = generate(kind, t.generator["seed"].get<std::uint64_t>(), opts(t.generator["options"]));
    EXPECT_TRUE(same_text(to_json_text(again), committed))
        << path << " drifted from its generator; run traces/regenerate.sh and commit the result";
  }
}

TEST(Commands, GenerateThenValidate) {
  const std::string file = (std::filesystem::temp_directory_path() / "agentcg-trace-cmd-test.json").string();
  std::ostringstream out, err;
  EXPECT_EQ(generate_command({"hogs", "--seed", "5", "-o", file, "--weights=100,300", "--cpus", "1"}, out, err), 0)
      << err.str();
  std::ostringstream vout, verr;
  EXPECT_EQ(validate_command({file}, vout, verr), 0) << verr.str();
  EXPECT_EQ(vout.str(), file + ": valid (2 processes, 2 cgroups)\n");
  const Trace t = load_trace_file(file);
  EXPECT_EQ(t.generator["seed"], 5);
  EXPECT_EQ(t.cgroups[1].cpu_weight, 300u);
  std::filesystem::remove(file);
}

// One CLI11 subcommand per kind, declared from generator_kinds(): each
// kind's --help lists its own options, every kind of generator_kinds() is
// accepted, an option twice is an error, and the kind may follow options.
TEST(Commands, EveryKindIsACommandWithItsOwnOptions) {
  std::ostringstream out, err;
  std::ostringstream hogs_help;
  EXPECT_EQ(generate_command({"hogs", "--help"}, hogs_help, err), 0);
  EXPECT_NE(hogs_help.str().find("--weights"), std::string::npos);
  EXPECT_EQ(hogs_help.str().find("--io-tasks"), std::string::npos) << "another kind's option";
  for (const GeneratorKind& k : generator_kinds()) {
    std::ostringstream h;
    EXPECT_EQ(generate_command({k.name, "--help"}, h, err), 0) << k.name;
    for (const GeneratorOption& o : k.options) EXPECT_NE(h.str().find("--" + o.key), std::string::npos) << o.key;
  }
  std::ostringstream twice;
  EXPECT_EQ(generate_command({"hogs", "-o", "-", "--cpus", "1", "--cpus", "2"}, out, twice), 2);
  EXPECT_NE(twice.str().find("--cpus: given more than once"), std::string::npos) << twice.str();
  std::ostringstream before, after;
  EXPECT_EQ(generate_command({"--seed", "3", "--cpus=1", "hogs", "-o", "-"}, before, err), 0) << err.str();
  EXPECT_EQ(generate_command({"hogs", "--seed", "3", "-o", "-", "--cpus", "1"}, after, err), 0) << err.str();
  EXPECT_EQ(before.str(), after.str());
  std::ostringstream typo;
  EXPECT_EQ(generate_command({"--seed", "3", "hogz", "-o", "-"}, out, typo), 2);
  EXPECT_NE(typo.str().find("unknown generator kind \"hogz\" (did you mean hogs?)"), std::string::npos) << typo.str();
}

TEST(Commands, ExitCodes) {
  std::ostringstream out, err;
  EXPECT_EQ(generate_command({}, out, err), 2);
  EXPECT_EQ(generate_command({"hogs"}, out, err), 2);  // no -o
  EXPECT_EQ(generate_command({"hogs", "-o", "-", "--seed", "x"}, out, err), 2);
  EXPECT_EQ(generate_command({"hogs", "-o", "-", "--bogus", "1"}, out, err), 2);
  EXPECT_NE(err.str().find("unknown option --bogus"), std::string::npos);
  std::ostringstream gen;
  EXPECT_EQ(generate_command({"io", "-o", "-"}, gen, err), 0);
  EXPECT_TRUE(same_text(gen.str(), to_json_text(generate("io", 1, {}))));
  std::ostringstream help;
  EXPECT_EQ(generate_command({"--help"}, help, err), 0);
  EXPECT_NE(help.str().find("fork-storm"), std::string::npos);
  EXPECT_EQ(validate_command({}, out, err), 2);
  std::ostringstream verr;
  EXPECT_EQ(validate_command({"no/such.json"}, out, verr), 1);
  EXPECT_NE(verr.str().find("no/such.json"), std::string::npos);
  const std::string bad = testing::source_path("tests/data/bad-traces/negative-ns.json");
  if (!bad.empty()) {
    std::ostringstream e2;
    EXPECT_EQ(validate_command({bad}, out, e2), 1);
    EXPECT_EQ(e2.str(), bad + ":9: /processes/1/ops/1/ns: expected a non-negative integer (ns) or a distribution "
                              "object ({\"dist\":\"uniform\",\"min\":..,\"max\":..}, {\"dist\":\"exponential\","
                              "\"mean\":..}, {\"dist\":\"lognormal\",\"median\":..,\"sigma\":..}), got -5\n");
  }
}


// The crowded-machine kinds (not bundled as files): deterministic,
// round-trip, listed in --help; crowded defaults to 12 sessions per CPU
// beside an interactive shell; builds forks make -j / pytest -n fans.
TEST(Generate, CrowdedAndBuildsKinds) {
  for (const char* kind : {"crowded", "builds"}) {
    const Trace a = generate(kind, 7, {{"duration", "20s"}});
    const std::string text = to_json_text(a);
    EXPECT_TRUE(same_text(text, to_json_text(generate(kind, 7, {{"duration", "20s"}})))) << kind;
    EXPECT_TRUE(same_text(to_json_text(parse_trace(text, kind)), text)) << kind;
    EXPECT_NE(text, to_json_text(generate(kind, 8, {{"duration", "20s"}}))) << kind;
    EXPECT_NE(generator_help().find(std::string(kind) + ": "), std::string::npos);
    bool shell = false;
    for (const CgroupSpec& c : a.cgroups) shell = shell || c.path == "/interactive";
    EXPECT_TRUE(shell) << kind;
  }
  const Trace c = generate("crowded", 1, {{"cpus", "8"}, {"duration", "10s"}});
  std::size_t agents = 0;
  for (const ProcessSpec& p : c.processes) agents += p.agent ? 1 : 0;
  EXPECT_EQ(agents, 96u);  // 12 x 8 CPUs
  EXPECT_EQ(c.generator["options"]["sessions"], "96");
  // builds: some tool call forks `jobs` compiler children per wave
  const Trace b = generate("builds", 1, {{"cpus", "4"}, {"jobs", "6"}, {"duration", "60s"}});
  std::function<int(const std::vector<Op>&, const std::string&)> fans = [&](const std::vector<Op>& ops,
                                                                           const std::string& comm) {
    int n = 0;
    for (const Op& op : ops) {
      if (op.kind == OpKind::kRepeat && !op.body().empty() && op.body()[0].kind == OpKind::kFork &&
          op.body()[0].child() && op.body()[0].child()->comm == comm)
        n += op.count() == 6 ? 1 : 0;
      if (op.kind == OpKind::kRepeat) n += fans(op.body(), comm);
      if (op.kind == OpKind::kFork && op.child()) n += fans(op.child()->ops, comm);
    }
    return n;
  };
  int make_fans = 0, test_fans = 0;
  for (const ProcessSpec& p : b.processes) {
    make_fans += fans(p.ops, "cc1");
    test_fans += fans(p.ops, "pytest-worker");
  }
  EXPECT_GT(make_fans, 0);
  EXPECT_EQ(test_fans, 0) << "pytest -n defaults to cpus (4), not jobs";
  EXPECT_THROW(generate("crowded", 1, {{"interactive", "x"}}), std::invalid_argument);
}

}  // namespace
}  // namespace agentcg::trace
