#include "epochfs/control/job_registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_proc_reader.h"
#include "test_util.h"

namespace epochfs::control {
namespace {

using testing::FakeProcReader;
using testing::FakeProcTable;

// Records what the registry forwards; objects are looked up in `objects`
// (path relative to the mount → object id).
class FakeSink : public JobSink {
 public:
  Result<ResolvedSamples> ResolveSamples(const std::string& root, const PathList& paths,
                                         const Credentials& owner) override {
    if (during_resolve) during_resolve();
    {
      std::lock_guard<std::mutex> l(mu);
      resolved_as.push_back(owner);
    }
    ResolvedSamples resolved;
    std::vector<cache::SampleRef>& out = resolved.refs;
    for (size_t k = 0; k < paths.size(); ++k) {
      const std::string p(paths[k]);
      std::string full = root.empty() ? p : root + "/" + p;
      auto it = objects.find(full);
      if (it == objects.end()) return InvalidArgument("no such sample file: " + full);
      out.push_back({it->second, 100});
    }
    return resolved;
  }
  Status OnConfigured(const cache::JobSpec& spec, const JobConfig& config) override {
    std::lock_guard<std::mutex> l(mu);
    specs.push_back(spec);
    configs.push_back(config);
    return fail_next ? std::exchange(fail_next, false), Internal("policy said no") : Status::Ok();
  }
  Status OnSamples(JobId job, std::vector<cache::SampleRef> samples,
                   std::shared_ptr<const SampleList> list) override {
    std::lock_guard<std::mutex> l(mu);
    sample_counts[job] = samples.size();
    EXPECT_EQ(list->paths.size(), samples.size());
    lists[job] = list;
    return Status::Ok();
  }
  Status OnOrder(JobId job, uint32_t epoch, std::vector<uint32_t> order) override {
    std::lock_guard<std::mutex> l(mu);
    orders.push_back({job, epoch, order.size()});
    return Status::Ok();
  }
  void OnEpochBegin(JobId job, uint32_t epoch) override {
    std::lock_guard<std::mutex> l(mu);
    epochs.push_back({job, epoch});
  }
  void OnJobEnd(JobId job) override {
    std::lock_guard<std::mutex> l(mu);
    ended.push_back(job);
  }
  void OnEpochRestart(JobId job) override {
    std::lock_guard<std::mutex> l(mu);
    restarted.push_back(job);
  }
  void OnPosition(JobId job, uint32_t epoch, uint64_t position) override {
    std::lock_guard<std::mutex> l(mu);
    positions.push_back({job, epoch, position});
  }

  std::map<std::string, cache::ObjectId> objects;
  std::function<void()> during_resolve;
  bool fail_next = false;
  std::mutex mu;
  std::vector<cache::JobSpec> specs;
  std::vector<JobConfig> configs;
  std::map<JobId, size_t> sample_counts;
  std::map<JobId, std::shared_ptr<const SampleList>> lists;
  std::vector<Credentials> resolved_as;  // each ResolveSamples' owner
  struct OrderCall {
    JobId job;
    uint32_t epoch;
    size_t size;
  };
  std::vector<OrderCall> orders;
  std::vector<std::pair<JobId, uint32_t>> epochs;
  std::vector<JobId> ended;
  std::vector<JobId> restarted;
  struct PositionCall {
    JobId job;
    uint32_t epoch;
    uint64_t position;
    bool operator==(const PositionCall&) const = default;
  };
  std::vector<PositionCall> positions;
};

constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 1001;
constexpr const char* kConfig = "batch_size = 2\nepochs = 2\nroot = \"ds\"\nloaders = 1\n";

class JobRegistryTest : public ::testing::Test {
 protected:
  JobRegistryTest() {
    procs_.set_default_uid(kAlice);  // the tests' processes are Alice's
    procs_.SpawnAs(0, 1, 0, 1);
    procs_.Spawn(100, 1, 100);   // job A's trainer
    procs_.Spawn(101, 100, 101); // its worker
    procs_.Spawn(200, 1, 200);   // job B's trainer
    procs_.Spawn(300, 1, 300);   // someone else
    for (int i = 0; i < 8; ++i) sink_.objects["ds/f" + std::to_string(i)] = 1000 + i;
    sink_.objects["ds/shared"] = 2000;
    JobRegistryOptions o;
    o.max_jobs = 8;
    o.prefetch_factor = 1;
    reg_ = std::make_unique<JobRegistry>(sink_, std::make_unique<FakeProcReader>(&procs_), o);
  }
  // A job over ds/f0..f3 with orders 0 and 1 declared.
  JobId SetUpJob(const std::string& name, pid_t pid, const std::string& samples = "f0\nf1\nf2\nf3\n") {
    Result<JobId> id = reg_->Register(name, {kAlice}, pid);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_TRUE(reg_->WriteConfig(name, kAlice, kConfig).ok());
    Status s = reg_->WriteSamples(name, {kAlice}, samples);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(reg_->WriteOrder(name, kAlice, 0, "0 1 2 3").ok());
    EXPECT_TRUE(reg_->WriteOrder(name, kAlice, 1, "3 2 1 0").ok());
    return id.ok() ? id.value() : kNoJob;
  }
  std::string LastError(const std::string& name) { return reg_->Snapshot(name).value().last_error; }

