#include "epochfs/store/lower_gate.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>
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

// An operation running on its caller's thread (AnswerScope), as the
// watchdog sees it.
struct InlineCall {
  Clock::time_point deadline;
  std::function<bool()> interrupted;        // may be empty
  std::function<void(const Status&)> answer;
  std::string what;
  bool given_up = false;  // the watchdog answered
  Status status;          // ... with this
};

// How often the watchdog looks at the inline operations in flight.
constexpr auto kWatchTick = std::chrono::milliseconds(50);

thread_local const std::function<bool()>* tls_cancel = nullptr;
thread_local AnswerScope* tls_answer = nullptr;
thread_local bool tls_prefetch = false;  // PrefetchScope
thread_local std::chrono::milliseconds tls_bound{0};  // WorkerOnlyScope's; 0: none

}  // namespace

struct LowerGate::Core {
  LowerGateOptions opt;
  std::mutex mu;
  // The lanes: 0 the readers' (`workers`), 1 prefetch's (`prefetch_workers`,
  // when not 0). Each lane's workers take only its queue.
  struct Lane {
    std::condition_variable work_cv;  // its workers wait for tasks
    std::deque<std::shared_ptr<Task>> queue;  // guarded by mu
  };
  Lane lanes[2];
  std::atomic<bool> started{false};  // Start() was called
  uint32_t stuck = 0;     // guarded by mu
  uint32_t running = 0;   // guarded by mu: operations on a worker now
  bool stop = false;      // guarded by mu
  LowerGateCounters c;    // guarded by mu
  Clock::time_point last_log{};  // guarded by mu
  uint64_t unlogged = 0;          // timeouts since the last log line
  std::function<void(const Status&, const std::string&)> on_timeout;  // set before Start
  // Inline operations (guarded by mu).
  std::vector<std::shared_ptr<InlineCall>> watched;  // running, not given up on
  uint32_t inline_now = 0;    // running inline, given up on or not
  uint32_t inline_stuck = 0;  // given up on, not returned yet
  bool dog_parked = false;    // the watchdog waits for a first call
  // Prefetch operations run on their callers' threads (prefetch_inline).
  uint32_t prefetch_now = 0;        // running now (also in inline_now)
  bool prefetch_released = false;   // ReleasePrefetch was called
  std::condition_variable park_cv;  // never notified: released threads wait on it
  std::condition_variable dog_cv;
  // The gate's threads (workers and watchdog) that have not returned
  // (guarded by mu). The destructor waits until those left are all stuck in
  // an operation given up on: none of the others runs on (and logs) while the
  // process tears down its statics.
  uint32_t live = 0;
  std::condition_variable exit_cv;

  // Called by each of the gate's threads as it returns. REQUIRES: mu held.
  void ExitLocked() {
    --live;
    exit_cv.notify_all();
  }

  // The status of an operation given up on after the timeout, and the log
  // line to write (after unlocking) if it is the first of a burst.
  // REQUIRES: mu held.
  Status TimedOutLocked(const std::string& what, std::chrono::milliseconds after,
                        std::string* log_line) {
    ++c.timeouts;
    char secs[32];  // "60", "2", "0.1"
    std::snprintf(secs, sizeof secs, "%g", std::chrono::duration<double>(after).count());
    if (Clock::now() - last_log >= std::chrono::seconds(10)) {
      *log_line = "lower: " + what + " did not finish within " + secs +
                  " s (is LOWER hung?); " + std::to_string(stuck + inline_stuck) + " calls stuck";
      if (unlogged != 0) *log_line += ", " + std::to_string(unlogged) + " more timeouts since the last line";
      last_log = Clock::now();
      unlogged = 0;
    } else {
      ++unlogged;
    }
    return Status(Code::kTimedOut, what + ": no answer from LOWER within " + secs + " s");
  }

  // The watchdog of inline operations: answers, for their callers, those past
  // the deadline or whose request was interrupted.
  static void Watch(std::shared_ptr<Core> core) {
    pthread_setname_np(pthread_self(), "lower-watchdog");
    std::unique_lock lk(core->mu);
    for (;;) {
      if (core->stop) return core->ExitLocked();
      if (core->watched.empty()) {
        core->dog_parked = true;
        core->dog_cv.wait(lk, [&] { return core->stop || !core->watched.empty(); });
        core->dog_parked = false;
        continue;
      }
      core->dog_cv.wait_for(lk, kWatchTick, [&] { return core->stop; });
      if (core->stop) return core->ExitLocked();
      std::string log_line;
      std::vector<std::pair<Status, std::string>> timed_out;
      const Clock::time_point now = Clock::now();
      for (size_t i = 0; i < core->watched.size();) {
        InlineCall& k = *core->watched[i];
        const bool interrupted = k.interrupted && k.interrupted();
        if (!interrupted && now < k.deadline) {
          ++i;
          continue;
        }
        k.given_up = true;
        ++core->inline_stuck;
        if (interrupted) {
          ++core->c.interrupts;
          k.status = Status(Code::kInterrupted, k.what + ": interrupted");
        } else {
          k.status = core->TimedOutLocked(k.what, core->opt.timeout, &log_line);
          if (core->on_timeout) timed_out.emplace_back(k.status, k.what);
        }
        k.answer(k.status);  // under mu: the caller cannot answer meanwhile
        core->watched[i] = std::move(core->watched.back());
        core->watched.pop_back();
      }
      if (!log_line.empty() || !timed_out.empty()) {
        lk.unlock();
        if (!log_line.empty()) log::Warn(log_line);
        for (const auto& [status, what] : timed_out) core->on_timeout(status, what);
        lk.lock();
      }
    }
  }

