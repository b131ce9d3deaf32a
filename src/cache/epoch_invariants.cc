// EpochPolicy::CheckInvariants: recomputes every account from scratch and
// compares (O(resident objects)); the first violation is an Internal status.
#include "epoch_policy_state.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace epochfs::cache::epoch_impl {

Status EpochPolicy::CheckInvariants() const {
  auto fail = [](const std::string& m) { return Internal("invariant: " + m); };
  uint64_t sum = pool_ + shared_;
  std::unordered_map<ObjectId, uint32_t> refs;
  for (const auto& [id, jp] : jobs_) {
    const Job& j = *jp;
    const std::string who = "job " + std::to_string(id) + ": ";
    sum += j.Held() + j.free;
    size_t holdings = 0;
    std::vector<uint32_t> counted(j.counters.size(), 0);
    for (int r = 1; r < kRegions; ++r) {
      uint64_t bytes = 0;
      for (size_t i = 0; i < j.lists[r].size(); ++i) {
        const uint32_t x = j.lists[r][i];
        if (j.where[x] != r || j.slot[x] != i) return fail(who + "region lists out of step");
        const ObjectId obj = j.samples[x].object;
        auto h = j.held.find(obj);
        if (h == j.held.end() || h->second != x) return fail(who + "held map out of step");
        auto o = objects_.find(obj);
        if (o == objects_.end()) return fail(who + "holds an unknown object");
        bytes += o->second.size;
        ++refs[obj];
        ++holdings;
        const Region reg = static_cast<Region>(r);
        if (reg == Region::kNext) {
          if (j.next_order == nullptr || j.next_order->PosOf(x) == kAbsent) {
            return fail(who + "sample " + std::to_string(x) + " in next is not in the next order");
          }
          ++counted[j.next_order->PosOf(x) / j.spec.batch_size];
        } else if (reg == Region::kCur && !j.InCur(x)) {
          return fail(who + "sample " + std::to_string(x) + " in cur is not in the current order");
        } else if (reg == Region::kTail && j.prev_order != nullptr &&
                   j.prev_order->PosOf(x) == kAbsent) {
          return fail(who + "sample " + std::to_string(x) +
                      " in tail is not in the previous order");
        }
      }
      if (bytes != j.bytes[r]) return fail(who + "region bytes out of step");
    }
    if (holdings != j.held.size()) return fail(who + "held map has extra entries");
    if (counted != j.counters) return fail(who + "batch counters differ from next region");
    for (uint32_t c : j.counters) {
      if (c > j.e) return fail(who + "a batch counter exceeds e");
    }
    const uint64_t nxt = j.bytes[static_cast<int>(Region::kNext)];
    switch (j.state) {
      case JobState::kWarmup:
        if (j.Held() != 0 || j.free != 0) return fail(who + "holds bytes during warm-up");
        break;
      case JobState::kLastEpoch:
        if (nxt != 0 || j.free != 0) return fail(who + "admits in its last epoch");
        break;
      case JobState::kDone:
        if (j.Held() != 0 || j.free != 0) return fail(who + "holds bytes when done");
        break;
      case JobState::kCaching:
        break;
    }
    const bool listed = std::find(list_.begin(), list_.end(), &j) != list_.end();
    if (listed != (j.state == JobState::kCaching)) return fail(who + "sorted list membership");
    if (listed && list_[j.rank] != &j) return fail(who + "rank out of step");
  }
  if (sum != params_.budget_bytes) {
    return fail("pool + jobs = " + std::to_string(sum) + " != budget " +
                std::to_string(params_.budget_bytes));
  }
  uint64_t resident = 0;
  size_t shared_objects = 0;
  for (const auto& [obj, o] : objects_) {
    resident += o.size;
    if (o.shared) {
      if (o.refs != 0 || refs.count(obj) != 0) return fail("a shared object is held by a job");
      if (o.lru == lru_.end() || *o.lru != obj) return fail("shared object not in the LRU list");
      ++shared_objects;
      continue;
    }
    if (o.refs == 0 || refs[obj] != o.refs) return fail("object refs out of step");
  }
  if (refs.size() + shared_objects != objects_.size()) {
    return fail("held objects missing from the table");
  }
  uint64_t shared = 0;
  for (ObjectId id : lru_) {
    auto o = objects_.find(id);
    if (o == objects_.end() || !o->second.shared) return fail("LRU list names a non-shared object");
    shared += o->second.size;
  }
  if (lru_.size() != shared_objects) return fail("LRU list length out of step");
  if (shared != shared_) return fail("shared bytes out of step");
  if (!params_.share_idle && shared_ != 0) return fail("shared region used with share_idle off");
  if (resident != resident_) return fail("resident bytes out of step");
  if (resident_ > params_.budget_bytes) return fail("resident bytes exceed the budget");
  for (size_t i = 1; i < list_.size(); ++i) {
    if (list_[i - 1]->epoch_time_ns > list_[i]->epoch_time_ns) return fail("list not sorted");
  }
  return Status::Ok();
}

}  // namespace epochfs::cache::epoch_impl
