// ControlTree: the .epochfs/ tree over a real registry, a sink that accepts
// everything and a fake policy view.
#include "epochfs/control/control_tree.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "fake_proc_reader.h"

namespace epochfs::control {
// Named, not anonymous: a unity build compiles this file with the others of its binary.
namespace control_tree_test {

class AcceptingSink : public JobSink {
 public:
  Result<ResolvedSamples> ResolveSamples(const std::string& /*root*/, const PathList& paths,
                                         const Credentials& /*owner*/) override {
    ResolvedSamples out;
    for (size_t i = 0; i < paths.size(); ++i) out.refs.push_back({1000 + i, 10});
    return out;
  }
  Status OnConfigured(const cache::JobSpec&, const JobConfig&) override { return Status::Ok(); }
  Status OnSamples(JobId, std::vector<cache::SampleRef>, std::shared_ptr<const SampleList>) override {
    return Status::Ok();
  }
  Status OnOrder(JobId, uint32_t, std::vector<uint32_t>) override { return Status::Ok(); }
  void OnEpochBegin(JobId, uint32_t) override {}
  void OnJobEnd(JobId job) override { ended.push_back(job); }
  std::vector<JobId> ended;
};

class FakeView : public PolicyView {
 public:
  std::optional<JobFigures> Figures(cache::JobId id) const override {
    if (!known) return std::nullopt;
    JobFigures f;
    f.policy.id = id;
    f.policy.started = true;
    f.policy.state = cache::JobState::kCaching;
    f.policy.cur_bytes = 123;
    f.policy.current = {1, 7, 3};
    f.epochs = {{0, 0, 10}, {1, 7, 3}};
    return f;
  }
  bool known = false;
};

constexpr uid_t kAlice = 1000;
constexpr uid_t kBob = 1001;
const Caller kAliceCall{kAlice, kAlice, 0};
const Caller kBobCall{kBob, kBob, 0};

class ControlTreeTest : public ::testing::Test {
 protected:
  ControlTreeTest()
      : registry_(sink_, std::make_unique<testing::FakeProcReader>(&procs_)),
        tree_(registry_, view_, [] {
          return std::string(R"({"stats":1,"jobs":[{"name":"j"},{"name":"zz"}]})");
        }) {}

  nlohmann::json JobStatus(const std::string& job) {
    auto text = tree_.Read("jobs/" + job + "/status");
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    return nlohmann::json::parse(text.ok() ? text.value() : "{}");
  }
  void Configure(const std::string& job) {
    ASSERT_TRUE(tree_.Mkdir("jobs/" + job, kAliceCall).ok());
    ASSERT_TRUE(tree_.Write("jobs/" + job + "/config", "batch_size = 2\nepochs = 3\n", kAliceCall).ok());
    ASSERT_TRUE(tree_.Write("jobs/" + job + "/samples", "a\nb\nc\nd\n", kAliceCall).ok());
  }

