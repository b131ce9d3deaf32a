// The kernel's permission rule for a file's mode bits, and the credentials
// it is applied to.
//
// The daemon reads LOWER as root; where it acts on a user's behalf (a job's
// samples list: its directories are checked, its files prefetched), it must
// reach only what that user could reach themselves. MayAccess is the
// check the kernel makes from a file's owner, group and mode (its generic
// permission check without ACLs): the owner class if the user owns the file,
// else the group class if the file's group is the user's group or one of
// their supplementary groups, else the other class; exactly one class
// decides. Root may read and search anything, and execute a regular file
// that has an x bit in any class.
// Pure function, no state.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <vector>

namespace epochfs {

// Who a check is for: a user's ids as the kernel would check their access.
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;                // the primary (filesystem) group
  std::vector<gid_t> groups = {};  // the supplementary groups
};

// Access wanted, as the mode bits of the "other" class: any combination.
enum AccessBits : unsigned {
  kMayExec = 1,   // x: on a directory, search (look a name up in it)
  kMayWrite = 2,  // w
  kMayRead = 4,   // r
};

// Whether `who` has every access in `want` on a file of owner `uid`, group
// `gid` and mode `mode` (type and permission bits, as st_mode).
bool MayAccess(const Credentials& who, uid_t uid, gid_t gid, mode_t mode, unsigned want);

// The same for the attributes `st` (st_uid, st_gid, st_mode).
inline bool MayAccess(const Credentials& who, const struct stat& st, unsigned want) {
  return MayAccess(who, st.st_uid, st.st_gid, st.st_mode, want);
}

}  // namespace epochfs
