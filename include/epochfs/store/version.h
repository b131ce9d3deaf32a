// Version: which copy of a lower file some bytes are, and VersionRule, the
// one place that reads it from the file's attributes.
//
// A cached object is served only for the version it was read as, and under
// consistency "open" a name whose version changed is a new inode. So a
// version must change whenever the bytes may have, and must not change when
// nothing did (each false change throws the cached copy away and loads the
// file again: on a slow store, every open).
//
//   - size and mtime: a write moves the mtime; but a copy renamed over the
//     file may keep the old size and mtime (`cp -p`, `rsync -t`, `touch -r`).
//   - ctime: set by the kernel, never by a user, at every change of the
//     inode: a write, a chmod, setting the mtime, and on Linux file systems
//     (ext4, xfs, btrfs, tmpfs, NFS's server) the rename of the inode. The
//     copy renamed over the file above has a ctime of the rename's time,
//     whatever mtime it was given. A FUSE LOWER reports what its server
//     gives: a passthrough, the ctime below; sshfs, its mtime (SFTP has no
//     ctime: there a same-size same-mtime copy cannot be told apart at all).
//   - the inode number: another inode is another file, on a LOWER that keeps
//     its numbers (local and network file systems). A FUSE LOWER may not: a
//     libfuse high-level server without use_ino (sshfs, s3 and many others)
//     numbers a node anew each time the kernel forgets it and keeps one
//     number for a name whatever file it names. There the inode number is
//     left out (`stable_inodes` false) and ctime alone tells a renamed copy.
//
// A ctime false change (a chmod, a new hard link) is a reload, never a wrong
// byte. Two versions with equal size, mtime and ctime on a LOWER without
// stable inode numbers are taken for one: a copy renamed over a file within
// the ctime clock's resolution of the last change to the file it replaces.
// Thread safety: values; VersionRule is immutable.
#pragma once

#include <sys/stat.h>

#include <cstdint>

namespace epochfs::store {

struct Version {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t ino = 0;  // 0 on a LOWER without stable inode numbers
  bool operator==(const Version&) const = default;
};

class VersionRule {
 public:
  explicit VersionRule(bool stable_inodes = true) : stable_inodes_(stable_inodes) {}
  // The rule for the file system of `fd` (LOWER's root): inode numbers are
  // stable but on FUSE (its f_type), whose servers may renumber.
  static VersionRule ForFileSystemOf(int fd);

  Version Of(const struct stat& st) const;
  bool stable_inodes() const { return stable_inodes_; }

 private:
  bool stable_inodes_;
};

}  // namespace epochfs::store
