#include "epochfs/sim/trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace epochfs::sim {

uint64_t Rng::Next() {
  uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rng::Below(uint64_t n) {
  unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
  auto low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t t = -n % n;
    while (low < t) {
      m = static_cast<unsigned __int128>(Next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double Rng::Normal() {
  const double u1 = 1.0 - Unit();  // (0, 1]
  const double u2 = Unit();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

uint64_t MixSeed(uint64_t a, uint64_t b, uint64_t c) {
  Rng r(a);
  uint64_t x = r.Next() ^ b;
  Rng r2(x);
  x = r2.Next() ^ c;
  Rng r3(x);
  return r3.Next();
}

namespace {

uint64_t DrawSize(const SizeSpec& s, Rng& rng) {
  switch (s.dist) {
    case SizeSpec::Dist::kFixed:
      return s.fixed;
    case SizeSpec::Dist::kUniform:
      return s.min + rng.Below(s.max - s.min + 1);
    case SizeSpec::Dist::kLognormal: {
      // mean of lognormal(mu, sigma) = exp(mu + sigma^2/2).
      const double mu = std::log(static_cast<double>(s.mean)) - s.sigma * s.sigma / 2;
      const double v = std::exp(mu + s.sigma * rng.Normal());
      return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(std::min(v, 1e15))));
    }
  }
  return 1;
}

uint64_t NameHash(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ULL;
  return h;
}

}  // namespace

Result<Trace> Trace::Make(const Workload& w) {
  if (Status s = ValidateWorkload(w); !s.ok()) return s;
  Trace t;
  t.w_ = w;
  std::map<std::string, size_t> index;
  for (const JobSpecW& j : w.jobs) {
    auto [it, fresh] = index.emplace(j.dataset, t.datasets_.size());
    if (fresh) {
      Dataset d;
      d.name = j.dataset;
      d.id_base = (static_cast<uint64_t>(t.datasets_.size()) + 1) << 32;
      d.sizes.resize(j.samples);
      Rng rng(MixSeed(w.seed, NameHash(j.dataset), 0x517e5));
      for (uint64_t& sz : d.sizes) {
        sz = DrawSize(j.size, rng);
        d.total_bytes += sz;
      }
      t.distinct_bytes_ += d.total_bytes;
      t.datasets_.push_back(std::move(d));
    }
    t.job_dataset_.push_back(it->second);
  }
  if (w.budget_is_percent) {
    t.budget_ = static_cast<uint64_t>(static_cast<long double>(t.distinct_bytes_) *
                                      w.budget_percent / 100.0L);
  } else {
    t.budget_ = w.budget_bytes;
  }
  t.disk_budget_ = w.disk.size_is_percent
                       ? static_cast<uint64_t>(static_cast<long double>(t.distinct_bytes_) *
                                               w.disk.size_percent / 100.0L)
                       : w.disk.size_bytes;
  return t;
}

std::vector<uint32_t> Trace::Order(size_t job, uint32_t epoch) const {
  const JobSpecW& j = w_.jobs[job];
  std::vector<uint32_t> o(j.samples);
  std::iota(o.begin(), o.end(), 0u);
  // The ranks of a run shuffle alike (the run's name seeds it), then split.
  const std::string& seed_name = j.ranks > 1 ? j.run : j.name;
  Rng rng(MixSeed(w_.seed, NameHash(seed_name), 0x0de7000000ULL + epoch));
  for (size_t i = o.size(); i > 1; --i) {
    std::swap(o[i - 1], o[rng.Below(i)]);
  }
  if (j.ranks <= 1) return o;
  // DistributedSampler: pad to a multiple of the ranks with the shuffle's
  // first indices, so every rank takes as many steps; rank r takes positions
  // r, r+R, ... A padded index lands on another rank than its first place.
  const size_t per = (o.size() + j.ranks - 1) / j.ranks;
  std::vector<uint32_t> shard;
  shard.reserve(per);
  for (size_t i = j.rank; i < per * j.ranks; i += j.ranks) shard.push_back(o[i % o.size()]);
  return shard;
}

}  // namespace epochfs::sim
