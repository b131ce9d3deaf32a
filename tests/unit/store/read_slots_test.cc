// ReadSlots: which readers' loads start and which wait their turn. The
// threads here only wait for states the test reaches by itself (a load
// waiting, a slot held): no assertion depends on how fast anything runs.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "epochfs/store/read_slots.h"

namespace epochfs::store {
namespace {

using std::chrono::milliseconds;

ReadSlotsOptions Opts(uint32_t slots, std::chrono::microseconds anticipate = {}) {
  ReadSlotsOptions o;
  o.slots = slots;
  o.anticipate = anticipate;
  return o;
}

// A load of job `job` (by default a job of its own per key).
ReadTurn Turn(uint64_t key, uint64_t job = UINT64_MAX, std::vector<uint64_t> with = {}) {
  return ReadTurn{key, job == UINT64_MAX ? key : job, std::move(with)};
}

// Spins until `pred` holds (the states waited for are reached by threads
// that are already running; no timing is asserted).
template <typename P>
void Until(P pred) {
  while (!pred()) std::this_thread::yield();
}

TEST(ReadSlots, NoBoundNeverWaits) {
  ReadSlots rs(Opts(0));
  std::vector<ReadSlots::Slot> held(10);
  for (uint64_t k = 0; k < 10; ++k) ASSERT_TRUE(rs.Acquire(Turn(100 - k), nullptr, &held[k]).ok());
  EXPECT_EQ(rs.counters().waits, 0u);
}

TEST(ReadSlots, EqualKeysNeverWait) {
  // One job alone, unregistered readers, policies without an order: every
  // key is the same, and the bound never holds a load back.
  ReadSlots rs(Opts(1));
  std::vector<ReadSlots::Slot> held(5);
  for (uint64_t i = 0; i < held.size(); ++i) {
    ASSERT_TRUE(rs.Acquire(Turn(7, 100 + i), nullptr, &held[i]).ok());  // five jobs
  }
  EXPECT_EQ(rs.counters().held, 5u);
  EXPECT_EQ(rs.counters().waits, 0u);
  held.clear();
  EXPECT_EQ(rs.counters().held, 0u);
}

TEST(ReadSlots, TheSmallestKeyStartsAtOnceEvenWhenTheSlotsAreFull) {
  ReadSlots rs(Opts(1));
  ReadSlots::Slot a, b;
  ASSERT_TRUE(rs.Acquire(Turn(50), nullptr, &a).ok());
  ASSERT_TRUE(rs.Acquire(Turn(10), nullptr, &b).ok());
  EXPECT_EQ(rs.counters().held, 2u);
  EXPECT_EQ(rs.counters().waits, 0u);
}

TEST(ReadSlots, WaitingLoadsStartSmallestKeyFirst) {
  ReadSlots rs(Opts(1));
  auto first = std::make_unique<ReadSlots::Slot>();
  ASSERT_TRUE(rs.Acquire(Turn(10), nullptr, first.get()).ok());
  std::atomic<int> order{0};
  std::atomic<int> got20{0}, got15{0};
  ReadSlots::Slot s20, s15;
  std::thread t20([&] {
    ASSERT_TRUE(rs.Acquire(Turn(20), nullptr, &s20).ok());
    got20 = ++order;
  });
  Until([&] { return rs.counters().waiting == 1; });
  std::thread t15([&] {
    ASSERT_TRUE(rs.Acquire(Turn(15), nullptr, &s15).ok());
    got15 = ++order;
  });
  Until([&] { return rs.counters().waiting == 2; });
  EXPECT_EQ(order.load(), 0);  // both wait behind key 10's slot
  first.reset();               // key 15 goes first, though it asked later
  t15.join();
  EXPECT_EQ(got15.load(), 1);
  EXPECT_EQ(got20.load(), 0);
  EXPECT_EQ(rs.counters().waiting, 1u);  // 20 waits while 15 is in flight
  s15 = ReadSlots::Slot();
  t20.join();
  EXPECT_EQ(got20.load(), 2);
  EXPECT_EQ(rs.counters().waits, 2u);
}

TEST(ReadSlots, OnceTheSmallerKeyIsDoneEqualKeysAllStart) {
  ReadSlots rs(Opts(1));
  auto first = std::make_unique<ReadSlots::Slot>();
  ASSERT_TRUE(rs.Acquire(Turn(1), nullptr, first.get()).ok());
  std::vector<ReadSlots::Slot> slots(3);
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i) {
    ts.emplace_back([&, i] { ASSERT_TRUE(rs.Acquire(Turn(9, 100 + i), nullptr, &slots[i]).ok()); });
    Until([&] { return rs.counters().waiting == static_cast<uint64_t>(i + 1); });
  }
  first.reset();
  for (auto& t : ts) t.join();  // none of them waits for another's slot
  EXPECT_EQ(rs.counters().held, 3u);
  EXPECT_EQ(rs.counters().waits, 3u);
}

TEST(ReadSlots, PastMaxWaitingALoadStartsAtOnce) {
  ReadSlotsOptions o = Opts(1);
  o.max_waiting = 1;
  ReadSlots rs(o);
  ReadSlots::Slot a, b, c;
  ASSERT_TRUE(rs.Acquire(Turn(1), nullptr, &a).ok());
  std::thread t([&] { ASSERT_TRUE(rs.Acquire(Turn(5), nullptr, &b).ok()); });
  Until([&] { return rs.counters().waiting == 1; });
  ASSERT_TRUE(rs.Acquire(Turn(5), nullptr, &c).ok());  // would wait: the one waiting is enough
  EXPECT_EQ(rs.counters().overflows, 1u);
  EXPECT_EQ(rs.counters().held, 2u);
  a = ReadSlots::Slot();
  c = ReadSlots::Slot();
  t.join();
}

TEST(ReadSlots, NoLoadWaitsLongerThanMaxWaitAndAnInterruptEndsAWait) {
  ReadSlotsOptions o = Opts(1);
  o.max_wait = milliseconds(1);
  ReadSlots rs(o);
  ReadSlots::Slot a, b;
  ASSERT_TRUE(rs.Acquire(Turn(1), nullptr, &a).ok());
  ASSERT_TRUE(rs.Acquire(Turn(2), nullptr, &b).ok());  // its turn never comes: it ages
  EXPECT_EQ(rs.counters().aged, 1u);
  EXPECT_EQ(rs.counters().held, 2u);
  std::function<bool()> interrupted = [] { return true; };
  ReadSlots rs2(Opts(1));
  ReadSlots::Slot c, d;
  ASSERT_TRUE(rs2.Acquire(Turn(1), nullptr, &c).ok());
  EXPECT_EQ(rs2.Acquire(Turn(2), &interrupted, &d).code(), Code::kInterrupted);
  EXPECT_EQ(rs2.counters().waiting, 0u);
  EXPECT_EQ(rs2.counters().held, 1u);
}

TEST(ReadSlots, ALoadThatJustEndedKeepsItsPlaceForAMoment) {
  ReadSlotsOptions o = Opts(1, std::chrono::hours(1));
  o.max_wait = milliseconds(1);
  ReadSlots rs(o);
  {
    ReadSlots::Slot a;
    ASSERT_TRUE(rs.Acquire(Turn(1), nullptr, &a).ok());
  }
  // No load in flight, but key 1 ended within the window: key 2 waits
  // (until it ages, here), key 1 goes at once.
  ReadSlots::Slot b, c;
  EXPECT_TRUE(rs.Acquire(Turn(2), nullptr, &b).ok());
  EXPECT_EQ(rs.counters().aged, 1u);
  EXPECT_TRUE(rs.Acquire(Turn(1), nullptr, &c).ok());
  EXPECT_EQ(rs.counters().waits, 1u);
  // Without anticipation the free slot is key 2's.
  ReadSlots rz(Opts(1));
  {
    ReadSlots::Slot a;
    ASSERT_TRUE(rz.Acquire(Turn(1), nullptr, &a).ok());
  }
  ReadSlots::Slot d;
  EXPECT_TRUE(rz.Acquire(Turn(2), nullptr, &d).ok());
}

TEST(ReadSlots, AJobsLoadNeverWaitsForItsOwnLoadsWhateverTheirKeys) {
  // A job's key rises with its mean read size: its loads in flight, and
  // the one that just ended, hold smaller keys than its next; it goes at
  // once all the same. Another job with that key waits (and ages here).
  ReadSlotsOptions o = Opts(1, std::chrono::hours(1));
  o.max_wait = milliseconds(1);
  ReadSlots rs(o);
  {
    ReadSlots::Slot ended;
    ASSERT_TRUE(rs.Acquire(Turn(10, 1), nullptr, &ended).ok());
  }
  ReadSlots::Slot a, b, c;
  ASSERT_TRUE(rs.Acquire(Turn(10, 1), nullptr, &a).ok());
  ASSERT_TRUE(rs.Acquire(Turn(20, 1), nullptr, &b).ok());
  EXPECT_EQ(rs.counters().waits, 0u);
  EXPECT_EQ(rs.counters().held, 2u);
  ASSERT_TRUE(rs.Acquire(Turn(20, 2), nullptr, &c).ok());
  EXPECT_EQ(rs.counters().waits, 1u);
  EXPECT_EQ(rs.counters().aged, 1u);
}

TEST(ReadSlots, JobsSharingObjectsDoNotWaitForEachOther) {
  ReadSlotsOptions o = Opts(1);
  o.max_wait = milliseconds(1);
  ReadSlots rs(o);
  ReadSlots::Slot a, b, c;
  ASSERT_TRUE(rs.Acquire(Turn(10, 1, {2}), nullptr, &a).ok());
  ASSERT_TRUE(rs.Acquire(Turn(20, 2, {1, 3}), nullptr, &b).ok());  // shares with job 1
  EXPECT_EQ(rs.counters().waits, 0u);
  ASSERT_TRUE(rs.Acquire(Turn(20, 3, {2}), nullptr, &c).ok());  // not with job 1: waits
  EXPECT_EQ(rs.counters().waits, 1u);
  EXPECT_EQ(rs.counters().aged, 1u);
}

}  // namespace
}  // namespace epochfs::store
