#include "epochfs/cache/declared_future.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include "epochfs/declarations/declaration_rules.h"
#include "epochfs/declarations/declared_orders.h"

namespace epochfs::cache {
namespace {

constexpr uint32_t kNotInOrder = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kMeasuredReads = 64;   // reads before the pace is measured
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
// Unclaimed objects are ranked as if next read this far (~1 year) after every
// claimed one, and older ones later.
constexpr uint64_t kUnclaimedNs = uint64_t{1} << 55;

// A position in [0, len) for `sample` in epoch `epoch`, spread uniformly and
// independently of the declared order (splitmix64 of both).
uint64_t Spread(uint32_t sample, uint32_t epoch, uint64_t len) {
  uint64_t z = (uint64_t{epoch} << 32 | sample) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return len ? z % len : 0;
}

// Sample `s`'s position in `o`, kNotInOrder when `o` leaves it out.
uint32_t PosIn(const declarations::Order& o, uint32_t s) {
  return o.pos[s] == declarations::kAbsent ? kNotInOrder : static_cast<uint32_t>(o.pos[s]);
}

}  // namespace

struct DeclaredFuture::Job {
  JobSpec spec;
  uint32_t index = 0;
  std::vector<SampleRef> samples;
  declarations::DeclaredOrders orders{declarations::InUse::kCurrentAndNext};  // by epoch
  // The current and next epoch's held orders (nullptr when undeclared).
  const declarations::Order* cur_order = nullptr;
  const declarations::Order* next_order = nullptr;
  uint64_t len_cur = 0, len_next = 0;  // their lengths (n when undeclared)
  bool started = false;
  uint32_t epoch = 0;
  std::vector<uint32_t> read;  // per sample: 1 + the epoch it was last read in
  uint64_t base = 0;           // reads planned before the current epoch
  uint64_t consumed = 0;       // reads in the current epoch
  uint64_t reads = 0;          // every read since the first
  size_t scan = 0;             // current order positions before it are all read (Upcoming)
  size_t ahead = 0;            // ... and before this one read or held, >= scan (Upcoming)
  size_t implied = 0;          // current order positions before it are read (ImplyReads)
  uint64_t first_read_ns = 0;
  uint64_t epoch_start_ns = 0, last_epoch_ns = 0;
  uint64_t load_ns = 0, loads = 0, bytes = 0;
  uint64_t list_bytes = 0, list_sized = 0;  // sizes the samples list gives, and how many
  std::set<uint32_t> sharers;  // indices of the jobs whose samples lists share objects with it
  // What a hit saves it (Future::Line::worth), and the window it is being
  // measured over (Weigh).
  double worth = 1.0;
  uint64_t worth_since = 0, worth_wait = 0, worth_reads = 0;
  EpochCounters current, previous;
  EpochCounters total;  // every epoch's, never reset
  size_t n() const { return samples.size(); }
};

// What the declaration rules need to know of the job.
declarations::JobView DeclaredFuture::View(const Job& j) {
  return {j.n(), j.spec.epochs, j.started ? std::optional(j.epoch) : std::nullopt};
}

DeclaredFuture::DeclaredFuture(uint64_t default_pace_ns) : default_pace_ns_(default_pace_ns) {}
DeclaredFuture::~DeclaredFuture() = default;

DeclaredFuture::Job* DeclaredFuture::Find(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

uint64_t DeclaredFuture::BytesLeft(JobId id) const {
  const Job* j = Find(id);
  if (j == nullptr) return 0;
  uint64_t left = OwnBytesLeft(*j);
  for (uint32_t o : j->sharers) {
    if (by_index_[o] != nullptr) left = std::min(left, OwnBytesLeft(*by_index_[o]));
  }
  return left;
}

std::vector<JobId> DeclaredFuture::Sharers(JobId id) const {
  std::vector<JobId> out;
  const Job* j = Find(id);
  if (j == nullptr) return out;
  for (uint32_t o : j->sharers) {
    if (by_index_[o] != nullptr) out.push_back(by_index_[o]->spec.id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

uint64_t DeclaredFuture::OwnBytesLeft(const Job& job) const {
  const Job* j = &job;
  if (j->spec.epochs == 0) return Policy::kNoLeft;
  const uint64_t later = j->spec.epochs > j->epoch + 1 ? j->spec.epochs - j->epoch - 1 : 0;
  const uint64_t reads = (j->len_cur - std::min(j->consumed, j->len_cur)) + later * j->len_cur;
  const uint64_t mean = j->reads != 0        ? std::max<uint64_t>(1, j->bytes / j->reads)
                        : j->list_sized != 0 ? std::max<uint64_t>(1, j->list_bytes / j->list_sized)
                                             : 1;
  // Saturating: at most n x epochs x mean, each well inside 64 bits in practice.
  if (reads != 0 && mean > (Policy::kNoLeft - 1) / reads) return Policy::kNoLeft - 1;
  return reads * mean;
}

uint32_t DeclaredFuture::IndexOf(JobId id) const {
  const Job* j = Find(id);
  return j ? j->index : 0;
}

Status DeclaredFuture::AddJob(const JobSpec& spec) {
  if (Status s = declarations::CheckNewJob(spec.id, spec.batch_size, jobs_.count(spec.id) != 0);
      !s.ok()) {
    return s;
  }
  auto job = std::make_unique<Job>();
  job->spec = spec;
  if (job->spec.loaders == 0) job->spec.loaders = 1;
  if (free_indices_.empty()) {
    job->index = static_cast<uint32_t>(by_index_.size());
    by_index_.push_back(job.get());
  } else {
    job->index = free_indices_.back();
    free_indices_.pop_back();
    by_index_[job->index] = job.get();
  }
  jobs_.emplace(spec.id, std::move(job));
  return Status::Ok();
}

Status DeclaredFuture::SetSamples(JobId id, std::vector<SampleRef> samples) {
  Job* j = Find(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id));
  if (Status s = declarations::CheckSamples(samples.size(), !j->orders.empty() || j->started);
      !s.ok()) {
    return s;
  }
  DropRefs(*j);
  j->samples = std::move(samples);
  j->read.assign(j->n(), 0);
  j->list_bytes = 0;
  j->list_sized = 0;
  for (const SampleRef& r : j->samples) {
    j->list_bytes += r.size;
    j->list_sized += r.size != 0 ? 1 : 0;
  }
  slot_of_.Reserve(slot_of_.size() + j->n());
  for (uint32_t s = 0; s < j->n(); ++s) AddRef(Touch(j->samples[s].object, now_), {j->index, s});
  Refresh(*j);
  return Status::Ok();
}

Status DeclaredFuture::SetOrder(JobId id, uint32_t epoch, std::vector<uint32_t> order) {
  Job* j = Find(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id));
  Result<bool> stored = j->orders.Declare(View(*j), epoch, std::move(order));
  if (!stored.ok()) return stored.status();
  if (stored.value()) Refresh(*j);
  return Status::Ok();
}

Status DeclaredFuture::BeginEpoch(JobId id, uint32_t epoch, uint64_t now_ns) {
  Job* j = Find(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id));
  if (Status s = declarations::CheckEpochBegins(View(*j), epoch); !s.ok()) return s;
  now_ = std::max(now_, now_ns);
  if (j->started && epoch == j->epoch) return Status::Ok();
  if (j->started && implied_reads_) {
    // The rest of the epoch the job is done with: the kernel served it.
    ImplyBefore(*j, std::numeric_limits<size_t>::max(), nullptr);
  }
  if (j->started) {
    // Positions of the epochs skipped count as planned reads, so that the
    // positions already handed out stay in the past or the future they were.
    j->base += j->len_cur + uint64_t(epoch - j->epoch - 1) * j->n();
    j->last_epoch_ns = now_ns > j->epoch_start_ns ? now_ns - j->epoch_start_ns : 0;
    j->previous = j->current;
  }
  j->started = true;
  j->epoch = epoch;
  j->consumed = 0;
  j->epoch_start_ns = now_ns;
  j->current = EpochCounters{epoch};
  j->orders.DropBefore(epoch);
  Refresh(*j);
  return Status::Ok();
}

Status DeclaredFuture::RestartEpoch(JobId id, uint64_t now_ns) {
  Job* j = Find(id);
  if (j == nullptr) return NotFound("no job " + std::to_string(id));
  if (!j->started) return Status::Ok();
  now_ = std::max(now_, now_ns);
  const uint32_t mark = j->epoch + 1;
  for (uint32_t& r : j->read) {
    if (r == mark) r = 0;
  }
  // Its reads of the epoch happen again: the position goes back, the plan
  // moves forward by what was read (positions handed out stay valid).
  j->base += j->consumed;
  j->consumed = 0;
  j->scan = 0;
  j->ahead = 0;
  j->implied = 0;
  return Status::Ok();
}

Status DeclaredFuture::EndJob(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return NotFound("no job " + std::to_string(id));
  Job& j = *it->second;
  DropRefs(j);
  by_index_[j.index] = nullptr;
  free_indices_.push_back(j.index);
  jobs_.erase(it);
  return Status::Ok();
}

uint32_t DeclaredFuture::Touch(ObjectId object, uint64_t now_ns, uint64_t size) {
  now_ = std::max(now_, now_ns);
  const auto [slot, fresh] = slot_of_.Insert(object, static_cast<uint32_t>(slot_objects_.size()));
  if (fresh) {
    slot_objects_.push_back(object);
    first_ref_.push_back(Ref{});
    slot_size_.push_back(0);
    file_of_.push_back(kNoFile);
  }
  uint64_t& known = slot_size_[slot];
  if (size != 0 && size != known) {
    if (known == 0) ++loaded_size_n_;
    loaded_size_sum_ = loaded_size_sum_ - known + size;
    known = size;
  }
  return slot;
}

size_t DeclaredFuture::Slot(ObjectId object) const {
  const uint32_t slot = slot_of_.Find(object);
  return slot == SlotIndex::kNone ? slot_objects_.size() : slot;
}

void DeclaredFuture::AddRef(size_t slot, Ref r) {
  const uint32_t other = first_ref_[slot].index;
  if (other == 0) {
    first_ref_[slot] = r;
    return;
  }
  // Every job already reading this object shares with the new one (all
  // pairs: three jobs over one dataset are each other's sharers, whichever
  // ends first).
  auto link = [&](uint32_t o) {
    if (o == r.index || by_index_[o] == nullptr || by_index_[r.index] == nullptr) return;
    by_index_[o]->sharers.insert(r.index);
    by_index_[r.index]->sharers.insert(o);
  };
  link(other);
  auto [b, e] = more_refs_.equal_range(static_cast<uint32_t>(slot));
  for (auto it = b; it != e; ++it) link(it->second.index);
  more_refs_.emplace(static_cast<uint32_t>(slot), r);
}

void DeclaredFuture::DropRefs(Job& j) {
  for (uint32_t o : j.sharers) {
    if (by_index_[o] != nullptr) by_index_[o]->sharers.erase(j.index);
  }
  j.sharers.clear();
  for (const SampleRef& s : j.samples) {
    const uint32_t slot = slot_of_.Find(s.object);
    auto [b, e] = more_refs_.equal_range(slot);
    for (auto it = b; it != e;) {
      it = it->second.index == j.index ? more_refs_.erase(it) : std::next(it);
    }
    if (first_ref_[slot].index == j.index) {
      first_ref_[slot] = Ref{};
      auto again = more_refs_.find(slot);
      if (again != more_refs_.end()) {
        first_ref_[slot] = again->second;
        more_refs_.erase(again);
      }
    }
  }
}

void DeclaredFuture::Refresh(Job& j) {
  const size_t n = j.n();
  j.cur_order = j.orders.Get(j.epoch);
  j.next_order = j.orders.Get(j.epoch + 1);
  j.len_cur = j.cur_order != nullptr ? j.cur_order->size() : n;
  j.len_next = j.next_order != nullptr ? j.next_order->size() : n;
  j.scan = 0;
  j.ahead = 0;
  j.implied = 0;
}

// The position of job j's next read of `sample`, false when it has none.
bool DeclaredFuture::UseOf(const Job& j, uint32_t sample, bool spread, uint64_t* pos) const {
  const uint64_t n = j.n();
  const uint32_t e = j.epoch;
  const bool more1 = j.spec.epochs == 0 || e + 1 < j.spec.epochs;  // an epoch after this one
  const bool more2 = j.spec.epochs == 0 || e + 2 < j.spec.epochs;
  if (j.read[sample] != e + 1) {  // not read in the current epoch yet
    if (j.cur_order == nullptr) {
      *pos = j.base + n / 2;
      return true;
    }
    if (PosIn(*j.cur_order, sample) != kNotInOrder) {
      *pos = j.base + PosIn(*j.cur_order, sample);
      return true;
    }
  }
  if (!more1) return false;
  const uint64_t next_base = j.base + j.len_cur;
  if (j.next_order == nullptr) {
    *pos = next_base + n / 2;
    return true;
  }
  if (const uint32_t at = PosIn(*j.next_order, sample); at != kNotInOrder) {
    // Not its declared place: which samples of the next epoch are held does
    // not change how many hit, and a place spread uniformly spreads the hits
    // over the epoch's batches (the misses then overlap compute instead of
    // piling up at the epoch's end while storage idled at its start). Except
    // the epoch's first batch of each loader (LeadOf): nothing is loaded
    // ahead of those, so a miss there is waited for whatever the rest holds.
    const bool spread_it = spread && at >= LeadOf(j);
    *pos = next_base + (spread_it ? Spread(sample, e + 1, j.len_next) : at);
    return true;
  }
  if (!more2) return false;
  *pos = next_base + j.len_next + n / 2;
  return true;
}

bool DeclaredFuture::NextUse(ObjectId object, Use* out) const {
  return FindUse(object, /*may_spread=*/true, out);
}

bool DeclaredFuture::DeclaredUse(ObjectId object, Use* out) const {
  return FindUse(object, /*may_spread=*/false, out);
}

bool DeclaredFuture::FindUse(ObjectId object, bool may_spread, Use* out) const {
  uint32_t slot = slot_of_.Find(object);
  if (slot != SlotIndex::kNone && file_of_[slot] != kNoFile) slot = file_of_[slot];  // a block
  bool found = false;
  uint64_t best = 0;
  // Spread next-epoch places (UseOf) unless several jobs' next orders hold
  // the object: then whose read comes first depends on the exact places. The
  // ranks of a distributed run share the objects, but each epoch's shards are
  // disjoint: one next order holds each, and its place is spread.
  bool spread = may_spread;
  if (spread && slot != SlotIndex::kNone && more_refs_.count(slot) != 0) {
    int declaring = 0;
    auto next_holds = [&](const Ref& r) {
      const Job* j = by_index_[r.index];
      if (j != nullptr && j->next_order != nullptr && j->next_order->Holds(r.sample)) ++declaring;
    };
    next_holds(first_ref_[slot]);
    auto [b, e] = more_refs_.equal_range(slot);
    for (auto it = b; it != e; ++it) next_holds(it->second);
    spread = declaring <= 1;
  }
  auto consider = [&](const Ref& r) {
    const Job* j = by_index_[r.index];
    uint64_t pos = 0;
    if (j == nullptr || !UseOf(*j, r.sample, spread, &pos)) return;
    const Use u{r.index, pos};
    const uint64_t when = Estimate(u, now_);
    if (!found || when < best) {
      found = true;
      best = when;
      *out = u;
    }
  };
  if (slot != SlotIndex::kNone && first_ref_[slot].index != 0) {
    consider(first_ref_[slot]);
    auto [b, e] = more_refs_.equal_range(slot);
    for (auto it = b; it != e; ++it) consider(it->second);
  }
  if (!found) *out = Use{0, kMax - now_};  // unclaimed: least recently used first
  return true;
}

double DeclaredFuture::PaceOf(const Job& j, uint64_t now) const {
  if (j.reads >= kMeasuredReads && now > j.first_read_ns) {
    return double(now - j.first_read_ns) / double(j.reads);
  }
  if (j.spec.compute_ns_per_batch > 0) {
    return std::max(1.0, double(j.spec.compute_ns_per_batch) / double(j.spec.batch_size));
  }
  return double(default_pace_ns_);
}

Future::Line DeclaredFuture::LineOf(uint32_t index, uint64_t now) const {
  Line l;
  l.floor = now;
  if (index == 0 || index >= by_index_.size() || by_index_[index] == nullptr) {
    l.origin = now + kUnclaimedNs;
    l.done = kMax - now;
    l.pace = 1;
    return l;
  }
  const Job& j = *by_index_[index];
  l.origin = now;
  l.done = j.base + j.consumed;
  l.pace = PaceOf(j, now);
  l.worth = j.worth;
  return l;
}

void DeclaredFuture::Link(uint32_t block_slot, ObjectId block, ObjectId file) {
  if (file_of_[block_slot] != kNoFile) return;
  const uint32_t file_slot = Touch(file, now_);
  file_of_[block_slot] = file_slot;
  blocks_.emplace(file_slot, block);
}

void DeclaredFuture::BlocksOf(ObjectId file, std::vector<ObjectId>* out) const {
  const uint32_t slot = slot_of_.Find(file);
  if (slot == SlotIndex::kNone) return;
  auto [b, e] = blocks_.equal_range(slot);
  for (auto it = b; it != e; ++it) out->push_back(it->second);
}

void DeclaredFuture::OnAccess(const Access& a, bool hit, uint64_t load_ns) {
  // A block's size is not a sample's: it stays out of the sizes hints use.
  const uint32_t touched = Touch(a.object, a.now_ns, a.file != 0 ? 0 : a.size);
  if (a.file != 0 && a.file != a.object) Link(touched, a.object, a.file);
  Job* j = Find(a.job);
  if (j == nullptr || j->samples.empty()) return;
  const int64_t s = SampleOf(*j, a);  // a block: its file's sample
  if (s < 0) return;  // not one of its samples
  if (!j->started) {  // reads before the first epoch marker: epoch 0 began
    j->started = true;
    j->epoch_start_ns = a.now_ns;
    j->current = EpochCounters{0};
  }
  // A file read in blocks is one read (the job's pace is per sample): its
  // first block in the epoch.
  if (a.file == 0 || j->read[s] != j->epoch + 1) {
    if (j->reads == 0) j->first_read_ns = a.now_ns;
    ++j->reads;
  }
  if (j->read[s] != j->epoch + 1) {
    j->read[s] = j->epoch + 1;
    ++j->consumed;
  }
  j->current.lower_wait_ns += a.wait_ns;
  j->total.lower_wait_ns += a.wait_ns;
  if (hit) {
    CountHit(a, &j->current);
    CountHit(a, &j->total);
  } else {
    ++j->current.misses;
    ++j->total.misses;
    j->load_ns += load_ns;
    ++j->loads;
  }
  j->bytes += a.size;
  if (weigh_hits_) Weigh(*j, a);
}

void DeclaredFuture::OnRefilled(const Access& a) {
  Job* j = Find(a.job);
  // Counted by OnAccess only as one of a started job's samples.
  if (j == nullptr || j->samples.empty() || !j->started || SampleOf(*j, a) < 0) return;
  CountRefillOfHit(a, &j->current);
  CountRefillOfHit(a, &j->total);
}

// A job's loaders' share of time spent waiting for storage, over windows of
// kWorthReads reads per loader: u = Σ waits / (loaders × the window's time).
// u near 1: every loader waits on storage all the time, and each hit saves
// the job a wait; u well below 1: the loaders wait on the job's compute (it
// hands them batches no faster), and a hit saves the job nothing it would
// notice. worth = the mean of the last windows' u (halved each window),
// bounded below by kMinWorth: a miss still costs the store its bytes, which
// other jobs may be waiting for.
void DeclaredFuture::Weigh(Job& j, const Access& a) {
  if (j.worth_reads == 0) j.worth_since = a.now_ns - std::min(a.now_ns, a.wait_ns);
  j.worth_wait += a.wait_ns;
  if (++j.worth_reads < kWorthReads * uint64_t{j.spec.loaders}) return;
  if (a.now_ns > j.worth_since) {
    const double u = double(j.worth_wait) /
                     (double(j.spec.loaders) * double(a.now_ns - j.worth_since));
    j.worth = 0.5 * j.worth + 0.5 * std::clamp(u, kMinWorth, 1.0);
  }
  j.worth_wait = 0;
  j.worth_reads = 0;
}

// Which of job j's samples access `a` read (a block: its file's), -1 if none.
int64_t DeclaredFuture::SampleOf(const Job& j, const Access& a) const {
  const ObjectId key = a.file != 0 ? a.file : a.object;
  int64_t s = a.sample;
  if (s >= 0 && static_cast<uint64_t>(s) < j.n() && j.samples[s].object == key) return s;
  const uint32_t slot = slot_of_.Find(key);
  if (slot == SlotIndex::kNone) return -1;
  if (first_ref_[slot].index == j.index) return first_ref_[slot].sample;
  auto [b, e] = more_refs_.equal_range(slot);
  for (auto it = b; it != e; ++it) {
    if (it->second.index == j.index) return it->second.sample;
  }
  return -1;
}

// The reads an epoch starts with before any load can overlap compute: the
// first batch of each loader (its loaders start together, with nothing
// loaded ahead, and the compute waits for the first of them).
uint64_t DeclaredFuture::LeadOf(const Job& j) const {
  return uint64_t{std::max<uint32_t>(1, j.spec.loaders)} *
         std::max<uint32_t>(1, j.spec.batch_size);
}

// Loaders read out of order within loaders x 2 batches of the position
// handed out last (PyTorch's prefetch factor 2).
uint64_t DeclaredFuture::WindowOf(const Job& j) const {
  return uint64_t{std::max<uint32_t>(1, j.spec.loaders)} * 2 *
         std::max<uint32_t>(1, j.spec.batch_size);
}

// Counts the positions of j's current order before `limit` it has not read
// as read, and hits; appends their objects to `out` (when given).
void DeclaredFuture::ImplyBefore(Job& j, size_t limit, std::vector<ObjectId>* out) {
  if (j.cur_order == nullptr) return;
  const std::vector<uint32_t>& order = j.cur_order->idx;
  limit = std::min(limit, order.size());
  const uint32_t mark = j.epoch + 1;
  for (; j.implied < limit; ++j.implied) {
    const uint32_t x = order[j.implied];
    if (j.read[x] == mark) continue;
    j.read[x] = mark;
    ++j.consumed;
    ++j.reads;
    ++j.current.hits;
    ++j.total.hits;
    if (out != nullptr) out->push_back(j.samples[x].object);
  }
}

void DeclaredFuture::ImplyReads(const Access& a, std::vector<ObjectId>* out) {
  if (!implied_reads_) return;
  Job* j = Find(a.job);
  if (j == nullptr || j->samples.empty() || j->cur_order == nullptr) return;
  const int64_t s = SampleOf(*j, a);
  if (s < 0 || !j->cur_order->Holds(static_cast<uint32_t>(s))) return;
  const uint64_t window = WindowOf(*j);
  const uint64_t p = PosIn(*j->cur_order, static_cast<uint32_t>(s));
  if (p > window) ImplyBefore(*j, p - window, out);
}

void DeclaredFuture::Progress(JobId id, uint32_t epoch, uint64_t position,
                              std::vector<ObjectId>* out) {
  if (!implied_reads_) return;
  Job* j = Find(id);
  if (j == nullptr || !j->started || j->epoch != epoch || j->samples.empty()) return;
  const uint64_t window = WindowOf(*j);
  if (position > window) ImplyBefore(*j, position - window, out);
}

void DeclaredFuture::Upcoming(size_t per_job, const std::function<bool(ObjectId)>& held,
                              const std::function<bool(ObjectId)>& skip,
                              std::vector<PrefetchHint>* out) {
  for (Job* jp : by_index_) {
    if (jp == nullptr || jp->samples.empty()) continue;
    Job& j = *jp;
    if (j.cur_order == nullptr) continue;  // nothing declared: nothing known ahead
    const std::vector<uint32_t>& order = j.cur_order->idx;
    const uint32_t mark = j.epoch + 1;
    while (j.scan < order.size() && j.read[order[j.scan]] == mark) ++j.scan;
    j.ahead = std::max(j.ahead, j.scan);
    size_t found = 0, looked = 0;
    // Whether sample s is a candidate; `prefix`: the cursor may pass it.
    auto take = [&](uint32_t s, bool* passable) {
      const SampleRef& r = j.samples[s];
      if (held && held(r.object)) return;
      *passable = false;
      if (skip && skip(r.object)) return;
      uint64_t size = r.size;
      if (size == 0) size = slot_size_[slot_of_.Find(r.object)];
      if (size == 0 && loaded_size_n_ != 0) size = loaded_size_sum_ / loaded_size_n_;
      out->push_back({r.object, size, j.spec.id, s});
      ++found;
    };
    bool prefix = true;
    size_t p = j.ahead;
    for (; p < order.size() && found < per_job && looked < kScan; ++p, ++looked) {
      if (j.read[order[p]] != mark) take(order[p], &prefix);
      if (prefix) j.ahead = p + 1;
    }
    const bool more = j.spec.epochs == 0 || j.epoch + 1 < j.spec.epochs;
    const declarations::Order* next = j.next_order;
    if (p < order.size() || !more || next == nullptr) continue;
    bool unused = true;
    for (size_t q = 0; q < next->idx.size() && found < per_job && q < kScanNext; ++q) {
      if (j.read[next->idx[q]] == mark) take(next->idx[q], &unused);
    }
  }
}

bool DeclaredFuture::HeldReadBefore(ObjectId object,
                                    const std::function<bool(ObjectId)>& held) const {
  Use use;
  if (!DeclaredUse(object, &use) || use.job == 0 || use.job >= by_index_.size()) return false;
  const Job* jp = by_index_[use.job];
  if (jp == nullptr || jp->cur_order == nullptr) return true;  // nothing known: assume so
  const Job& j = *jp;
  const uint32_t mark = j.epoch + 1;
  const std::vector<uint32_t>& order = j.cur_order->idx;
  const uint64_t here = use.pos - std::min(use.pos, j.base);  // its place from the epoch's start
  const size_t end = static_cast<size_t>(std::min<uint64_t>(here, order.size()));
  if (end - std::min(end, j.scan) > kScan) return true;
  for (size_t p = j.scan; p < end; ++p) {
    if (j.read[order[p]] != mark && held(j.samples[order[p]].object)) return true;
  }
  if (here < order.size()) return false;
  // Read in a later epoch: the next order's samples before its place that
  // this epoch has read already (those not read yet were looked at above).
  if (j.next_order == nullptr) return true;
  const std::vector<uint32_t>& next = j.next_order->idx;
  const size_t in_next = static_cast<size_t>(here - order.size());
  if (in_next > kScan) return true;
  for (size_t q = 0; q < std::min(in_next, next.size()); ++q) {
    if (held(j.samples[next[q]].object)) return true;
  }
  return false;
}

void DeclaredFuture::Evicted(const std::vector<ObjectId>& objects) {
  for (ObjectId o : objects) {
    const uint32_t slot = slot_of_.Find(o);
    if (slot == SlotIndex::kNone) continue;
    auto back = [&](const Ref& r) {
      Job* j = r.index < by_index_.size() ? by_index_[r.index] : nullptr;
      if (j == nullptr || j->cur_order == nullptr || !j->cur_order->Holds(r.sample)) return;
      if (j->read[r.sample] == j->epoch + 1) return;  // read already: not ahead
      j->ahead = std::min<size_t>(j->ahead, PosIn(*j->cur_order, r.sample));
    };
    if (first_ref_[slot].index != 0) back(first_ref_[slot]);
    auto [b, e] = more_refs_.equal_range(slot);
    for (auto it = b; it != e; ++it) back(it->second);
  }
}

std::vector<ObjectId> DeclaredFuture::ObjectsOf(JobId id) const {
  std::vector<ObjectId> out;
  if (const Job* j = Find(id)) {
    out.reserve(j->n());
    for (const SampleRef& s : j->samples) out.push_back(s.object);
  }
  return out;
}

std::vector<JobSnapshot> DeclaredFuture::Snapshots(
    const std::vector<uint64_t>& bytes_by_index) const {
  std::vector<JobSnapshot> out;
  out.reserve(jobs_.size());
  for (const auto& [id, jp] : jobs_) {
    const Job& j = *jp;
    JobSnapshot s;
    s.id = id;
    s.name = j.spec.name;
    const bool last = j.spec.epochs > 0 && j.epoch + 1 >= j.spec.epochs;
    s.state = last ? JobState::kLastEpoch : JobState::kCaching;
    s.started = j.started;
    s.epoch = j.epoch;
    s.epochs = j.spec.epochs;
    s.batch = j.consumed / j.spec.batch_size;
    s.epoch_samples = j.len_cur;
    s.current = j.current;
    s.previous = j.previous;
    s.total = j.total;
    // Bytes held because this job reads them next.
    s.cur_bytes = j.index < bytes_by_index.size() ? bytes_by_index[j.index] : 0;
    s.epoch_time_ns = j.last_epoch_ns;
    s.load_ns_per_sample = j.loads ? j.load_ns / j.loads : 0;
    s.compute_ns_per_batch = j.spec.compute_ns_per_batch;
    s.mean_sample_bytes = j.reads ? j.bytes / j.reads : 0;
    s.hit_worth = j.worth;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace epochfs::cache