  FakeProcTable procs_;
  FakeSink sink_;
  std::unique_ptr<JobRegistry> reg_;
};

TEST_F(JobRegistryTest, NameValidation) {
  for (const char* ok : {"a", "job-1", "sweep.lr_0.1", "A9"}) {
    EXPECT_TRUE(JobRegistry::ValidateName(ok).ok()) << ok;
  }
  EXPECT_TRUE(JobRegistry::ValidateName(std::string(64, 'x')).ok());
  for (std::string bad : {std::string(""), std::string("."), std::string(".."), std::string("a/b"),
                          std::string("a b"), std::string(65, 'x'), std::string("a\0b", 3),
                          std::string("é")}) {
    EXPECT_EQ(JobRegistry::ValidateName(bad).code(), Code::kInvalidArgument) << bad;
    EXPECT_FALSE(reg_->Register(bad, {kAlice}, 0).ok());
  }
}

TEST_F(JobRegistryTest, RegisterRemoveAndIdsAreNeverReused) {
  Result<JobId> a = reg_->Register("a", {kAlice}, 0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(reg_->Register("a", {kBob}, 0).status().code(), Code::kExists);
  ASSERT_TRUE(reg_->Remove("a", kAlice).ok());
  EXPECT_EQ(sink_.ended, std::vector<JobId>{a.value()});
  Result<JobId> again = reg_->Register("a", {kAlice}, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again.value(), a.value());
  EXPECT_EQ(reg_->Remove("zzz", kAlice).code(), Code::kNotFound);
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(reg_->Register("j" + std::to_string(i), {kAlice}, 0).ok());
  EXPECT_EQ(reg_->Register("one-too-many", {kAlice}, 0).status().code(), Code::kNoSpace);
  EXPECT_EQ(reg_->JobNames().size(), 8u);
  EXPECT_EQ(reg_->JobNames().front(), "a");
}

TEST_F(JobRegistryTest, PidsOnlyOfTheWritersOwnProcesses) {
  procs_.SpawnAs(kBob, 400, 1, 400);  // Bob's trainer
  ASSERT_TRUE(reg_->Register("a", {kAlice}, 0).ok());
  ASSERT_TRUE(reg_->Register("b", {kBob}, 0).ok());
  // Alice may not claim pid 1 (root's) or Bob's trainer; nothing is added.
  EXPECT_EQ(reg_->WritePids("a", kAlice, "1\n", 0).code(), Code::kNotPermitted);
  EXPECT_EQ(reg_->WritePids("a", kAlice, "100\n400\n", 0).code(), Code::kNotPermitted);
  EXPECT_EQ(LastError("a"), "pids: pid 400: not a process of uid 1000");
  EXPECT_TRUE(reg_->Snapshot("a").value().pids.empty());
  // Bob's own registration still works (his pid was not taken).
  EXPECT_TRUE(reg_->WritePids("b", kBob, "400\n", 0).ok());
  EXPECT_EQ(reg_->Snapshot("b").value().pids, std::vector<pid_t>{400});
  // Alice registers her own; root may register anyone's.
  EXPECT_TRUE(reg_->WritePids("a", kAlice, "100\n", 0).ok());
  EXPECT_TRUE(reg_->WritePids("a", 0, "1\n", 0).ok());
}

TEST_F(JobRegistryTest, JobsPerUserAreBounded) {
  JobRegistryOptions o;
  o.max_jobs = 8;
  o.max_jobs_per_user = 2;
  JobRegistry reg(sink_, std::make_unique<FakeProcReader>(&procs_), o);
  EXPECT_TRUE(reg.Register("a1", {kAlice}, 0).ok());
  EXPECT_TRUE(reg.Register("a2", {kAlice}, 0).ok());
  EXPECT_EQ(reg.Register("a3", {kAlice}, 0).status().code(), Code::kNoSpace);
  EXPECT_TRUE(reg.Register("b1", {kBob}, 0).ok());  // Bob is not starved by Alice
  EXPECT_TRUE(reg.Register("r1", {0}, 0).ok());     // root is not bounded
  EXPECT_TRUE(reg.Register("r2", {0}, 0).ok());
  EXPECT_TRUE(reg.Register("r3", {0}, 0).ok());
  EXPECT_TRUE(reg.Remove("a1", kAlice).ok());
  EXPECT_TRUE(reg.Register("a3", {kAlice}, 0).ok());
}

// What one user's jobs hold after their samples writes is bounded too, not
// only what is buffered while a write is open.
TEST_F(JobRegistryTest, SamplesPerUserAreBounded) {
  JobRegistryOptions o;
  o.max_samples_per_user = 6;
  JobRegistry reg(sink_, std::make_unique<FakeProcReader>(&procs_), o);
  for (const char* job : {"a1", "a2", "b1", "r1"}) {
    const uid_t owner = job[0] == 'a' ? kAlice : job[0] == 'b' ? kBob : 0;
    ASSERT_TRUE(reg.Register(job, {owner}, 0).ok());
    ASSERT_TRUE(reg.WriteConfig(job, owner, kConfig).ok());
  }
  EXPECT_TRUE(reg.WriteSamples("a1", {kAlice}, "f0\nf1\nf2\nf3\n").ok());
  EXPECT_TRUE(reg.WriteSamples("a1", {kAlice}, "f0\nf1\nf2\nf3\n").ok()) << "a repeat";
  Status s = reg.WriteSamples("a2", {kAlice}, "f4\nf5\nf6\n");
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_CONTAINS(s.message(), "limits.samples_per_user");
  EXPECT_CONTAINS(reg.Snapshot("a2").value().last_error, "samples:");
  EXPECT_TRUE(reg.WriteSamples("a2", {kAlice}, "f4\nf5\n").ok()) << "exactly at the bound";
  EXPECT_TRUE(reg.WriteSamples("b1", {kBob}, "f0\nf1\nf2\nf3\nf4\nf5\n").ok()) << "per user";
  EXPECT_TRUE(reg.WriteSamples("r1", {0}, "f0\nf1\nf2\nf3\nf4\nf5\nf6\nf7\n").ok())
      << "root is not bounded";
  ASSERT_TRUE(reg.Remove("a1", kAlice).ok());
  ASSERT_TRUE(reg.Register("a3", {kAlice}, 0).ok());
  ASSERT_TRUE(reg.WriteConfig("a3", kAlice, kConfig).ok());
  EXPECT_TRUE(reg.WriteSamples("a3", {kAlice}, "f0\nf1\nf2\nf3\n").ok()) << "freed by rmdir";
}

TEST_F(JobRegistryTest, OnlyOwnerOrRootMayWrite) {
  ASSERT_TRUE(reg_->Register("a", {kAlice}, 0).ok());
  EXPECT_EQ(reg_->CheckWrite("a", kBob, "config").code(), Code::kNotPermitted);
  EXPECT_TRUE(reg_->CheckWrite("a", kAlice, "config").ok());
  EXPECT_TRUE(reg_->CheckWrite("a", 0, "config").ok());
  EXPECT_EQ(reg_->WriteConfig("a", kBob, kConfig).code(), Code::kNotPermitted);
  EXPECT_EQ(reg_->WritePids("a", kBob, "300\n", 300).code(), Code::kNotPermitted);
  EXPECT_EQ(reg_->WriteEpoch("a", kBob, "0").code(), Code::kNotPermitted);
  EXPECT_EQ(reg_->Remove("a", kBob).code(), Code::kNotPermitted);
  // The owner sees in `status` who was refused (recorded at open time).
  EXPECT_NE(LastError("a").find("config: uid " + std::to_string(kBob) + " may not write job 'a'"),
            std::string::npos)
      << LastError("a");
  EXPECT_TRUE(reg_->WriteConfig("a", 0, kConfig).ok());  // root
  EXPECT_TRUE(reg_->Remove("a", 0).ok());
}

TEST_F(JobRegistryTest, LifecycleAndForwarding) {
  Result<JobId> id = reg_->Register("a", {kAlice}, 100);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(reg_->Snapshot("a").value().state, JobPhase::kRegistered);
  EXPECT_EQ(reg_->Snapshot("a").value().pids, std::vector<pid_t>{100});  // the creator

  EXPECT_EQ(reg_->WriteSamples("a", {kAlice}, "f0\n").code(), Code::kInvalidArgument);
  EXPECT_EQ(LastError("a"), "samples: write config before samples");

  ASSERT_TRUE(reg_->WriteConfig("a", kAlice, kConfig + std::string("compute_ms = 3\n")).ok());
  JobRecord s = reg_->Snapshot("a").value();
  EXPECT_EQ(s.state, JobPhase::kConfigured);
  ASSERT_EQ(sink_.specs.size(), 1u);
  EXPECT_EQ(sink_.specs[0].id, id.value());
  EXPECT_EQ(sink_.specs[0].name, "a");
  EXPECT_EQ(sink_.specs[0].batch_size, 2u);
  EXPECT_EQ(sink_.specs[0].epochs, 2u);
  EXPECT_DOUBLE_EQ(*sink_.configs[0].compute_ms, 3.0);
  // Identical rewrite: no-op; different: refused.
  EXPECT_TRUE(reg_->WriteConfig("a", kAlice, kConfig + std::string("compute_ms = 3.0\n")).ok());
  EXPECT_EQ(sink_.specs.size(), 1u);
  EXPECT_FALSE(reg_->WriteConfig("a", kAlice, "batch_size = 3\nepochs = 2\n").ok());
  EXPECT_CONTAINS(LastError("a"), "config: config is already set and differs");

  EXPECT_EQ(reg_->WriteOrder("a", kAlice, 0, "0").code(), Code::kInvalidArgument);
  EXPECT_EQ(LastError("a"), "order/0: write samples before the orders");

  ASSERT_TRUE(reg_->WriteSamples("a", {kAlice}, "f0\nf1\nf2\nf3\n").ok());
  EXPECT_EQ(sink_.sample_counts[id.value()], 4u);
  EXPECT_TRUE(reg_->WriteSamples("a", {kAlice}, "./f0\nf1\nf2\nf3").ok());  // same list
  EXPECT_FALSE(reg_->WriteSamples("a", {kAlice}, "f0\nf1\n").ok());

  EXPECT_FALSE(reg_->WriteOrder("a", kAlice, 0, "0 1 7").ok());
  EXPECT_EQ(LastError("a"),
            "order/0: token 3 (line 1) \"7\": index out of range (the sample list has 4 samples)");
  EXPECT_FALSE(reg_->WriteOrder("a", kAlice, 2, "0").ok());
  EXPECT_CONTAINS(LastError("a"), "order/2: epoch 2 is beyond the job's last epoch 1");
  ASSERT_TRUE(reg_->WriteOrder("a", kAlice, 0, "0 1 2 3").ok());
  ASSERT_TRUE(reg_->WriteOrder("a", kAlice, 0, "0 1 2 3\n").ok());  // identical: not forwarded
  ASSERT_TRUE(reg_->WriteOrder("a", kAlice, 1, "3 2 1 0").ok());
  ASSERT_EQ(sink_.orders.size(), 2u);
  EXPECT_EQ(sink_.orders[1].epoch, 1u);
  EXPECT_EQ(reg_->Snapshot("a").value().declared_epochs, (std::vector<uint32_t>{0, 1}));

  EXPECT_FALSE(reg_->WriteEpoch("a", kAlice, "x").ok());
  EXPECT_CONTAINS(LastError("a"), "epoch: expected one non-negative integer, got \"x\"");
  EXPECT_FALSE(reg_->WriteEpoch("a", kAlice, "2").ok());
  ASSERT_TRUE(reg_->WriteEpoch("a", kAlice, "0\n").ok());
  EXPECT_EQ(reg_->Snapshot("a").value().state, JobPhase::kRunning);
  EXPECT_EQ(reg_->Snapshot("a").value().epoch, std::optional<uint32_t>(0));
  ASSERT_EQ(sink_.epochs.size(), 1u);
  EXPECT_EQ(sink_.epochs[0], std::make_pair(id.value(), 0u));
  // The running epoch's order is fixed now.
  EXPECT_FALSE(reg_->WriteOrder("a", kAlice, 0, "3 2 1 0").ok());
  EXPECT_CONTAINS(LastError("a"), "order/0: epoch 0 has begun");

  ASSERT_TRUE(reg_->Remove("a", kAlice).ok());
  EXPECT_EQ(reg_->Snapshot("a").status().code(), Code::kNotFound);
}

// `position` reports reach the sink for the current epoch only; a late one
// (an epoch already over) is accepted and dropped; bad ones are refused with
// the reason in last_error and change nothing.
TEST_F(JobRegistryTest, PositionReportsOfTheCurrentEpoch) {
  const JobId a = SetUpJob("a", 100);
  EXPECT_EQ(reg_->WritePosition("a", kAlice, "0 2\n").code(), Code::kInvalidArgument);
  EXPECT_NE(LastError("a").find("epoch 0 has not begun"), std::string::npos) << LastError("a");
  ASSERT_TRUE(reg_->WriteEpoch("a", kAlice, "0").ok());
  EXPECT_TRUE(reg_->WritePosition("a", kAlice, "0 2\n").ok());
  EXPECT_TRUE(reg_->WritePosition("a", kAlice, " 0\t4 ").ok());  // the whole order
  EXPECT_EQ(reg_->Snapshot("a").value().position->position, 4u);
  for (const char* bad : {"0 5", "1 1", "0", "0 1 2", "x 1", "0 -1", "0 1\n0 2\n", ""}) {
    EXPECT_EQ(reg_->WritePosition("a", kAlice, bad).code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(LastError("a").find("position: "), std::string::npos) << LastError("a");
  }
  EXPECT_EQ(reg_->WritePosition("a", kBob, "0 1").code(), Code::kNotPermitted);
  EXPECT_EQ(reg_->WritePosition("nobody", kAlice, "0 1").code(), Code::kNotFound);
  ASSERT_TRUE(reg_->WriteEpoch("a", kAlice, "1").ok());
  EXPECT_TRUE(reg_->WritePosition("a", kAlice, "0 3").ok());  // late: dropped
  EXPECT_TRUE(reg_->WritePosition("a", kAlice, "1 1").ok());
  const std::vector<FakeSink::PositionCall> want = {{a, 0, 2}, {a, 0, 4}, {a, 1, 1}};
  EXPECT_EQ(sink_.positions, want);
  EXPECT_EQ(reg_->Snapshot("a").value().position->epoch, 1u);
}

TEST_F(JobRegistryTest, FailedWritesCommitNothing) {
  ASSERT_TRUE(reg_->Register("a", {kAlice}, 0).ok());
  sink_.fail_next = true;
  EXPECT_FALSE(reg_->WriteConfig("a", kAlice, kConfig).ok());
  EXPECT_EQ(reg_->Snapshot("a").value().state, JobPhase::kRegistered);
  EXPECT_EQ(LastError("a"), "config: policy said no");
  ASSERT_TRUE(reg_->WriteConfig("a", kAlice, kConfig).ok());
  Status s = reg_->WriteSamples("a", {kAlice}, "f0\nmissing\n");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(LastError("a"), "samples: no such sample file: ds/missing");
  EXPECT_EQ(reg_->Snapshot("a").value().sample_count, 0u);
  EXPECT_FALSE(reg_->WriteSamples("a", {kAlice}, "f0\n../etc/passwd\n").ok());
  EXPECT_CONTAINS(LastError("a"), "samples: line 2: '..' component");
  EXPECT_TRUE(reg_->WriteSamples("a", {kAlice}, "f0\nf1\n").ok());
  EXPECT_FALSE(reg_->WritePids("a", kAlice, "300\n99999\n", 0).ok());
  EXPECT_EQ(LastError("a"), "pids: pid 99999: no such process");
  EXPECT_TRUE(reg_->Snapshot("a").value().pids.empty());
}

TEST_F(JobRegistryTest, ResolveRunsWithoutTheRegistryMutex) {
  ASSERT_TRUE(reg_->Register("a", {kAlice}, 0).ok());
  ASSERT_TRUE(reg_->WriteConfig("a", kAlice, kConfig).ok());
  size_t seen = 0;
  // Would deadlock if ResolveSamples ran under the registry mutex.
  sink_.during_resolve = [&] { seen = reg_->JobNames().size(); };
  ASSERT_TRUE(reg_->WriteSamples("a", {kAlice}, "f0\n").ok());
  EXPECT_EQ(seen, 1u);
  // The job vanishing while its samples resolve is reported, not crashed on.
  ASSERT_TRUE(reg_->Register("b", {kAlice}, 0).ok());
  ASSERT_TRUE(reg_->WriteConfig("b", kAlice, kConfig).ok());
  sink_.during_resolve = [&] { (void)reg_->Remove("b", kAlice); };
  EXPECT_EQ(reg_->WriteSamples("b", {kAlice}, "f0\n").code(), Code::kNotFound);
}

TEST_F(JobRegistryTest, SamplesAreResolvedAsTheJobsOwner) {
  const Credentials alice{kAlice, 100, {7, 8}};
  ASSERT_TRUE(reg_->Register("a", alice, 0).ok());
  ASSERT_TRUE(reg_->WriteConfig("a", kAlice, kConfig).ok());
  // Root writes Alice's samples: they resolve as Alice, with the groups her
  // mkdir had, not as root.
  ASSERT_TRUE(reg_->WriteSamples("a", {0}, "f0\nf1\n").ok());
  ASSERT_EQ(sink_.resolved_as.size(), 1u);
  EXPECT_EQ(sink_.resolved_as[0].uid, kAlice);
  EXPECT_EQ(sink_.resolved_as[0].gid, 100u);
  EXPECT_EQ(sink_.resolved_as[0].groups, (std::vector<gid_t>{7, 8}));
  const JobId a = reg_->Find("a").value();
  ASSERT_NE(sink_.lists[a]->owner, nullptr);  // what the prefetch loads as
  EXPECT_EQ(sink_.lists[a]->owner->uid, kAlice);
  EXPECT_EQ(sink_.lists[a]->owner->groups, (std::vector<gid_t>{7, 8}));
  // Her own write brings her groups up to date.
  ASSERT_TRUE(reg_->Register("b", alice, 0).ok());
  ASSERT_TRUE(reg_->WriteConfig("b", kAlice, kConfig).ok());
  ASSERT_TRUE(reg_->WriteSamples("b", {kAlice, 100, {9}}, "f0\n").ok());
  EXPECT_EQ(sink_.resolved_as.back().groups, std::vector<gid_t>{9});
  // Bob may not write Alice's samples: nothing is resolved as anyone.
  EXPECT_EQ(reg_->WriteSamples("a", {kBob}, "f2\n").code(), Code::kNotPermitted);
  EXPECT_EQ(sink_.resolved_as.size(), 2u);
  // Root's own job: no owner to load as (anything may be).
  ASSERT_TRUE(reg_->Register("r", {0}, 0).ok());
  ASSERT_TRUE(reg_->WriteConfig("r", 0, kConfig).ok());
  ASSERT_TRUE(reg_->WriteSamples("r", {0}, "f3\n").ok());
  EXPECT_EQ(sink_.resolved_as.back().uid, 0u);
  EXPECT_EQ(sink_.lists[reg_->Find("r").value()]->owner, nullptr);
}

TEST_F(JobRegistryTest, AttributionByProcessThenByOrders) {
  JobId a = SetUpJob("a", 100, "f0\nf1\nf2\nf3\nshared\n");
  JobId b = SetUpJob("b", 200, "f4\nf5\nf6\nf7\nshared\n");
  // By process: the worker (child of 100) reads f1.
  AccessInfo i = reg_->OnAccess(101, 1001);
  EXPECT_EQ(i.job, a);
  EXPECT_EQ(i.source, AttributionSource::kProcess);
  EXPECT_EQ(i.sample, 1);
  EXPECT_EQ(i.epoch, std::optional<uint32_t>(0));
  EXPECT_EQ(i.batch, 0);
  // pid 0 (outside the namespace) and an unknown process: by orders.
  i = reg_->OnAccess(0, 1006);  // f6 is only in b's orders
  EXPECT_EQ(i.job, b);
  EXPECT_EQ(i.source, AttributionSource::kOrders);
  EXPECT_EQ(i.sample, 2);
  // A known process outside a's running processes is someone else.
  i = reg_->OnAccess(300, 1000);
  EXPECT_EQ(i.job, kNoJob);
  i = reg_->OnAccess(0, 1000);
  EXPECT_EQ(i.job, a);
  EXPECT_EQ(i.source, AttributionSource::kOrders);
  // "shared" is sample 4 in both lists but in neither's orders → nobody.
  i = reg_->OnAccess(0, 2000);
  EXPECT_EQ(i.job, kNoJob);
  EXPECT_EQ(i.source, AttributionSource::kNone);
  // ...but the process decides when it can: a's trainer reading it.
  i = reg_->OnAccess(100, 2000);
  EXPECT_EQ(i.job, a);
  EXPECT_EQ(i.sample, 4);
  EXPECT_EQ(i.epoch, std::optional<uint32_t>(0));
  EXPECT_EQ(i.batch, -1);  // not in epoch 0's order
  // A file that is no sample, read by a's process: the job, no sample.
  i = reg_->OnAccess(101, 9999);
  EXPECT_EQ(i.job, a);
  EXPECT_EQ(i.sample, -1);
  EXPECT_FALSE(i.epoch.has_value());
  EXPECT_EQ(reg_->Snapshot("a").value().accesses, 4u);
}

// A backup or md5sum of a running job's files, by its owner or another user,
// and any reader of another user: not the job, so its epoch does not move.
// Once the job's processes are gone (a shell recipe whose mkdir exited), its
// owner's readers are attributed by orders again; another user's never.
TEST_F(JobRegistryTest, UnregisteredReadersDoNotAdvanceARunningJob) {
  JobId a = SetUpJob("a", 100);
  for (cache::ObjectId o : {1000, 1001, 1002, 1003}) {
    EXPECT_EQ(reg_->OnAccess(300, o, kAlice).job, kNoJob) << "alice's md5sum";
    EXPECT_EQ(reg_->OnAccess(0, o, kBob).job, kNoJob) << "bob, from another namespace";
    EXPECT_EQ(reg_->OnAccess(300, o, 0).job, kNoJob) << "root's backup";
  }
  for (cache::ObjectId o : {1000, 1001, 1002, 1003}) reg_->OnAccess(300, o, kAlice);
  EXPECT_FALSE(reg_->Snapshot("a").value().epoch.has_value()) << "no epoch began";
  EXPECT_EQ(reg_->Snapshot("a").value().accesses, 0u);
  EXPECT_EQ(reg_->OnAccess(101, 1000, kAlice).epoch, std::optional<uint32_t>(0));
  procs_.Exit(100);
  procs_.Exit(101);
  EXPECT_EQ(reg_->OnAccess(300, 1001, kBob).job, kNoJob);
  AccessInfo i = reg_->OnAccess(300, 1001, kAlice);
  EXPECT_EQ(i.job, a);
  EXPECT_EQ(i.source, AttributionSource::kOrders);
}

TEST_F(JobRegistryTest, PidsFileRegistersListedAndWriterPids) {
  ASSERT_TRUE(reg_->Register("a", {kAlice}, 0).ok());
  EXPECT_EQ(reg_->OnAccess(300, 1000).job, kNoJob);
  ASSERT_TRUE(reg_->WritePids("a", kAlice, "300\n", 200).ok());
  EXPECT_EQ(reg_->Snapshot("a").value().pids, (std::vector<pid_t>{200, 300}));
  EXPECT_EQ(reg_->OnAccess(300, 1000).job, reg_->Find("a").value());
  // (Root writes b's pids: Bob may not name Alice's processes at all.)
  ASSERT_TRUE(reg_->Register("b", {kBob}, 0).ok());
  EXPECT_FALSE(reg_->WritePids("b", 0, "300\n", 0).ok());
  EXPECT_CONTAINS(LastError("b"), "pids: pid 300 is registered to another job");
  ASSERT_TRUE(reg_->Remove("a", kAlice).ok());
  EXPECT_EQ(reg_->OnAccess(300, 1000).job, kNoJob);
  EXPECT_TRUE(reg_->WritePids("b", 0, "300\n", 0).ok());
}

TEST_F(JobRegistryTest, InferredEpochsReachTheSinkAndTheJobFinishes) {
  JobId a = SetUpJob("a", 100);
  for (cache::ObjectId o : {1000, 1001, 1002, 1003}) {
    EXPECT_EQ(reg_->OnAccess(101, o).epoch, std::optional<uint32_t>(0));
  }
  EXPECT_EQ(reg_->Snapshot("a").value().state, JobPhase::kRunning);
  for (cache::ObjectId o : {1003, 1002, 1001}) {
    EXPECT_EQ(reg_->OnAccess(101, o).epoch, std::optional<uint32_t>(1));
  }
  EXPECT_EQ(reg_->Snapshot("a").value().state, JobPhase::kRunning);
  AccessInfo i = reg_->OnAccess(101, 1000);
  EXPECT_EQ(i.batch, 1);
  EXPECT_EQ(reg_->Snapshot("a").value().state, JobPhase::kDone);
  EXPECT_EQ(sink_.epochs,
            (std::vector<std::pair<JobId, uint32_t>>{{a, 0u}, {a, 1u}}));
  // Reads past the last epoch begin no epoch in the policy.
  reg_->OnAccess(101, 1000);
  EXPECT_EQ(sink_.epochs.size(), 2u);
}

TEST_F(JobRegistryTest, ConcurrentJobsAndReaders) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  // Two readers hammer OnAccess while two writers create and end jobs.
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        for (cache::ObjectId o = 1000; o < 1008; ++o) {
          AccessInfo i = reg_->OnAccess(o % 2 ? 101 : 0, o);
          if (i.sample >= 8) errors.fetch_add(1);
        }
        (void)reg_->JobNames();
        (void)reg_->Snapshot("w0-0");
      }
    });
  }
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (int k = 0; k < 150; ++k) {
        std::string name = "w" + std::to_string(w) + "-" + std::to_string(k % 3);
        Result<JobId> id = reg_->Register(name, {kAlice}, w == 0 ? 100 : 0);
        if (!id.ok()) {
          errors.fetch_add(1);
          continue;
        }
        bool ok = reg_->WriteConfig(name, kAlice, kConfig).ok() &&
                  reg_->WriteSamples(name, {kAlice}, "f0\nf1\nf2\nf3\n").ok();
        // The readers may have moved the job's inferred epoch past 0 already:
        // then these are refused, which is correct.
        Status order = reg_->WriteOrder(name, kAlice, 0, "3 1 2 0");
        Status epoch = reg_->WriteEpoch(name, kAlice, "0");
        ok = ok && (order.ok() || order.code() == Code::kInvalidArgument) &&
             (epoch.ok() || epoch.code() == Code::kInvalidArgument);
        ok = reg_->Remove(name, kAlice).ok() && ok;
        if (!ok) errors.fetch_add(1);
      }
    });
  }
  for (size_t t = 2; t < threads.size(); ++t) threads[t].join();
  stop = true;
  threads[0].join();
  threads[1].join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_TRUE(reg_->JobNames().empty());
  EXPECT_EQ(sink_.ended.size(), 300u);
}

}  // namespace
}  // namespace epochfs::control

