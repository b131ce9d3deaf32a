// DeclaredFuture: the future as the jobs declared it, for the "future" policy.
//
// It follows each registered job through the events the daemon shows every
// policy (AddJob, SetSamples, SetOrder, BeginEpoch, accesses, EndJob) and
// answers cache::Future's questions from them:
//   - a sample not yet read in the current epoch is next read at its place in
//     the current order; one already read, at its place in the next epoch's
//     order (NextUse spreads that place uniformly over the epoch, except for
//     the epoch's first batch of each loader; DeclaredUse gives the declared
//     place); past the declared orders (the next order not declared yet, or a
//     sample the next order leaves out while more epochs follow) at the middle
//     of the first undeclared epoch: an estimate, refined when it is declared;
//   - a job's position is its reads so far (positions count every epoch's
//     reads from the job's start), its pace the time per read measured since
//     its first read (before 64 reads: the reported compute per sample, else
//     `default_pace_ns`);
//   - an object read by several jobs (a shared dataset) is next read by the
//     job whose read is estimated to come first;
//   - a block of a file (Access::file) is next read when its file is; the
//     file's first block read in an epoch moves the job on, the others not;
//   - an object no live job will read (no job's sample, or a job done with
//     it) belongs to job index 0, "unclaimed": ranked after every claimed
//     object, least recently used first, so reads nobody declared use only
//     the space the declared future leaves idle.
// Job indices 1.. are reused after a job ends.
//
// Errors are for the job's `status` file and change nothing, as the epoch
// policy's: the same rules (include/epochfs/declarations/), the same store of
// orders (DeclaredOrders).
// Thread safety: not thread-safe; the policy serialises every call.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "epochfs/cache/future.h"
#include "epochfs/cache/policy.h"
#include "epochfs/cache/slot_index.h"
#include "epochfs/declarations/declaration_rules.h"

namespace epochfs::cache {

class DeclaredFuture final : public Future {
 public:
  explicit DeclaredFuture(uint64_t default_pace_ns);
  ~DeclaredFuture() override;

  Status AddJob(const JobSpec& spec);
  Status SetSamples(JobId id, std::vector<SampleRef> samples);
  Status SetOrder(JobId id, uint32_t epoch, std::vector<uint32_t> order);
  Status BeginEpoch(JobId id, uint32_t epoch, uint64_t now_ns);
  Status RestartEpoch(JobId id, uint64_t now_ns);
  Status EndJob(JobId id);

  // Gives `object` a slot (idempotent); every object the cache sees goes
  // through here first. `now_ns` is the latest event's time; `size`, when
  // not 0, the object's size as loaded (a samples list may not give sizes:
  // SampleRef::size 0; Upcoming then hints the size learned here).
  // Returns the object's slot.
  uint32_t Touch(ObjectId object, uint64_t now_ns, uint64_t size = 0);
  // An access attributed (or not) to a job: its counters and position.
  void OnAccess(const Access& a, bool hit, uint64_t load_ns);
  // Hit `a`, told to OnAccess, was a refill after all (Policy::OnRefilled):
  // its job's counters move it from hits to refills.
  void OnRefilled(const Access& a);
  // Implied reads (set_implied_reads): reads the cache never hears of, the
  // kernel's hits of a mount without OPEN (fuse.no_open). After OnAccess(a),
  // when `a` is job J's sample at position p of its current declared order,
  // the samples before position p - W (W = loaders x 2 x batch size, the
  // window in which loaders read out of order) that J has not read in this
  // epoch are counted as read, and as hits (what the kernel served it held);
  // their objects are appended to `out` (their next use moved to a later
  // epoch). Amortized O(1) per access: each position is passed once per
  // epoch. Does nothing when implied reads are off.
  void ImplyReads(const Access& a, std::vector<ObjectId>* out);
  // A job's own report of its progress (the `position` control file): job
  // `id` has handed out the first `position` samples of epoch `epoch`'s
  // declared order to its loaders. With implied reads on, the samples before
  // position - W it has not read count as read and as hits, as in ImplyReads
  // (a hot epoch sends no read at all: without reports the cache would hear
  // of none of its hits); their objects are appended to `out`. A report for
  // another epoch than the job's current one, of an unknown job or of an
  // epoch without a declared order changes nothing (the control layer
  // validates reports); so does any report with implied reads off (every
  // read then reaches the cache). Amortized O(1) per position, as ImplyReads.
  // With implied reads on, BeginEpoch also counts the samples of the epoch
  // it ends that the job did not read as read and hits: the job says it is
  // done with that epoch, and every read the cache did not see the kernel
  // served.
  void Progress(JobId id, uint32_t epoch, uint64_t position, std::vector<ObjectId>* out);
  void set_implied_reads(bool on) { implied_reads_ = on; }
  // Weighs each job's hits by what they save it (Future::Line::worth,
  // measured from Access::wait_ns and the job's loaders; see Weigh in the
  // .cc). Off: every job's worth is 1.
  void set_weigh_hits(bool on) { weigh_hits_ = on; }
  static constexpr uint64_t kWorthReads = 32;  // per loader, per window
  static constexpr double kMinWorth = 0.25;
  // Appends, for every job with a declared current order, up to `per_job`
  // samples it has not read yet in the order it will read them (the rest of
  // the current order, then the next order's samples already read in this
  // epoch), leaving out those `held` (resident) or `skip`ped. A hint's size
  // is the list's, else the size last loaded, else the mean of the sizes
  // loaded so far, else 0 (nothing known yet); at most kScan
  // positions looked at per job. For prefetch. Amortized O(per_job + skipped)
  // per call: a cursor per job passes the leading samples already read or
  // held once, and goes back when one of them is evicted (Evicted).
  static constexpr size_t kScan = 2048;
  static constexpr size_t kScanNext = 256;
  void Upcoming(size_t per_job, const std::function<bool(ObjectId)>& held,
                const std::function<bool(ObjectId)>& skip, std::vector<PrefetchHint>* out);
  // Whether an object `held` is read, by the job that reads `object` first,
  // before that read (its declared place): such an object moves on to a
  // later read when it is read, and may then be the better one to evict, so
  // a load ahead of `object` may not displace anything yet (the prefetch
  // rule, FuturePolicy). Reads of other jobs are not looked at. True as well
  // when more than kScan positions would have to be looked at; false for an
  // object no job reads. O(positions looked at).
  bool HeldReadBefore(ObjectId object, const std::function<bool(ObjectId)>& held) const;
  // `objects` left the cache (Upcoming's cursors go back to them).
  void Evicted(const std::vector<ObjectId>& objects);
  // The objects of job `id`'s sample list (empty if unknown).
  std::vector<ObjectId> ObjectsOf(JobId id) const;
  // Appends the blocks of `file` seen so far (Access::file).
  void BlocksOf(ObjectId file, std::vector<ObjectId>* out) const;
  // Status figures; `bytes_by_index` from NextUseCache::BytesByJob.
  std::vector<JobSnapshot> Snapshots(const std::vector<uint64_t>& bytes_by_index) const;
  // Bytes job `id` has left to read by its declaration (ReadOrder::BytesLeft):
  // the reads left in its current epoch and in its later epochs (every
  // sample once each), at the mean size of what it read so far, else of its
  // samples list's sizes, else 1 byte; Policy::kNoLeft when its epochs are
  // unknown. Jobs whose samples lists share objects (a shared dataset) share
  // the least of their figures: a load of one serves the others, and held
  // back they would lose that. 0 for an unknown job. O(jobs sharing).
  uint64_t BytesLeft(JobId id) const;
  // The ids of the jobs sharing objects with job `id` (Policy::Sharers),
  // sorted; empty for an unknown job.
  std::vector<JobId> Sharers(JobId id) const;
  // The Future index of job `id`, 0 if unknown.
  uint32_t IndexOf(JobId id) const;

