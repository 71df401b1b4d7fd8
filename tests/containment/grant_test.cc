// SPDX-License-Identifier: Apache-2.0
// Contract tests of acquire_grant()/recheck_grant() with fake mechanisms: strongest first,
// refusal (naming every missing dimension and every mechanism tried, and spawning nothing),
// report-only shortfall, enforced ⊆ requested, frozen environment, throwing probes, and the
// spawn-time re-check of a hand-made grant. The fakes exist only here.
#include "containment/grant.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace sealrun {
namespace {

// Every spawn any fake was asked for, in order.
struct SpawnLog {
  std::vector<std::string> attempts;
};

class FakeMechanism : public Mechanism {
 public:
  FakeMechanism(std::string name, DimensionSet can, SpawnLog* log, bool available = true,
                bool throws = false)
      : name_(std::move(name)), can_(can), log_(log), available_(available), throws_(throws) {}
  MechanismKind kind() const override { return MechanismKind::kBwrap; }
  std::string_view name() const override { return name_; }
  MechanismProbe probe() override {
    ++probes;
    if (throws_) throw std::runtime_error("probe exploded");
    MechanismProbe p;
    p.name = name_;
    p.available = available_;
    if (!available_) p.unavailable_reason = name_ + " is not installed";
    for (auto d : DimensionSet::all().list()) p.dimensions.push_back({d, can_.contains(d), "fake"});
    return p;
  }
  std::vector<SweepStep> sweep_leftovers(const LeftoverRun&) override { return {}; }
  int probes = 0;

 protected:
  // Reached only through Mechanism::spawn, after its common re-check: the log shows what passed.
  Result<std::unique_ptr<ContainedJob>> start(const Grant& grant, resgroup::ResourceGroup*,
                                              const JobIo&) override {
    log_->attempts.push_back(name_ + ":" + grant.spec.run_id);
    return Error::make("fake mechanisms start nothing");
  }

