#include "epochfs/control/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "epochfs/control/metrics_catalog.h"

namespace epochfs::control {
namespace {

// The states a job row can be in (cache::JobStateName, and "configured"
// before its first epoch): epochfs_jobs has a series for each, 0 included,
// so that a dashboard's sum is there with no job.
constexpr const char* kJobStates[] = {"configured", "warmup", "caching", "last_epoch", "done"};

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

// HELP text: backslash and newline escaped (quotes stay).
std::string EscapeHelp(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
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

std::string Label(const std::string& k, const std::string& v) {
  return k + "=\"" + Escape(v) + "\"";
}

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kGauge: break;
  }
  return "gauge";
}

// Families in name order, each with # HELP, # TYPE and its samples in
// insertion order. A series (family and labels) is written once: a second
// field that maps to it, or a field whose family has another type, is left
// out.
class Exposition {
 public:
  explicit Exposition(std::string base) : base_(std::move(base)) {}

  // `labels`: more labels after the mountpoint ("" or "a=\"x\",b=\"y\"").
  void Add(const MetricSpec& m, const std::string& labels, double v) {
    if (m.name.empty() || !std::isfinite(v)) return;
    Family* f = FamilyOf(m);
    const std::string l = All(labels);
    if (f == nullptr || !f->series.insert(l).second) return;
    f->lines.push_back(m.name + "{" + l + "} " + Number(v * m.scale));
  }
  // A histogram from its stats form: {"le": [s...], "cumulative": [n...],
  // "count": n, "sum": s}. Left out when malformed.
  void AddHistogram(const MetricSpec& m, const std::string& labels, const nlohmann::json& h) {
    if (m.name.empty() || !h.is_object()) return;
    auto le = h.find("le"), cum = h.find("cumulative"), count = h.find("count"),
         sum = h.find("sum");
    if (le == h.end() || cum == h.end() || count == h.end() || sum == h.end() ||
        !le->is_array() || !cum->is_array() || le->size() != cum->size() ||
        !count->is_number() || !sum->is_number()) {
      return;
    }
    Family* f = FamilyOf(m);
    const std::string l = All(labels);
    if (f == nullptr || !f->series.insert(l).second) return;
    for (size_t i = 0; i < le->size(); ++i) {
      if (!(*le)[i].is_number() || !(*cum)[i].is_number()) return;
      char bound[32];
      std::snprintf(bound, sizeof bound, "%g", (*le)[i].get<double>());
      f->lines.push_back(m.name + "_bucket{" + l + ",le=\"" + bound + "\"} " +
                         Number((*cum)[i].get<double>()));
    }
    const std::string c = Number(count->get<double>());
    f->lines.push_back(m.name + "_bucket{" + l + ",le=\"+Inf\"} " + c);
    f->lines.push_back(m.name + "_sum{" + l + "} " + Number(sum->get<double>() * m.scale));
    f->lines.push_back(m.name + "_count{" + l + "} " + c);
  }
  std::string Text() const {
    std::string out;
    for (const auto& [name, f] : families_) {
      out += "# HELP " + name + " " + EscapeHelp(f.help) + "\n";
      out += "# TYPE " + name + " " + TypeName(f.type) + "\n";
      for (const std::string& s : f.lines) out += s + "\n";
    }
    return out;
  }

 private:
  struct Family {
    MetricType type = MetricType::kGauge;
    std::string help;
    std::set<std::string> series;  // label sets written
    std::vector<std::string> lines;
  };
  Family* FamilyOf(const MetricSpec& m) {
    auto [it, added] = families_.try_emplace(m.name);
    if (added) {
      it->second.type = m.type;
      it->second.help = m.help;
    }
    return it->second.type == m.type ? &it->second : nullptr;
  }
  std::string All(const std::string& labels) const {
    return labels.empty() ? base_ : base_ + "," + labels;
  }

