#include "epochfs/common/access_rule.h"

#include <algorithm>

namespace epochfs {

bool MayAccess(const Credentials& who, uid_t uid, gid_t gid, mode_t mode, unsigned want) {
  want &= 7u;
  if (who.uid == 0) {
    // CAP_DAC_OVERRIDE: read and write anything, search any directory;
    // execute a file only when some class may.
    const bool exec_of_file = (want & kMayExec) != 0 && !S_ISDIR(mode);
    return !exec_of_file || (mode & 0111) != 0;
  }
  unsigned granted;
  if (who.uid == uid) {
    granted = (mode >> 6) & 7u;
  } else if (who.gid == gid || std::find(who.groups.begin(), who.groups.end(), gid) !=
                                   who.groups.end()) {
    granted = (mode >> 3) & 7u;
  } else {
    granted = mode & 7u;
  }
  return (granted & want) == want;
}

}  // namespace epochfs
