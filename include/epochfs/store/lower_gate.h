// LowerGate: a bound on every LOWER operation.
//
// Slow storage hangs at times (an NFS server that stops answering, a stalled
// s3 mount): a read or a stat then blocks in the kernel, and without a bound
// the FUSE thread that made it, and the reader behind it, wait for ever (the
// reader does not even see Ctrl-C). The gate runs each operation on one of a
// set of worker threads and waits for it at most `timeout`:
//   - done in time: its result;
//   - not done: TimedOut (ETIMEDOUT at the FUSE edge). An operation that had
//     started keeps its worker until the kernel returns (its result is
//     dropped) and a new worker takes its place; one still queued is dropped;
//   - the caller's request was interrupted (the reader got a signal; see
//     CancelScope): Interrupted (EINTR), the same way.
// `workers` threads serve; at most `max_stuck` more may be stuck in
// operations given up on. Past that, no worker replaces a stuck one, and once
// every worker is stuck new operations time out in the queue: a hung LOWER
// costs a bounded number of threads and never the FUSE threads.
// Lanes. Prefetch (a PrefetchScope on the calling thread) has workers of its
// own, `prefetch_workers`, and a queue of its own: its operations never take
// the readers' workers nor queue before a reader's, so a reader's call never
// waits behind a prefetch, however many are in flight (with 0, prefetch
// shares the readers' workers and queue). A prefetch never runs inline as a
// reader's call does. With `prefetch_inline`, prefetch has no workers: each
// prefetch operation runs on its own (prefetch) thread, which has nothing
// else to do while it waits, saving the hand-off to a worker and back (two
// thread wake-ups a load). The watchdog gives it up after `timeout` as it
// does an inline call (counted, logged, LOWER down; the thread returns
// TimedOut once LOWER answers): with an AnswerScope on the prefetch thread
// it calls the scope's `answer` then (for those who wait on the load), and
// answered() tells the thread so, as for a reader's inline call.
// ReleasePrefetch lets its owner stop without waiting for a prefetch that
// LOWER never answers.
// Operations must own what they touch (a timed-out one may run on after its
// caller has returned): capture by value or by shared_ptr, never a caller's
// stack buffer.
// Workers start at Start(): the daemon forks after opening LOWER, and
// threads (and the state of their locks) do not survive a fork. Until then
// Run calls the operation on the caller's thread, unbounded.
//
// Inline calls. The hand-off to a worker costs two thread wake-ups, tens of
// microseconds on a VM: more than a stat on a fast LOWER (tmpfs, a warm NFS
// attribute cache), and most of a cold lookup's cost. A caller that can be
// answered by someone else (an AnswerScope on its thread: a FUSE request
// whose reply the gate's watchdog may send) runs the operation itself, and
// the watchdog keeps the bound: past `timeout`, or once the request is
// interrupted, the watchdog answers the request (TimedOut or Interrupted,
// through the scope's `answer`), and the caller, when the operation returns,
// learns that it must not answer (Run returns that status and
// AnswerScope::answered() is true). At most `max_inline` operations run
// inline at once (each holds a FUSE thread while it runs), and none while an
// inline operation given up on is still stuck: once LOWER hangs, calls go
// through the workers as above.
// Thread safety: thread-safe. REQUIRES at destruction: no Run in progress.
// The destructor waits for the idle workers and the watchdog to return, not
// for workers stuck in an operation given up on (they are detached, hold the
// state they use, and neither log nor touch anything else when LOWER finally
// answers).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "epochfs/common/status.h"

namespace epochfs::store {

struct LowerGateOptions {
  std::chrono::milliseconds timeout{60'000};  // lower.timeout; 0: no gate
  uint32_t workers = 8;                       // lower.workers
  uint32_t max_stuck = 64;                    // workers given up on, at most
  uint32_t max_inline = 0;                    // inline operations at once, at most
  uint32_t prefetch_workers = 0;              // cache.prefetch (see Lanes)
  bool prefetch_inline = false;               // prefetch runs on its threads (see Lanes)
};

struct LowerGateCounters {
  uint64_t calls = 0;
  uint64_t timeouts = 0;    // operations given up on after the timeout
  uint64_t interrupts = 0;  // operations given up on for an interrupted request
  uint64_t stuck = 0;       // workers inside an operation given up on, now
  uint64_t in_flight = 0;   // operations running (on a worker or inline), now
  uint64_t inline_calls = 0;  // of `calls`, those run inline
};

class LowerGate {
 public:
  explicit LowerGate(LowerGateOptions options);
  ~LowerGate();
  LowerGate(const LowerGate&) = delete;
  LowerGate& operator=(const LowerGate&) = delete;

