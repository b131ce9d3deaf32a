#include "epochfs/cache/next_use_cache.h"

#include <algorithm>
#include <string>

namespace epochfs::cache {

NextUseCache::Rank NextUseCache::RankOf(uint64_t when, uint64_t size, uint64_t now,
                                        double worth) const {
  const uint64_t dist = std::max<uint64_t>(when > now ? when - now : 0, 1000);
  const double s = double(std::max<uint64_t>(size, 1));
  return {double(dist) * s / (s + double(request_bytes_)) / std::max(worth, 1e-3), when, true};
}

NextUseCache::Entry& NextUseCache::At(ObjectId id) {
  const size_t slot = future_.Slot(id);
  if (slot >= held_.size()) held_.resize(std::max(slot + 1, future_.Slots()));
  return held_[slot];
}

bool NextUseCache::Holds(ObjectId id) const {
  const size_t slot = future_.Slot(id);
  return slot < held_.size() && held_[slot].size != 0;
}

Decision NextUseCache::OnHit(const Access& a) {
  Decision d;
  Entry& e = At(a.object);
  if (e.size == 0) return d;
  Future::Use use;
  if (!future_.NextUse(a.object, &use)) {
    Forget(e);
    d.evict.push_back(a.object);
    return d;
  }
  Keep(a.object, e, use);
  return d;
}

void NextUseCache::Lines(uint64_t now) {
  lines_.resize(future_.Jobs());
  for (uint32_t j = 0; j < lines_.size(); ++j) lines_[j] = future_.LineOf(j, now);
  ranks_.assign(groups_.size(), Rank{});
  for (size_t g = 0; g < groups_.size(); ++g) TopRank(g, now);
}

size_t NextUseCache::Worst() const {
  size_t group = kNone;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (ranks_[g].valid && (group == kNone || ranks_[group] < ranks_[g])) group = g;
  }
  return group;
}

Decision NextUseCache::OnMiss(const Access& a) { return Admit(a, /*prefetch=*/false, true); }

Decision NextUseCache::OnPrefetched(const Access& a, bool may_displace) {
  return Admit(a, /*prefetch=*/true, may_displace);
}

uint64_t NextUseCache::DeclaredWhen(ObjectId id) const {
  Future::Use use;
  if (!future_.DeclaredUse(id, &use) || use.job >= lines_.size()) return ~uint64_t{0};
  return lines_[use.job].At(use.pos);
}

Decision NextUseCache::Admit(const Access& a, bool prefetch, bool may_displace) {
  Decision d;
  Entry& e = At(a.object);
  if (e.size != 0) Forget(e);  // the store lost it
  const uint64_t s = a.size;
  Future::Use use;
  if (s == 0 || s > budget_ || !future_.NextUse(a.object, &use)) return d;
  Lines(a.now_ns);
  const Rank mine = RankOf(lines_[use.job].At(use.pos), s, a.now_ns, lines_[use.job].worth);
  const uint64_t mine_when = prefetch ? DeclaredWhen(a.object) : 0;
  std::vector<ObjectId> victims;
  uint64_t used_after = used_ + s;
  bool bypass = false;
  while (used_after > budget_) {
    const size_t group = Worst();
    // The new object is the one to drop; or, loaded ahead, it would
    // displace a read that comes before its own.
    if (group == kNone || !(mine < ranks_[group]) ||
        (prefetch && (!may_displace || DeclaredWhen(groups_[group].heap.front().id) <= mine_when))) {
      bypass = true;
      break;
    }
    std::vector<Item>& h = groups_[group].heap;
    std::pop_heap(h.begin(), h.end());
    popped_.push_back({group, h.back()});
    h.pop_back();
    victims.push_back(popped_.back().second.id);
    used_after -= At(victims.back()).size;
    TopRank(group, a.now_ns);
  }
  if (bypass) {  // restore the tentatively popped tops
    for (const auto& [g, it] : popped_) {
      groups_[g].heap.push_back(it);
      std::push_heap(groups_[g].heap.begin(), groups_[g].heap.end());
    }
    popped_.clear();
    return d;
  }
  popped_.clear();
  for (ObjectId v : victims) Forget(At(v));
  d.evict = std::move(victims);
  Entry& mine_e = At(a.object);  // Forget/At may not move held_, but look it up again anyway
  mine_e.size = s;
  used_ += s;
  Keep(a.object, mine_e, use);
  d.admit = true;
  return d;
}

