#include "epochfs/store/lower_gate.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "epochfs/common/log.h"

namespace epochfs::store {
namespace {

using Clock = std::chrono::steady_clock;

struct Task {
  std::function<void()> op;
  bool started = false;
  bool done = false;
  bool abandoned = false;  // its caller gave up
  bool replaced = false;   // ... and a new worker took its worker's place
  bool threw = false;      // the operation ended with an exception
  std::condition_variable cv;  // the caller waits on it (with Core::mu)
};

thread_local const std::function<bool()>* tls_cancel = nullptr;

}  // namespace

struct LowerGate::Core {
  LowerGateOptions opt;
  std::mutex mu;
  std::condition_variable work_cv;  // workers wait for tasks
  std::deque<std::shared_ptr<Task>> queue;  // guarded by mu
  std::atomic<bool> started{false};  // Start() was called
  uint32_t stuck = 0;     // guarded by mu
  uint32_t running = 0;   // guarded by mu: operations on a worker now
  bool stop = false;      // guarded by mu
  LowerGateCounters c;    // guarded by mu
  Clock::time_point last_log{};  // guarded by mu
  uint64_t unlogged = 0;          // timeouts since the last log line

  static void Work(std::shared_ptr<Core> core) {
    std::unique_lock lk(core->mu);
    for (;;) {
      core->work_cv.wait(lk, [&] { return core->stop || !core->queue.empty(); });
      if (core->stop) return;
      std::shared_ptr<Task> t = std::move(core->queue.front());
      core->queue.pop_front();
      t->started = true;
      ++core->running;
      lk.unlock();
      // An exception here would end the daemon (this thread has no FUSE
      // guard): the caller gets Internal instead.
      bool threw = false;
      try {
        t->op();
      } catch (...) {
        threw = true;
      }
      t->op = nullptr;  // what it captured goes now, not with the caller
      lk.lock();
      --core->running;
      t->threw = threw;
      t->done = true;
      t->cv.notify_all();
      if (t->abandoned) {
        --core->stuck;
        if (t->replaced) return;  // the pool has this worker's replacement
      }
    }
  }

};

void LowerGate::Start() {
  if (core_->opt.timeout.count() == 0 || core_->started.exchange(true)) return;
  for (uint32_t i = 0; i < std::max<uint32_t>(1, core_->opt.workers); ++i) {
    std::thread(Core::Work, core_).detach();
  }
}

LowerGate::LowerGate(LowerGateOptions options) : core_(std::make_shared<Core>()) {
  core_->opt = options;
}

LowerGate::~LowerGate() {
  std::lock_guard lk(core_->mu);
  core_->stop = true;
  core_->work_cv.notify_all();
}

Status LowerGate::Run(std::function<void()> op, const std::string& what) {
  Core& c = *core_;
  if (c.opt.timeout.count() == 0 || !c.started.load(std::memory_order_acquire)) {
    op();
    return Status::Ok();
  }
  auto t = std::make_shared<Task>();
  t->op = std::move(op);
  const std::function<bool()>* cancel = tls_cancel;
  const Clock::time_point deadline = Clock::now() + c.opt.timeout;
  std::string log_line;
  Status out = Status::Ok();
  {
    std::unique_lock lk(c.mu);
    c.queue.push_back(t);
    ++c.c.calls;
    c.work_cv.notify_one();
    for (;;) {
      const Clock::time_point now = Clock::now();
      const Clock::time_point until =
          cancel != nullptr ? std::min(deadline, now + std::chrono::milliseconds(50)) : deadline;
      t->cv.wait_until(lk, until, [&] { return t->done; });
      if (t->done) return t->threw ? Internal(what + ": the LOWER call threw") : Status::Ok();
      const bool interrupted = cancel != nullptr && (*cancel)();
      if (!interrupted && Clock::now() < deadline) continue;
      // Give up on it.
      t->abandoned = true;
      if (!t->started) {
        c.queue.erase(std::find(c.queue.begin(), c.queue.end(), t));
      } else {
        ++c.stuck;
        if (c.stuck <= c.opt.max_stuck) {
          t->replaced = true;
          std::thread(Core::Work, core_).detach();
        }
      }
      if (interrupted) {
        ++c.c.interrupts;
        out = Status(Code::kInterrupted, what + ": interrupted");
        break;
      }
      ++c.c.timeouts;
      const double secs = std::chrono::duration<double>(c.opt.timeout).count();
      out = Status(Code::kTimedOut, what + ": no answer from LOWER within " +
                                        std::to_string(static_cast<int>(secs)) + " s");
      if (Clock::now() - c.last_log >= std::chrono::seconds(10)) {
        log_line = "lower: " + what + " did not finish within " + std::to_string(secs) +
                   " s (is LOWER hung?); " + std::to_string(c.stuck) + " workers stuck";
        if (c.unlogged != 0) log_line += ", " + std::to_string(c.unlogged) + " more timeouts since the last line";
        c.last_log = Clock::now();
        c.unlogged = 0;
      } else {
        ++c.unlogged;
      }
      break;
    }
  }
  if (!log_line.empty()) log::Warn(log_line);
  return out;
}

LowerGateCounters LowerGate::counters() const {
  std::lock_guard lk(core_->mu);
  LowerGateCounters out = core_->c;
  out.stuck = core_->stuck;
  out.in_flight = core_->running;
  return out;
}

CancelScope::CancelScope(std::function<bool()> interrupted)
    : interrupted_(std::move(interrupted)), prev_(tls_cancel) {
  tls_cancel = &interrupted_;
}

CancelScope::~CancelScope() { tls_cancel = prev_; }

const std::function<bool()>* CancelScope::Current() { return tls_cancel; }

}  // namespace epochfs::store
