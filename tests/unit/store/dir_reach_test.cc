// ReachDirs: a samples list's directories as a user other than root reaches
// them on LOWER; a directory behind one they may not search is answered as
// a missing one.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "epochfs/store/dir_reach.h"

namespace epochfs::store {
namespace dir_reach_test_cases {

namespace stdfs = std::filesystem;

// LOWER for the tests, owned by whoever runs them:
//   pub/ 0755 (a.bin), secret/ 0700 (f.bin, sub/ 0755 (g.bin)), grp/ 0750
class ReachTree {
 public:
  ReachTree() {
    char tmpl[] = "/tmp/epochfs-reach-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    ::chmod(root_.c_str(), 0755);
    Dir("pub", 0755);
    File("pub/a.bin");
    Dir("secret", 0755);
    File("secret/f.bin");
    Dir("secret/sub", 0755);
    File("secret/sub/g.bin");
    ::chmod((root_ + "/secret").c_str(), 0700);
    Dir("grp", 0750);
    group_ = ::getegid();
    auto l = Lower::Open(root_);
    EXPECT_TRUE(l.ok());
    lower_ = std::move(l).value();
  }
  ~ReachTree() {
    ::chmod((root_ + "/secret").c_str(), 0755);
    stdfs::remove_all(root_);
  }
  const Lower& lower() const { return *lower_; }
  gid_t group() const { return group_; }

 private:
  void Dir(const std::string& rel, mode_t mode) {
    stdfs::create_directory(root_ + "/" + rel);
    ::chmod((root_ + "/" + rel).c_str(), mode);
  }
  void File(const std::string& rel) { std::ofstream(root_ + "/" + rel) << "x"; }

  std::string root_;
  gid_t group_ = 0;
  std::unique_ptr<Lower> lower_;
};

// Someone who is neither the tree's owner nor in its group.
Credentials Stranger() { return {::geteuid() + 4242, 4242, {4243}}; }

TEST(DirReach, AStrangerReachesOnlyWhatTheModesLetThem) {
  ReachTree t;
  const std::vector<std::string> dirs = {"",           "pub",        "secret",   "secret/sub",
                                         "secret/nos", "nosuch/sub", "pub/a.bin", "grp"};
  auto r = ReachDirs(t.lower(), dirs, Stranger());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<DirReach>& v = r.value();
  ASSERT_EQ(v.size(), dirs.size());
  EXPECT_TRUE(v[0].st.ok() && v[0].searchable) << "the root";
  EXPECT_TRUE(v[1].st.ok() && v[1].searchable) << "pub";
  // secret/ itself is seen (its parent is searchable), but not searched.
  ASSERT_TRUE(v[2].st.ok());
  EXPECT_TRUE(S_ISDIR(v[2].st.value().st_mode));
  EXPECT_FALSE(v[2].searchable);
  // Behind it, a directory that exists and one that does not are answered
  // alike, and as a directory missing in plain view is.
  ASSERT_FALSE(v[3].st.ok());
  EXPECT_EQ(v[3].st.status().code(), Code::kNotFound);
  EXPECT_EQ(v[3].st.status().message(), "secret/sub: No such file or directory");
  EXPECT_EQ(v[4].st.status().message(), "secret/nos: No such file or directory");
  ASSERT_FALSE(v[5].st.ok());
  EXPECT_EQ(v[5].st.status().message(), "nosuch/sub: No such file or directory");
  EXPECT_EQ(v[3].st.status().code(), v[5].st.status().code());
  EXPECT_FALSE(v[3].searchable || v[4].searchable || v[5].searchable);
  // A file named as a directory: seen, not one.
  ASSERT_TRUE(v[6].st.ok());
  EXPECT_FALSE(S_ISDIR(v[6].st.value().st_mode));
  EXPECT_FALSE(v[6].searchable);
  EXPECT_FALSE(v[7].searchable) << "grp/ 0750, not in its group";
}

TEST(DirReach, GroupsOwnerAndRoot) {
  ReachTree t;
  const std::vector<std::string> dirs = {"grp", "secret", "secret/sub"};
  Credentials member = Stranger();
  member.groups.push_back(t.group());  // a supplementary group
  auto m = ReachDirs(t.lower(), dirs, member);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m.value()[0].searchable) << "grp/ by the group class";
  EXPECT_FALSE(m.value()[1].searchable) << "secret/ 0700: the group gets nothing";
  Credentials primary = Stranger();
  primary.gid = t.group();
  EXPECT_TRUE(ReachDirs(t.lower(), {"grp"}, primary).value()[0].searchable);
  for (const Credentials& who : {Credentials{::geteuid(), 4242, {}}, Credentials{}}) {
    auto r = ReachDirs(t.lower(), dirs, who);
    ASSERT_TRUE(r.ok());
    for (const DirReach& d : r.value()) EXPECT_TRUE(d.st.ok() && d.searchable) << who.uid;
  }
}

TEST(DirReach, DeepPathsThatDifferAtTheTopAreRefusedBeforeAnyStat) {
  // Each directory above another is a stat of its own, from the root: 40
  // chains 2000 deep would be 80,000 stats of paths ~2 KB long on average.
  std::vector<std::string> dirs;
  for (int i = 0; i < 40; ++i) {
    std::string d = "top" + std::to_string(i);
    for (int k = 0; k < 2000; ++k) d += "/a";
    dirs.push_back(d);
  }
  ReachTree t;
  auto r = ReachDirs(t.lower(), dirs, Stranger());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("bytes of paths to check"), std::string::npos);
  // Root stats the directories alone: each is missing.
  auto root = ReachDirs(t.lower(), dirs, Credentials{});
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root.value()[0].st.status().code(), Code::kNotFound);
}

}  // namespace dir_reach_test_cases
}  // namespace epochfs::store