  const std::string base_;  // mountpoint="..."
  std::map<std::string, Family> families_;
};

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

// A number or boolean at `path` (booleans as 0/1); objects walked, with a
// tier's name and a LOWER call's kind as labels; strings and arrays skipped.
void Walk(Exposition& e, const std::string& path, const nlohmann::json& v,
          const std::string& labels) {
  if (v.is_boolean()) {
    e.Add(MetricFor(path), labels, v.get<bool>() ? 1 : 0);
  } else if (v.is_number()) {
    e.Add(MetricFor(path), labels, v.get<double>());
  } else if (v.is_object()) {
    const bool tiers = path == "tiers", kinds = path == "lower_calls_by_kind";
    for (const auto& [k, child] : v.items()) {
      if (tiers) {
        Walk(e, "tiers.*", child, Label("tier", k));
        // epochfs_tier_state{tier="disk",state="failed"} 1
        if (const std::string st = child.is_object() ? StringAt(child, "state") : "";
            !st.empty()) {
          e.Add({"epochfs_tier_state", MetricType::kGauge, 1,
                 "The tier's state (always 1): ok, full, failed (the disk tier)."},
                Label("tier", k) + "," + Label("state", st), 1);
        }
      } else if (kinds) {
        Walk(e, "lower_calls_by_kind.*", child, Label("kind", k));
      } else {
        Walk(e, path.empty() ? k : path + "." + k, child, labels);
      }
    }
  }
}

void Jobs(Exposition& e, const nlohmann::json& jobs, bool rows) {
  std::map<std::string, double> by_state;
  for (const char* s : kJobStates) by_state[s] = 0;
  for (const nlohmann::json& row : jobs) {
    if (!row.is_object()) continue;
    const std::string state = StringAt(row, "state");
    by_state[state] += 1;
    if (!rows) continue;
    const std::string job = Label("job", StringAt(row, "name"));
    e.Add({"epochfs_job_info", MetricType::kGauge, 1, "A registered job and its state (always 1)."},
          job + "," + Label("state", state), 1);
    e.Add({"epochfs_job_epoch_hit_ratio", MetricType::kGauge, 1,
           "The job's hits / (hits + misses) in its current epoch."},
          job, Ratio(row));
    for (const auto& [k, v] : row.items()) {
      if (v.is_number() || v.is_boolean()) Walk(e, "jobs.*." + k, v, job);
    }
  }
  for (const auto& [state, n] : by_state) {
    e.Add({"epochfs_jobs", MetricType::kGauge, 1, "Registered jobs, by state."},
          Label("state", state), n);
  }
}

}  // namespace

std::string PrometheusText(const nlohmann::json& stats, const MetricsOptions& options) {
  if (!stats.is_object()) return "";
  Exposition e(Label("mountpoint", StringAt(stats, "mountpoint")));
  e.Add({"epochfs_info", MetricType::kGauge, 1, "The daemon's version and cache policy (always 1)."},
        Label("version", StringAt(stats, "version")) + "," +
            Label("policy", StringAt(stats, "policy")),
        1);
  e.Add({"epochfs_hit_ratio", MetricType::kGauge, 1, "hits / (hits + misses) since the mount."},
        "", Ratio(stats));
  for (const auto& [k, v] : stats.items()) {
    if (k == "jobs" || k == "warnings" || k == "histograms" || k == "warm") continue;
    Walk(e, k, v, "");
  }
  if (auto w = stats.find("warnings"); w != stats.end() && w->is_array()) {
    e.Add({"epochfs_warnings", MetricType::kGauge, 1,
           "Warnings in .epochfs/stats (a budget too large, a cache need over it, ...)."},
          "", static_cast<double>(w->size()));
  }
  if (auto h = stats.find("histograms"); h != stats.end() && h->is_object()) {
    for (const auto& [name, v] : h->items()) {
      e.AddHistogram(MetricFor("histograms." + name), "", v);
    }
  }
  if (auto jobs = stats.find("jobs"); jobs != stats.end() && jobs->is_array()) {
    Jobs(e, *jobs, !options.aggregates_only);
  }
  return e.Text();
}

}  // namespace epochfs::control