std::vector<PrefetchHint> NextUseCache::Admissible(
    const std::vector<PrefetchHint>& loading, const std::vector<PrefetchHint>& soonest_first,
    size_t max, uint64_t now, const std::function<bool(const PrefetchHint&)>& may_displace) {
  std::vector<PrefetchHint> out;
  if (soonest_first.empty() || max == 0) return out;
  Lines(now);
  // OnMiss's decision, played for each object in turn as if the ones before
  // it had landed: victims are popped from the groups tentatively (restored
  // below), so two hints never count on the same victim's bytes.
  uint64_t used = used_;
  enum class Verdict { kAdmit, kSkip, kLater };
  auto play = [&](const PrefetchHint& h) {
    // Size 0: not known yet (a samples list without sizes, before any load):
    // weighed as one byte here; the admission when it arrives decides with
    // its real size.
    const uint64_t size = std::max<uint64_t>(h.size, 1);
    Future::Use use;
    if (size > budget_ || Holds(h.object) || !future_.NextUse(h.object, &use)) return Verdict::kSkip;
    const Rank mine = RankOf(lines_[use.job].At(use.pos), size, now, lines_[use.job].worth);
    const uint64_t mine_when = DeclaredWhen(h.object);
    const size_t mark = popped_.size();
    uint64_t after = used + size;
    const bool displace = used + size <= budget_ || !may_displace || may_displace(h);
    while (after > budget_) {
      const size_t group = Worst();
      if (group == kNone || !(mine < ranks_[group]) || !displace ||
          DeclaredWhen(groups_[group].heap.front().id) <= mine_when) {
        while (popped_.size() > mark) {  // this one is not played: its victims stay
          const auto [g, it] = popped_.back();
          popped_.pop_back();
          groups_[g].heap.push_back(it);
          std::push_heap(groups_[g].heap.begin(), groups_[g].heap.end());
          TopRank(g, now);
        }
        return Verdict::kLater;
      }
      std::vector<Item>& heap = groups_[group].heap;
      std::pop_heap(heap.begin(), heap.end());
      popped_.push_back({group, heap.back()});
      heap.pop_back();
      after -= At(popped_.back().second.id).size;
      TopRank(group, now);
    }
    used = after;
    return Verdict::kAdmit;
  };
  for (const PrefetchHint& h : loading) play(h);  // they land first
  for (const PrefetchHint& h : soonest_first) {
    if (out.size() >= max) break;
    const Verdict v = play(h);
    if (v == Verdict::kLater) break;  // the later ones come later still
    if (v == Verdict::kAdmit) out.push_back(h);
  }
  for (const auto& [g, it] : popped_) {
    groups_[g].heap.push_back(it);
    std::push_heap(groups_[g].heap.begin(), groups_[g].heap.end());
  }
  popped_.clear();
  return out;
}

void NextUseCache::OnDropped(ObjectId id) {
  Entry& e = At(id);
  if (e.size != 0) Forget(e);
}

void NextUseCache::Rekey(ObjectId id, uint64_t /*now*/, Decision* d) {
  Entry& e = At(id);
  if (e.size == 0) return;
  Future::Use use;
  if (!future_.NextUse(id, &use)) {
    Forget(e);
    d->evict.push_back(id);
    return;
  }
  Keep(id, e, use);
}

Decision NextUseCache::SetBudget(uint64_t bytes, uint64_t now) {
  Decision d;
  budget_ = bytes;
  if (used_ <= budget_) return d;
  Lines(now);
  while (used_ > budget_) {
    const size_t group = Worst();
    if (group == kNone) break;  // cannot happen while used_ > 0
    std::vector<Item>& h = groups_[group].heap;
    std::pop_heap(h.begin(), h.end());
    const ObjectId id = h.back().id;
    h.pop_back();
    Forget(At(id));
    d.evict.push_back(id);
    TopRank(group, now);
  }
  return d;
}

