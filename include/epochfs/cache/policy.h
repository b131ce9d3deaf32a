// Policy: decides which dataset objects stay resident in the RAM store.
//
// A Policy is pure logic: no FUSE, no I/O, no clocks of its own (time comes in
// the events), deterministic for a given event sequence. The same code runs in
// the daemon, the unit tests and the simulator.
//
// The caller (the daemon's cache front, src/daemon/cache_front.cc) reports one
// event per object access (a read-open of a dataset file) and applies the
// returned Decision to the store: first the evictions, then the admission.
// Space is counted in bytes; an object is a whole file.
//
// Thread safety: not thread-safe. The caller serialises every call.
//
// Contract the caller relies on, and that tests check for every policy:
//   - the bytes of objects the policy holds as resident never exceed budget();
//   - a Decision never evicts an object the policy did not hold, and never
//     admits an object it already holds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::cache {

// Stable id of a dataset object for the life of a mount (the daemon's inode
// number of the lower file).
using ObjectId = uint64_t;

// Registered job; kNoJob marks an access that could not be attributed.
using JobId = uint32_t;
inline constexpr JobId kNoJob = 0;

// One access to one object, as seen by the daemon.
struct Access {
  ObjectId object = 0;
  uint64_t size = 0;     // bytes of the whole object
  JobId job = kNoJob;    // attributed job, or kNoJob
  int64_t sample = -1;   // index in the job's sample list, or -1 when unknown
  uint64_t now_ns = 0;   // monotonic time of the access
};

// What the caller must do after an event, in this order: drop `evict` from the
// store, then (misses only) insert the loaded object when `admit`.
struct Decision {
  bool admit = false;
  std::vector<ObjectId> evict;
};

// Description of a registered job (control protocol, .epochfs/jobs/NAME/config).
struct JobSpec {
  JobId id = kNoJob;
  std::string name;
  uint32_t batch_size = 0;
  uint32_t epochs = 0;
  uint32_t loaders = 1;
};

// One entry of a job's sample list: the object behind sample k.
struct SampleRef {
  ObjectId object = 0;
  uint64_t size = 0;
};

class Policy {
 public:
  virtual ~Policy() = default;

  virtual const char* name() const = 0;
  // Byte budget this policy was built with.
  virtual uint64_t budget() const = 0;
  // Bytes of the objects the policy currently holds as resident.
  virtual uint64_t resident_bytes() const = 0;

  // `a.object` was resident in the store when accessed.
  virtual Decision OnHit(const Access& a) = 0;
  // `a.object` was not resident; it was loaded from lower storage in load_ns.
  virtual Decision OnMiss(const Access& a, uint64_t load_ns) = 0;
  // The store lost `id` outside the policy's decisions (invalidation after a
  // lower change, a refused insert, a checksum failure). The policy forgets it.
  virtual void OnDropped(ObjectId id) = 0;

  // Job lifecycle. Job-blind policies (LRU) accept and ignore these.
  virtual Status AddJob(const JobSpec& /*spec*/) { return Status::Ok(); }
  virtual Status SetSamples(JobId /*job*/, std::vector<SampleRef> /*samples*/) {
    return Status::Ok();
  }
  // Declares epoch `epoch`'s order: indices into the sample list.
  virtual Status SetOrder(JobId /*job*/, uint32_t /*epoch*/, std::vector<uint32_t> /*order*/) {
    return Status::Ok();
  }
  virtual Decision BeginEpoch(JobId /*job*/, uint32_t /*epoch*/, uint64_t /*now_ns*/) {
    return {};
  }
  // The job ended (rmdir): everything it holds is released.
  virtual Decision EndJob(JobId /*job*/) { return {}; }
};

// Least-recently-used over all accesses, job-blind: admit every miss that fits
// the budget, evicting the least recently accessed objects first. Objects
// larger than the budget are never admitted.
std::unique_ptr<Policy> MakeLruPolicy(uint64_t budget_bytes);

}  // namespace epochfs::cache
