// DiskIo::ReadFile (disk_io.h): a whole read of one file as one chain of
// linked ops (open, read, close) on the calling thread's own ring, waited for
// in the kernel at most `timeout`. One submission and one wait per read: no
// hop through the engine's thread (three wake-ups each way per read there),
// and the read's copy from the page cache runs on the thread that waits.
#include <fcntl.h>

#include <liburing.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>

#include "epochfs/tier/disk_io.h"

namespace epochfs::tier {
namespace {

constexpr uint64_t kMaxChainBytes = 64u << 20;  // as one engine op at most
enum Tag : uint64_t { kOpen = 1, kRead = 2, kClose = 3 };

// The calling thread's ring: one chain at a time, its file in the ring's one
// fixed-file slot (a direct descriptor: the read names the slot the open
// fills, so that the three can be linked). Created at a thread's first
// chained read; gone with the thread.
struct ThreadRing {
  io_uring ring{};
  bool ok = false;
  ThreadRing() {
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int rc = io_uring_queue_init_params(4, &ring, &p);
    if (rc == -EINVAL) {  // older kernel: no such flags
      p = io_uring_params{};
      rc = io_uring_queue_init_params(4, &ring, &p);
    }
    if (rc < 0) return;
    if (io_uring_register_files_sparse(&ring, 1) < 0) {
      io_uring_queue_exit(&ring);
      return;
    }
    ok = true;
  }
  ~ThreadRing() {
    if (ok) io_uring_queue_exit(&ring);
  }
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;
};

thread_local std::unique_ptr<ThreadRing> t_ring;
std::atomic<bool> g_no_chains{false};  // a ring could not be made: never again

}  // namespace

DiskIo::FileRead DiskIo::ReadFile(const std::string& path, int flags,
                                  const std::vector<Span>& spans, std::shared_ptr<void> keep) {
  uint64_t total = 0;
  bool chainable = !spans.empty() && spans.size() <= 64 && !g_no_chains.load();
  for (size_t i = 0; chainable && i < spans.size(); ++i) {
    chainable = i == 0 || spans[i].offset == spans[i - 1].offset + spans[i - 1].len;
    total += spans[i].len;
  }
  chainable = chainable && total > 0 && total <= kMaxChainBytes;
  if (chainable && !t_ring) {
    t_ring = std::make_unique<ThreadRing>();
    if (!t_ring->ok) {
      t_ring.reset();
      g_no_chains.store(true);
    }
  }
  if (!chainable || !t_ring) return ReadFileByEngine(path, flags, spans, std::move(keep));

  // What the kernel reads and writes through, kept with `keep` if the chain
  // is given up on.
  struct Chain {
    std::string path;
    std::vector<iovec> iov;
    std::shared_ptr<void> keep;
  };
  auto chain = std::make_shared<Chain>();
  chain->path = path;
  chain->keep = std::move(keep);
  for (const Span& s : spans) chain->iov.push_back(iovec{s.buf, s.len});

  io_uring* ring = &t_ring->ring;
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  // A direct descriptor is never inherited: O_CLOEXEC is refused with one.
  io_uring_prep_openat_direct(sqe, AT_FDCWD, chain->path.c_str(), flags & ~O_CLOEXEC, 0, 0);
  io_uring_sqe_set_data64(sqe, kOpen);
  sqe->flags |= IOSQE_IO_LINK;  // a failed open cancels the read and the close
  sqe = io_uring_get_sqe(ring);
  io_uring_prep_readv(sqe, 0, chain->iov.data(), static_cast<unsigned>(chain->iov.size()),
                      spans[0].offset);
  io_uring_sqe_set_data64(sqe, kRead);
  sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_HARDLINK;  // the close runs whatever the read did
  sqe = io_uring_get_sqe(ring);
  io_uring_prep_close_direct(sqe, 0);
  io_uring_sqe_set_data64(sqe, kClose);

  FileRead out;
  int open_res = 0, read_res = 0;
  unsigned seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (seen < 3) {
    // Submits the chain at the first call (nothing more at the next ones)
    // and waits for a completion.
    io_uring_cqe* cqe = nullptr;
    int rc;
    if (timeout_.count() == 0) {
      rc = io_uring_submit_and_wait(ring, 1);
    } else {
      const auto left = deadline - std::chrono::steady_clock::now();
      const auto ns = std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::nanoseconds>(left).count());
      __kernel_timespec ts{ns / 1'000'000'000, ns % 1'000'000'000};
      rc = left.count() <= 0 ? -ETIME : io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, nullptr);
    }
    if (rc == -EINTR || rc == -EAGAIN) continue;
    if (rc < 0 && io_uring_cq_ready(ring) == 0) {
      // No answer within the bound (or a ring that refuses to wait, never
      // in practice): given up on; the ring stays with what it still does,
      // for good.
      hung_.store(true, std::memory_order_relaxed);
      std::shared_ptr<ThreadRing> left(t_ring.release(), [](ThreadRing*) {});
      KeepForever(left);
      KeepForever(chain);
      out.result = kNoAnswer;
      return out;
    }
    // io_uring_submit_and_wait may return the number submitted without a cqe.
    while (io_uring_peek_cqe(ring, &cqe) == 0 && cqe != nullptr) {
      switch (io_uring_cqe_get_data64(cqe)) {
        case kOpen: open_res = cqe->res; break;
        case kRead: read_res = cqe->res; break;
        default: break;
      }
      io_uring_cqe_seen(ring, cqe);
      ++seen;
    }
  }
  if (open_res < 0) {
    out.open_failed = true;
    out.result = open_res;
  } else if (read_res < 0) {
    out.result = read_res;
  } else {
    out.result = static_cast<uint64_t>(read_res) == total ? 0 : kShort;
  }
  return out;
}

DiskIo::FileRead DiskIo::ReadFileByEngine(const std::string& path, int flags,
                                          const std::vector<Span>& spans,
                                          std::shared_ptr<void> keep) {
  FileRead out;
  const int fd = Open(path, flags, 0);
  if (fd < 0) {
    out.open_failed = true;
    out.result = fd;
    return out;
  }
  out.result = Transfer(false, fd, spans, std::move(keep));
  if (out.result != kNoAnswer) Close(fd);
  return out;
}

}  // namespace epochfs::tier
