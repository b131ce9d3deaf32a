// DiskIo (disk_io.h): bounded calls on the disk tier's io_uring engine.
#include "epochfs/tier/disk_io.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <mutex>

namespace epochfs::tier {
namespace {

constexpr uint64_t kOpBytes = 64u << 20;  // the largest single read or write

}  // namespace

void DiskIo::KeepForever(std::shared_ptr<void> p) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::shared_ptr<void>>();
  std::lock_guard lock(mu);
  kept->push_back(std::move(p));
}

// The ops of one call and all they touch. The engine's completions hold it
// (self) until the last op is done, so that a call given up on can finish
// after its caller has returned.
struct DiskIo::Batch {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<spill::IoOp> ops;
  std::vector<int> res;
  size_t left = 0;
  std::shared_ptr<Batch> self;  // guarded by mu; reset by the last completion
  std::shared_ptr<void> keep;   // the buffers the ops touch
  std::string path;             // an open's path
  std::vector<iovec> iov;       // a vectored op's ranges

  static void Done(spill::IoOp* op, int res) {
    auto* b = static_cast<Batch*>(op->ctx);
    std::shared_ptr<Batch> last;  // released after the lock below
    std::lock_guard lock(b->mu);
    b->res[reinterpret_cast<uintptr_t>(op->ctx2)] = res;
    if (--b->left == 0) {
      last = std::move(b->self);
      b->cv.notify_all();
    }
  }
};

Result<std::unique_ptr<DiskIo>> DiskIo::Create(uint32_t queue_depth,
                                               std::chrono::milliseconds timeout) {
  auto engine = spill::UringEngine::Create(queue_depth, {});
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<DiskIo>(new DiskIo(std::move(engine).value(), timeout));
}

DiskIo::~DiskIo() {
  // The engine's destructor waits for every op: not for one that may never
  // return. Its thread and ring are left to the process's exit.
  if (hung()) KeepForever(std::shared_ptr<void>(engine_.release(), [](void*) {}));
}

void DiskIo::Start(const std::shared_ptr<Batch>& b) {
  std::vector<spill::IoOp*> ptrs;
  {
    std::lock_guard lock(b->mu);
    b->left = b->ops.size();
    b->res.assign(b->ops.size(), 0);
    b->self = b;
    for (size_t i = 0; i < b->ops.size(); ++i) {
      b->ops[i].ctx = b.get();
      b->ops[i].ctx2 = reinterpret_cast<void*>(static_cast<uintptr_t>(i));
      b->ops[i].done = &Batch::Done;
      ptrs.push_back(&b->ops[i]);
    }
  }
  engine_->Submit(ptrs);
}

bool DiskIo::Run(const std::shared_ptr<Batch>& b) {
  if (b->ops.empty()) return true;
  Start(b);
  std::unique_lock lock(b->mu);
  auto done = [&] { return b->left == 0; };
  if (timeout_.count() == 0) {
    b->cv.wait(lock, done);
  } else if (!b->cv.wait_for(lock, timeout_, done)) {
    hung_.store(true, std::memory_order_relaxed);
    lock.unlock();
    KeepForever(b);
    return false;
  }
  return true;
}

int DiskIo::Open(const std::string& path, int flags, uint32_t mode) {
  auto b = std::make_shared<Batch>();
  b->path = path;
  spill::IoOp op;
  op.open_path = b->path.c_str();
  op.open_flags = flags;
  op.open_mode = mode;
  b->ops.push_back(op);
  if (!Run(b)) return kNoAnswer;
  std::lock_guard lock(b->mu);
  return b->res[0];
}

int DiskIo::Transfer(bool write, int fd, const std::vector<Span>& spans,
                     std::shared_ptr<void> keep, uint64_t* moved) {
  auto b = std::make_shared<Batch>();
  b->keep = std::move(keep);
  // Spans that follow one another in the file, together at most kOpBytes: one
  // vectored op (one completion, one wake-up) instead of one op each.
  uint64_t total = 0;
  bool contiguous = !spans.empty() && spans.size() <= 64;
  for (size_t i = 0; contiguous && i < spans.size(); ++i) {
    contiguous = i == 0 || spans[i].offset == spans[i - 1].offset + spans[i - 1].len;
    total += spans[i].len;
  }
  if (contiguous && total <= kOpBytes) {
    for (const Span& s : spans) {
      if (s.len > 0) b->iov.push_back(iovec{s.buf, s.len});
    }
    spill::IoOp op;
    op.write = write;
    op.fd = fd;
    op.offset = spans[0].offset;
    op.iov = b->iov.data();
    op.iovcnt = static_cast<uint32_t>(b->iov.size());
    op.len = static_cast<uint32_t>(total);
    if (op.iovcnt > 0) b->ops.push_back(op);
  } else {
    for (const Span& s : spans) {
      for (uint64_t done = 0; done < s.len; done += kOpBytes) {
        spill::IoOp op;
        op.write = write;
        op.fd = fd;
        op.offset = s.offset + done;
        op.buf = s.buf + done;
        op.len = static_cast<uint32_t>(std::min<uint64_t>(kOpBytes, s.len - done));
        b->ops.push_back(op);
      }
    }
  }
  if (!Run(b)) return kNoAnswer;
  std::lock_guard lock(b->mu);
  for (size_t i = 0; i < b->ops.size(); ++i) {
    if (b->res[i] < 0) return b->res[i];
  }
  if (moved != nullptr) {
    *moved = 0;
    for (int r : b->res) *moved += static_cast<uint64_t>(r);
    return 0;
  }
  for (size_t i = 0; i < b->ops.size(); ++i) {
    if (static_cast<uint32_t>(b->res[i]) != b->ops[i].len) return kShort;
  }
  return 0;
}

void DiskIo::Close(int fd) {
  auto b = std::make_shared<Batch>();
  spill::IoOp op;
  op.close = true;
  op.fd = fd;
  b->ops.push_back(op);
  Start(b);
}

DiskIo::FileRead DiskIo::ReadFile(const std::string& path, int flags,
                                  const std::vector<Span>& spans, std::shared_ptr<void> keep,
                                  uint64_t* moved) {
  FileRead out;
  const int fd = Open(path, flags, 0);
  if (fd < 0) {
    out.open_failed = true;
    out.result = fd;
    return out;
  }
  out.result = Transfer(false, fd, spans, std::move(keep), moved);
  if (out.result != kNoAnswer) Close(fd);
  return out;
}

}  // namespace epochfs::tier