  // Runs `op` inline if the rules allow (header); nullopt if they do not.
  std::optional<Status> TryInline(std::function<void()>& op, const std::string& what,
                                  AnswerScope& scope, const std::function<bool()>* cancel) {
    auto call = std::make_shared<InlineCall>();
    bool wake = false;
    {
      std::lock_guard lk(mu);
      // (Prefetch's own run beside, on their own threads: not counted.)
      if (stop || inline_stuck != 0 || inline_now - prefetch_now >= opt.max_inline) {
        return std::nullopt;
      }
      ++inline_now;
      ++c.calls;
      ++c.inline_calls;
      call->deadline = Clock::now() + opt.timeout;
      if (cancel != nullptr) call->interrupted = *cancel;
      call->answer = scope.answer();
      call->what = what;
      watched.push_back(call);
      wake = dog_parked;
    }
    if (wake) dog_cv.notify_one();
    bool threw = false;
    try {
      op();
    } catch (...) {
      threw = true;
    }
    op = nullptr;
    std::lock_guard lk(mu);
    --inline_now;
    if (call->given_up) {
      --inline_stuck;
      scope.set_answered();
      return call->status;
    }
    watched.erase(std::find(watched.begin(), watched.end(), call));
    return threw ? Internal(what + ": the LOWER call threw") : Status::Ok();
  }

  // A prefetch operation on its caller's thread (prefetch_inline), watched
  // as an inline call is, with no request to answer. `core`: a reference of
  // its own, as the thread may outlive the gate (ReleasePrefetch).
  static Status RunPrefetch(std::shared_ptr<Core> core, std::function<void()>& op,
                            const std::string& what, AnswerScope* scope) {
    if (scope != nullptr && scope->answered()) {
      return Status(Code::kInterrupted, what + ": the load was answered");
    }
    auto call = std::make_shared<InlineCall>();
    bool wake = false;
    {
      std::lock_guard lk(core->mu);
      if (core->stop || core->prefetch_released) {
        return Status(Code::kInterrupted, what + ": prefetch stopped");
      }
      ++core->inline_now;
      ++core->prefetch_now;
      ++core->c.calls;
      call->deadline = Clock::now() + core->opt.timeout;
      if (scope != nullptr) {
        call->answer = scope->answer();
      } else {
        call->answer = [](const Status&) {};  // no one waits on it
      }
      call->what = what;
      core->watched.push_back(call);
      wake = core->dog_parked;
    }
    if (wake) core->dog_cv.notify_one();
    bool threw = false;
    try {
      op();
    } catch (...) {
      threw = true;
    }
    op = nullptr;
    std::unique_lock lk(core->mu);
    --core->inline_now;
    --core->prefetch_now;
    if (call->given_up) {
      --core->inline_stuck;
    } else {
      core->watched.erase(std::find(core->watched.begin(), core->watched.end(), call));
    }
    // Its caller let it go (ReleasePrefetch): never return to it.
    if (core->prefetch_released) {
      for (;;) core->park_cv.wait(lk);
    }
    if (call->given_up) {
      if (scope != nullptr) scope->set_answered();
      return call->status;
    }
    return threw ? Internal(what + ": the LOWER call threw") : Status::Ok();
  }

  static void Work(std::shared_ptr<Core> core, int lane) {
    // As top -H and /proc show them.
    pthread_setname_np(pthread_self(), lane == 0 ? "lower" : "lower-prefetch");
    Lane& mine = core->lanes[lane];
    std::unique_lock lk(core->mu);
    for (;;) {
      mine.work_cv.wait(lk, [&] { return core->stop || !mine.queue.empty(); });
      if (core->stop) return core->ExitLocked();
      std::shared_ptr<Task> t = std::move(mine.queue.front());
      mine.queue.pop_front();
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
      if (t->abandoned) {
        --core->stuck;
        if (t->replaced) return core->ExitLocked();  // the pool has its replacement
      } else {
        // Woken without the lock held, the caller does not wake only to
        // wait for it (two thread switches more for each operation).
        lk.unlock();
        t->cv.notify_all();
        lk.lock();
      }
    }
  }

};

