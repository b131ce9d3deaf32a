#include "epochfs/tier/disk_format.h"

#include <algorithm>
#include <cstring>

#include "epochfs/common/hash.h"

namespace epochfs::tier {
namespace {
// 2: the version's ctime and inode number. A file of format 1 is not one
// (a scan removes it).
constexpr char kObjectMagic[8] = {'E', 'P', 'F', 'S', 'D', 'T', 'O', '2'};
}  // namespace

void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutU64(std::vector<uint8_t>* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

size_t HeaderBytes(const store::LowerKey& key) { return kHeaderFixed + key.rel.size() + 8; }

size_t SumsBytes(uint64_t data_len) { return 8 * ((data_len + kBlockBytes - 1) / kBlockBytes); }

std::vector<uint8_t> EncodeHeader(const store::LowerKey& key, uint64_t data_len) {
  std::vector<uint8_t> h(kObjectMagic, kObjectMagic + 8);
  h.reserve(HeaderBytes(key));
  PutU32(&h, static_cast<uint32_t>(HeaderBytes(key)));
  PutU32(&h, kBlockBytes);
  PutU64(&h, key.offset);
  PutU64(&h, key.length);
  PutU64(&h, key.version.size);
  PutU64(&h, static_cast<uint64_t>(key.version.mtime_ns));
  PutU64(&h, static_cast<uint64_t>(key.version.ctime_ns));
  PutU64(&h, key.version.ino);
  PutU64(&h, data_len);
  PutU32(&h, static_cast<uint32_t>(key.rel.size()));
  h.insert(h.end(), key.rel.begin(), key.rel.end());
  PutU64(&h, Checksum(h.data(), h.size()));
  return h;
}

Status DecodeHeader(const uint8_t* p, size_t n, store::LowerKey* key, uint64_t* data_len,
                    size_t* header_len) {
  if (n < kHeaderFixed + 8 || std::memcmp(p, kObjectMagic, 8) != 0) return Corruption("not a disk tier object");
  const size_t len = GetU32(p + 8);
  const uint32_t rel_len = GetU32(p + kHeaderFixed - 4);
  if (len != kHeaderFixed + rel_len + 8 || len > n || GetU32(p + 12) != kBlockBytes) {
    return Corruption("disk tier object header: bad lengths");
  }
  if (GetU64(p + len - 8) != Checksum(p, len - 8)) return Corruption("disk tier object header: checksum");
  key->offset = GetU64(p + 16);
  key->length = GetU64(p + 24);
  key->version.size = GetU64(p + 32);
  key->version.mtime_ns = static_cast<int64_t>(GetU64(p + 40));
  key->version.ctime_ns = static_cast<int64_t>(GetU64(p + 48));
  key->version.ino = GetU64(p + 56);
  *data_len = GetU64(p + 64);
  key->rel.assign(reinterpret_cast<const char*>(p + kHeaderFixed), rel_len);
  *header_len = len;
  return Status::Ok();
}

std::vector<uint8_t> EncodeSums(const char* data, size_t n) { return BlockSums(data, n, kBlockBytes); }

uint64_t BadBlocks(const char* data, size_t n, const uint8_t* sums) {
  uint64_t bad = 0;
  for (size_t off = 0, i = 0; off < n; off += kBlockBytes, ++i) {
    if (Checksum(data + off, std::min<size_t>(kBlockBytes, n - off)) != GetU64(sums + 8 * i)) ++bad;
  }
  return bad;
}

}  // namespace epochfs::tier