  testing::FakeProcTable procs_;
  AcceptingSink sink_;
  FakeView view_;
  JobRegistry registry_;
  ControlTree tree_;
};

TEST_F(ControlTreeTest, RootAndJobsDirectory) {
  EXPECT_EQ(tree_.List("").value(),
            (std::vector<std::string>{"jobs", "metrics", "stats", "version", "warm"}));
  EXPECT_EQ(tree_.Read("stats").value(), R"({"stats":1,"jobs":[{"name":"j"},{"name":"zz"}]})" "\n");
  EXPECT_NE(tree_.Read("version").value().find("protocol 1\n"), std::string::npos);
  VNode jobs = tree_.Stat("jobs").value();
  EXPECT_TRUE(jobs.is_dir);
  EXPECT_EQ(jobs.perm, 01777u);
  EXPECT_EQ(tree_.Stat("nope").status().code(), Code::kNotFound);
  EXPECT_TRUE(tree_.List("jobs").value().empty());
}

TEST_F(ControlTreeTest, TheWarmFileFeedsStats) {
  // A real process (this one) reports, as `epochfs warm` does (warm_progress.h).
  const Caller me{kAlice, kAlice, ::getpid()};
  VNode vn = tree_.Stat("warm").value();
  EXPECT_TRUE(vn.writable && vn.per_write);
  EXPECT_EQ(vn.perm, 0666u);
  EXPECT_TRUE(tree_.CheckWrite("warm", me).ok());
  const std::string plain = tree_.Read("stats").value();  // no warm row: as it was
  ASSERT_TRUE(tree_.Write("warm", "4 9 400 900 0 reading\n", me).ok());
  EXPECT_EQ(tree_.Write("warm", "garbage\n", me).code(), Code::kInvalidArgument);
  nlohmann::json st = nlohmann::json::parse(tree_.Read("stats").value());  // root: every row
  EXPECT_EQ(st["stats"], 1);
  ASSERT_EQ(st["warm"].size(), 1u);
  EXPECT_EQ(st["warm"][0]["files_done"], 4);
  EXPECT_EQ(st["warm"][0]["files_total"], 9);
  EXPECT_EQ(st["warm"][0]["bytes_done"], 400);
  EXPECT_EQ(st["warm"][0]["bytes_total"], 900);
  EXPECT_EQ(st["warm"][0]["pid"], ::getpid());
  EXPECT_EQ(plain, R"({"stats":1,"jobs":[{"name":"j"},{"name":"zz"}]})" "\n");
  // The writer sees it; another user does not.
  EXPECT_EQ(nlohmann::json::parse(tree_.Read("stats", me).value())["warm"].size(), 1u);
  EXPECT_FALSE(nlohmann::json::parse(tree_.Read("stats", kBobCall).value()).contains("warm"));
  EXPECT_EQ(nlohmann::json::parse(tree_.Read("warm", me).value()).size(), 1u);
  EXPECT_TRUE(nlohmann::json::parse(tree_.Read("warm", kBobCall).value()).empty());
}

TEST_F(ControlTreeTest, MkdirRegistersAndShowsTheJobFiles) {
  ASSERT_TRUE(tree_.Mkdir("jobs/train", kAliceCall).ok());
  EXPECT_EQ(tree_.Mkdir("jobs/train", kAliceCall).code(), Code::kExists);
  EXPECT_EQ(tree_.Mkdir("jobs/a b", kAliceCall).code(), Code::kInvalidArgument);
  EXPECT_EQ(tree_.Mkdir("elsewhere", kAliceCall).code(), Code::kReadOnly);
  EXPECT_EQ(tree_.List("jobs").value(), std::vector<std::string>{"train"});
  EXPECT_EQ(tree_.List("jobs/train").value(),
            (std::vector<std::string>{"config", "epoch", "order", "pids", "position", "samples",
                                      "status"}));
  VNode dir = tree_.Stat("jobs/train").value();
  EXPECT_TRUE(dir.is_dir);
  EXPECT_EQ(dir.uid, kAlice);
  EXPECT_EQ(dir.perm, 0700u);
  VNode config = tree_.Stat("jobs/train/config").value();
  EXPECT_TRUE(config.writable);
  EXPECT_EQ(config.perm, 0600u);
  EXPECT_FALSE(config.per_write);  // taken whole at close
  VNode position = tree_.Stat("jobs/train/position").value();
  EXPECT_TRUE(position.writable && position.per_write);  // each write(2) one report
  VNode status = tree_.Stat("jobs/train/status").value();
  EXPECT_FALSE(status.writable);
  EXPECT_EQ(status.perm, 0400u);
  // Any valid order/K exists before it is written; invalid names do not.
  EXPECT_TRUE(tree_.Stat("jobs/train/order/7").ok());
  EXPECT_EQ(tree_.Stat("jobs/train/order/07").status().code(), Code::kNotFound);
  EXPECT_EQ(tree_.Stat("jobs/train/order/x").status().code(), Code::kNotFound);
  EXPECT_EQ(tree_.Stat("jobs/other/config").status().code(), Code::kNotFound);
}

TEST_F(ControlTreeTest, WritesReachTheRegistryAndListDeclaredOrders) {
  Configure("j");
  ASSERT_TRUE(tree_.Write("jobs/j/order/0", "0 1 2 3", kAliceCall).ok());
  ASSERT_TRUE(tree_.Write("jobs/j/order/1", "3 2\n1 0\n", kAliceCall).ok());
  EXPECT_EQ(tree_.List("jobs/j/order").value(), (std::vector<std::string>{"0", "1"}));
  auto j = JobStatus("j");
  EXPECT_EQ(j["state"], "configured");
  EXPECT_EQ(j["samples"], 4);
  EXPECT_EQ(j["declared_epochs"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(j["last_error"], "");
  // The config reads back as TOML the parser accepts, equal to what was set.
  auto config = ParseJobConfig(tree_.Read("jobs/j/config").value());
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config.value().batch_size, 2u);
  EXPECT_EQ(config.value().epochs, 3u);
}

TEST_F(ControlTreeTest, BadContentFailsWithTheReasonInStatusAndChangesNothing) {
  Configure("j");
  ASSERT_TRUE(tree_.Write("jobs/j/order/0", "0 1 2 3", kAliceCall).ok());
  epochfs::Status bad = tree_.Write("jobs/j/order/1", "0 1 9", kAliceCall);
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  auto j = JobStatus("j");
  EXPECT_NE(j["last_error"].get<std::string>().find("order/1"), std::string::npos) << j;
  EXPECT_EQ(j["declared_epochs"], nlohmann::json::array({0}));
  EXPECT_EQ(tree_.Write("jobs/j/order/2", "1 1", kAliceCall).code(), Code::kInvalidArgument);
  EXPECT_EQ(tree_.Write("jobs/j/config", "batch_size = [", kAliceCall).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(tree_.Write("jobs/j/status", "{}", kAliceCall).code(), Code::kReadOnly);
  EXPECT_EQ(JobStatus("j")["declared_epochs"], nlohmann::json::array({0}));
}

TEST_F(ControlTreeTest, OtherUsersAreRefusedAtOpenAndTheOwnerIsTold) {
  Configure("j");
  EXPECT_TRUE(tree_.CheckWrite("jobs/j/order/0", kAliceCall).ok());
  EXPECT_TRUE(tree_.CheckWrite("jobs/j/order/0", Caller{0, 0, 0}).ok());
  EXPECT_EQ(tree_.CheckWrite("jobs/j/order/0", kBobCall).code(), Code::kNotPermitted);
  EXPECT_EQ(tree_.CheckWrite("jobs/j/status", kAliceCall).code(), Code::kReadOnly);
  std::string err = JobStatus("j")["last_error"];
  EXPECT_NE(err.find("order/0: uid 1001 may not write job 'j'"), std::string::npos) << err;
  EXPECT_EQ(tree_.Write("jobs/j/order/0", "0 1", kBobCall).code(), Code::kNotPermitted);
  EXPECT_EQ(tree_.Rmdir("jobs/j", kBobCall).code(), Code::kNotPermitted);
  EXPECT_TRUE(JobStatus("j")["declared_epochs"].empty());
}

// Another user's job is not there for a caller: not listed, NotFound at every
// path under it, its row missing from stats; the owner and root see it.
TEST_F(ControlTreeTest, AnotherUsersJobsAreInvisible) {
  Configure("j");
  EXPECT_EQ(tree_.List("jobs", kBobCall).value(), std::vector<std::string>{});
  EXPECT_EQ(tree_.List("jobs", kAliceCall).value(), std::vector<std::string>{"j"});
  EXPECT_EQ(tree_.List("jobs", Caller{0, 0, 0}).value(), std::vector<std::string>{"j"});
  for (const char* path : {"jobs/j", "jobs/j/status", "jobs/j/config", "jobs/j/order",
                           "jobs/j/order/0"}) {
    EXPECT_EQ(tree_.Stat(path, kBobCall).status().code(), Code::kNotFound) << path;
    EXPECT_EQ(tree_.Read(path, kBobCall).status().code(), Code::kNotFound) << path;
    EXPECT_TRUE(tree_.Stat(path, kAliceCall).ok()) << path;
  }
  EXPECT_EQ(tree_.List("jobs/j", kBobCall).status().code(), Code::kNotFound);
  auto rows = [&](const Caller& who) {
    return nlohmann::json::parse(tree_.Read("stats", who).value())["jobs"].size();
  };
  EXPECT_EQ(rows(kBobCall), 0u);
  EXPECT_EQ(rows(kAliceCall), 1u);
  EXPECT_EQ(rows(Caller{0, 0, 0}), 2u) << "root: every row";
  // metrics: the same rows as stats.
  auto series = [&](const Caller& who) {
    const std::string m = tree_.Read("metrics", who).value();
    size_t n = 0;
    for (size_t at = 0; (at = m.find("\nepochfs_job_info{", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_EQ(series(kBobCall), 0u);
  EXPECT_EQ(series(kAliceCall), 1u);
  EXPECT_EQ(series(Caller{0, 0, 0}), 2u);
}

// Job names are per user: two users may each have a job "j" (the FUSE edge
// resolves a name to the key NAME@UID); neither sees nor touches the other's;
// root sees the keys and reaches both by them.
TEST(ControlTreeNames, EachUserHasTheirOwnNamespace) {
  testing::FakeProcTable procs;
  AcceptingSink sink;
  FakeView view;
  JobRegistry registry(sink, std::make_unique<testing::FakeProcReader>(&procs));
  ControlTree tree(registry, view, [] {
    return std::string(R"({"jobs":[{"name":"j@1000"},{"name":"j@1001"},{"name":"j"}]})");
  });
  const Caller root{0, 0, 0};
  auto in = [&](const std::string& path, const Caller& who) { return tree.Resolve(path, who); };
  EXPECT_EQ(in("jobs/j", kAliceCall), "jobs/j@1000");
  EXPECT_EQ(in("jobs/j", root), "jobs/j");
  EXPECT_EQ(in("jobs/j@1000/config", kAliceCall), "jobs/j@1000/config");  // below: as is
  EXPECT_EQ(in("stats", kAliceCall), "stats");

  ASSERT_TRUE(tree.Mkdir(in("jobs/j", kAliceCall), kAliceCall).ok());
  ASSERT_TRUE(tree.Mkdir(in("jobs/j", kBobCall), kBobCall).ok()) << "no EEXIST across users";
  ASSERT_TRUE(tree.Mkdir(in("jobs/j", root), root).ok());
  EXPECT_EQ(tree.Mkdir(in("jobs/j", kBobCall), kBobCall).code(), Code::kExists);
  // '@' is not in a name: nobody names or creates another's key.
  EXPECT_EQ(tree.Mkdir(in("jobs/k@1000", kBobCall), kBobCall).code(), Code::kInvalidArgument);
  EXPECT_EQ(tree.Mkdir(in("jobs/k@1000", root), root).code(), Code::kInvalidArgument);
  EXPECT_EQ(tree.Stat(in("jobs/j@1000", kBobCall), kBobCall).status().code(), Code::kNotFound);

  EXPECT_EQ(tree.List("jobs", kAliceCall).value(), std::vector<std::string>{"j"});
  EXPECT_EQ(tree.List("jobs", kBobCall).value(), std::vector<std::string>{"j"});
  EXPECT_EQ(tree.List("jobs", root).value(), (std::vector<std::string>{"j", "j@1000", "j@1001"}));

  ASSERT_TRUE(tree.Write(in("jobs/j", kAliceCall) + "/config", "batch_size = 2\nepochs = 3\n",
                         kAliceCall).ok());
  ASSERT_TRUE(tree.Write(in("jobs/j", kBobCall) + "/config", "batch_size = 5\nepochs = 1\n",
                         kBobCall).ok());
  auto status = [&](const std::string& key, const Caller& who) {
    return nlohmann::json::parse(tree.Read("jobs/" + key + "/status", who).value());
  };
  EXPECT_EQ(status("j@1000", kAliceCall)["name"], "j");
  EXPECT_EQ(status("j@1000", kAliceCall)["batch_size"], 2);
  EXPECT_EQ(status("j@1001", kBobCall)["name"], "j");
  EXPECT_EQ(status("j@1001", kBobCall)["batch_size"], 5);
  EXPECT_EQ(status("j@1001", root)["name"], "j@1001");
  EXPECT_EQ(tree.Read("jobs/j@1001/status", kAliceCall).status().code(), Code::kNotFound);
  auto rows = [&](const Caller& who) {
    return nlohmann::json::parse(tree.Read("stats", who).value())["jobs"];
  };
  EXPECT_EQ(rows(kAliceCall), nlohmann::json::parse(R"([{"name":"j"}])"));
  EXPECT_EQ(rows(kBobCall), nlohmann::json::parse(R"([{"name":"j"}])"));
  EXPECT_EQ(rows(root).size(), 3u);

  EXPECT_EQ(tree.Rmdir(in("jobs/j", kBobCall), kBobCall).code(), Code::kOk);
  EXPECT_EQ(tree.List("jobs", kBobCall).value(), std::vector<std::string>{});
  EXPECT_EQ(tree.List("jobs", kAliceCall).value(), std::vector<std::string>{"j"});
  EXPECT_TRUE(tree.Rmdir("jobs/j@1000", root).ok()) << "root reaches a user's job by its key";
  EXPECT_TRUE(tree.Stat("jobs/j", root).ok()) << "root's own j stays";
}

TEST_F(ControlTreeTest, StatusTakesThePolicyFiguresWhenThePolicyRunsTheJob) {
  Configure("j");
  auto before = JobStatus("j");
  EXPECT_EQ(before["hits"], 0);
  EXPECT_TRUE(before["epochs"].empty());
  view_.known = true;
  auto j = JobStatus("j");
  EXPECT_EQ(j["state"], "caching");
  EXPECT_EQ(j["cur_bytes"], 123);
  EXPECT_EQ(j["hits"], 7);
  ASSERT_EQ(j["epochs"].size(), 2u);
  EXPECT_EQ(j["epochs"][0]["misses"], 10);
  for (const char* key : {"lambda", "h", "e", "epoch_time_ns", "load_ns_per_sample",
                          "compute_ns_per_batch", "granted_unused_bytes", "next_bytes",
                          "tail_bytes", "rank", "pids", "accesses", "batch"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST_F(ControlTreeTest, StatusShowsTheCacheNeedAndTheOrphanState) {
  const Caller job_call{kAlice, kAlice, 700};
  procs_.Spawn(700, 1, 700);
  ASSERT_TRUE(tree_.Mkdir("jobs/j", job_call).ok());
  ASSERT_TRUE(tree_.Write("jobs/j/config", "batch_size = 2\nepochs = 3\n", kAliceCall).ok());
  view_.known = true;
  auto j = JobStatus("j");
  EXPECT_TRUE(j["cache_need_bytes"].is_null());  // warm-up not over
  EXPECT_EQ(j["cache_need"]["measured"], false);
  EXPECT_EQ(j["reattached"], 0);
  EXPECT_FALSE(j.contains("orphaned_for_s"));

  procs_.Exit(700);
  const uint64_t now = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now().time_since_epoch())
                                                 .count());
  EXPECT_TRUE(registry_.ReapOrphans(now, 3600ull * 1'000'000'000).empty());
  j = JobStatus("j");
  EXPECT_EQ(j["state"], "orphaned");
  EXPECT_EQ(j["orphaned"], true);
  ASSERT_TRUE(j.contains("orphaned_for_s"));
  EXPECT_GE(j["orphaned_for_s"].get<double>(), 0.0);
  EXPECT_LT(j["orphaned_for_s"].get<double>(), 60.0);

  procs_.Spawn(701, 1, 701);
  const Caller restarted{kAlice, kAlice, 701};
  EXPECT_EQ(tree_.Mkdir("jobs/j", restarted).code(), Code::kExists);  // the name is taken
  // Its first write re-attaches it.
  ASSERT_TRUE(tree_.Write("jobs/j/config", "batch_size = 2\nepochs = 3\n", restarted).ok());
  j = JobStatus("j");
  EXPECT_EQ(j["pids"], nlohmann::json::array({701}));
  EXPECT_EQ(j["state"], "caching");
  EXPECT_EQ(j["reattached"], 1);
  EXPECT_FALSE(j.contains("orphaned_for_s"));
  EXPECT_EQ(tree_.Mkdir("jobs/j", kBobCall).code(), Code::kExists);
}

TEST_F(ControlTreeTest, RmdirEndsTheJob) {
  Configure("j");
  ASSERT_TRUE(tree_.Rmdir("jobs/j", kAliceCall).ok());
  EXPECT_EQ(sink_.ended.size(), 1u);
  EXPECT_TRUE(tree_.List("jobs").value().empty());
  EXPECT_EQ(tree_.Stat("jobs/j").status().code(), Code::kNotFound);
  EXPECT_EQ(tree_.Rmdir("jobs/j", kAliceCall).code(), Code::kNotFound);
}


// The spill files: routed to the SpillControl only when the mount has one.
class RecordingSpill : public SpillControl {
 public:
  void SetSchedule(const std::string& job, uid_t owner, std::vector<std::string> files) override {
    owners[job] = owner;
    schedules[job] = std::move(files);
  }
  Status Progress(const std::string& job, uint64_t step) override {
    auto it = schedules.find(job);
    if (it == schedules.end()) return InvalidArgument("no spill_schedule declared");
    if (step >= it->second.size()) return InvalidArgument("step outside the schedule");
    progress[job] = step;
    return Status::Ok();
  }
  std::string ScheduleText(const std::string& job) const override {
    std::string out;
    auto it = schedules.find(job);
    if (it != schedules.end()) {
      for (const auto& f : it->second) out += f + "\n";
    }
    return out;
  }
  std::optional<SpillStatus> JobStatus(const std::string& job) const override {
    auto it = schedules.find(job);
    if (it == schedules.end()) return std::nullopt;
    SpillStatus s;
    s.steps = it->second.size();
    if (auto p = progress.find(job); p != progress.end()) s.progress = p->second;
    s.resident = {it->second.front()};
    return s;
  }
  void DropJob(const std::string& job) override {
    schedules.erase(job);
    dropped.push_back(job);
  }
  std::map<std::string, std::vector<std::string>> schedules;
  std::map<std::string, uid_t> owners;
  std::map<std::string, uint64_t> progress;
  std::vector<std::string> dropped;
};

class SpillTreeTest : public ControlTreeTest {
 protected:
  SpillTreeTest() : spill_tree_(registry_, view_, [] { return std::string("{}"); }, &spill_) {}
  RecordingSpill spill_;
  ControlTree spill_tree_;
};

TEST_F(SpillTreeTest, FilesExistOnlyWithASpillArea) {
  Configure("j");
  EXPECT_EQ(tree_.Stat("jobs/j/spill_schedule").status().code(), Code::kNotFound);
  EXPECT_EQ(tree_.Write("jobs/j/progress", "1", kAliceCall).code(), Code::kReadOnly);
  auto files = spill_tree_.List("jobs/j").value();
  EXPECT_EQ(files, (std::vector<std::string>{"config", "epoch", "order", "pids", "position",
                                             "progress", "samples", "spill_schedule", "status"}));
  VNode v = spill_tree_.Stat("jobs/j/spill_schedule").value();
  EXPECT_TRUE(v.writable);
  EXPECT_EQ(v.uid, kAlice);
}

TEST_F(SpillTreeTest, ScheduleAndProgressReachTheScheduler) {
  Configure("j");
  ASSERT_TRUE(spill_tree_.Write("jobs/j/spill_schedule", "l0\nl1\n./l2\nl1\n", kAliceCall).ok());
  EXPECT_EQ(spill_.schedules["j"], (std::vector<std::string>{"l0", "l1", "l2", "l1"}));
  EXPECT_EQ(spill_tree_.Read("jobs/j/spill_schedule").value(), "l0\nl1\nl2\nl1\n");
  ASSERT_TRUE(spill_tree_.Write("jobs/j/progress", " 2\n", kAliceCall).ok());
  EXPECT_EQ(spill_.progress["j"], 2u);
  EXPECT_EQ(spill_tree_.Read("jobs/j/progress").value(), "2\n");
  auto st = nlohmann::json::parse(spill_tree_.Read("jobs/j/status").value());
  EXPECT_EQ(st["spill"]["steps"], 4);
  EXPECT_EQ(st["spill"]["progress"], 2);
  EXPECT_EQ(st["spill"]["resident"], nlohmann::json::array({"l0"}));
  ASSERT_TRUE(spill_tree_.Rmdir("jobs/j", kAliceCall).ok());
  EXPECT_EQ(spill_.dropped, (std::vector<std::string>{"j"}));
}

TEST_F(SpillTreeTest, BadInputIsRefusedWithTheReasonInStatus) {
  Configure("j");
  struct Case {
    const char* file;
    const char* text;
    const char* want;
  } cases[] = {
      {"spill_schedule", "", "spill_schedule: the spill schedule is empty"},
      {"spill_schedule", "a\n\nb\n", "spill_schedule: line 2: empty line"},
      {"spill_schedule", "../etc/passwd\n", "spill_schedule: line 1:"},
      {"spill_schedule", "/abs\n", "spill_schedule: line 1:"},
      {"progress", "x", "progress: expected one non-negative integer"},
      {"progress", "-1", "progress: expected one non-negative integer"},
      {"progress", "", "progress: expected one integer, got nothing"},
      {"progress", "0", "progress: no spill_schedule declared"},
  };
  for (const Case& c : cases) {
    Status s = spill_tree_.Write(std::string("jobs/j/") + c.file, c.text, kAliceCall);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.file << " " << c.text;
    std::string err = JobStatus("j")["last_error"];
    EXPECT_NE(err.find(c.want), std::string::npos) << err;
  }
  EXPECT_TRUE(spill_.schedules.empty());
  ASSERT_TRUE(spill_tree_.Write("jobs/j/spill_schedule", "a\nb\n", kAliceCall).ok());
  EXPECT_EQ(spill_tree_.Write("jobs/j/progress", "2", kAliceCall).code(), Code::kInvalidArgument);
  EXPECT_FALSE(spill_.progress.count("j"));
  // Another user: refused, nothing changes.
  EXPECT_EQ(spill_tree_.Write("jobs/j/spill_schedule", "x\n", kBobCall).code(), Code::kNotPermitted);
  EXPECT_EQ(spill_.schedules["j"], (std::vector<std::string>{"a", "b"}));
}

}  // namespace control_tree_test
}  // namespace epochfs::control
