// NeedWatch: logs one warning each time the jobs' cache need, summed
// (cache/cache_need.h), goes over the budget, and a note when it falls back
// under. Reads the policy under the cache front's lock.
// Thread safety: Tick from one thread (the orphan reaper's).
#pragma once

#include "epochfs/store/cache_front.h"

namespace epochfs {

class NeedWatch {
 public:
  explicit NeedWatch(store::CacheFront& cf) : cf_(cf) {}
  void Tick();

 private:
  store::CacheFront& cf_;
  bool over_ = false;
};

}  // namespace epochfs