 private:
  std::string name_;
  DimensionSet can_;
  SpawnLog* log_;
  bool available_, throws_;
};

ContainmentSpec spec(DimensionSet required, GrantMode mode = GrantMode::kEnforcing) {
  ContainmentSpec s;
  s.run_id = "r1";
  s.argv = {"/bin/true"};
  s.env = {{"SOURCE_DATE_EPOCH", "1"}};
  s.requested = DimensionSet::all();
  s.required = required;
  s.mode = mode;
  return s;
}

const DimensionSet kSandbox = {Dimension::kFilesystem, Dimension::kProcessTree,
                               Dimension::kWallClock,  Dimension::kNetwork,
                               Dimension::kSyscalls,   Dimension::kCapabilities};

// acquire, then spawn only if granted: the controller's order.
Status acquire_and_spawn(const ContainmentSpec& s, std::vector<FakeMechanism*> mechs,
                         const GroupCapabilities& groups, Grant* out = nullptr) {
  std::vector<Mechanism*> list(mechs.begin(), mechs.end());
  auto g = acquire_grant(s, list, groups);
  if (!g) return std::move(g).error();
  if (out) *out = *g;
  for (auto* m : mechs)
    if (m->name() == g->mechanism) (void)m->spawn(*g, nullptr, {});
  return ok_status();
}

TEST(Grant, StrongestAvailableMechanismWins) {
  SpawnLog log;
  FakeMechanism strong("strong", kSandbox, &log), weak("weak", kSandbox, &log);
  Grant g;
  ASSERT_TRUE(acquire_and_spawn(spec({Dimension::kNetwork}), {&strong, &weak}, {}, &g).ok());
  EXPECT_EQ(g.mechanism, "strong");
  EXPECT_EQ(weak.probes, 0) << "a weaker mechanism need not even be probed";
  EXPECT_EQ(log.attempts, std::vector<std::string>{"strong:r1"});
}

TEST(Grant, UnavailableAndThrowingProbesAreSkipped) {
  SpawnLog log;
  FakeMechanism missing("missing", kSandbox, &log, false);
  FakeMechanism broken("broken", kSandbox, &log, true, true);
  FakeMechanism ok("ok", kSandbox, &log);
  Grant g;
  ASSERT_TRUE(
      acquire_and_spawn(spec({Dimension::kNetwork}), {&missing, &broken, &ok}, {}, &g).ok());
  EXPECT_EQ(g.mechanism, "ok");
  ASSERT_EQ(g.tried.size(), 3u);
  EXPECT_NE(g.tried[0].find("missing is not installed"), std::string::npos);
  EXPECT_NE(g.tried[1].find("probe exploded"), std::string::npos);
}

TEST(Grant, EnforcingRefusalNamesEveryMissingDimensionAndMechanismAndSpawnsNothing) {
  SpawnLog log;
  FakeMechanism a("alpha", {Dimension::kFilesystem}, &log);
  FakeMechanism b("beta", {}, &log, false);
  Status st = acquire_and_spawn(
      spec({Dimension::kFilesystem, Dimension::kNetwork, Dimension::kMemory}), {&a, &b}, {});
  ASSERT_FALSE(st.ok());
  std::string msg = st.error().message();
  for (const char* word : {"network", "memory", "alpha", "beta", "refused"})
    EXPECT_NE(msg.find(word), std::string::npos) << word << " missing from: " << msg;
  EXPECT_EQ(msg.find("filesystem, "), std::string::npos) << "filesystem is enforced: " << msg;
  EXPECT_TRUE(log.attempts.empty());
}

TEST(Grant, NoMechanismAtAllIsRefused) {
  SpawnLog log;
  FakeMechanism a("alpha", kSandbox, &log, false);
  Status st = acquire_and_spawn(spec({Dimension::kNetwork}), {&a}, {});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("alpha"), std::string::npos);
  EXPECT_TRUE(log.attempts.empty());
  // Even report-only cannot run without any mechanism.
  EXPECT_FALSE(acquire_and_spawn(spec({}, GrantMode::kReportOnly), {&a}, {}).ok());
}

TEST(Grant, WeakerMechanismCoveringTheRequirementIsUsedWhenTheStrongestCannot) {
  SpawnLog log;
  FakeMechanism strong("strong", kSandbox, &log);
  DimensionSet with_pids = kSandbox;
  with_pids.insert(Dimension::kProcessCount);
  FakeMechanism weak("weak", with_pids, &log);
  Grant g;
  ASSERT_TRUE(acquire_and_spawn(spec({Dimension::kProcessCount}), {&strong, &weak}, {}, &g).ok());
  EXPECT_EQ(g.mechanism, "weak");
}

TEST(Grant, ResourceGroupSuppliesMemoryAndPids) {
  SpawnLog log;
  FakeMechanism m("m", kSandbox, &log);
  Grant g;
  ASSERT_FALSE(acquire_and_spawn(spec({Dimension::kMemory}), {&m}, {}).ok());
  GroupCapabilities groups{true, true, "cgroup-v1"};
  std::vector<Mechanism*> list{&m};
  auto got = acquire_grant(spec({Dimension::kMemory, Dimension::kProcessCount}), list, groups);
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_TRUE(got->enforced.contains(Dimension::kMemory));
  EXPECT_TRUE(got->enforced.contains(Dimension::kProcessCount));
}

TEST(Grant, EnforcedNeverExceedsRequested) {
  SpawnLog log;
  FakeMechanism m("m", DimensionSet::all(), &log);
  ContainmentSpec s = spec({Dimension::kNetwork});
  s.requested = {Dimension::kNetwork, Dimension::kFilesystem};
  std::vector<Mechanism*> list{&m};
  auto g = acquire_grant(s, list, GroupCapabilities{true, true, "x"});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->enforced, s.requested);
  EXPECT_TRUE(g->degraded.empty());
  EXPECT_TRUE(g->enforced.subset_of(DimensionSet::all()));
}