namespace epochfs::control {
namespace {

// Orphans: every registered process gone → orphaned (cache kept) → after the
// grace, removed as by rmdir; a restarted process of the job clears it.
TEST_F(JobRegistryTest, OrphansAreKeptForTheGraceThenReaped) {
  constexpr uint64_t kSec = 1'000'000'000;
  JobId a = SetUpJob("a", 100);
  SetUpJob("b", 200);
  ASSERT_TRUE(reg_->Register("nopid", {kAlice}, 0).ok());  // no pid: never orphaned
  EXPECT_TRUE(reg_->ReapOrphans(0, 10 * kSec).empty());
  EXPECT_FALSE(reg_->Snapshot("a").value().orphaned_since_ns.has_value());

  procs_.Exit(100);
  procs_.Exit(101);
  EXPECT_TRUE(reg_->ReapOrphans(1 * kSec, 10 * kSec).empty());
  EXPECT_EQ(reg_->Snapshot("a").value().orphaned_since_ns, std::optional<uint64_t>(1 * kSec));
  EXPECT_FALSE(reg_->Snapshot("b").value().orphaned_since_ns.has_value());
  EXPECT_TRUE(reg_->ReapOrphans(5 * kSec, 10 * kSec).empty());  // within the grace

  // The job restarts: a new process registers; the orphan mark goes.
  procs_.Spawn(400, 1, 400);
  ASSERT_TRUE(reg_->WritePids("a", kAlice, "400\n", 0).ok());
  EXPECT_TRUE(reg_->ReapOrphans(6 * kSec, 10 * kSec).empty());
  EXPECT_FALSE(reg_->Snapshot("a").value().orphaned_since_ns.has_value());

  // It dies for good: marked again, and reaped once the grace is over.
  procs_.Exit(400);
  EXPECT_TRUE(reg_->ReapOrphans(20 * kSec, 10 * kSec).empty());
  EXPECT_EQ(reg_->ReapOrphans(30 * kSec, 10 * kSec), std::vector<std::string>{"a"});
  EXPECT_EQ(sink_.ended, std::vector<JobId>{a});
  EXPECT_EQ(reg_->Snapshot("a").status().code(), Code::kNotFound);
  EXPECT_EQ(reg_->JobNames(), (std::vector<std::string>{"b", "nopid"}));
  EXPECT_FALSE(reg_->empty());
}

// Re-attach: the first write of an orphaned job's owner (or root) keeps the
// job (id, declarations, epoch) and restarts its current epoch.
TEST_F(JobRegistryTest, FirstWriteToAnOrphanReattachesIt) {
  constexpr uint64_t kSec = 1'000'000'000;
  JobId a = SetUpJob("a", 100);
  // The worker reads samples 0 and 1 of epoch 0, then everything dies.
  EXPECT_EQ(reg_->OnAccess(101, 1000).epoch, std::optional<uint32_t>(0));
  EXPECT_EQ(reg_->OnAccess(101, 1001).epoch, std::optional<uint32_t>(0));
  ASSERT_EQ(sink_.epochs.size(), 1u);
  // While a process lives the name is taken, for everyone.
  EXPECT_EQ(reg_->Register("a", {kAlice}, 0).status().code(), Code::kExists);
  procs_.Exit(100);
  procs_.Exit(101);
  EXPECT_TRUE(reg_->ReapOrphans(1 * kSec, 10 * kSec).empty());
  ASSERT_TRUE(reg_->Snapshot("a").value().orphaned_since_ns.has_value());

  // The name stays taken; another user cannot take the job over.
  procs_.Spawn(600, 1, 600);
  EXPECT_EQ(reg_->Register("a", {kAlice}, 600).status().code(), Code::kExists);
  EXPECT_EQ(reg_->WriteConfig("a", kBob, kConfig, 600).code(), Code::kNotPermitted);
  EXPECT_TRUE(sink_.restarted.empty());

  // The restarted job: a new process, same owner, writes its config first.
  procs_.Spawn(500, 1, 500);
  ASSERT_TRUE(reg_->WriteConfig("a", kAlice, kConfig, 500).ok());
  EXPECT_EQ(sink_.restarted, std::vector<JobId>{a});
  EXPECT_EQ(reg_->Snapshot("a").value().id, a);
  EXPECT_TRUE(sink_.ended.empty());
  JobRecord s = reg_->Snapshot("a").value();
  EXPECT_FALSE(s.orphaned_since_ns.has_value());
  EXPECT_EQ(s.reattached, 1u);
  EXPECT_EQ(s.pids, std::vector<pid_t>{500});  // the dead pids are forgotten
  EXPECT_EQ(s.epoch, std::optional<uint32_t>(0));
  EXPECT_EQ(s.declared_epochs, (std::vector<uint32_t>{0, 1}));

  // It re-declares itself: identical samples and orders are no-ops.
  EXPECT_TRUE(reg_->WriteSamples("a", {kAlice}, "f0\nf1\nf2\nf3\n", 500).ok());
  EXPECT_TRUE(reg_->WriteOrder("a", kAlice, 0, "0 1 2 3").ok());
  EXPECT_TRUE(reg_->WriteOrder("a", kAlice, 1, "3 2 1 0").ok());
  EXPECT_EQ(sink_.specs.size(), 1u);
  EXPECT_EQ(sink_.orders.size(), 2u);

  // It reads epoch 0 again from the start: samples 0 and 1 count for epoch 0
  // (without the restart, sample 0 would begin epoch 1).
  AccessInfo i0 = reg_->OnAccess(500, 1000);
  EXPECT_EQ(i0.job, a);
  EXPECT_EQ(i0.epoch, std::optional<uint32_t>(0));
  EXPECT_FALSE(i0.repeat);
  EXPECT_EQ(reg_->OnAccess(500, 1001).epoch, std::optional<uint32_t>(0));
  EXPECT_EQ(sink_.epochs.size(), 1u);
  EXPECT_EQ(reg_->OnAccess(500, 1002).epoch, std::optional<uint32_t>(0));
  EXPECT_EQ(reg_->OnAccess(500, 1003).epoch, std::optional<uint32_t>(0));
  EXPECT_EQ(reg_->OnAccess(500, 1003).epoch, std::optional<uint32_t>(1));  // then epoch 1
  EXPECT_EQ(sink_.epochs.back(), (std::pair<JobId, uint32_t>{a, 1}));
  EXPECT_TRUE(reg_->ReapOrphans(2 * kSec, 10 * kSec).empty());
  EXPECT_FALSE(reg_->Snapshot("a").value().orphaned_since_ns.has_value());
}

TEST_F(JobRegistryTest, ReattachBeforeTheReaperNoticedAndByRoot) {
  JobId a = SetUpJob("a", 100);
  // A write while the job lives is no re-attach.
  ASSERT_TRUE(reg_->WriteEpoch("a", kAlice, "0", 100).ok());
  EXPECT_TRUE(sink_.restarted.empty());
  procs_.Exit(100);
  procs_.Exit(101);
  // No reaper tick yet: the write finds every registered process gone itself.
  procs_.Spawn(500, 1, 500);
  ASSERT_TRUE(reg_->WriteOrder("a", 0, 1, "3 2 1 0", 500).ok());  // root
  EXPECT_EQ(sink_.restarted, std::vector<JobId>{a});
  JobRecord s = reg_->Snapshot("a").value();
  EXPECT_EQ(s.owner, kAlice);  // still Alice's job
  EXPECT_EQ(s.pids, std::vector<pid_t>{500});
  EXPECT_EQ(s.reattached, 1u);
  ASSERT_TRUE(reg_->WriteEpoch("a", kAlice, "0", 500).ok());
  EXPECT_EQ(reg_->Snapshot("a").value().reattached, 1u);
}

TEST_F(JobRegistryTest, PidsWriteToAnOrphanReattachesIt) {
  JobId a = SetUpJob("a", 100);
  EXPECT_EQ(reg_->OnAccess(100, 1000).epoch, std::optional<uint32_t>(0));
  procs_.Exit(100);
  procs_.Exit(101);
  procs_.Spawn(500, 1, 500);
  ASSERT_TRUE(reg_->WritePids("a", kAlice, "500\n", 0).ok());
  EXPECT_EQ(sink_.restarted, std::vector<JobId>{a});
  JobRecord s = reg_->Snapshot("a").value();
  EXPECT_EQ(s.pids, std::vector<pid_t>{500});
  EXPECT_EQ(s.reattached, 1u);
  // Another pids write by the living job is not a re-attach.
  procs_.Spawn(501, 500, 501);
  ASSERT_TRUE(reg_->WritePids("a", kAlice, "501\n", 0).ok());
  EXPECT_EQ(reg_->Snapshot("a").value().reattached, 1u);
  EXPECT_EQ(reg_->OnAccess(501, 1000).epoch, std::optional<uint32_t>(0));  // restarted epoch 0
}

// A re-attached job that declares a different config or sample list is a
// different job under the old name: the old one's cache is released and the
// new declarations are taken as first ones.
TEST_F(JobRegistryTest, ReattachedJobWithOtherDeclarationsStartsAfresh) {
  JobId a = SetUpJob("a", 100);
  procs_.Exit(100);
  procs_.Exit(101);
  EXPECT_TRUE(reg_->ReapOrphans(1, 1'000'000'000).empty());  // marked orphaned
  procs_.Spawn(500, 1, 500);
  const char* other = "batch_size = 4\nepochs = 3\nroot = \"ds\"\nloaders = 1\n";
  ASSERT_TRUE(reg_->WriteConfig("a", kAlice, other, 500).ok()) << LastError("a");
  EXPECT_TRUE(sink_.restarted.empty());  // no epoch had begun
  EXPECT_EQ(sink_.ended, std::vector<JobId>{a});
  JobRecord s = reg_->Snapshot("a").value();
  EXPECT_EQ(s.id, a);
  EXPECT_EQ(s.state, JobPhase::kConfigured);
  EXPECT_EQ(s.config->batch_size, 4u);
  EXPECT_EQ(s.sample_count, 0u);
  EXPECT_TRUE(s.declared_epochs.empty());
  EXPECT_EQ(s.fresh_starts, 1u);
  EXPECT_EQ(sink_.specs.size(), 2u);
  ASSERT_TRUE(reg_->WriteSamples("a", {kAlice}, "f4\nf5\n").ok()) << LastError("a");
  ASSERT_TRUE(reg_->WriteOrder("a", kAlice, 0, "1 0").ok());
  // Confirmed: from now on a different config is refused as usual.
  EXPECT_EQ(reg_->WriteConfig("a", kAlice, kConfig).code(), Code::kInvalidArgument);
  EXPECT_EQ(reg_->Snapshot("a").value().config->batch_size, 4u);
}

TEST_F(JobRegistryTest, ReattachedJobWithOtherSamplesKeepsItsConfigAndStartsAfresh) {
  JobId a = SetUpJob("a", 100);
  procs_.Exit(100);
  procs_.Exit(101);
  EXPECT_TRUE(reg_->ReapOrphans(1, 1'000'000'000).empty());  // marked orphaned
  procs_.Spawn(500, 1, 500);
  ASSERT_TRUE(reg_->WriteConfig("a", kAlice, kConfig, 500).ok());  // re-attaches; same: no-op
  EXPECT_TRUE(sink_.ended.empty());
  ASSERT_TRUE(reg_->WriteSamples("a", {kAlice}, "f5\nf6\nf7\n").ok()) << LastError("a");
  EXPECT_EQ(sink_.ended, std::vector<JobId>{a});
  EXPECT_EQ(sink_.specs.size(), 2u);  // configured again for the policy
  EXPECT_EQ(sink_.sample_counts[a], 3u);
  JobRecord s = reg_->Snapshot("a").value();
  EXPECT_EQ(s.sample_count, 3u);
  EXPECT_TRUE(s.declared_epochs.empty());
  EXPECT_FALSE(s.epoch.has_value());
  EXPECT_EQ(s.fresh_starts, 1u);
  // Without a re-attach, different samples are refused and change nothing.
  EXPECT_EQ(reg_->WriteSamples("a", {kAlice}, "f1\n").code(), Code::kInvalidArgument);
  EXPECT_EQ(reg_->Snapshot("a").value().sample_count, 3u);
}

TEST_F(JobRegistryTest, ConfirmedReattachRefusesOtherDeclarations) {
  SetUpJob("a", 100);
  procs_.Exit(100);
  procs_.Exit(101);
  EXPECT_TRUE(reg_->ReapOrphans(1, 1'000'000'000).empty());  // marked orphaned
  procs_.Spawn(500, 1, 500);
  ASSERT_TRUE(reg_->WriteSamples("a", {kAlice}, "f0\nf1\nf2\nf3\n", 500).ok());  // same: confirms
  EXPECT_EQ(reg_->WriteSamples("a", {kAlice}, "f0\n").code(), Code::kInvalidArgument);
  EXPECT_EQ(reg_->WriteConfig("a", kAlice, "batch_size = 9\nepochs = 2\nroot = \"ds\"\n").code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(sink_.ended.empty());
  EXPECT_EQ(reg_->Snapshot("a").value().fresh_starts, 0u);
}

// K complete (every sample opened) at the crash: without a marker the next
// read begins K+1 (a restart from the checkpoint at the end of K); with
// `epoch` K written after the re-attach, K restarts.
TEST_F(JobRegistryTest, CompleteEpochRestartsOnlyOnItsMarker) {
  JobId a = SetUpJob("a", 100);
  for (cache::ObjectId o : {1000, 1001, 1002, 1003}) reg_->OnAccess(101, o);  // epoch 0 whole
  procs_.Exit(100);
  procs_.Exit(101);
  EXPECT_TRUE(reg_->ReapOrphans(1, 1'000'000'000).empty());
  procs_.Spawn(500, 1, 500);
  ASSERT_TRUE(reg_->WriteConfig("a", kAlice, kConfig, 500).ok());
  EXPECT_EQ(reg_->Snapshot("a").value().reattached, 1u);
  EXPECT_TRUE(sink_.restarted.empty());  // epoch 0 was complete: no restart yet
  ASSERT_TRUE(reg_->WriteEpoch("a", kAlice, "0", 500).ok());  // "I start epoch 0 (again)"
  EXPECT_EQ(sink_.restarted, std::vector<JobId>{a});
  EXPECT_EQ(reg_->OnAccess(500, 1000).epoch, std::optional<uint32_t>(0));
  // A marker after a read is an ordinary one: no second restart.
  ASSERT_TRUE(reg_->WriteEpoch("a", kAlice, "0", 500).ok());
  EXPECT_EQ(sink_.restarted.size(), 1u);

  // Crash again after epoch 0 was complete; this time the job resumes at 1.
  for (cache::ObjectId o : {1001, 1002, 1003}) reg_->OnAccess(500, o);
  procs_.Exit(500);
  EXPECT_TRUE(reg_->ReapOrphans(2, 1'000'000'000).empty());
  procs_.Spawn(501, 1, 501);
  ASSERT_TRUE(reg_->WritePids("a", kAlice, "501\n", 501).ok());
  EXPECT_EQ(reg_->Snapshot("a").value().reattached, 2u);
  AccessInfo i = reg_->OnAccess(501, 1003);  // epoch 1's first sample
  EXPECT_EQ(i.epoch, std::optional<uint32_t>(1));
  EXPECT_EQ(sink_.epochs.back(), (std::pair<JobId, uint32_t>{a, 1}));
  EXPECT_EQ(sink_.restarted.size(), 1u);
}

// A job set up from a shell: mkdir's own short-lived process is its first
// pid, the shell registers itself next. Not a restarted job.
TEST_F(JobRegistryTest, SetupFromAShellIsNoReattach) {
  procs_.Spawn(700, 1, 700);
  ASSERT_TRUE(reg_->Register("sh", {kAlice}, 700).ok());
  procs_.Exit(700);  // mkdir(1) exited
  ASSERT_TRUE(reg_->WritePids("sh", kAlice, "300\n", 300).ok());
  ASSERT_TRUE(reg_->WriteConfig("sh", kAlice, kConfig, 300).ok());
  EXPECT_EQ(reg_->Snapshot("sh").value().reattached, 0u);
  EXPECT_TRUE(sink_.restarted.empty());
}

TEST_F(JobRegistryTest, ZeroGraceReapsAtOnce) {
  SetUpJob("a", 100);
  procs_.Exit(100);
  EXPECT_EQ(reg_->ReapOrphans(7, 0), std::vector<std::string>{"a"});
  EXPECT_TRUE(reg_->empty());
}

}  // namespace
}  // namespace epochfs::control
