// LowerGate: a bound on each LOWER call, the stuck call's worker replaced,
// queued calls dropped, interrupts (CancelScope), counters. Real threads; the
// "hung LOWER" is an operation blocked on a latch the test opens.
#include "epochfs/store/lower_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace epochfs::store {
namespace {

using std::chrono::milliseconds;

// A latch the hung operations wait on; Open() lets them all return.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Wait() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return open; });
  }
  void Open() {
    std::lock_guard lk(mu);
    open = true;
    cv.notify_all();
  }
};

TEST(LowerGate, RunsAndReturns) {
  LowerGate g({milliseconds(5000), 2, 4});
  g.Start();
  int x = 0;
  ASSERT_TRUE(g.Run([&] { x = 7; }, "op").ok());
  EXPECT_EQ(x, 7);
  EXPECT_EQ(g.counters().calls, 1u);
  EXPECT_EQ(g.counters().timeouts, 0u);
}

TEST(LowerGate, AHungCallTimesOut) {
  auto latch = std::make_shared<Latch>();
  LowerGate g({milliseconds(100), 1, 4});
  g.Start();
  Status s = g.Run([latch] { latch->Wait(); }, "read a");
  EXPECT_EQ(s.code(), Code::kTimedOut) << s.ToString();
  EXPECT_NE(s.message().find("read a"), std::string::npos) << s.ToString();
  EXPECT_EQ(g.counters().timeouts, 1u);
  latch->Open();
  Status again;
  for (int i = 0; i < 100 && !(again = g.Run([] {}, "b")).ok(); ++i) {
  }
  EXPECT_TRUE(again.ok()) << again.ToString();
}

