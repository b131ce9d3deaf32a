#include "epochfs/trace/trace_event.h"

#include <limits>
#include <nlohmann/json.hpp>

namespace epochfs::trace {
namespace {

using nlohmann::json;

constexpr std::pair<TraceKind, const char*> kNames[] = {
    {TraceKind::kStart, "start"},
    {TraceKind::kAddJob, "add_job"},
    {TraceKind::kSamples, "samples"},
    {TraceKind::kOrder, "order"},
    {TraceKind::kBeginEpoch, "begin_epoch"},
    {TraceKind::kRestartEpoch, "restart_epoch"},
    {TraceKind::kEndJob, "end_job"},
    {TraceKind::kBudget, "budget"},
    {TraceKind::kHit, "hit"},
    {TraceKind::kMiss, "miss"},
    {TraceKind::kDropped, "dropped"},
    {TraceKind::kPrefetch, "prefetch"},
    {TraceKind::kRequestBytes, "request_bytes"},
    {TraceKind::kProgress, "progress"},
    {TraceKind::kRefilled, "refilled"},
};

const char* NameOf(TraceKind k) {
  for (const auto& [kind, name] : kNames) {
    if (kind == k) return name;
  }
  return "?";
}

// Reads the fields of one line's object; the first error sticks.
class Fields {
 public:
  Fields(const json& j, size_t line_no) : j_(j), line_(line_no) {}

  uint64_t U64(const char* key, uint64_t max = std::numeric_limits<uint64_t>::max()) {
    const json* v = Get(key);
    if (v == nullptr) return 0;
    if (!v->is_number_unsigned() || v->get<uint64_t>() > max) {
      Fail(std::string(key) + ": expected an integer in [0, " + std::to_string(max) + "]");
      return 0;
    }
    return v->get<uint64_t>();
  }
  int64_t I64(const char* key) {
    const json* v = Get(key);
    if (v == nullptr) return 0;
    if (!v->is_number_integer()) {
      Fail(std::string(key) + ": expected an integer");
      return 0;
    }
    return v->get<int64_t>();
  }
  bool Bool(const char* key) {
    const json* v = Get(key);
    if (v == nullptr) return false;
    if (!v->is_boolean()) {
      Fail(std::string(key) + ": expected true or false");
      return false;
    }
    return v->get<bool>();
  }
  std::string Str(const char* key) {
    const json* v = Get(key);
    if (v == nullptr) return {};
    if (!v->is_string()) {
      Fail(std::string(key) + ": expected a string");
      return {};
    }
    return v->get<std::string>();
  }
  template <typename T>
  std::vector<T> Array(const char* key, uint64_t max) {
    const json* v = Get(key);
    std::vector<T> out;
    if (v == nullptr) return out;
    if (!v->is_array()) {
      Fail(std::string(key) + ": expected an array");
      return out;
    }
    out.reserve(v->size());
    for (const json& x : *v) {
      if (!x.is_number_unsigned() || x.get<uint64_t>() > max) {
        Fail(std::string(key) + ": expected integers in [0, " + std::to_string(max) + "]");
        return {};
      }
      out.push_back(static_cast<T>(x.get<uint64_t>()));
    }
    return out;
  }
  void Fail(const std::string& what) {
    if (status_.ok()) status_ = InvalidArgument("trace line " + std::to_string(line_) + ": " + what);
  }
  const Status& status() const { return status_; }
  bool Has(const char* key) const { return j_.contains(key); }