void LowerGate::Start() {
  if (core_->opt.timeout.count() == 0 || core_->started.exchange(true)) return;
  std::lock_guard lk(core_->mu);
  for (uint32_t i = 0; i < std::max<uint32_t>(1, core_->opt.workers); ++i) {
    ++core_->live;
    std::thread(Core::Work, core_, 0).detach();
  }
  for (uint32_t i = 0; i < core_->opt.prefetch_workers; ++i) {
    ++core_->live;
    std::thread(Core::Work, core_, 1).detach();
  }
  if (core_->opt.max_inline != 0 || core_->opt.prefetch_inline) {
    ++core_->live;
    std::thread(Core::Watch, core_).detach();
  }
}

void LowerGate::OnTimeout(std::function<void(const Status&, const std::string&)> fn) {
  core_->on_timeout = std::move(fn);
}

LowerGate::LowerGate(LowerGateOptions options) : core_(std::make_shared<Core>()) {
  core_->opt = options;
}

LowerGate::~LowerGate() {
  std::unique_lock lk(core_->mu);
  core_->stop = true;
  for (Core::Lane& lane : core_->lanes) lane.work_cv.notify_all();
  core_->dog_cv.notify_all();
  // Idle workers and the watchdog return at once; a worker inside an
  // operation still wanted returns when it does (Run's callers are gone by
  // now, so none is). Workers stuck in an operation given up on stay
  // detached: LOWER may never answer them.
  core_->exit_cv.wait(lk, [&] { return core_->live <= core_->stuck; });
}

Status LowerGate::Run(std::function<void()> op, const std::string& what) {
  Core& c = *core_;
  if (c.opt.timeout.count() == 0 || !c.started.load(std::memory_order_acquire)) {
    op();
    return Status::Ok();
  }
  if (tls_prefetch && c.opt.prefetch_inline) return Core::RunPrefetch(core_, op, what, tls_answer);
  const std::function<bool()>* cancel = tls_cancel;
  const int lane = tls_prefetch && c.opt.prefetch_workers != 0 ? 1 : 0;
  Core::Lane& to = c.lanes[lane];
  if (AnswerScope* scope = tls_answer; scope != nullptr && !tls_prefetch) {
    if (scope->answered()) return Status(Code::kInterrupted, what + ": the request was answered");
    if (c.opt.max_inline != 0) {
      if (auto done = c.TryInline(op, what, *scope, cancel)) return *done;
    }
  }
  auto t = std::make_shared<Task>();
  t->op = std::move(op);
  const std::chrono::milliseconds bound =
      tls_bound.count() > 0 ? std::min(tls_bound, c.opt.timeout) : c.opt.timeout;
  const Clock::time_point deadline = Clock::now() + bound;
  std::string log_line;
  Status out = Status::Ok();
  {
    std::unique_lock lk(c.mu);
    to.queue.push_back(t);
    ++c.c.calls;
    // The worker is woken with the lock let go, so that it does not wake
    // only to wait for it.
    lk.unlock();
    to.work_cv.notify_one();
    lk.lock();
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
        to.queue.erase(std::find(to.queue.begin(), to.queue.end(), t));
      } else {
        ++c.stuck;
        if (c.stuck <= c.opt.max_stuck) {
          t->replaced = true;
          ++c.live;
          std::thread(Core::Work, core_, lane).detach();
        }
      }
      if (interrupted) {
        ++c.c.interrupts;
        out = Status(Code::kInterrupted, what + ": interrupted");
        break;
      }
      out = c.TimedOutLocked(what, bound, &log_line);
      break;
    }
  }
  if (!log_line.empty()) log::Warn(log_line);
  return out;
}

uint32_t LowerGate::ReleasePrefetch() {
  std::lock_guard lk(core_->mu);
  core_->prefetch_released = true;
  return core_->prefetch_now;
}

LowerGateCounters LowerGate::counters() const {
  std::lock_guard lk(core_->mu);
  LowerGateCounters out = core_->c;
  out.stuck = core_->stuck + core_->inline_stuck;
  out.in_flight = core_->running + core_->inline_now;
  return out;
}

CancelScope::CancelScope(std::function<bool()> interrupted)
    : interrupted_(std::move(interrupted)), prev_(tls_cancel) {
  tls_cancel = &interrupted_;
}

CancelScope::~CancelScope() { tls_cancel = prev_; }

const std::function<bool()>* CancelScope::Current() { return tls_cancel; }

AnswerScope::AnswerScope(std::function<void(const Status&)> answer)
    : answer_(std::move(answer)), prev_(tls_answer) {
  tls_answer = this;
}

AnswerScope::~AnswerScope() { tls_answer = prev_; }

AnswerScope* AnswerScope::Current() { return tls_answer; }

PrefetchScope::PrefetchScope() : saved_(tls_prefetch) { tls_prefetch = true; }

PrefetchScope::~PrefetchScope() { tls_prefetch = saved_; }

WorkerOnlyScope::WorkerOnlyScope(std::chrono::milliseconds bound)
    : saved_(tls_answer), saved_bound_(tls_bound) {
  tls_answer = nullptr;
  if (bound.count() > 0) tls_bound = bound;
}

WorkerOnlyScope::~WorkerOnlyScope() {
  tls_answer = saved_;
  tls_bound = saved_bound_;
}

}  // namespace epochfs::store
