#include "epochfs/store/object.h"

#include "epochfs/common/hash.h"

namespace epochfs::store {

cache::ObjectId ObjectIdOf(const struct stat& st) {
  const uint64_t key[2] = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  return Checksum(key, sizeof(key));
}

Version VersionOf(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_size), st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec};
}

}  // namespace epochfs::store