TEST(Grant, ReportOnlyRecordsTheShortfallWarnsOnceAndRuns) {
  SpawnLog log;
  FakeMechanism m("m", {Dimension::kFilesystem}, &log);
  Grant g;
  ASSERT_TRUE(
      acquire_and_spawn(spec({Dimension::kFilesystem, Dimension::kNetwork}, GrantMode::kReportOnly),
                        {&m}, {}, &g)
          .ok());
  EXPECT_EQ(g.unenforced_required, DimensionSet{Dimension::kNetwork});
  EXPECT_TRUE(g.degraded.contains(Dimension::kNetwork));
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("network"), std::string::npos);
  EXPECT_EQ(log.attempts, std::vector<std::string>{"m:r1"});
}

TEST(Grant, InvalidSpecIsRefusedBeforeAnyProbe) {
  SpawnLog log;
  FakeMechanism m("m", kSandbox, &log);
  ContainmentSpec s = spec({Dimension::kNetwork});
  s.run_id = "../x";
  std::vector<Mechanism*> list{&m};
  EXPECT_FALSE(acquire_grant(s, list, {}).ok());
  EXPECT_EQ(m.probes, 0);
}

TEST(Grant, EnvironmentIsFrozenAtAcquisition) {
  SpawnLog log;
  FakeMechanism m("m", kSandbox, &log);
  ContainmentSpec s = spec({Dimension::kNetwork});
  std::vector<Mechanism*> list{&m};
  auto g = acquire_grant(s, list, {});
  ASSERT_TRUE(g.ok());
  s.env["LD_PRELOAD"] = "/tmp/evil.so";
  s.mounts.push_back({"/", "/host", MountSpec::Access::kWritable});
  EXPECT_EQ(g->spec.env.count("LD_PRELOAD"), 0u);
  EXPECT_TRUE(g->spec.mounts.empty());
}

TEST(Grant, RecheckRefusesAHandMadeGrantThatClaimsTooMuch) {
  SpawnLog log;
  FakeMechanism m("m", {Dimension::kFilesystem}, &log);
  Grant forged;
  forged.mechanism = "m";
  forged.spec = spec({Dimension::kNetwork});
  forged.requested = forged.spec.requested;
  forged.required = forged.spec.required;
  forged.enforced = {Dimension::kFilesystem, Dimension::kNetwork};
  forged.degraded = forged.requested - forged.enforced;
  Status st = recheck_grant(forged, m.probe(), {});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("network"), std::string::npos);
  EXPECT_FALSE(m.spawn(forged, nullptr, {}).ok());
  EXPECT_TRUE(log.attempts.empty());

  // Other forgeries: wrong mechanism name, enforced beyond requested, report-only flipped.
  Grant other = forged;
  other.enforced = {Dimension::kFilesystem};
  other.degraded = other.requested - other.enforced;
  other.unenforced_required = {Dimension::kNetwork};
  EXPECT_FALSE(recheck_grant(other, m.probe(), {}).ok()) << "enforcing with a shortfall";
  other.mechanism = "someone-else";
  EXPECT_FALSE(recheck_grant(other, m.probe(), {}).ok());
}

TEST(Grant, RecheckAcceptsWhatAcquireGave) {
  SpawnLog log;
  FakeMechanism m("m", kSandbox, &log);
  std::vector<Mechanism*> list{&m};
  auto g = acquire_grant(spec({Dimension::kNetwork}), list, {});
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(recheck_grant(*g, m.probe(), {}).ok());
  // If the mechanism has meanwhile lost a dimension, the stale grant is refused.
  FakeMechanism degraded("m", {Dimension::kFilesystem}, &log);
  EXPECT_FALSE(recheck_grant(*g, degraded.probe(), {}).ok());
}

}  // namespace
}  // namespace sealrun