 private:
  const json* Get(const char* key) {
    auto it = j_.find(key);
    if (it == j_.end()) {
      Fail(std::string(key) + ": missing");
      return nullptr;
    }
    return &*it;
  }
  const json& j_;
  size_t line_;
  Status status_;
};

constexpr uint64_t kMaxJob = std::numeric_limits<cache::JobId>::max();
constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

}  // namespace

std::string FormatTraceEvent(const TraceEvent& e) {
  json j;
  j["ev"] = NameOf(e.kind);
  switch (e.kind) {
    case TraceKind::kStart:
      j["policy"] = e.policy;
      j["budget"] = e.budget;
      j["request_bytes"] = e.request_bytes;
      j["weigh_hits"] = e.weigh_hits;
      j["format"] = kTraceFormat;
      break;
    case TraceKind::kAddJob:
      j["job"] = e.spec.id;
      j["name"] = e.spec.name;
      j["batch_size"] = e.spec.batch_size;
      j["epochs"] = e.spec.epochs;
      j["loaders"] = e.spec.loaders;
      j["compute_ns"] = e.spec.compute_ns_per_batch;
      break;
    case TraceKind::kSamples: {
      j["job"] = e.job;
      json objects = json::array(), sizes = json::array();
      for (const cache::SampleRef& s : e.samples) {
        objects.push_back(s.object);
        sizes.push_back(s.size);
      }
      j["objects"] = std::move(objects);
      j["sizes"] = std::move(sizes);
      break;
    }
    case TraceKind::kOrder:
      j["job"] = e.job;
      j["epoch"] = e.epoch;
      j["order"] = e.order;
      break;
    case TraceKind::kBeginEpoch:
      j["job"] = e.job;
      j["epoch"] = e.epoch;
      j["t"] = e.now_ns;
      break;
    case TraceKind::kRestartEpoch:
      j["job"] = e.job;
      j["t"] = e.now_ns;
      break;
    case TraceKind::kEndJob:
      j["job"] = e.job;
      break;
    case TraceKind::kBudget:
      j["budget"] = e.budget;
      break;
    case TraceKind::kRequestBytes:
      j["bytes"] = e.request_bytes;
      break;
    case TraceKind::kProgress:
      j["job"] = e.job;
      j["epoch"] = e.epoch;
      j["position"] = e.position;
      j["t"] = e.now_ns;
      break;
    case TraceKind::kHit:
    case TraceKind::kMiss:
    case TraceKind::kPrefetch:
      j["o"] = e.access.object;
      j["size"] = e.access.size;
      j["job"] = e.access.job;
      j["sample"] = e.access.sample;
      j["t"] = e.access.now_ns;
      if (e.access.file != 0) j["file"] = e.access.file;  // a block of this file
      if (e.kind != TraceKind::kHit) j["load_ns"] = e.load_ns;
      if (e.kind != TraceKind::kPrefetch && e.access.wait_ns != 0) j["wait_ns"] = e.access.wait_ns;
      if (e.kind == TraceKind::kHit && e.access.served == cache::Access::Served::kJoined) {
        j["served"] = "joined";
      } else if (e.kind == TraceKind::kHit && e.access.served == cache::Access::Served::kRefill) {
        j["served"] = "refill";
      }
      break;
    case TraceKind::kRefilled:
      j["o"] = e.access.object;
      j["size"] = e.access.size;
      j["job"] = e.access.job;
      j["sample"] = e.access.sample;
      j["t"] = e.access.now_ns;
      if (e.access.file != 0) j["file"] = e.access.file;
      if (e.access.wait_ns != 0) j["wait_ns"] = e.access.wait_ns;
      break;
    case TraceKind::kDropped:
      j["o"] = e.access.object;
      break;
  }
  // Job names are checked ASCII on a mount; replace anything else rather
  // than throw under the policy's lock.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<TraceEvent> ParseTraceEvent(std::string_view line, size_t line_no) {
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  const std::string where = "trace line " + std::to_string(line_no) + ": ";
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + "not a JSON object");
  Fields f(j, line_no);
  const std::string ev = f.Str("ev");
  if (!f.status().ok()) return f.status();
  TraceEvent e;
  bool known = false;
  for (const auto& [kind, name] : kNames) {
    if (ev == name) {
      e.kind = kind;
      known = true;
    }
  }
  if (!known) return InvalidArgument(where + "unknown event \"" + ev + "\"");
  switch (e.kind) {
    case TraceKind::kStart: {
      e.policy = f.Str("policy");
      e.budget = f.U64("budget");
      const uint64_t format = f.U64("format");
      if ((format < 2 || format > static_cast<uint64_t>(kTraceFormat)) && f.status().ok()) {
        f.Fail("format: this epochfs reads formats 2 to " + std::to_string(kTraceFormat));
      }
      e.request_bytes = f.U64("request_bytes");
      if (format >= 3) e.weigh_hits = f.Bool("weigh_hits");
      break;
    }
    case TraceKind::kAddJob:
      e.spec.id = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      e.spec.name = f.Str("name");
      e.spec.batch_size = static_cast<uint32_t>(f.U64("batch_size", kMaxU32));
      e.spec.epochs = static_cast<uint32_t>(f.U64("epochs", kMaxU32));
      e.spec.loaders = static_cast<uint32_t>(f.U64("loaders", kMaxU32));
      e.spec.compute_ns_per_batch = f.U64("compute_ns");
      break;
    case TraceKind::kSamples: {
      e.job = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      const auto objects = f.Array<uint64_t>("objects", std::numeric_limits<uint64_t>::max());
      const auto sizes = f.Array<uint64_t>("sizes", std::numeric_limits<uint64_t>::max());
      if (f.status().ok() && objects.size() != sizes.size()) {
        f.Fail("objects and sizes differ in length");
      }
      for (size_t i = 0; i < objects.size() && i < sizes.size(); ++i) {
        e.samples.push_back({objects[i], sizes[i]});
      }
      break;
    }
    case TraceKind::kOrder:
      e.job = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      e.epoch = static_cast<uint32_t>(f.U64("epoch", kMaxU32));
      e.order = f.Array<uint32_t>("order", kMaxU32);
      break;
    case TraceKind::kBeginEpoch:
      e.job = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      e.epoch = static_cast<uint32_t>(f.U64("epoch", kMaxU32));
      e.now_ns = f.U64("t");
      break;
    case TraceKind::kRestartEpoch:
      e.job = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      e.now_ns = f.U64("t");
      break;
    case TraceKind::kEndJob:
      e.job = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      break;
    case TraceKind::kBudget:
      e.budget = f.U64("budget");
      break;
    case TraceKind::kRequestBytes:
      e.request_bytes = f.U64("bytes");
      break;
    case TraceKind::kProgress:
      e.job = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      e.epoch = static_cast<uint32_t>(f.U64("epoch", kMaxU32));
      e.position = f.U64("position");
      e.now_ns = f.U64("t");
      break;
    case TraceKind::kHit:
    case TraceKind::kMiss:
    case TraceKind::kPrefetch:
      e.access.object = f.U64("o");
      e.access.size = f.U64("size");
      e.access.job = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      e.access.sample = f.I64("sample");
      e.access.now_ns = f.U64("t");
      if (f.Has("file")) e.access.file = f.U64("file");  // optional: blocks only
      if (e.kind != TraceKind::kHit) e.load_ns = f.U64("load_ns");
      if (e.kind != TraceKind::kPrefetch && f.Has("wait_ns")) e.access.wait_ns = f.U64("wait_ns");
      if (e.kind == TraceKind::kHit && f.Has("served")) {  // format 4: hits that waited
        const std::string served = f.Str("served");
        if (served == "joined") {
          e.access.served = cache::Access::Served::kJoined;
        } else if (served == "refill") {
          e.access.served = cache::Access::Served::kRefill;
        } else if (f.status().ok()) {
          f.Fail("served must be \"joined\" or \"refill\"");
        }
      }
      break;
    case TraceKind::kRefilled:
      e.access.object = f.U64("o");
      e.access.size = f.U64("size");
      e.access.job = static_cast<cache::JobId>(f.U64("job", kMaxJob));
      e.access.sample = f.I64("sample");
      e.access.now_ns = f.U64("t");
      if (f.Has("file")) e.access.file = f.U64("file");
      if (f.Has("wait_ns")) e.access.wait_ns = f.U64("wait_ns");
      e.access.served = cache::Access::Served::kRefill;
      break;
    case TraceKind::kDropped:
      e.access.object = f.U64("o");
      break;
  }
  if (!f.status().ok()) return f.status();
  return e;
}

Result<std::vector<TraceEvent>> ParseTrace(std::string_view text) {
  std::vector<TraceEvent> out;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto e = ParseTraceEvent(line, line_no);
    if (!e.ok()) return e.status();
    if (out.empty() && e.value().kind != TraceKind::kStart) {
      return InvalidArgument("trace line " + std::to_string(line_no) +
                             ": a trace begins with a \"start\" event");
    }
    out.push_back(std::move(e).value());
  }
  if (out.empty()) return InvalidArgument("the trace is empty");
  return out;
}

}  // namespace epochfs::trace
