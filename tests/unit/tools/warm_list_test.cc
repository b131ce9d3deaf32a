// ParseWarmList: the lines of `epochfs warm --from LIST` as paths in the
// mount; bad lines named with their line number; nothing else dropped.
#include "epochfs/tools/warm_list.h"

#include <gtest/gtest.h>

#include "epochfs/tools/warm_report.h"

namespace epochfs::tools {
namespace warm_list_test {

std::vector<std::string> Paths(const WarmList& l) {
  std::vector<std::string> out;
  for (const WarmEntry& e : l.entries) out.push_back(e.path);
  return out;
}

TEST(WarmList, LinesAreRelativeToTheMountRoot) {
  WarmList l = ParseWarmList("a/b.jpg\n\ndir\n./c/../d e \n/mnt/data/abs\n/mnt/data\nlast",
                             "list.txt", "/mnt/data");
  EXPECT_TRUE(l.bad.empty());
  EXPECT_EQ(Paths(l), (std::vector<std::string>{"/mnt/data/a/b.jpg", "/mnt/data/dir",
                                                "/mnt/data/d e ", "/mnt/data/abs", "/mnt/data",
                                                "/mnt/data/last"}));
  ASSERT_EQ(l.entries.size(), 6u);
  EXPECT_EQ(l.entries[0].origin, "list.txt:1");
  EXPECT_EQ(l.entries[1].origin, "list.txt:3");  // the empty line 2 is skipped
  EXPECT_EQ(l.entries[5].origin, "list.txt:7");  // no newline at the end: still read
}

TEST(WarmList, BadLinesAreNamedAndTheOthersKept) {
  const std::string text = std::string("ok1\n../etc/passwd\n/etc/passwd\n/mnt/database\n") +
                           "x/../../y\nnul" + std::string(1, '\0') + "x\nok2\r\nok3\n";
  WarmList l = ParseWarmList(text, "L", "/mnt/data");
  EXPECT_EQ(Paths(l), (std::vector<std::string>{"/mnt/data/ok1", "/mnt/data/ok2\r",
                                                "/mnt/data/ok3"}));
  ASSERT_EQ(l.bad.size(), 5u);
  EXPECT_EQ(l.bad[0], "L:2: '../etc/passwd': leads out of the mount /mnt/data");
  EXPECT_EQ(l.bad[1], "L:3: '/etc/passwd': an absolute path outside the mount /mnt/data "
                      "(lines are relative to it)");
  EXPECT_EQ(l.bad[2].substr(0, 19), "L:4: '/mnt/database");  // a prefix is not inside
  EXPECT_EQ(l.bad[3], "L:5: 'x/../../y': leads out of the mount /mnt/data");
  EXPECT_EQ(l.bad[4], "L:6: 'nul\\x00x': a NUL byte in the path");
  EXPECT_EQ(QuotedName("ok2\r"), "'ok2\\x0d'");  // how a stray CR shows in a message
}

TEST(WarmList, RootMount) {
  WarmList l = ParseWarmList("a\n/b\n..\n", "L", "/");
  EXPECT_EQ(Paths(l), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(l.bad.size(), 1u);
}

TEST(WarmReport, TheLineTheDaemonParses) {
  WarmCounts c;
  c.files_total = 30;
  c.bytes_total = 1000;
  c.files_done = 12;
  c.bytes_done = 1200;  // a file grew while read: capped at the total
  c.errors = 2;
  EXPECT_EQ(WarmReportLine(c, "reading"), "12 30 1000 1000 2 reading\n");
}

}  // namespace warm_list_test
}  // namespace epochfs::tools
