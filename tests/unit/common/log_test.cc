// Where log lines go: the rotating file (sizes, how many kept, mode 0600,
// the daemon's own file only) and the journal's fields.
#include "epochfs/common/log.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace epochfs::log_test {

namespace stdfs = std::filesystem;

class LogFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/epochfs-log-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override {
    log::SetJournalSendForTest(nullptr);
    EXPECT_TRUE(log::SetTargets({}).ok());  // back to stderr
    stdfs::remove_all(dir_);
  }
  std::string dir_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int Discard(const struct iovec*, int) { return 0; }

TEST_F(LogFile, RotatesAtMaxBytesAndKeepsFiles) {
  log::SetJournalSendForTest(&Discard);  // not 3000 lines on the test's stderr
  log::Targets t;
  t.main = log::Main::kJournal;
  t.file = dir_ + "/epochfs.log";
  t.max_bytes = 64 << 10;
  t.files = 2;
  ASSERT_TRUE(log::SetTargets(t).ok());
  const std::string pad(100, 'x');
  for (int i = 0; i < 3000; ++i) log::Warn("line " + std::to_string(i) + " " + pad);
  // About 400 KB written: the file and two rotated ones (spdlog's names:
  // the number before the extension), none larger than the bound, the
  // oldest lines gone.
  const std::string one = dir_ + "/epochfs.1.log", two = dir_ + "/epochfs.2.log";
  for (const std::string& f : {t.file, one, two}) {
    struct stat st {};
    ASSERT_EQ(::stat(f.c_str(), &st), 0) << f;
    EXPECT_LE(static_cast<uint64_t>(st.st_size), t.max_bytes) << f;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
  }
  EXPECT_FALSE(stdfs::exists(dir_ + "/epochfs.3.log"));
  const std::string last = ReadAll(t.file);
  EXPECT_NE(last.find("warning: line 2999 "), std::string::npos) << last.substr(0, 200);
  EXPECT_EQ(ReadAll(two).find("line 0 "), std::string::npos);
  EXPECT_EQ(log::Describe(t), "the journal (SYSLOG_IDENTIFIER=epochfs) and " + t.file +
                                  " (rotated at 65536 bytes, 2 kept)");
}

TEST_F(LogFile, OnlyTheDaemonsOwnRegularFile) {
  const std::string target = dir_ + "/target";
  std::ofstream(target) << "";
  ASSERT_EQ(::symlink(target.c_str(), (dir_ + "/link").c_str()), 0);
  log::Targets t;
  t.file = dir_ + "/link";
  Status s = log::SetTargets(t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("log.file " + t.file + ": "), std::string::npos) << s.message();
  t.file = dir_;  // a directory
  EXPECT_FALSE(log::SetTargets(t).ok());
  t.file = dir_ + "/missing-dir/epochfs.log";
  EXPECT_FALSE(log::SetTargets(t).ok());
  if (::geteuid() == 0) {
    const std::string other = dir_ + "/other";
    std::ofstream(other) << "";
    ASSERT_EQ(::chown(other.c_str(), 65534, 65534), 0);
    t.file = other;
    s = log::SetTargets(t);
    EXPECT_NE(s.message().find("owned by uid 65534"), std::string::npos) << s.message();
  }
}

std::vector<std::vector<std::string>> g_sent;

int FakeSend(const struct iovec* iov, int n) {
  std::vector<std::string> fields;
  for (int i = 0; i < n; ++i) {
    fields.emplace_back(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  }
  g_sent.push_back(fields);
  return 0;
}

TEST_F(LogFile, TheJournalGetsFieldsAndThePriority) {
  g_sent.clear();
  log::SetJournalSendForTest(&FakeSend);
  log::Targets t;
  t.main = log::Main::kJournal;
  t.fields = {{"EPOCHFS_MOUNTPOINT", "/mnt/a"}, {"EPOCHFS_LOWER", "/data"}};
  t.file = dir_ + "/also.log";
  ASSERT_TRUE(log::SetTargets(t).ok());
  log::Warn("cache need over the budget");
  ASSERT_EQ(g_sent.size(), 1u);
  EXPECT_EQ(g_sent[0], (std::vector<std::string>{"MESSAGE=cache need over the budget",
                                                 "PRIORITY=4", "SYSLOG_IDENTIFIER=epochfs",
                                                 "EPOCHFS_MOUNTPOINT=/mnt/a",
                                                 "EPOCHFS_LOWER=/data"}));
  EXPECT_NE(ReadAll(t.file).find("warning: cache need over the budget"), std::string::npos);
  EXPECT_EQ(log::Describe(t).rfind("the journal (SYSLOG_IDENTIFIER=epochfs) and ", 0), 0u);
}

}  // namespace epochfs::log_test
