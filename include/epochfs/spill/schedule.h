// Seed 001's window rule, as a pure function: given a job's spill schedule
// (the spill file each step uses, in order of use) and the step it has just
// finished, which files to bring into RAM and which to write out of it.
//
// A schedule repeats (a training iteration is forward then backward over the
// same layers, again and again), so windows are cyclic: after the last step
// come steps 0, 1, ... of the next iteration.
//   prefetch: the files of steps k+1 .. k+num_prefetch, in order of use;
//   writeout: every other file of the schedule that no step in
//             k+1 .. k+num_writeout uses, in schedule order.
// A file in the prefetch window is never written out, whatever num_writeout.
// finished = -1 means "nothing done yet": the windows start at step 0.
// Each file appears at most once in each list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace epochfs::spill {

struct SchedulePlan {
  std::vector<std::string> prefetch;
  std::vector<std::string> writeout;
};

// REQUIRES: -1 <= finished < schedule.size() (an empty schedule gives an empty plan).
SchedulePlan PlanAfterStep(const std::vector<std::string>& schedule, int64_t finished,
                           uint32_t num_prefetch, uint32_t num_writeout);

}  // namespace epochfs::spill