// A caller with an answer of its own (the last known attributes) gives up
// after its bound, not the gate's timeout: TimedOut, counted as a timeout;
// outside the scope the gate's timeout holds again.
TEST(LowerGate, AWorkerOnlyScopesBoundIsShorterThanTheTimeout) {
  auto latch = std::make_shared<Latch>();
  LowerGate g({milliseconds(600'000), 1, 4});
  g.Start();
  Status s;
  {
    WorkerOnlyScope bounded(milliseconds(100));
    s = g.Run([latch] { latch->Wait(); }, "stat a");
  }
  EXPECT_EQ(s.code(), Code::kTimedOut) << s.ToString();
  EXPECT_NE(s.message().find("within 0.1 s"), std::string::npos) << s.ToString();
  EXPECT_EQ(g.counters().timeouts, 1u);
  {
    WorkerOnlyScope unbounded;  // no bound: the gate's timeout
    WorkerOnlyScope longer(milliseconds(900'000));  // longer: the gate's timeout
    EXPECT_TRUE(g.Run([] {}, "b").ok());
  }
  latch->Open();
}

// Runs `op` through `g` and gives up on it once it has started (an interrupt
// that comes only then): the call is then stuck on its worker, whatever the
// machine's load.
Status RunUntilStarted(LowerGate& g, const std::shared_ptr<Latch>& latch) {
  auto started = std::make_shared<std::atomic<bool>>(false);
  CancelScope scope([started] { return started->load(); });
  return g.Run([latch, started] {
    started->store(true);
    latch->Wait();
  }, "hung");
}

TEST(LowerGate, AStuckWorkerIsReplaced) {
  auto latch = std::make_shared<Latch>();
  LowerGate g({milliseconds(60000), 1, 4});
  g.Start();
  EXPECT_EQ(RunUntilStarted(g, latch).code(), Code::kInterrupted);
  EXPECT_EQ(g.counters().stuck, 1u);
  std::atomic<int> done{0};
  ASSERT_TRUE(g.Run([&done] { done = 1; }, "stat b").ok());  // on the replacement
  EXPECT_EQ(done.load(), 1);
  latch->Open();
  // The stuck worker comes back and retires.
  for (int i = 0; i < 1000 && g.counters().stuck != 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(g.counters().stuck, 0u);
}

// The destructor waits for the idle workers and the watchdog (none of them
// may run on, and log, while the process tears down its statics) but not for
// a worker stuck in an operation given up on: LOWER may never answer it. The
// stuck worker, once its operation returns, touches only what it shares with
// the gate (TSan checks that under the sanitizer build).
TEST(LowerGate, DestroyedWithAStuckWorkerItReturnsAndTheWorkerRetiresLater) {
  auto latch = std::make_shared<Latch>();
  {
    LowerGate g({milliseconds(60000), 2, 4, 1});
    g.Start();
    EXPECT_EQ(RunUntilStarted(g, latch).code(), Code::kInterrupted);
    EXPECT_EQ(g.counters().stuck, 1u);
  }  // would hang here if it waited for the stuck worker
  latch->Open();
}

TEST(LowerGate, PastMaxStuckNoWorkerIsAddedAndQueuedCallsAreDropped) {
  auto latch = std::make_shared<Latch>();
  LowerGate g({milliseconds(60000), 1, 1});
  g.Start();
  EXPECT_EQ(RunUntilStarted(g, latch).code(), Code::kInterrupted);  // replaced
  EXPECT_EQ(RunUntilStarted(g, latch).code(), Code::kInterrupted);  // not: max_stuck is 1
  EXPECT_EQ(g.counters().stuck, 2u);
  // No worker is free: this call never starts, and is dropped.
  std::atomic<bool> ran{false};
  {
    CancelScope give_up([] { return true; });
    EXPECT_EQ(g.Run([&ran] { ran = true; }, "c").code(), Code::kInterrupted);
  }
  latch->Open();
  // The unreplaced worker serves again; "c" never ran.
  ASSERT_TRUE(g.Run([] {}, "d").ok());
  EXPECT_FALSE(ran.load());
}

TEST(LowerGate, AnInterruptedCallerStopsWaiting) {
  auto latch = std::make_shared<Latch>();
  LowerGate g({milliseconds(60000), 2, 4});
  g.Start();
  std::atomic<bool> interrupted{false};
  std::thread poke([&] {
    std::this_thread::sleep_for(milliseconds(100));
    interrupted = true;
  });
  Status s;
  {
    CancelScope scope([&] { return interrupted.load(); });
    s = g.Run([latch] { latch->Wait(); }, "read");
  }
  poke.join();
  EXPECT_EQ(s.code(), Code::kInterrupted) << s.ToString();
  EXPECT_EQ(g.counters().interrupts, 1u);
  EXPECT_EQ(CancelScope::Current(), nullptr);
  latch->Open();
}

TEST(LowerGate, ManyCallersAtOnce) {
  LowerGate g({milliseconds(60000), 4, 8});
  g.Start();
  std::atomic<int> sum{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 500; ++i) ASSERT_TRUE(g.Run([&sum] { sum += 1; }, "op").ok());
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(sum.load(), 4000);
  EXPECT_EQ(g.counters().calls, 4000u);
}

// Prefetch's lane: its calls run on workers of their own, as many at once
// as it has, and a reader's call (the one reader worker) runs while every
// prefetch worker is held in a hung call.
TEST(LowerGate, PrefetchCallsRunOnTheirOwnWorkersNeverBeforeAReadersCall) {
  auto latch = std::make_shared<Latch>();
  LowerGateOptions o{milliseconds(60000), 1, 4};
  o.prefetch_workers = 3;
  LowerGate g(o);
  g.Start();
  auto running = std::make_shared<std::atomic<int>>(0);
  std::vector<std::thread> prefetches;
  for (int i = 0; i < 5; ++i) {
    prefetches.emplace_back([&g, latch, running] {
      PrefetchScope lane;
      EXPECT_TRUE(g.Run([latch, running] {
        running->fetch_add(1);
        latch->Wait();
        running->fetch_sub(1);
      }, "prefetch").ok());
    });
  }
  while (running->load() < 3) std::this_thread::sleep_for(milliseconds(1));
  // The lane's 3 workers are held; the 2 more wait in its queue, not in the
  // readers'.
  int x = 0;
  ASSERT_TRUE(g.Run([&x] { x = 1; }, "read").ok());
  EXPECT_EQ(x, 1);
  EXPECT_EQ(running->load(), 3);
  EXPECT_EQ(g.counters().in_flight, 3u);
  latch->Open();
  for (std::thread& t : prefetches) t.join();
  EXPECT_EQ(g.counters().calls, 6u);
}

// Without workers of its own prefetch shares the readers'.
TEST(LowerGate, WithoutPrefetchWorkersPrefetchSharesTheReadersWorkers) {
  LowerGate g({milliseconds(60000), 1, 4});
  g.Start();
  PrefetchScope lane;
  int x = 0;
  ASSERT_TRUE(g.Run([&x] { x = 2; }, "prefetch").ok());
  EXPECT_EQ(x, 2);
}

// prefetch_inline: a prefetch call runs on its caller's thread (no hand-off),
// counted and in flight as any call, and a reader's call runs on its worker
// meanwhile.
TEST(LowerGate, InlinePrefetchRunsOnItsCallersThreadBesideAReader) {
  auto latch = std::make_shared<Latch>();
  LowerGateOptions o{milliseconds(60000), 1, 4};
  o.prefetch_inline = true;
  LowerGate g(o);
  g.Start();
  std::thread::id ran;
  {
    PrefetchScope lane;
    ASSERT_TRUE(g.Run([&ran] { ran = std::this_thread::get_id(); }, "prefetch").ok());
  }
  EXPECT_EQ(ran, std::this_thread::get_id());
  auto running = std::make_shared<std::atomic<int>>(0);
  std::thread hung([&g, latch, running] {
    PrefetchScope lane;
    EXPECT_TRUE(g.Run([latch, running] {
      running->fetch_add(1);
      latch->Wait();
    }, "prefetch").ok());
  });
  while (running->load() < 1) std::this_thread::sleep_for(milliseconds(1));
  std::thread::id read_on;
  ASSERT_TRUE(g.Run([&read_on] { read_on = std::this_thread::get_id(); }, "read").ok());
  EXPECT_NE(read_on, std::this_thread::get_id());  // the reader's worker
  EXPECT_EQ(g.counters().in_flight, 1u);
  EXPECT_EQ(g.counters().inline_calls, 0u) << "prefetch is not a reader's inline call";
  latch->Open();
  hung.join();
  EXPECT_EQ(g.counters().calls, 3u);
  EXPECT_EQ(g.counters().in_flight, 0u);
}

// An inline prefetch LOWER does not answer is given up on after the timeout
// (counted, stuck): the watchdog answers its AnswerScope (those waiting on
// the load) while it is still stuck, and the caller learns TimedOut, and
// that it was answered, once LOWER answers.
TEST(LowerGate, AHungInlinePrefetchIsGivenUpOnAfterTheTimeout) {
  auto latch = std::make_shared<Latch>();
  LowerGateOptions o{milliseconds(100), 1, 4};
  o.prefetch_inline = true;
  LowerGate g(o);
  g.Start();
  Status got = Status::Ok();
  bool was_answered = false;
  auto told = std::make_shared<std::atomic<int>>(0);
  std::thread hung([&, told] {
    PrefetchScope lane;
    AnswerScope waiters([told](const Status& s) {
      if (s.code() == Code::kTimedOut) told->fetch_add(1);
    });
    got = g.Run([latch] { latch->Wait(); }, "prefetch");
    was_answered = waiters.answered();
  });
  while (told->load() < 1) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(g.counters().timeouts, 1u);
  EXPECT_EQ(g.counters().stuck, 1u);
  latch->Open();
  hung.join();
  EXPECT_EQ(got.code(), Code::kTimedOut) << got.ToString();
  EXPECT_TRUE(was_answered);
  EXPECT_EQ(told->load(), 1);
  EXPECT_EQ(g.counters().stuck, 0u);
}

// ReleasePrefetch: the prefetch calls running are counted and their threads
// never return from Run; no prefetch call starts after it; a reader's still
// runs.
TEST(LowerGate, ReleasedInlinePrefetchesNeverReturnAndNoneStarts) {
  auto latch = std::make_shared<Latch>();
  LowerGateOptions o{milliseconds(60000), 1, 4};
  o.prefetch_inline = true;
  LowerGate g(o);
  g.Start();
  auto running = std::make_shared<std::atomic<int>>(0);
  auto returned = std::make_shared<std::atomic<bool>>(false);
  std::thread held([&g, latch, running, returned] {
    PrefetchScope lane;
    (void)g.Run([latch, running] {
      running->fetch_add(1);
      latch->Wait();
    }, "prefetch");
    returned->store(true);  // must never happen
  });
  while (running->load() < 1) std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(g.ReleasePrefetch(), 1u);
  bool ran = false;
  {
    PrefetchScope lane;
    Status s = g.Run([&ran] { ran = true; }, "prefetch");
    EXPECT_EQ(s.code(), Code::kInterrupted) << s.ToString();
  }
  EXPECT_FALSE(ran);
  int x = 0;
  ASSERT_TRUE(g.Run([&x] { x = 3; }, "read").ok());
  EXPECT_EQ(x, 3);
  latch->Open();
  while (g.counters().in_flight != 0) std::this_thread::sleep_for(milliseconds(1));
  // Given time to return (this can only miss a regression, never fail wrongly).
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(returned->load());
  held.detach();  // it waits for ever, holding only what the gate shares with it
}

TEST(LowerGate, AnOperationThatThrowsIsAnErrorNotTheEnd) {
  LowerGate g({milliseconds(60000), 1, 1});
  g.Start();
  Status s = g.Run([] { throw std::bad_alloc(); }, "list big");
  EXPECT_EQ(s.code(), Code::kInternal) << s.ToString();
  ASSERT_TRUE(g.Run([] {}, "next").ok());  // the worker serves on
}

TEST(LowerGate, ZeroTimeoutRunsOnTheCaller) {
  LowerGate g({milliseconds(0), 1, 1});
  g.Start();
  const auto me = std::this_thread::get_id();
  std::thread::id ran;
  ASSERT_TRUE(g.Run([&] { ran = std::this_thread::get_id(); }, "op").ok());
  EXPECT_TRUE(ran == me);
}

// ---- inline calls (AnswerScope) ---------------------------------------------

// What the watchdog answered for a scope, and when.
struct Answers {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Status> got;
  std::function<void(const Status&)> Fn() {
    return [this](const Status& s) {
      std::lock_guard lk(mu);
      got.push_back(s);
      cv.notify_all();
    };
  }
  void WaitFor(size_t n) {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return got.size() >= n; });
  }
};

TEST(LowerGateInline, AnAnswerableCallRunsOnItsOwnThread) {
  LowerGate g({milliseconds(60000), 2, 4, 1});
  g.Start();
  Answers answers;
  AnswerScope scope(answers.Fn());
  std::thread::id ran;
  ASSERT_TRUE(g.Run([&] { ran = std::this_thread::get_id(); }, "stat a").ok());
  EXPECT_TRUE(ran == std::this_thread::get_id());
  EXPECT_FALSE(scope.answered());
  EXPECT_TRUE(answers.got.empty());
  EXPECT_EQ(g.counters().calls, 1u);
  EXPECT_EQ(g.counters().inline_calls, 1u);
  EXPECT_EQ(g.counters().in_flight, 0u);
  EXPECT_EQ(AnswerScope::Current(), &scope);
}

TEST(LowerGateInline, WithoutAScopeOrWithMaxInlineZeroCallsGoToTheWorkers) {
  LowerGate none({milliseconds(60000), 1, 4, 0});
  none.Start();
  std::thread::id ran;
  {
    Answers answers;
    AnswerScope scope(answers.Fn());
    ASSERT_TRUE(none.Run([&] { ran = std::this_thread::get_id(); }, "a").ok());
    EXPECT_FALSE(ran == std::this_thread::get_id());
  }
  LowerGate g({milliseconds(60000), 1, 4, 2});
  g.Start();
  ASSERT_TRUE(g.Run([&] { ran = std::this_thread::get_id(); }, "b").ok());
  EXPECT_FALSE(ran == std::this_thread::get_id());
  EXPECT_EQ(g.counters().inline_calls, 0u);
  EXPECT_EQ(AnswerScope::Current(), nullptr);
}

// The watchdog answers a hung inline call for its caller; the caller, once
// the call returns, learns it must not answer. The latch opens only after the
// answer, so the order does not depend on the machine's speed.
TEST(LowerGateInline, AHungInlineCallIsAnsweredByTheWatchdog) {
  auto latch = std::make_shared<Latch>();
  LowerGate g({milliseconds(100), 1, 4, 1});
  g.Start();
  std::vector<Status> got;
  AnswerScope scope([&](const Status& s) {
    got.push_back(s);
    latch->Open();
  });
  Status s = g.Run([latch] { latch->Wait(); }, "stat hung");
  EXPECT_EQ(s.code(), Code::kTimedOut) << s.ToString();
  EXPECT_TRUE(scope.answered());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].code(), Code::kTimedOut);
  EXPECT_NE(got[0].message().find("stat hung"), std::string::npos) << got[0].ToString();
  EXPECT_EQ(g.counters().timeouts, 1u);
  EXPECT_EQ(g.counters().stuck, 0u);  // it returned
  // An answered request makes no more LOWER calls.
  bool ran = false;
  EXPECT_FALSE(g.Run([&] { ran = true; }, "more").ok());
  EXPECT_FALSE(ran);
}

// While an inline call is stuck (given up on, not returned), no call runs
// inline: a hung LOWER holds at most max_inline FUSE threads.
TEST(LowerGateInline, WhileOneIsStuckCallsGoToTheWorkersThenInlineAgain) {
  auto latch = std::make_shared<Latch>();
  LowerGate g({milliseconds(100), 2, 4, 2});
  g.Start();
  Answers answers;
  Status hung_status;
  bool hung_answered = false;
  std::thread hung([&] {
    AnswerScope scope(answers.Fn());
    hung_status = g.Run([latch] { latch->Wait(); }, "stat hung");
    hung_answered = scope.answered();
  });
  answers.WaitFor(1);  // given up on, still inside the operation
  EXPECT_EQ(g.counters().stuck, 1u);
  EXPECT_EQ(g.counters().in_flight, 1u);
  {
    Answers mine;
    AnswerScope scope(mine.Fn());
    std::thread::id ran;
    ASSERT_TRUE(g.Run([&] { ran = std::this_thread::get_id(); }, "stat b").ok());
    EXPECT_FALSE(ran == std::this_thread::get_id());  // a worker ran it
    EXPECT_EQ(g.counters().inline_calls, 1u);
    latch->Open();
    hung.join();
    EXPECT_EQ(hung_status.code(), Code::kTimedOut);
    EXPECT_TRUE(hung_answered);
    EXPECT_EQ(g.counters().stuck, 0u);
    ASSERT_TRUE(g.Run([&] { ran = std::this_thread::get_id(); }, "stat c").ok());
    EXPECT_TRUE(ran == std::this_thread::get_id());  // inline again
    EXPECT_EQ(g.counters().inline_calls, 2u);
    EXPECT_TRUE(mine.got.empty());
  }
}

// At most max_inline calls run inline at once.
TEST(LowerGateInline, PastMaxInlineCallsGoToTheWorkers) {
  auto latch = std::make_shared<Latch>();
  auto started = std::make_shared<Latch>();
  LowerGate g({milliseconds(60000), 2, 4, 1});
  g.Start();
  std::thread first([&] {
    Answers answers;
    AnswerScope scope(answers.Fn());
    EXPECT_TRUE(g.Run([latch, started] {
      started->Open();
      latch->Wait();
    }, "slow").ok());
    EXPECT_FALSE(scope.answered());
  });
  started->Wait();
  Answers mine;
  AnswerScope scope(mine.Fn());
  std::thread::id ran;
  ASSERT_TRUE(g.Run([&] { ran = std::this_thread::get_id(); }, "b").ok());
  EXPECT_FALSE(ran == std::this_thread::get_id());
  EXPECT_EQ(g.counters().inline_calls, 1u);
  latch->Open();
  first.join();
  EXPECT_EQ(g.counters().timeouts, 0u);
}

// The caller's request interrupted: the watchdog answers Interrupted.
TEST(LowerGateInline, AnInterruptedInlineCallIsAnswered) {
  auto latch = std::make_shared<Latch>();
  LowerGate g({milliseconds(60000), 1, 4, 1});
  g.Start();
  auto started = std::make_shared<std::atomic<bool>>(false);
  CancelScope interruptible([started] { return started->load(); });
  std::vector<Status> got;
  AnswerScope scope([&](const Status& s) {
    got.push_back(s);
    latch->Open();
  });
  Status s = g.Run([latch, started] {
    started->store(true);
    latch->Wait();
  }, "stat x");
  EXPECT_EQ(s.code(), Code::kInterrupted) << s.ToString();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].code(), Code::kInterrupted);
  EXPECT_TRUE(scope.answered());
  EXPECT_EQ(g.counters().interrupts, 1u);
  EXPECT_EQ(g.counters().timeouts, 0u);
}

}  // namespace
}  // namespace epochfs::store
