// Journal: the disk tier's index on disk, an append-only log of what the
// tier holds, so that a restart (unmount and mount, SIGKILL, reboot) comes
// back warm without reading every object file.
//
// Layout: "EPFSDTJ1", u32 format (2), u32 block bytes; then records, each
//   u32 body_len, body (u8 kind, payload), u64 XXH3 of the body
// kind 1 PUT: u64 file_no, u64 data_len, u64 offset, u64 length, u64 size,
//             i64 mtime_ns, i64 ctime_ns, u64 ino, path (the rest of the body)
// kind 2 DEL: u64 file_no
// Format 1 (before the version's ctime and inode number were in the key)
// had PUTs without ctime_ns and ino; Open still reads it, with those 0, and
// says so (`format`): such a copy can match no version, and the tier drops
// them all (disk_tier.h).
// A PUT is appended once its object file is written whole, a DEL before the
// file is removed. Replay applies the records in order and stops at the
// first that does not verify (a torn append: a kill or a power cut during
// it), cutting the log there; the objects it would have named are found by
// the tier's sweep of orphans. A log mostly of dead records is rewritten
// (Rewrite: a new file renamed over the old). On disk a PUT costs
// 77 + path bytes.
//
// Ownership: the Journal owns its file descriptor.
// Thread safety: none; the tier calls it under its lock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"
#include "epochfs/store/second_tier.h"
#include "epochfs/tier/call_watch.h"

namespace epochfs::tier {

struct JournalEntry {
  uint64_t file_no = 0;
  uint64_t data_len = 0;
  store::LowerKey key;
};

class Journal {
 public:
  static constexpr uint32_t kFormat = 2;
  // Opens the journal at `path` and replays it into *live (in file order);
  // *format (may be null): the format it was written in (kFormat or 1).
  // NotFound when there is no journal, Corruption when its header is not one
  // (the caller rebuilds from a scan and Rewrites). `watch` (may be null)
  // marks its disk calls (call_watch.h).
  static Result<std::unique_ptr<Journal>> Open(const std::string& path,
                                               std::vector<JournalEntry>* live,
                                               CallWatch* watch = nullptr,
                                               uint32_t* format = nullptr);
  // A fresh journal holding `live`, replacing whatever is at `path`.
  static Result<std::unique_ptr<Journal>> Create(const std::string& path,
                                                 const std::vector<JournalEntry>& live,
                                                 CallWatch* watch = nullptr);
  Status Put(const JournalEntry& e);
  Status Del(uint64_t file_no);
  uint64_t bytes() const { return bytes_; }
  // Records that no longer name a live object (DELs and the PUTs they undo).
  uint64_t dead() const { return dead_; }
  // Bytes the journal wrote since it was opened.
  uint64_t written() const { return written_; }

 private:
  Journal(UniqueFd fd, uint64_t bytes) : fd_(std::move(fd)), bytes_(bytes) {}
  Status Append(const std::vector<uint8_t>& body);
  UniqueFd fd_;
  uint64_t bytes_ = 0;
  uint64_t dead_ = 0;
  uint64_t written_ = 0;
};

}  // namespace epochfs::tier
