// UringEngine: one io_uring driven by its own thread (the spill I/O thread).
//
// Callers hand it batches of IoOps (Submit: one lock and one eventfd write per
// batch); the I/O thread keeps up to queue_depth of them in flight, submits
// the SQEs of a round with one io_uring_submit_and_wait, reaps completions and
// calls each op's `done` on the I/O thread (and its `prepare`, if any, just
// before submitting it). Buffers may be registered once at
// Create (fixed buffers): an op whose buf_index >= 0 uses READ_FIXED /
// WRITE_FIXED. A new Submit wakes the thread through an eventfd read that is
// always armed in the ring, so an idle thread sleeps in the kernel.
//
// Ownership: the op (and its buffer) belongs to the caller and must stay alive
// until `done` ran. done() may call Submit (Submit only queues).
// Thread safety: Submit is thread-safe. The destructor waits for every
// submitted op to complete, then stops the thread.
// Errors: Create returns Unsupported when io_uring is not available (kernel
// too old, io_uring_disabled sysctl, seccomp), with the reason.
#pragma once

#include <sys/uio.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "epochfs/common/status.h"
#include "epochfs/common/unique_fd.h"

struct io_uring;

namespace epochfs::spill {

struct IoOp {
  bool write = false;
  // Instead of a read or a write: an openat(2) of open_path (relative to the
  // working directory; the result is the fd), or a close(2) of fd. So that a
  // caller never blocks in open or close (a filesystem that stops answering
  // holds the engine's worker, not the caller).
  const char* open_path = nullptr;
  int open_flags = 0;
  uint32_t open_mode = 0;
  bool close = false;
  int fd = -1;
  uint64_t offset = 0;
  uint8_t* buf = nullptr;
  uint32_t len = 0;
  int buf_index = -1;  // registered buffer index, or -1
  // If iovcnt > 0: a vectored read or write (readv/writev) of these ranges,
  // one after another from `offset`, instead of buf and len.
  const iovec* iov = nullptr;
  uint32_t iovcnt = 0;
  // If set, called on the I/O thread just before the op enters the ring; it
  // may set buf, len and buf_index (e.g. encode the data it writes), so that
  // this CPU work overlaps with the I/O of the ops already in flight.
  void (*prepare)(IoOp* op) = nullptr;
  // Called on the I/O thread with the CQE result (bytes, or -errno).
  void (*done)(IoOp* op, int res) = nullptr;
  void* ctx = nullptr;   // for `done`
  void* ctx2 = nullptr;  // for `done`
  IoOp* next = nullptr;  // engine's queue link
};

class UringEngine {
 public:
  // `fixed`: buffers to register (may be empty). If registration fails the
  // engine works without fixed buffers (fixed_buffers() is false) and logs why.
  static Result<std::unique_ptr<UringEngine>> Create(uint32_t queue_depth,
                                                     std::vector<iovec> fixed);
  ~UringEngine();
  UringEngine(const UringEngine&) = delete;
  UringEngine& operator=(const UringEngine&) = delete;

  void Submit(std::span<IoOp* const> ops);
  void Submit(IoOp* op) { Submit(std::span<IoOp* const>(&op, 1)); }
  bool fixed_buffers() const { return fixed_; }
  uint32_t queue_depth() const { return queue_depth_; }

 private:
  explicit UringEngine(uint32_t queue_depth);
  void Run(std::vector<iovec> fixed);
  void Wake();

  const uint32_t queue_depth_;
  std::unique_ptr<io_uring> ring_;  // used by the I/O thread only (after setup)
  UniqueFd event_fd_;
  bool fixed_ = false;
  std::thread thread_;

  std::mutex mu_;  // guards everything below
  std::condition_variable setup_cv_;
  bool setup_done_ = false;
  Status setup_status_;
  IoOp* head_ = nullptr;  // FIFO of ops not yet in the ring
  IoOp* tail_ = nullptr;
  bool stop_ = false;
};

}  // namespace epochfs::spill
