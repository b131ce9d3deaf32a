// ControlPlane: the contents of the virtual `.epochfs/` tree.
//
// The FUSE adapter (src/fs) maps these virtual paths to inodes and calls this
// interface; it never interprets control files itself. Paths are relative to
// `.epochfs/` with '/' separators ("" is `.epochfs/` itself, "stats",
// "jobs/NAME/order/3").
// Writes are whole-file: the adapter buffers what a process writes to one open
// file and hands it over on flush/close (Write), so a bad control file fails
// the close() with the Status returned here. A file whose VNode says
// `per_write` (a report, as `position`) is instead handed over at each
// write(2), which then fails with the Status: a reporter keeps it open and
// pays one request per report.
// Thread safety: implementations are thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "epochfs/common/access_rule.h"
#include "epochfs/common/status.h"

namespace epochfs::control {

struct VNode {
  bool is_dir = false;
  bool writable = false;  // a file that accepts Write (by its owner or root)
  uid_t uid = 0;          // owner
  gid_t gid = 0;
  mode_t perm = 0;        // permission bits; 0: 0755 for dirs, 0644/0444 for files
  bool per_write = false; // each write(2) is one whole Write (see above)
};

// Who is calling, as FUSE reports it (pid may be 0: outside our pid namespace).
struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  // The caller's supplementary groups: filled only where a job's owner's
  // credentials are taken (mkdir, a control file's flush); else empty.
  std::vector<gid_t> groups = {};
  Credentials creds() const { return {uid, gid, groups}; }
};

class ControlPlane {
 public:
  virtual ~ControlPlane() = default;

  // The path of the entry `who` names `path` (a name just looked up, created
  // or removed in a directory): job names are per user, so "jobs/NAME" of a
  // user other than root is the path of that user's job (common/user_key.h). Paths
  // below a resolved entry are already resolved. Every other member takes
  // resolved paths.
  virtual std::string Resolve(const std::string& path, const Caller& who) const {
    (void)who;
    return path;
  }

  // What `who` sees: another user's jobs are not there for them (NotFound,
  // not listed, not in stats); root (the default Caller) sees everything.
  // NotFound when `path` does not exist.
  virtual Result<VNode> Stat(const std::string& path, const Caller& who = {}) const = 0;
  // Names in directory `path`.
  virtual Result<std::vector<std::string>> List(const std::string& path,
                                                const Caller& who = {}) const = 0;
  // The current contents of file `path` (a snapshot, taken at open).
  virtual Result<std::string> Read(const std::string& path, const Caller& who = {}) const = 0;
  // May `who` open file `path` for writing? Called at open, so that a refused
  // writer fails there (NotPermitted → EPERM) rather than at close.
  virtual Status CheckWrite(const std::string& path, const Caller& who) {
    (void)path, (void)who;
    return ReadOnly("control file is read-only");
  }
  // Replaces file `path` with `content`. InvalidArgument (bad content, the
  // reason kept for status), PermissionDenied, NotFound, ReadOnly.
  virtual Status Write(const std::string& path, const std::string& content, const Caller& who) {
    (void)path, (void)content, (void)who;
    return ReadOnly("control file is read-only");
  }
  virtual Status Mkdir(const std::string& path, const Caller& who) {
    (void)path, (void)who;
    return ReadOnly("cannot create here");
  }
  virtual Status Rmdir(const std::string& path, const Caller& who) {
    (void)path, (void)who;
    return ReadOnly("cannot remove here");
  }
};

}  // namespace epochfs::control
