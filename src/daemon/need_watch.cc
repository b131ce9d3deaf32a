#include "need_watch.h"

#include "epochfs/cache/cache_need.h"
#include "epochfs/common/log.h"

namespace epochfs {

void NeedWatch::Tick() {
  cache::CacheNeed need;
  cf_.ReadPolicy([&](const cache::Policy& p) { need = cache::SumCacheNeed(p); });
  if (need.over && !over_) log::Warn(need.LogLine());
  if (!need.over && over_) {
    log::Info("cache need " + std::to_string(need.total_bytes) + " bytes fits the budget again");
  }
  over_ = need.over;
}

}  // namespace epochfs
