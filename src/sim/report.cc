#include "epochfs/sim/report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "epochfs/common/bytes_text.h"

namespace epochfs::sim {
namespace {

double Sec(uint64_t ns) { return double(ns) / 1e9; }

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string Bytes(uint64_t b) { return HumanBytes(b, 2); }

std::string Pad(const std::string& s, size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

const char* DistName(SizeSpec::Dist d) {
  switch (d) {
    case SizeSpec::Dist::kFixed:
      return "fixed";
    case SizeSpec::Dist::kUniform:
      return "uniform";
    case SizeSpec::Dist::kLognormal:
      return "lognormal";
  }
  return "?";
}

}  // namespace

std::string FormatTable(const Trace& trace, const std::string& origin,
                        const std::vector<RunResult>& runs) {
  const Workload& w = trace.workload();
  std::string out;
  out += "workload " + origin + ": seed " + std::to_string(w.seed) + ", " +
         std::to_string(w.jobs.size()) + " job(s), distinct data " + Bytes(trace.distinct_bytes()) +
         ", budget " + Bytes(trace.budget()) +
         Fmt(" (%.1f%%)", trace.distinct_bytes()
                              ? 100.0 * double(trace.budget()) / double(trace.distinct_bytes())
                              : 0.0) +
         "\nstorage: " + Bytes(static_cast<uint64_t>(w.storage.bandwidth)) + "/s, " +
         Fmt("%g ms", w.storage.latency_ms) + ", " + std::to_string(w.storage.concurrency) +
         " in flight" + (w.storage.iops > 0 ? Fmt(", %g iops", w.storage.iops) : std::string()) +
         "\n";
  if (w.disk.enabled()) {
    out += "disk tier: " + Bytes(trace.disk_budget()) + ", " +
           Bytes(static_cast<uint64_t>(w.disk.bandwidth)) + "/s, " +
           Fmt("%g ms", w.disk.latency_ms) + " per read\n";
  }
  out += "\n";
  const size_t jw = 8;
  out += Pad("policy", 8) + Pad("job", jw) + Pad("accesses", 11, true) + Pad("hits", 11, true) +
         Pad("hit%", 7, true) + Pad("stall_s", 10, true) + Pad("done_s", 10, true) +
         "  epoch times (s)\n";
  for (const RunResult& r : runs) {
    for (const JobResult& j : r.jobs) {
      std::string epochs;
      for (const EpochResult& e : j.epochs)
        epochs += (epochs.empty() ? "" : " ") + Fmt("%.1f", Sec(e.time_ns));
      out += Pad(r.policy, 8) + Pad(j.name, jw) + Pad(std::to_string(j.accesses), 11, true) +
             Pad(std::to_string(j.hits), 11, true) +
             Pad(Fmt("%.1f", 100 * j.hit_ratio()), 7, true) +
             Pad(Fmt("%.2f", Sec(j.stall_ns)), 10, true) +
             Pad(Fmt("%.2f", Sec(j.completion_ns)), 10, true) + "  " + epochs + "\n";
    }
  }
  out += "\n" + Pad("policy", 8) + Pad("makespan_s", 12, true) + Pad("stall_s", 12, true) +
         Pad("hit%", 7, true) + Pad("read", 12, true) + Pad("evictions", 11, true) +
         Pad("prefetched", 12, true) + "\n";
  for (const RunResult& r : runs) {
    out += Pad(r.policy, 8) + Pad(Fmt("%.2f", Sec(r.makespan_ns)), 12, true) +
           Pad(Fmt("%.2f", Sec(r.total_stall_ns)), 12, true) +
           Pad(Fmt("%.1f", 100 * r.hit_ratio()), 7, true) + Pad(Bytes(r.bytes_read), 12, true) +
           Pad(std::to_string(r.evictions), 11, true) +
           Pad(std::to_string(r.prefetched), 12, true) + "\n";
  }
  if (!w.disk.enabled()) return out;
  out += "\n" + Pad("policy", 8) + Pad("disk_reads", 12, true) + Pad("disk_read", 12, true) +
         Pad("writes", 10, true) + Pad("written", 12, true) + Pad("skipped", 10, true) +
         Pad("evictions", 11, true) + "\n";
  for (const RunResult& r : runs) {
    out += Pad(r.policy, 8) + Pad(std::to_string(r.disk.reads), 12, true) +
           Pad(Bytes(r.disk.bytes_read), 12, true) + Pad(std::to_string(r.disk.writes), 10, true) +
           Pad(Bytes(r.disk.bytes_written), 12, true) +
           Pad(std::to_string(r.disk.skipped), 10, true) +
           Pad(std::to_string(r.disk.evictions), 11, true) + "\n";
  }
  return out;
}

std::string FormatJson(const Trace& trace, const std::string& origin,
                       const std::vector<RunResult>& runs) {
  using nlohmann::json;
  const Workload& w = trace.workload();
  json jobs = json::array();
  for (const JobSpecW& j : w.jobs) {
    json size = {{"dist", DistName(j.size.dist)}};
    switch (j.size.dist) {
      case SizeSpec::Dist::kFixed:
        size["size"] = j.size.fixed;
        break;
      case SizeSpec::Dist::kUniform:
        size["min"] = j.size.min;
        size["max"] = j.size.max;
        break;
      case SizeSpec::Dist::kLognormal:
        size["mean"] = j.size.mean;
        size["sigma"] = j.size.sigma;
        break;
    }
    json spec = {{"name", j.name},
                    {"dataset", j.dataset},
                    {"samples", j.samples},
                    {"size", size},
                    {"batch_size", j.batch_size},
                    {"epochs", j.epochs},
                    {"loaders", j.loaders},
                    {"compute_ms", j.compute_ms},
                    {"start_s", j.start_s},
                    {"report_compute", j.report_compute}};
    if (j.ranks > 1) {  // a rank of a distributed run: it reads its shard of each epoch
      spec["run"] = j.run;
      spec["rank"] = j.rank;
      spec["ranks"] = j.ranks;
    }
    jobs.push_back(std::move(spec));
  }
  json doc;
  doc["workload"] = {{"file", origin},
                     {"seed", w.seed},
                     {"budget_bytes", trace.budget()},
                     {"prefetch", w.prefetch},
                     {"distinct_bytes", trace.distinct_bytes()},
                     {"storage",
                      {{"bandwidth", w.storage.bandwidth},
                       {"latency_ms", w.storage.latency_ms},
                       {"concurrency", w.storage.concurrency},
                       {"iops", w.storage.iops}}},
                     {"jobs", jobs}};
  if (w.disk.enabled()) {
    doc["workload"]["disk"] = {{"size_bytes", trace.disk_budget()},
                               {"bandwidth", w.disk.bandwidth},
                               {"latency_ms", w.disk.latency_ms}};
  }
  json jr = json::array();
  for (const RunResult& r : runs) {
    json js = json::array();
    for (const JobResult& j : r.jobs) {
      json ep = json::array();
      for (const EpochResult& e : j.epochs) {
        ep.push_back({{"hits", e.hits},
                      {"misses", e.misses},
                      {"disk_reads", e.disk_reads},
                      {"start_ns", e.start_ns},
                      {"time_ns", e.time_ns},
                      {"time_s", Sec(e.time_ns)},
                      {"stall_ns", e.stall_ns}});
      }
      js.push_back({{"name", j.name},
                    {"accesses", j.accesses},
                    {"hits", j.hits},
                    {"misses", j.misses},
                    {"coalesced", j.coalesced},
                    {"hit_ratio", j.hit_ratio()},
                    {"bytes_read", j.bytes_read},
                    {"disk_reads", j.disk_reads},
                    {"stall_ns", j.stall_ns},
                    {"stall_s", Sec(j.stall_ns)},
                    {"start_ns", j.start_ns},
                    {"completion_ns", j.completion_ns},
                    {"completion_s", Sec(j.completion_ns)},
                    {"epochs", ep}});
    }
    jr.push_back({{"policy", r.policy},
                  {"accesses", r.accesses},
                  {"hits", r.hits},
                  {"misses", r.misses},
                  {"hit_ratio", r.hit_ratio()},
                  {"bytes_read", r.bytes_read},
                  {"admissions", r.admissions},
                  {"evictions", r.evictions},
                  {"refused", r.refused},
                  {"prefetched", r.prefetched},
                  {"prefetch_hits", r.prefetch_hits},
                  {"prefetch_wasted", r.prefetch_wasted},
                  {"prefetch_bytes", r.prefetch_bytes},
                  {"max_resident_bytes", r.max_resident_bytes},
                  {"makespan_ns", r.makespan_ns},
                  {"makespan_s", Sec(r.makespan_ns)},
                  {"total_stall_ns", r.total_stall_ns},
                  {"total_stall_s", Sec(r.total_stall_ns)},
                  {"events", r.events},
                  {"disk",
                   {{"budget_bytes", r.disk.budget_bytes},
                    {"reads", r.disk.reads},
                    {"bytes_read", r.disk.bytes_read},
                    {"writes", r.disk.writes},
                    {"bytes_written", r.disk.bytes_written},
                    {"skipped", r.disk.skipped},
                    {"evictions", r.disk.evictions},
                    {"moved_up", r.disk.moved_up},
                    {"max_used_bytes", r.disk.max_used_bytes}}},
                  {"jobs", js}});
  }
  doc["runs"] = jr;
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string FormatOrdersJson(const Trace& trace, const std::string& origin) {
  using nlohmann::json;
  const Workload& w = trace.workload();
  json jobs = json::array();
  for (size_t j = 0; j < w.jobs.size(); ++j) {
    const JobSpecW& spec = w.jobs[j];
    json sizes = json::array();
    for (uint32_t s = 0; s < spec.samples; ++s) sizes.push_back(trace.size(j, s));
    json orders = json::array();
    for (uint32_t e = 0; e < spec.epochs; ++e) orders.push_back(trace.Order(j, e));
    jobs.push_back({{"name", spec.name},
                    {"dataset", spec.dataset},
                    {"sizes", std::move(sizes)},
                    {"orders", std::move(orders)}});
  }
  json doc = {{"workload", origin},
              {"seed", w.seed},
              {"budget_bytes", trace.budget()},
              {"jobs", std::move(jobs)}};
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace epochfs::sim
