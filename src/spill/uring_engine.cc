#include "epochfs/spill/uring_engine.h"

#include <fcntl.h>

#include <liburing.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstring>

#include "epochfs/common/log.h"

namespace epochfs::spill {
namespace {

constexpr uint64_t kWakeTag = 1;  // user_data of the eventfd read (ops are pointers)

}  // namespace

UringEngine::UringEngine(uint32_t queue_depth) : queue_depth_(queue_depth) {}

Result<std::unique_ptr<UringEngine>> UringEngine::Create(uint32_t queue_depth,
                                                         std::vector<iovec> fixed) {
  if (queue_depth == 0) return InvalidArgument("spill queue depth must be at least 1");
  std::unique_ptr<UringEngine> e(new UringEngine(queue_depth));
  int efd = ::eventfd(0, EFD_CLOEXEC);
  if (efd < 0) return ErrnoStatus(Code::kIoError, errno, "eventfd");
  e->event_fd_.reset(efd);
  e->thread_ = std::thread([raw = e.get(), f = std::move(fixed)]() mutable { raw->Run(std::move(f)); });
  std::unique_lock lock(e->mu_);
  e->setup_cv_.wait(lock, [&] { return e->setup_done_; });
  if (!e->setup_status_.ok()) {
    Status s = e->setup_status_;
    lock.unlock();
    e->thread_.join();
    e->thread_ = std::thread();
    return s;
  }
  return e;
}

UringEngine::~UringEngine() {
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    Wake();
    thread_.join();
  }
}

void UringEngine::Wake() {
  uint64_t one = 1;
  // A full counter (never in practice) still leaves the thread woken.
  [[maybe_unused]] ssize_t n = ::write(event_fd_.get(), &one, sizeof one);
}

void UringEngine::Submit(std::span<IoOp* const> ops) {
  if (ops.empty()) return;
  {
    std::lock_guard lock(mu_);
    for (IoOp* op : ops) {
      op->next = nullptr;
      if (tail_) tail_->next = op; else head_ = op;
      tail_ = op;
    }
  }
  Wake();
}

void UringEngine::Run(std::vector<iovec> fixed) {
  // The ring is created on this thread: it is the only submitter
  // (IORING_SETUP_SINGLE_ISSUER), and task work runs when it enters the kernel.
  ring_ = std::make_unique<io_uring>();
  const unsigned entries = queue_depth_ + 2;
  io_uring_params params{};
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN;
  int rc = io_uring_queue_init_params(entries, ring_.get(), &params);
  if (rc == -EINVAL) {  // older kernel: no such flags
    params = io_uring_params{};
    rc = io_uring_queue_init_params(entries, ring_.get(), &params);
  }
  {
    std::lock_guard lock(mu_);
    if (rc < 0) {
      setup_status_ = ErrnoStatus(Code::kUnsupported, -rc, "io_uring is not available");
    } else if (!fixed.empty()) {
      int r = io_uring_register_buffers(ring_.get(), fixed.data(), static_cast<unsigned>(fixed.size()));
      if (r == 0) {
        fixed_ = true;
      } else {
        log::Info(std::string("spill: io_uring fixed buffers not registered (") + std::strerror(-r) +
                  "); using plain buffers");
      }
    }
    setup_done_ = true;
  }
  setup_cv_.notify_all();
  if (rc < 0) return;

  uint64_t wake_value = 0;
  auto arm_wake = [&] {
    io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
    io_uring_prep_read(sqe, event_fd_.get(), &wake_value, sizeof wake_value, 0);
    io_uring_sqe_set_data64(sqe, kWakeTag);
  };
  arm_wake();
  uint32_t inflight = 0;
  bool wake_armed = true;
  for (;;) {
    IoOp* batch = nullptr;
    bool stop = false;
    {
      std::lock_guard lock(mu_);
      // Take as many queued ops as the queue depth allows, in order.
      IoOp** link = &batch;
      while (head_ && inflight < queue_depth_) {
        IoOp* op = head_;
        head_ = op->next;
        if (!head_) tail_ = nullptr;
        op->next = nullptr;
        *link = op;
        link = &op->next;
        ++inflight;
      }
      stop = stop_ && head_ == nullptr && inflight == 0;
    }
    if (stop) break;
    if (!wake_armed) {
      arm_wake();
      wake_armed = true;
    }
    for (IoOp* op = batch; op; op = op->next) {
      if (op->prepare) {
        // Start what is queued before spending CPU time on this op.
        if (io_uring_sq_ready(ring_.get()) > 0) io_uring_submit(ring_.get());
        op->prepare(op);
      }
      io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
      const bool use_fixed = fixed_ && op->buf_index >= 0;
      if (op->open_path != nullptr) {
        io_uring_prep_openat(sqe, AT_FDCWD, op->open_path, op->open_flags, op->open_mode);
      } else if (op->close) {
        io_uring_prep_close(sqe, op->fd);
      } else if (op->iovcnt > 0) {
        if (op->write) io_uring_prep_writev(sqe, op->fd, op->iov, op->iovcnt, op->offset);
        else io_uring_prep_readv(sqe, op->fd, op->iov, op->iovcnt, op->offset);
      } else if (op->write) {
        if (use_fixed) io_uring_prep_write_fixed(sqe, op->fd, op->buf, op->len, op->offset, op->buf_index);
        else io_uring_prep_write(sqe, op->fd, op->buf, op->len, op->offset);
      } else {
        if (use_fixed) io_uring_prep_read_fixed(sqe, op->fd, op->buf, op->len, op->offset, op->buf_index);
        else io_uring_prep_read(sqe, op->fd, op->buf, op->len, op->offset);
      }
      io_uring_sqe_set_data(sqe, op);
    }
    int r = io_uring_submit_and_wait(ring_.get(), 1);
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
      log::Error(std::string("spill: io_uring_submit_and_wait: ") + std::strerror(-r));
    }
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0, seen = 0;
    std::vector<std::pair<IoOp*, int>> retry;
    io_uring_for_each_cqe(ring_.get(), head, cqe) {
      ++seen;
      if (io_uring_cqe_get_data64(cqe) == kWakeTag) {
        wake_armed = false;
        continue;
      }
      IoOp* op = static_cast<IoOp*>(io_uring_cqe_get_data(cqe));
      --inflight;
      if (cqe->res == -EAGAIN || cqe->res == -EINTR) {
        retry.emplace_back(op, cqe->res);
        continue;
      }
      op->done(op, cqe->res);
    }
    io_uring_cq_advance(ring_.get(), seen);
    if (!retry.empty()) {
      std::lock_guard lock(mu_);
      for (auto it = retry.rbegin(); it != retry.rend(); ++it) {  // back to the front, in order
        it->first->next = head_;
        head_ = it->first;
        if (!tail_) tail_ = head_;
      }
    }
  }
  io_uring_queue_exit(ring_.get());
}

}  // namespace epochfs::spill
