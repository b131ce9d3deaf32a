#include "epochfs/store/object.h"

#include "epochfs/common/hash.h"

namespace epochfs::store {

cache::ObjectId ObjectIdOf(std::string_view rel) { return Checksum(rel.data(), rel.size()); }

Version VersionOf(const struct stat& st) {
  return {static_cast<uint64_t>(st.st_size), st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec,
          static_cast<uint64_t>(st.st_ino)};
}

}  // namespace epochfs::store
