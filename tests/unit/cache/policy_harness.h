// Test harness: a Policy in front of a shadow store (the set of resident
// objects). Every Decision is applied to the shadow store and checked against
// the Policy contract: evict only resident objects, admit only on a miss and
// only an object not resident, resident bytes within the budget, and
// CheckInvariants() after every event.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "epochfs/cache/policy.h"
#include "epochfs/cache/prefetching.h"
#include "epochfs/cache/read_order.h"

namespace epochfs::cache::testing {

class Harness {
 public:
  explicit Harness(std::unique_ptr<Policy> p) : p_(std::move(p)) {}

  Policy& policy() { return *p_; }

  void AddJob(const JobSpec& spec, std::vector<SampleRef> samples) {
    ASSERT_TRUE(p_->AddJob(spec).ok());
    for (const SampleRef& s : samples) sizes_[s.object] = s.size;
    samples_[spec.id] = samples;
    ASSERT_TRUE(p_->SetSamples(spec.id, std::move(samples)).ok());
  }

  // Job `job` reads its sample `x` at `now`; a miss costs load_ns. Returns
  // whether it was a hit; `last` keeps the Decision.
  bool Read(JobId job, uint32_t x, uint64_t now, uint64_t load_ns = 1000) {
    const SampleRef& s = samples_.at(job).at(x);
    return Touch(Access{s.object, s.size, job, static_cast<int64_t>(x), now}, load_ns);
  }

  bool Touch(const Access& a, uint64_t load_ns = 1000) {
    const bool hit = resident_.count(a.object) != 0;
    last = hit ? p_->OnHit(a) : p_->OnMiss(a, load_ns);
    Apply(last, hit ? 0 : a.object);
    return hit;
  }

  // One prefetch as the daemon makes it: the policy's first hint (at most
  // `max` asked), loaded and reported. Checks that every hint is a
  // non-resident object of its job's sample list. Returns the object
  // prefetched and admitted, or 0.
  ObjectId Prefetch(uint64_t now, size_t max = 4) {
    std::vector<PrefetchHint> hints = Hints(max, now);
    EXPECT_LE(hints.size(), max);
    for (const PrefetchHint& h : hints) {
      EXPECT_FALSE(resident(h.object)) << "hint of a resident object " << h.object;
      const SampleRef& s = samples_.at(h.job).at(h.sample);
      EXPECT_EQ(s.object, h.object);
      EXPECT_EQ(s.size, h.size);
    }
    if (hints.empty()) return 0;
    const PrefetchHint& h = hints.front();
    last = p_->prefetching()->OnPrefetched(Access{h.object, h.size, h.job, h.sample, now}, 1000);
    Apply(last, h.object);
    return resident(h.object) ? h.object : 0;
  }

  // Every hint (at most `max`) loaded at once and reported in order at `now`,
  // as prefetches that land together. The hints are those OnPrefetched would
  // admit once the ones before them have landed, as far as the policy can
  // tell: `declined` counts those it did not. Returns how many it admitted.
  size_t PrefetchAll(uint64_t now, size_t max, uint64_t* declined) {
    const std::vector<PrefetchHint> hints = Hints(max, now);
    size_t admitted = 0;
    for (const PrefetchHint& h : hints) {
      last = p_->prefetching()->OnPrefetched(Access{h.object, h.size, h.job, h.sample, now}, 1000);
      Apply(last, h.object);
      if (resident(h.object)) {
        ++admitted;
      } else {
        ++*declined;
      }
    }
    return admitted;
  }

  Decision BeginEpoch(JobId job, uint32_t epoch, uint64_t now) {
    Result<Decision> r = p_->BeginEpoch(job, epoch, now);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    last = r.ok() ? r.value() : Decision{};
    Apply(last, 0);
    return last;
  }

  Decision EndJob(JobId job) {
    Result<Decision> r = p_->EndJob(job);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    last = r.ok() ? r.value() : Decision{};
    Apply(last, 0);
    return last;
  }

