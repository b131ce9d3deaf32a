// What the views of one FUSE session share: the session's context (FsContext:
// configuration, LOWER, the cache front, its role, the inode and handle
// tables, the kernel's timeouts for dataset names and attributes) and the
// small helpers every view uses at the FUSE edge (names, callers, the LOWER
// gate's scopes).
//
// The Filesystem (router.h) owns the tables and makes one
// FsContext; the views (control_view.h, data_view.h, kernel_handover.h,
// listing.h, spill_fs.h) hold it by reference for the session's life.
// Thread safety: the context is immutable once made; the tables it points at
// are thread-safe.
#pragma once

#include <fuse_lowlevel.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>

#include "epochfs/config/config.h"
#include "epochfs/control/control_plane.h"
#include "epochfs/fs/fs_types.h"
#include "epochfs/store/cache_front.h"
#include "epochfs/store/known_lower.h"
#include "epochfs/store/lower.h"
#include "errno_map.h"
#include "handle_table.h"
#include "inode_table.h"
#include "open_file.h"
#include "reply.h"

namespace epochfs::fs {

// How long the kernel may keep the names and attributes of dataset entries.
// How long a call that has an answer in hand (the last known attributes: of
// the root, or of a path KnownLower re-checks) waits for LOWER before that
// answer stands: min(lower.timeout, 2 s) (no timeout: 2 s).
inline std::chrono::milliseconds LastKnownGrace(const Config& cfg) {
  const double s = cfg.lower.timeout > 0 ? std::min(cfg.lower.timeout, 2.0) : 2.0;
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

struct Timeouts {
  // Consistency "open": every open of a dataset file looks its name up
  // (entry timeout 0 for files) and that lookup checks LOWER, and a changed
  // file gets a new inode (InodeTable, renumber_changed): an inode's size,
  // mtime and pages are of one version for good. So its attributes may be
  // kept (attr: the kernel checks an open's permissions against those the
  // lookup just gave, and fstat shows them), and so may directories' names:
  // a hot open costs LOWER that one stat, no GETATTR of the file, of the
  // root or of a directory on its path.
  bool open_mode = false;
  double entry = 0;      // files, and negative entries
  double attr = 0;
  double dir_entry = 0;  // directories

  // How long the kernel may keep the name of lower entry `st` before it
  // looks it up again (at the next open under consistency "open").
  double Entry(const struct stat& st) const { return S_ISDIR(st.st_mode) ? dir_entry : entry; }

  static Timeouts Of(const Config& cfg) {
    Timeouts t;
    t.open_mode = cfg.cache.consistency == Consistency::kOpen;
    // Shared mount: GETATTR answers from LOWER (under "immutable", once
    // what KnownLower holds is that old), and a timeout the kernel may hold
    // dataset attributes for is at most fuse.permission_timeout.
    const auto bounded = [&](double v) {
      return cfg.fuse.allow_other ? std::min(v, cfg.fuse.permission_timeout) : v;
    };
    t.entry = t.open_mode ? 0.0 : bounded(cfg.fuse.entry_timeout);
    t.attr = bounded(cfg.fuse.attr_timeout);
    t.dir_entry = bounded(cfg.fuse.entry_timeout);
    return t;
  }
};

// One session's shared state. REQUIRES: every reference outlives the views.
struct FsContext {
  const Config& cfg;
  const store::Lower& lower;
  // LOWER's names and attributes as known (store/known_lower.h): the dataset
  // views ask it, not `lower`, for lookups, stats and listings.
  const store::KnownLower& known;
  store::CacheFront& cache;
  const Role role;
  const Timeouts timeouts;
  InodeTable& inodes;
  HandleTable<OpenFile>& files;
  HandleTable<OpenDir>& dirs;
};

inline bool ValidName(const char* name) {
  size_t n = std::strlen(name);
  if (n == 0 || n > NAME_MAX) return false;
  if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) return false;
  return std::strchr(name, '/') == nullptr;
}

inline control::Caller CallerOf(fuse_req_t req) {
  const fuse_ctx* c = fuse_req_ctx(req);
  return {c->uid, c->gid, c->pid};
}

inline std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

// Lower attributes as the kernel sees them: our inode number, no write bits.
inline struct stat Exposed(fuse_ino_t ino, struct stat st) {
  st.st_ino = ino;
  return st;
}

// Answers a lookup of `v` (lower attributes as Exposed gives them).
inline void ReplyEntry(fuse_req_t req, const NodeView& v, double entry_timeout,
                       double attr_timeout) {
  fuse_entry_param e {};
  e.ino = v.ino;
  e.generation = v.generation;
  e.attr = v.kind == NodeKind::kLower ? Exposed(v.ino, v.st) : v.st;
  e.attr_timeout = attr_timeout;
  e.entry_timeout = entry_timeout;
  reply::Entry(req, &e);
}

// A LOWER call made for `req` stops waiting with EINTR once the kernel
// sends INTERRUPT for it (the reader got a signal it handles): libfuse
// marks the request, the gate polls the mark (store/lower_gate.h).
inline store::CancelScope Interruptible(fuse_req_t req) {
  return store::CancelScope([req] { return fuse_req_interrupted(req) != 0; });
}

// Metadata requests (lookup, getattr, opendir) make their LOWER calls on
// their own thread, and the gate's watchdog answers them if LOWER does not
// (store/lower_gate.h, "Inline calls"): a cold lookup then costs no hand-off
// between threads. After a failed LOWER call such a handler checks
// answered(): if true it returns without a reply and without taking a
// lookup. Made after Interruptible (the watchdog polls that predicate), and
// inside the callback guard, whose token the watchdog's answer claims.
inline store::AnswerScope Answerable(fuse_req_t req) {
  ReplyToken* token = ReplyToken::For(req);
  return store::AnswerScope(
      [token, req](const Status& s) { reply::ErrOn(token, req, ToErrno(s)); });
}

}  // namespace epochfs::fs