  // Starts the workers and the watchdog (once; REQUIRES: any fork done).
  void Start();
  // `fn` is told of each inline operation the watchdog gives up on for its
  // timeout (TimedOut, and the operation's name), from the watchdog's
  // thread: its caller is held in the operation and cannot tell. REQUIRES:
  // called before Start; what `fn` uses outlives the gate.
  void OnTimeout(std::function<void(const Status&, const std::string&)> fn);

  // Runs `op` on a worker, or inline, as described above. `what` names the
  // operation in the log line of a timeout (the first of each burst).
  Status Run(std::function<void()> op, const std::string& what);

  LowerGateCounters counters() const;

  // With `prefetch_inline`: from now on no prefetch operation starts (Run
  // returns Interrupted), and the thread of each one running never returns
  // from Run: once LOWER answers it, it waits for ever (what its caller's
  // stack refers to may be gone by then; the process's exit ends it).
  // Returns how many were running: the threads that will not return. For
  // the owner of the prefetch threads as it stops (it joins the others).
  uint32_t ReleasePrefetch();

  struct Core;  // shared with the workers

 private:
  std::shared_ptr<Core> core_;
};

// CancelScope: while alive, operations the calling thread runs through a
// LowerGate are given up on once `interrupted()` returns true (polled every
// 50 ms while one is in flight). The FUSE edge makes one per request that may
// reach LOWER, asking libfuse whether the kernel sent INTERRUPT for it.
class CancelScope {
 public:
  explicit CancelScope(std::function<bool()> interrupted);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

  // The innermost scope's predicate on this thread, or null.
  static const std::function<bool()>* Current();

 private:
  std::function<bool()> interrupted_;
  const std::function<bool()>* prev_;
};

// AnswerScope: while alive, operations the calling thread runs through a
// LowerGate may run inline (see above). `answer` answers the caller's request
// with an error: the gate's watchdog calls it, from its own thread, at most
// once, while the caller is inside the operation. The FUSE edge makes one for
// metadata requests (lookup, getattr, opendir), with an error reply as
// `answer`. After a Run that returned not ok, the caller checks answered():
// true means the request has its answer and must not be answered again (nor
// anything done that the answer did not report, such as counting a lookup).
class AnswerScope {
 public:
  explicit AnswerScope(std::function<void(const Status&)> answer);
  ~AnswerScope();
  AnswerScope(const AnswerScope&) = delete;
  AnswerScope& operator=(const AnswerScope&) = delete;

  bool answered() const { return answered_; }

  // Internal: the innermost scope on this thread, or null.
  static AnswerScope* Current();
  const std::function<void(const Status&)>& answer() const { return answer_; }
  void set_answered() { answered_ = true; }

 private:
  std::function<void(const Status&)> answer_;
  bool answered_ = false;
  AnswerScope* prev_;
};

// PrefetchScope: while alive, operations the calling thread runs through a
// LowerGate go to the prefetch lane (see Lanes above). The daemon's prefetch
// threads hold one for their life.
class PrefetchScope {
 public:
  PrefetchScope();
  ~PrefetchScope();
  PrefetchScope(const PrefetchScope&) = delete;
  PrefetchScope& operator=(const PrefetchScope&) = delete;

 private:
  bool saved_;
};

// WorkerOnlyScope: while alive, operations the calling thread runs through a
// LowerGate never run inline, whatever AnswerScope is around: the caller has
// an answer of its own for a call given up on (the last known attributes,
// known_lower.h) and must neither be answered by the watchdog nor be held in
// a hung call. With a `bound` shorter than the gate's timeout, they are given
// up on after `bound` instead, as after the timeout (TimedOut, counted and
// logged as one): the caller's answer need not wait lower.timeout.
class WorkerOnlyScope {
 public:
  explicit WorkerOnlyScope(std::chrono::milliseconds bound = std::chrono::milliseconds(0));
  ~WorkerOnlyScope();
  WorkerOnlyScope(const WorkerOnlyScope&) = delete;
  WorkerOnlyScope& operator=(const WorkerOnlyScope&) = delete;

 private:
  AnswerScope* saved_;
  std::chrono::milliseconds saved_bound_;
};

}  // namespace epochfs::store
