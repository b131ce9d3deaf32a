// KnownLower: what is remembered answers without a LOWER call, what is not
// (or may be re-checked) asks LOWER, and the bound holds. LOWER is a real
// directory; its calls are counted by Lower itself (lower_health.h).
#include "epochfs/store/known_lower.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace epochfs::store::known_lower_test {

class KnownLowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/epochfs-known-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    std::filesystem::create_directory(root_ + "/d");
    std::ofstream(root_ + "/d/a") << "aaaa";
    std::ofstream(root_ + "/d/b") << "bbbbbbbb";
    lower_ = std::move(Lower::Open(root_)).value();
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  uint64_t Calls(LowerCall kind) const { return lower_->health().counts().of(kind); }

  std::string root_;
  std::unique_ptr<Lower> lower_;
};

TEST_F(KnownLowerTest, RememberedAttributesCostLowerNothing) {
  KnownLower known(*lower_, KnownLowerOptions{.remember = true});
  auto first = known.Stat("d/a", LowerCall::kLookup);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(Calls(LowerCall::kLookup), 1u);
  for (int i = 0; i < 5; ++i) {
    auto again = known.Stat("d/a", LowerCall::kStat);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again.value().st_size, 4);
    EXPECT_EQ(again.value().st_ino, first.value().st_ino);
    EXPECT_EQ(again.value().st_mode, first.value().st_mode);
    EXPECT_EQ(again.value().st_uid, first.value().st_uid);
    EXPECT_EQ(again.value().st_mtim.tv_nsec, first.value().st_mtim.tv_nsec);
  }
  EXPECT_EQ(Calls(LowerCall::kLookup), 1u);
  EXPECT_EQ(Calls(LowerCall::kStat), 0u);
  EXPECT_EQ(known.counters().answered, 5u);
  EXPECT_EQ(known.counters().paths, 1u);
}

TEST_F(KnownLowerTest, WithoutRememberingEveryCallAsksLower) {
  KnownLower known(*lower_, KnownLowerOptions{.remember = false});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(known.Stat("d/a", LowerCall::kStat).ok());
  ASSERT_TRUE(known.List("d").ok());
  ASSERT_TRUE(known.List("d").ok());
  EXPECT_EQ(Calls(LowerCall::kStat), 3u);
  EXPECT_EQ(Calls(LowerCall::kList), 2u);
  EXPECT_EQ(known.counters().answered, 0u);
}

TEST_F(KnownLowerTest, AMissingPathIsNeverRememberedAsMissing) {
  KnownLower known(*lower_, KnownLowerOptions{.remember = true});
  EXPECT_EQ(known.Stat("d/new", LowerCall::kLookup).status().code(), Code::kNotFound);
  std::ofstream(root_ + "/d/new") << "n";
  auto found = known.Stat("d/new", LowerCall::kLookup);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found.value().st_size, 1);
}

TEST_F(KnownLowerTest, AttributesOlderThanMaxAgeAreCheckedAgain) {
  KnownLowerOptions o{.remember = true};
  o.max_age = std::chrono::milliseconds(0);  // every call re-checks
  KnownLower known(*lower_, o);
  ASSERT_TRUE(known.Stat("d/a", LowerCall::kStat).ok());
  ::chmod((root_ + "/d/a").c_str(), 0600);
  double age = -1;
  auto again = known.Stat("d/a", LowerCall::kStat, &age);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value().st_mode & 07777, 0600u);
  EXPECT_EQ(Calls(LowerCall::kStat), 2u);
  EXPECT_EQ(age, 0.0);  // fresh from LOWER
}

