// Header and index blocks of a backing file (header_io.h).
#include "header_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace epochfs::spill {
namespace {

struct AlignedBlock {
  AlignedBlock() : p(static_cast<uint8_t*>(std::aligned_alloc(kBlock, kBlock))) {}
  ~AlignedBlock() { std::free(p); }
  AlignedBlock(const AlignedBlock&) = delete;
  AlignedBlock& operator=(const AlignedBlock&) = delete;
  uint8_t* p;
};

const uint8_t kNoBits[kIndexBitmapBytes] = {};

Status WriteBlock(int fd, const uint8_t* p, uint64_t offset, const char* what) {
  ssize_t n = ::pwrite(fd, p, kBlock, static_cast<off_t>(offset));
  if (n < 0) return IoStatusFromErrno(errno, what);
  if (n != kBlock) return IoError(std::string(what) + ": short write");
  return Status::Ok();
}

}  // namespace

Status WriteHeaderBlock(int fd, const FileHeader& h, std::span<const uint8_t> bitmap0) {
  AlignedBlock b;
  if (!b.p) return Internal("out of memory");
  EncodeFileHeader(h, {b.p, kBlock});
  EncodeIndexRecord(0, bitmap0.empty() ? std::span<const uint8_t>(kNoBits) : bitmap0,
                    {b.p + kIndexInHeader, kIndexRecordBytes});
  return WriteBlock(fd, b.p, 0, "spill header write");
}

Status ReadHeaderBlock(int fd, FileHeader* h, bool* empty, std::span<uint8_t> bitmap0,
                       bool* index_ok) {
  AlignedBlock b;
  if (!b.p) return Internal("out of memory");
  *empty = false;
  if (index_ok) *index_ok = false;
  ssize_t n = ::pread(fd, b.p, kBlock, 0);
  if (n < 0) return IoStatusFromErrno(errno, "spill header read");
  if (n < static_cast<ssize_t>(kBlock)) {
    *empty = true;
    return Status::Ok();
  }
  Status s = DecodeFileHeader({b.p, kBlock}, h);
  if (!s.ok() || bitmap0.empty()) return s;
  const bool ok = DecodeIndexRecord({b.p + kIndexInHeader, kIndexRecordBytes}, 0, bitmap0).ok();
  if (index_ok) *index_ok = ok;
  return Status::Ok();
}

Status WriteIndexBlock(int fd, uint64_t group, uint32_t chunk_bytes,
                       std::span<const uint8_t> bitmap) {
  AlignedBlock b;
  if (!b.p) return Internal("out of memory");
  std::memset(b.p, 0, kBlock);
  EncodeIndexRecord(group, bitmap, {b.p, kIndexRecordBytes});
  return WriteBlock(fd, b.p, IndexOffset(group, chunk_bytes), "spill index write");
}

Status ReadIndexBlock(int fd, uint64_t group, uint32_t chunk_bytes, std::span<uint8_t> bitmap) {
  AlignedBlock b;
  if (!b.p) return Internal("out of memory");
  ssize_t n = ::pread(fd, b.p, kBlock, static_cast<off_t>(IndexOffset(group, chunk_bytes)));
  if (n < 0) return IoStatusFromErrno(errno, "spill index read");
  if (n < static_cast<ssize_t>(kIndexRecordBytes)) {
    return Corruption("index block of group " + std::to_string(group) +
                      " is past the end of the backing file");
  }
  return DecodeIndexRecord({b.p, kIndexRecordBytes}, group, bitmap);
}

}  // namespace epochfs::spill
