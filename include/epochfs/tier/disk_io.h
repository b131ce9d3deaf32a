// DiskIo: the disk tier's calls on its directory (open, read, write, close),
// each run on an io_uring engine (spill/uring_engine.h) and waited for at
// most `timeout` (cache.disk_timeout, as lower.timeout bounds LOWER's
// calls): a disk that stops answering (a dead SSD, a hung filesystem under
// the cache directory) holds the engine's kernel worker, never the caller.
//
// A call given up on (NoAnswer) stays in flight: the bytes it reads or writes
// are kept alive by its batch (`keep`), held for the process's life, its
// result is dropped (an fd it opens late is left open), and hung() is true
// from then on. The tier marks itself failed on the first NoAnswer and calls nothing
// more. At destruction, with a call still in flight, the engine (its thread
// and ring) is left running rather than waited for: the process is exiting.
//
// Results: >= 0 (an fd, or 0 for a whole transfer), -errno, kShort (a
// transfer that moved fewer bytes than asked: a file cut short), or kNoAnswer.
// Thread safety: every method is thread-safe; none holds a lock while it waits.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/spill/uring_engine.h"

namespace epochfs::tier {

class DiskIo {
 public:
  static constexpr int kNoAnswer = -1'000'000;
  static constexpr int kShort = -1'000'001;

  // One contiguous range of a transfer: `len` bytes at `buf`, at `offset`.
  struct Span {
    uint64_t offset = 0;
    uint8_t* buf = nullptr;
    uint64_t len = 0;
  };

  // timeout 0: wait for ever.
  static Result<std::unique_ptr<DiskIo>> Create(uint32_t queue_depth,
                                                std::chrono::milliseconds timeout);
  ~DiskIo();
  DiskIo(const DiskIo&) = delete;
  DiskIo& operator=(const DiskIo&) = delete;

  // open(path, flags, mode): the fd, -errno, or kNoAnswer.
  int Open(const std::string& path, int flags, uint32_t mode);
  // Reads (or writes) every span of fd. `keep` owns the spans' buffers (held
  // until the kernel returns, past a NoAnswer). With `moved`, a transfer cut
  // short (a read past the end of the file) is no error: it returns 0 and
  // sets *moved to the bytes moved.
  int Transfer(bool write, int fd, const std::vector<Span>& spans, std::shared_ptr<void> keep,
               uint64_t* moved = nullptr);
  // Closes fd, not waited for.
  void Close(int fd);

  // open(path, flags), a read of every span (one vectored op when they
  // follow one another, Transfer), and a close not waited for: one file read
  // whole, two waits.
  struct FileRead {
    bool open_failed = false;  // result is the open's -errno
    int result = 0;            // 0, -errno, kShort or kNoAnswer
  };
  // `moved` as for Transfer.
  FileRead ReadFile(const std::string& path, int flags, const std::vector<Span>& spans,
                    std::shared_ptr<void> keep, uint64_t* moved = nullptr);
  // A call was given up on.
  bool hung() const { return hung_.load(std::memory_order_relaxed); }
  std::chrono::milliseconds timeout() const { return timeout_; }

  struct Batch;  // the ops of one call, shared with the engine

 private:
  DiskIo(std::unique_ptr<spill::UringEngine> engine, std::chrono::milliseconds timeout)
      : engine_(std::move(engine)), timeout_(timeout) {}
  // Submits b's ops (the completions hold b until the last is done).
  void Start(const std::shared_ptr<Batch>& b);
  // Submits b's ops and waits for them (bounded); false: given up on.
  bool Run(const std::shared_ptr<Batch>& b);
  // What a call given up on holds (its buffers, an engine or ring that may
  // never stop), kept for the process's life: few (the tier fails at the
  // first), and held from a static, so that a leak checker sees them owned.
  static void KeepForever(std::shared_ptr<void> p);

  std::unique_ptr<spill::UringEngine> engine_;
  const std::chrono::milliseconds timeout_;
  std::atomic<bool> hung_{false};
};

}  // namespace epochfs::tier
