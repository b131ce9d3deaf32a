#include "epochfs/control/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

namespace epochfs::control {
namespace {

// Cumulative counts: TYPE counter and the _total suffix. Everything else is
// a gauge (sizes, budgets, in-flight, per-epoch counts).
const std::set<std::string> kCounters = {
    "hits", "misses", "admissions", "evictions", "refused", "invalidations", "coalesced",
    "bytes_read_lower", "lower_errors", "lower_timeouts", "lower_interrupts", "lower_calls",
    "lower_inline_calls", "read_waits", "read_wait_ms", "read_aged",
    "streamed_opens",
    "streamed_bytes", "prefetched", "prefetch_bytes", "prefetch_hits", "prefetch_wasted",
    "handovers", "refills", "known_answers", "known_last_known", "known_full",
    // tiers.spill
    "chunks_compressed", "chunks_raw", "ssd_read_bytes", "ssd_write_bytes", "checksum_errors",
    // tiers.disk (also "hits", "checksum_errors" above)
    "reads_bytes", "writes", "writes_bytes", "skipped", "stale", "write_errors",
    // governor
    "ticks", "shrinks", "grows", "read_errors"};

std::string Escape(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// A metric name part from a JSON key: [a-zA-Z0-9_] kept, anything else '_'.
std::string NamePart(const std::string& k) {
  std::string out = k;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!ok) c = '_';
  }
  return out;
}

std::string Number(double v) {
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 9.0e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", v);
  }
  return buf;
}

// Families in name order, each with its samples in insertion order: one
// # TYPE line per family, as the format wants.
class Exposition {
 public:
  void Add(const std::string& name, bool counter, const std::string& labels, double v) {
    if (!std::isfinite(v)) return;
    Family& f = families_[counter ? name + "_total" : name];
    f.counter = counter;
    f.samples.push_back(labels + " " + Number(v));
  }
  // A JSON number or boolean under `key`; other types are skipped.
  void AddValue(const std::string& prefix, const std::string& key, const std::string& labels,
                const nlohmann::json& v) {
    if (v.is_boolean()) {
      Add(prefix + NamePart(key), false, labels, v.get<bool>() ? 1 : 0);
    } else if (v.is_number()) {
      Add(prefix + NamePart(key), kCounters.count(key) != 0, labels, v.get<double>());
    }
  }
  std::string Text() const {
    std::string out;
    for (const auto& [name, f] : families_) {
      out += "# TYPE " + name + (f.counter ? " counter\n" : " gauge\n");
      for (const std::string& s : f.samples) out += name + s + "\n";
    }
    return out;
  }

 private:
  struct Family {
    bool counter = false;
    std::vector<std::string> samples;  // "{labels} value" or " value"
  };
  std::map<std::string, Family> families_;
};

std::string Label(const std::string& k, const std::string& v) {
  return k + "=\"" + Escape(v) + "\"";
}

std::string StringAt(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Hits over every read: a read that joined a load in flight (coalesced) or
// refilled a handed-over object (refills) waited for LOWER, and is no hit.
double Ratio(const nlohmann::json& j) {
  const double h = j.value("hits", 0.0);
  const double all = h + j.value("misses", 0.0) + j.value("coalesced", 0.0) +
                     j.value("refills", 0.0);
  return all > 0 ? h / all : NAN;
}

}  // namespace

std::string PrometheusText(const nlohmann::json& stats) {
  Exposition e;
  if (!stats.is_object()) return e.Text();
  e.Add("epochfs_info", false,
        "{" + Label("version", StringAt(stats, "version")) + "," +
            Label("policy", StringAt(stats, "policy")) + "}",
        1);
  e.Add("epochfs_hit_ratio", false, "", Ratio(stats));
  for (const auto& [k, v] : stats.items()) e.AddValue("epochfs_", k, "", v);
  if (auto w = stats.find("warnings"); w != stats.end() && w->is_array()) {
    e.Add("epochfs_warnings", false, "", static_cast<double>(w->size()));
  }
  if (auto t = stats.find("tiers"); t != stats.end() && t->is_object()) {
    for (const auto& [tier, fields] : t->items()) {
      if (!fields.is_object()) continue;
      const std::string l = "{" + Label("tier", tier) + "}";
      for (const auto& [k, v] : fields.items()) e.AddValue("epochfs_tier_", k, l, v);
      // epochfs_tier_state{tier="disk",state="failed"} 1
      if (const std::string st = StringAt(fields, "state"); !st.empty()) {
        e.Add("epochfs_tier_state", false,
              "{" + Label("tier", tier) + "," + Label("state", st) + "}", 1);
      }
    }
  }
  // epochfs_lower_calls_by_kind_total{kind="lookup"}, ...
  if (auto k = stats.find("lower_calls_by_kind"); k != stats.end() && k->is_object()) {
    for (const auto& [kind, v] : k->items()) {
      if (v.is_number()) {
        e.Add("epochfs_lower_calls_by_kind", true, "{" + Label("kind", kind) + "}",
              v.get<double>());
      }
    }
  }
  if (auto jobs = stats.find("jobs"); jobs != stats.end() && jobs->is_array()) {
    for (const nlohmann::json& row : *jobs) {
      if (!row.is_object()) continue;
      const std::string job = Label("job", StringAt(row, "name"));
      e.Add("epochfs_job_info", false, "{" + job + "," + Label("state", StringAt(row, "state")) + "}",
            1);
      e.Add("epochfs_job_hit_ratio", false, "{" + job + "}", Ratio(row));
      for (const auto& [k, v] : row.items()) {
        // Per-epoch counts: gauges (they restart with each epoch).
        if (v.is_number() || v.is_boolean()) {
          e.Add("epochfs_job_" + NamePart(k), false, "{" + job + "}",
                v.is_boolean() ? (v.get<bool>() ? 1 : 0) : v.get<double>());
        }
      }
    }
  }
  if (auto g = stats.find("governor"); g != stats.end() && g->is_object()) {
    for (const auto& [k, v] : g->items()) {
      if (v.is_object()) {
        for (const auto& [k2, v2] : v.items()) {
          e.AddValue("epochfs_governor_" + NamePart(k) + "_", k2, "", v2);
        }
      } else {
        e.AddValue("epochfs_governor_", k, "", v);
      }
    }
  }
  return e.Text();
}

}  // namespace epochfs::control