std::vector<uint64_t> NextUseCache::BytesByJob() const {
  std::vector<uint64_t> out(future_.Jobs(), 0);
  for (const Group& g : groups_) {
    if (g.job >= out.size()) out.resize(g.job + 1, 0);
    out[g.job] += g.bytes;
  }
  return out;
}

Status NextUseCache::CheckInvariants() const {
  uint64_t sum = 0, live = 0;
  for (const Entry& e : held_) {
    sum += e.size;
    live += e.size != 0;
  }
  uint64_t group_bytes = 0, group_live = 0;
  for (const Group& g : groups_) {
    group_bytes += g.bytes;
    group_live += g.live;
  }
  if (sum != used_) {
    return Status(Code::kInternal, "next-use cache: resident bytes " + std::to_string(sum) +
                                       " != counted " + std::to_string(used_));
  }
  if (group_bytes != used_ || group_live != live) {
    return Status(Code::kInternal, "next-use cache: the groups disagree with the objects held");
  }
  if (used_ > budget_) {
    return Status(Code::kInternal, "next-use cache: " + std::to_string(used_) +
                                       " bytes held, over the budget " + std::to_string(budget_));
  }
  return Status::Ok();
}

// ranks_[g] = the rank of group g's top (invalid when the group is empty).
void NextUseCache::TopRank(size_t g, uint64_t now) {
  if (!CleanTop(g)) {
    ranks_[g] = Rank{};
    return;
  }
  const Item& top = groups_[g].heap.front();
  const Future::Line& line = lines_[groups_[g].job];
  ranks_[g] = RankOf(line.At(top.pos), held_[future_.Slot(top.id)].size, now, line.worth);
}

size_t NextUseCache::GroupOf(uint32_t job, uint64_t size) {
  const int msb = 63 - __builtin_clzll(size | 1);
  const uint64_t frac = msb >= 2 ? (size >> (msb - 2)) & 3 : 0;
  const size_t key = size_t{job} * 256 + static_cast<size_t>(msb) * 4 + frac;
  if (key >= group_index_.size()) group_index_.resize(key + 1, kNone);
  if (group_index_[key] == kNone) {
    group_index_[key] = groups_.size();
    groups_.push_back(Group{job, {}, 0, 0});
    ranks_.push_back(Rank{});
  }
  return group_index_[key];
}

// Holds `e` (already counted in used_) with next use `use`.
void NextUseCache::Keep(ObjectId id, Entry& e, const Future::Use& use) {
  if (e.stamp != 0) {
    --groups_[e.group].live;
    groups_[e.group].bytes -= e.size;
  }
  e.stamp = ++stamp_;
  e.group = GroupOf(use.job, e.size);
  Group& g = groups_[e.group];
  ++g.live;
  g.bytes += e.size;
  g.heap.push_back({use.pos, e.stamp, id});
  std::push_heap(g.heap.begin(), g.heap.end());
  if (g.heap.size() > 2 * g.live + 64) {
    g.heap.erase(
        std::remove_if(g.heap.begin(), g.heap.end(), [&](const Item& it) { return Stale(it); }),
        g.heap.end());
    std::make_heap(g.heap.begin(), g.heap.end());
  }
}

bool NextUseCache::Stale(const Item& it) const {
  const size_t slot = future_.Slot(it.id);
  if (slot >= held_.size()) return true;
  const Entry& e = held_[slot];
  return e.size == 0 || e.stamp != it.stamp;
}

// Drops stale items from group g's top; false when it is empty.
bool NextUseCache::CleanTop(size_t g) {
  std::vector<Item>& h = groups_[g].heap;
  while (!h.empty() && Stale(h.front())) {
    std::pop_heap(h.begin(), h.end());
    h.pop_back();
  }
  return !h.empty();
}

void NextUseCache::Forget(Entry& e) {
  used_ -= e.size;
  --groups_[e.group].live;
  groups_[e.group].bytes -= e.size;
  e = Entry{};
}

}  // namespace epochfs::cache
