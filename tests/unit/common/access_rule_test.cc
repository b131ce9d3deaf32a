// MayAccess: the kernel's owner → group → other rule, as the daemon applies
// it for a job's owner on LOWER.
#include <gtest/gtest.h>

#include "epochfs/common/access_rule.h"

namespace epochfs {
namespace access_rule_test_cases {

constexpr uid_t kAlice = 1001, kBob = 1002;
constexpr gid_t kStaff = 50, kAliceGroup = 1001, kBobGroup = 1002;

const Credentials kBobCreds{kBob, kBobGroup, {kStaff}};

TEST(AccessRule, TheOwnerClassDecidesForTheOwner) {
  const Credentials alice{kAlice, kAliceGroup, {}};
  EXPECT_TRUE(MayAccess(alice, kAlice, kAliceGroup, S_IFREG | 0400, kMayRead));
  EXPECT_FALSE(MayAccess(alice, kAlice, kAliceGroup, S_IFREG | 0200, kMayRead));
  // The owner's class alone decides: group and other bits do not add.
  EXPECT_FALSE(MayAccess(alice, kAlice, kAliceGroup, S_IFREG | 0077, kMayRead));
  EXPECT_TRUE(MayAccess(alice, kAlice, kAliceGroup, S_IFDIR | 0700, kMayExec | kMayRead));
  EXPECT_FALSE(MayAccess(alice, kAlice, kAliceGroup, S_IFDIR | 0600, kMayExec));
}

TEST(AccessRule, ThePrimaryGroupClass) {
  const Credentials carol{1003, kStaff, {}};
  EXPECT_TRUE(MayAccess(carol, kAlice, kStaff, S_IFREG | 0640, kMayRead));
  EXPECT_FALSE(MayAccess(carol, kAlice, kStaff, S_IFREG | 0604, kMayRead));  // group: none
  EXPECT_TRUE(MayAccess(carol, kAlice, kStaff, S_IFDIR | 0710, kMayExec));
}

TEST(AccessRule, ASupplementaryGroupCountsAsTheGroup) {
  EXPECT_TRUE(MayAccess(kBobCreds, kAlice, kStaff, S_IFDIR | 0750, kMayExec));
  EXPECT_TRUE(MayAccess(kBobCreds, kAlice, kStaff, S_IFREG | 0640, kMayRead));
  // In the group, the group class decides even when "other" would allow.
  EXPECT_FALSE(MayAccess(kBobCreds, kAlice, kStaff, S_IFREG | 0604, kMayRead));
  // Not in the file's group: the other class.
  EXPECT_FALSE(MayAccess(kBobCreds, kAlice, kAliceGroup, S_IFREG | 0640, kMayRead));
}

TEST(AccessRule, TheOtherClass) {
  EXPECT_TRUE(MayAccess(kBobCreds, kAlice, kAliceGroup, S_IFREG | 0604, kMayRead));
  EXPECT_FALSE(MayAccess(kBobCreds, kAlice, kAliceGroup, S_IFREG | 0640, kMayRead));
  EXPECT_TRUE(MayAccess(kBobCreds, kAlice, kAliceGroup, S_IFDIR | 0755, kMayExec | kMayRead));
  EXPECT_FALSE(MayAccess(kBobCreds, kAlice, kAliceGroup, S_IFDIR | 0700, kMayExec));
  // Every bit wanted must be granted.
  EXPECT_FALSE(MayAccess(kBobCreds, kAlice, kAliceGroup, S_IFDIR | 0754, kMayExec | kMayRead));
  EXPECT_TRUE(MayAccess(kBobCreds, kAlice, kAliceGroup, S_IFDIR | 0754, kMayRead));
}

TEST(AccessRule, ASecretDirectoryStopsTheWalk) {
  // The walk to secret/a.bin: x on the root, x on secret/, r on the file.
  struct Step {
    uid_t uid;
    gid_t gid;
    mode_t mode;
    unsigned want;
  };
  const Step walk[] = {{0, 0, S_IFDIR | 0755, kMayExec},
                       {kAlice, kAliceGroup, S_IFDIR | 0700, kMayExec},
                       {kAlice, kAliceGroup, S_IFREG | 0644, kMayRead}};
  auto reaches = [&](const Credentials& who) {
    for (const Step& s : walk) {
      if (!MayAccess(who, s.uid, s.gid, s.mode, s.want)) return false;
    }
    return true;
  };
  EXPECT_FALSE(reaches(kBobCreds));  // the file alone would be readable
  EXPECT_TRUE(reaches(Credentials{kAlice, kAliceGroup, {}}));
  EXPECT_TRUE(reaches(Credentials{}));  // root
}

TEST(AccessRule, RootReadsAndSearchesAnything) {
  const Credentials root{};
  EXPECT_TRUE(MayAccess(root, kAlice, kAliceGroup, S_IFREG | 0000, kMayRead | kMayWrite));
  EXPECT_TRUE(MayAccess(root, kAlice, kAliceGroup, S_IFDIR | 0000, kMayExec | kMayRead));
  // Executing a file needs an x bit in some class, even for root.
  EXPECT_FALSE(MayAccess(root, kAlice, kAliceGroup, S_IFREG | 0666, kMayExec));
  EXPECT_TRUE(MayAccess(root, kAlice, kAliceGroup, S_IFREG | 0001, kMayExec));
}

TEST(AccessRule, TheStatOverloadReadsOwnerGroupAndMode) {
  struct stat st {};
  st.st_uid = kAlice;
  st.st_gid = kStaff;
  st.st_mode = S_IFREG | 0640;
  EXPECT_TRUE(MayAccess(kBobCreds, st, kMayRead));
  st.st_gid = kAliceGroup;
  EXPECT_FALSE(MayAccess(kBobCreds, st, kMayRead));
}

}  // namespace access_rule_test_cases
}  // namespace epochfs