TEST_F(KnownLowerTest, ListingsAndTheirEntriesAreRemembered) {
  KnownLower known(*lower_, KnownLowerOptions{.remember = true});
  auto list = known.List("d");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list.value().size(), 2u);
  auto again = known.List("d");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value().size(), 2u);
  EXPECT_EQ(Calls(LowerCall::kList), 1u);
  auto st = known.StatEntries("d", {"a", "b"});
  ASSERT_TRUE(st.ok());
  const uint64_t stats = Calls(LowerCall::kStat);
  EXPECT_EQ(stats, 2u);
  auto st2 = known.StatEntries("d", {"a", "b"});
  ASSERT_TRUE(st2.ok());
  ASSERT_TRUE(st2.value()[1].has_value());
  EXPECT_EQ(st2.value()[1]->st_size, 8);
  EXPECT_EQ(Calls(LowerCall::kStat), stats);
  // The entries' attributes answer lookups too.
  ASSERT_TRUE(known.Stat("d/b", LowerCall::kLookup).ok());
  EXPECT_EQ(Calls(LowerCall::kLookup), 0u);
  EXPECT_EQ(known.counters().names, 2u);
}

TEST_F(KnownLowerTest, ADirectoryALoadHoldsOpenIsAnsweredWithoutACall) {
  std::filesystem::create_directories(root_ + "/p/q");
  std::ofstream(root_ + "/p/q/f") << "ff";
  auto held = std::move(Lower::Open(root_, LowerGateOptions{std::chrono::milliseconds(0)}, 4)).value();
  KnownLower known(*held, KnownLowerOptions{.remember = true});
  ASSERT_TRUE(held->OpenAndRead("p/q/f", 1 << 20).ok());  // holds p and p/q
  const uint64_t lookups = held->health().counts().of(LowerCall::kLookup);
  for (const char* dir : {"p", "p/q"}) {
    auto st = known.Stat(dir, LowerCall::kLookup);
    ASSERT_TRUE(st.ok()) << dir;
    struct stat want;
    ASSERT_EQ(::stat((root_ + "/" + dir).c_str(), &want), 0);
    EXPECT_EQ(st.value().st_ino, want.st_ino) << dir;
    EXPECT_TRUE(S_ISDIR(st.value().st_mode)) << dir;
  }
  EXPECT_EQ(held->health().counts().of(LowerCall::kLookup), lookups);
  EXPECT_EQ(known.counters().answered, 2u);
  EXPECT_EQ(known.counters().paths, 2u);  // and remembered from then
  // Without remembering (consistency "open"), the held directory's
  // attributes answer nothing: LOWER is asked.
  KnownLower open_mode(*held, KnownLowerOptions{.remember = false});
  ASSERT_TRUE(open_mode.Stat("p", LowerCall::kLookup).ok());
  EXPECT_EQ(held->health().counts().of(LowerCall::kLookup), lookups + 1);
}

TEST_F(KnownLowerTest, NothingMoreIsRememberedPastTheBound) {
  KnownLowerOptions o{.remember = true};
  o.max_entries = 1;
  KnownLower known(*lower_, o);
  ASSERT_TRUE(known.Stat("d/a", LowerCall::kStat).ok());
  ASSERT_TRUE(known.Stat("d/b", LowerCall::kStat).ok());
  ASSERT_TRUE(known.Stat("d/b", LowerCall::kStat).ok());
  EXPECT_EQ(known.counters().paths, 1u);
  EXPECT_EQ(known.counters().full, 2u);
  EXPECT_EQ(Calls(LowerCall::kStat), 3u);
  ASSERT_TRUE(known.Stat("d/a", LowerCall::kStat).ok());
  EXPECT_EQ(Calls(LowerCall::kStat), 3u);
}

TEST(LowerHealthTest, DownFromAnIoErrorUntilACallSucceeds) {
  LowerHealth h;
  EXPECT_FALSE(h.down());
  h.Saw(Status(Code::kNotFound, "x"), "stat x");  // an answer: up
  EXPECT_FALSE(h.down());
  h.Saw(Status(Code::kTimedOut, "t"), "stat t");
  EXPECT_TRUE(h.down());
  h.Saw(Status(Code::kInterrupted, "i"), "stat i");  // tells nothing
  EXPECT_TRUE(h.down());
  h.Saw(Status::Ok(), "stat y");
  EXPECT_FALSE(h.down());
  h.Saw(Status(Code::kIoError, "e"), "read");
  EXPECT_TRUE(h.down());
  h.Count(LowerCall::kOpen, 3);
  EXPECT_EQ(h.counts().of(LowerCall::kOpen), 3u);
}

}  // namespace epochfs::store::known_lower_test