  size_t Slots() const override { return slot_objects_.size(); }
  size_t Slot(ObjectId object) const override;
  bool NextUse(ObjectId object, Use* out) const override;
  bool DeclaredUse(ObjectId object, Use* out) const override;
  size_t Jobs() const override { return by_index_.size(); }
  Line LineOf(uint32_t job, uint64_t now) const override;

 private:
  struct Job;
  static declarations::JobView View(const Job& j);
  struct Ref {
    uint32_t index = 0;  // the job's Future index, 0: none
    uint32_t sample = 0;
  };
  Job* Find(JobId id) const;
  void Refresh(Job& j);
  bool UseOf(const Job& j, uint32_t sample, bool spread, uint64_t* pos) const;
  bool FindUse(ObjectId object, bool may_spread, Use* out) const;
  double PaceOf(const Job& j, uint64_t now) const;
  void AddRef(size_t slot, Ref r);
  void Link(uint32_t block_slot, ObjectId block, ObjectId file);
  void DropRefs(Job& j);
  uint64_t OwnBytesLeft(const Job& j) const;
  int64_t SampleOf(const Job& j, const Access& a) const;
  uint64_t WindowOf(const Job& j) const;
  uint64_t LeadOf(const Job& j) const;
  void Weigh(Job& j, const Access& a);
  void ImplyBefore(Job& j, size_t limit, std::vector<ObjectId>* out);

  uint64_t default_pace_ns_;
  bool implied_reads_ = false;
  bool weigh_hits_ = false;
  uint64_t now_ = 0;
  std::map<JobId, std::unique_ptr<Job>> jobs_;
  std::vector<Job*> by_index_{nullptr};  // index 0: unclaimed
  std::vector<uint32_t> free_indices_;
  SlotIndex slot_of_;
  std::vector<ObjectId> slot_objects_;
  std::vector<Ref> first_ref_;                       // by slot
  std::vector<uint64_t> slot_size_;                  // by slot: size last loaded, 0: unknown
  uint64_t loaded_size_sum_ = 0;                     // over slots with a size
  uint64_t loaded_size_n_ = 0;
  std::unordered_multimap<uint32_t, Ref> more_refs_;  // slot → further refs (shared datasets)
  static constexpr uint32_t kNoFile = ~uint32_t{0};
  std::vector<uint32_t> file_of_;                         // by slot: a block's file's slot
  std::unordered_multimap<uint32_t, ObjectId> blocks_;   // file's slot → its blocks
};

}  // namespace epochfs::cache