  void Drop(ObjectId id) {
    resident_.erase(id);
    p_->OnDropped(id);
    Check();
  }

  // The store loses `id` without telling the policy (a bug or a race in the
  // caller); the policy must repair itself on the next miss.
  void ForgetSilently(ObjectId id) { resident_.erase(id); }

  // Applies a Decision; `loaded` is the object of a miss (0 otherwise).
  void Apply(const Decision& d, ObjectId loaded) {
    Mix(d.admit ? 1 : 2);
    for (ObjectId v : d.evict) {
      Mix(v);
      EXPECT_EQ(resident_.count(v), 1u) << "evicts object " << v << " that is not resident";
      resident_.erase(v);
      ++evictions;
    }
    if (d.admit) {
      EXPECT_NE(loaded, 0u) << "admit outside a miss";
      EXPECT_EQ(resident_.count(loaded), 0u) << "admits resident object " << loaded;
      resident_.insert(loaded);
      ++admissions;
    }
    Check();
  }

  void Check() {
    uint64_t bytes = 0;
    for (ObjectId id : resident_) bytes += sizes_[id];
    EXPECT_LE(bytes, p_->budget());
    EXPECT_EQ(bytes, p_->resident_bytes());
    Status st = p_->CheckInvariants();
    EXPECT_TRUE(st.ok()) << st.ToString();
    ++checks;
    Mix(p_->pool_bytes());
    Mix(p_->resident_bytes());
    for (const JobSnapshot& s : p_->Jobs()) {
      for (uint64_t v : {uint64_t{s.id}, uint64_t(s.state), uint64_t{s.epoch}, s.batch,
                         s.current.hits, s.current.misses, s.cur_bytes, s.next_bytes,
                         s.tail_bytes, s.granted_unused_bytes, s.reserved_bytes, s.need_bytes,
                         uint64_t(int64_t{s.rank}), uint64_t{s.e}, s.epoch_time_ns,
                         s.load_ns_per_sample, s.compute_ns_per_batch}) {
        Mix(v);
      }
    }
  }

  // A fingerprint of every Decision and every account seen so far (FNV-1a
  // over 64-bit words): two runs with the same digest made the same decisions.
  void Mix(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      digest ^= (v >> (8 * i)) & 0xff;
      digest *= 0x100000001b3ULL;
    }
  }

  bool resident(ObjectId id) const { return resident_.count(id) != 0; }
  const std::set<ObjectId>& resident_set() const { return resident_; }
  void set_size(ObjectId id, uint64_t size) { sizes_[id] = size; }

  Decision last;
  uint64_t evictions = 0;
  uint64_t admissions = 0;
  uint64_t checks = 0;
  uint64_t digest = 0xcbf29ce484222325ULL;

 private:
  // The policy's hints; none for a policy that does not prefetch.
  std::vector<PrefetchHint> Hints(size_t max, uint64_t now) {
    Prefetching* pf = p_->prefetching();
    return pf != nullptr ? pf->PrefetchHints(max, now, nullptr, {}) : std::vector<PrefetchHint>{};
  }
  std::unique_ptr<Policy> p_;
  std::set<ObjectId> resident_;
  std::map<ObjectId, uint64_t> sizes_;
  std::map<JobId, std::vector<SampleRef>> samples_;
};

// n samples of `size` bytes whose objects are base+0 .. base+n-1.
inline std::vector<SampleRef> UniformSamples(uint32_t n, uint64_t size, ObjectId base) {
  std::vector<SampleRef> v;
  for (uint32_t i = 0; i < n; ++i) v.push_back({base + i, size});
  return v;
}

inline std::vector<uint32_t> Iota(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

inline std::vector<uint32_t> Reversed(uint32_t n) {
  std::vector<uint32_t> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = n - 1 - i;
  return v;
}

inline JobSnapshot Snap(Policy& p, JobId id) {
  for (const JobSnapshot& s : p.Jobs()) {
    if (s.id == id) return s;
  }
  ADD_FAILURE() << "no job " << id;
  return {};
}

}  // namespace epochfs::cache::testing
