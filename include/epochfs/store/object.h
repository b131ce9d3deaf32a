// Object: the immutable bytes of one whole dataset file, as held in RAM.
//
// Objects are shared, read-only, and reference-counted: a reader keeps its
// ObjectRef for the life of its open file, so eviction never frees bytes that
// a reply is still being built from.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "epochfs/cache/policy.h"

namespace epochfs::store {

struct Version {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const Version&) const = default;
};

struct Object {
  cache::ObjectId id = 0;
  Version version;
  uint64_t checksum = 0;  // XXH3-64 of data
  std::vector<char> data;
};

using ObjectRef = std::shared_ptr<const Object>;

// The id of the object behind a lower file: a hash of its (st_dev, st_ino),
// so hard links share one object and the id survives FUSE forgetting the inode.
cache::ObjectId ObjectIdOf(const struct stat& st);
// The version of a lower file: size and mtime.
Version VersionOf(const struct stat& st);

}  // namespace epochfs::store
