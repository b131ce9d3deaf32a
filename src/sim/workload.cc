// Workload TOML loader; syntax errors come from ParseTomlText
// (FILE:LINE:COLUMN), the workload's own errors name file and line.
#include "epochfs/sim/workload.h"

#include "epochfs/common/bytes_text.h"
#include "epochfs/common/text_file.h"
#include "epochfs/common/toml_text.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace epochfs::sim {
namespace {

// Error context: "FILE: KEY (line L): what".
class Ctx {
 public:
  explicit Ctx(std::string origin) : origin_(std::move(origin)) {}
  Status Bad(const std::string& key, const toml::node* n, const std::string& what) const {
    std::string where = origin_ + ": " + key;
    if (n != nullptr && n->source().begin.line > 0) {
      where += " (line " + std::to_string(n->source().begin.line) + ")";
    }
    return InvalidArgument(where + ": " + what);
  }
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

Status CheckKeys(const Ctx& c, const std::string& prefix, const toml::table& t,
                 const std::set<std::string>& allowed) {
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (allowed.count(key) == 0) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return c.Bad(prefix + key, &v, "unknown key (expected one of: " + list + ")");
    }
  }
  return Status::Ok();
}

Result<double> GetNumber(const Ctx& c, const std::string& key, const toml::node& n) {
  if (auto i = n.value_exact<int64_t>()) return static_cast<double>(*i);
  if (auto d = n.value_exact<double>()) {
    if (!std::isfinite(*d)) return c.Bad(key, &n, "expected a finite number");
    return *d;
  }
  return c.Bad(key, &n, "expected a number");
}

Result<double> GetNonNeg(const Ctx& c, const std::string& key, const toml::node& n) {
  auto v = GetNumber(c, key, n);
  if (!v.ok()) return v;
  if (v.value() < 0) return c.Bad(key, &n, "must be >= 0");
  return v;
}

Result<uint64_t> GetInt(const Ctx& c, const std::string& key, const toml::node& n, int64_t min,
                        int64_t max) {
  auto i = n.value_exact<int64_t>();
  if (!i) return c.Bad(key, &n, "expected an integer");
  if (*i < min || *i > max) {
    return c.Bad(key, &n, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<uint64_t>(*i);
}

// Bytes: an integer, or a string with a unit ("110KiB"); >= min.
Result<uint64_t> GetBytes(const Ctx& c, const std::string& key, const toml::node& n, uint64_t min) {
  uint64_t v = 0;
  if (auto i = n.value_exact<int64_t>()) {
    if (*i < 0) return c.Bad(key, &n, "must be >= 0");
    v = static_cast<uint64_t>(*i);
  } else if (auto s = n.value_exact<std::string>()) {
    auto b = ParseBytes(*s);
    if (!b.ok()) return c.Bad(key, &n, b.status().message());
    v = b.value();
  } else {
    return c.Bad(key, &n, "expected bytes: an integer or a string such as \"110KiB\"");
  }
  if (v < min) return c.Bad(key, &n, "must be at least " + std::to_string(min) + " bytes");
  return v;
}

Result<SizeSpec> GetSize(const Ctx& c, const std::string& key, const toml::node& n) {
  SizeSpec s;
  const toml::table* t = n.as_table();
  if (t == nullptr) {
    auto b = GetBytes(c, key, n, 1);
    if (!b.ok()) return b.status();
    s.dist = SizeSpec::Dist::kFixed;
    s.fixed = b.value();
    return s;
  }
  const toml::node* d = t->get("dist");
  if (d == nullptr || !d->is_string()) {
    return c.Bad(key + ".dist", &n, "expected \"fixed\", \"uniform\" or \"lognormal\"");
  }
  const std::string dist = *d->value<std::string>();
  auto need = [&](const char* k) -> const toml::node* { return t->get(k); };
  if (dist == "fixed") {
    if (Status st = CheckKeys(c, key + ".", *t, {"dist", "size"}); !st.ok()) return st;
    if (!need("size")) return c.Bad(key + ".size", &n, "missing");
    auto b = GetBytes(c, key + ".size", *need("size"), 1);
    if (!b.ok()) return b.status();
    s.fixed = b.value();
  } else if (dist == "uniform") {
    s.dist = SizeSpec::Dist::kUniform;
    if (Status st = CheckKeys(c, key + ".", *t, {"dist", "min", "max"}); !st.ok()) return st;
    if (!need("min")) return c.Bad(key + ".min", &n, "missing");
    if (!need("max")) return c.Bad(key + ".max", &n, "missing");
    auto lo = GetBytes(c, key + ".min", *need("min"), 1);
    if (!lo.ok()) return lo.status();
    auto hi = GetBytes(c, key + ".max", *need("max"), 1);
    if (!hi.ok()) return hi.status();
    if (hi.value() < lo.value()) return c.Bad(key + ".max", need("max"), "must be >= min");
    s.min = lo.value();
    s.max = hi.value();
  } else if (dist == "lognormal") {
    s.dist = SizeSpec::Dist::kLognormal;
    if (Status st = CheckKeys(c, key + ".", *t, {"dist", "mean", "sigma"}); !st.ok()) return st;
    if (!need("mean")) return c.Bad(key + ".mean", &n, "missing");
    auto m = GetBytes(c, key + ".mean", *need("mean"), 1);
    if (!m.ok()) return m.status();
    s.mean = m.value();
    if (need("sigma")) {
      auto sg = GetNonNeg(c, key + ".sigma", *need("sigma"));
      if (!sg.ok()) return sg.status();
      if (sg.value() > 4) return c.Bad(key + ".sigma", need("sigma"), "must be <= 4");
      s.sigma = sg.value();
    }
  } else {
    return c.Bad(key + ".dist", d, "expected \"fixed\", \"uniform\" or \"lognormal\"");
  }
  return s;
}

Result<JobSpecW> GetJob(const Ctx& c, size_t index, const toml::table& t) {
  const std::string p = "job[" + std::to_string(index) + "].";
  if (Status s = CheckKeys(c, p, t,
                           {"name", "dataset", "samples", "size", "batch_size", "epochs", "loaders",
                            "compute_ms", "start_s", "report_compute", "ranks"});
      !s.ok()) {
    return s;
  }
  JobSpecW j;
  auto req = [&](const char* k) -> Result<const toml::node*> {
    const toml::node* n = t.get(k);
    if (n == nullptr) return c.Bad(p + k, &t, "missing (required)");
    return n;
  };
  // name
  {
    auto n = req("name");
    if (!n.ok()) return n.status();
    auto s = n.value()->value_exact<std::string>();
    if (!s || s->empty()) return c.Bad(p + "name", n.value(), "expected a non-empty string");
    j.name = *s;
  }
  if (const toml::node* n = t.get("dataset")) {
    auto s = n->value_exact<std::string>();
    if (!s || s->empty()) return c.Bad(p + "dataset", n, "expected a non-empty string");
    j.dataset = *s;
  } else {
    j.dataset = j.name;
  }
  struct IntKey {
    const char* key;
    uint32_t* out;
    int64_t min;
    int64_t max;
  };
  for (const IntKey& k :
       {IntKey{"samples", &j.samples, 1, int64_t{1} << 31},
        IntKey{"batch_size", &j.batch_size, 1, 1 << 20}, IntKey{"epochs", &j.epochs, 1, 100000}}) {
    auto n = req(k.key);
    if (!n.ok()) return n.status();
    auto v = GetInt(c, p + k.key, *n.value(), k.min, k.max);
    if (!v.ok()) return v.status();
    *k.out = static_cast<uint32_t>(v.value());
  }
  if (const toml::node* n = t.get("loaders")) {
    auto v = GetInt(c, p + "loaders", *n, 1, 1024);
    if (!v.ok()) return v.status();
    j.loaders = static_cast<uint32_t>(v.value());
  }
  {
    auto n = req("size");
    if (!n.ok()) return n.status();
    auto s = GetSize(c, p + "size", *n.value());
    if (!s.ok()) return s.status();
    j.size = s.value();
  }
  if (const toml::node* n = t.get("compute_ms")) {
    auto v = GetNonNeg(c, p + "compute_ms", *n);
    if (!v.ok()) return v.status();
    j.compute_ms = v.value();
  }
  if (const toml::node* n = t.get("start_s")) {
    auto v = GetNonNeg(c, p + "start_s", *n);
    if (!v.ok()) return v.status();
    j.start_s = v.value();
  }
  if (const toml::node* n = t.get("report_compute")) {
    auto b = n->value_exact<bool>();
    if (!b) return c.Bad(p + "report_compute", n, "expected true or false");
    j.report_compute = *b;
  }
  if (const toml::node* n = t.get("ranks")) {
    auto v = GetInt(c, p + "ranks", *n, 1, 4096);
    if (!v.ok()) return v.status();
    j.ranks = static_cast<uint32_t>(v.value());
  }
  return j;
}

// Bytes, or a percentage of the distinct data ("40%").
Status GetShare(const Ctx& c, const std::string& key, const toml::node& n, bool* is_percent,
                double* percent, uint64_t* bytes) {
  if (auto s = n.value_exact<std::string>(); s && !s->empty() && s->back() == '%') {
    const std::string num = s->substr(0, s->size() - 1);
    char* end = nullptr;
    const double pct = std::strtod(num.c_str(), &end);
    if (num.empty() || end != num.c_str() + num.size() || !(pct > 0) || pct > 1000) {
      return c.Bad(key, &n, "expected a percentage in (0, 1000], e.g. \"40%\"");
    }
    *is_percent = true;
    *percent = pct;
    return Status::Ok();
  }
  auto b = GetBytes(c, key, n, 0);
  if (!b.ok()) return b.status();
  *bytes = b.value();
  return Status::Ok();
}

// The optional [disk] table.
Status GetDisk(const Ctx& c, const toml::node& dn, DiskSpec* d) {
  const toml::table* dt = dn.as_table();
  if (dt == nullptr) return c.Bad("disk", &dn, "expected a table [disk]");
  if (Status s = CheckKeys(c, "disk.", *dt, {"size", "bandwidth", "latency_ms"}); !s.ok()) {
    return s;
  }
  const toml::node* n = dt->get("size");
  if (n == nullptr) return c.Bad("disk.size", dt, "missing (required in [disk])");
  if (Status s = GetShare(c, "disk.size", *n, &d->size_is_percent, &d->size_percent,
                          &d->size_bytes);
      !s.ok()) {
    return s;
  }
  n = dt->get("bandwidth");
  if (n == nullptr) return c.Bad("disk.bandwidth", dt, "missing (required in [disk])");
  auto b = GetBytes(c, "disk.bandwidth", *n, 1);
  if (!b.ok()) return b.status();
  d->bandwidth = static_cast<double>(b.value());
  if (const toml::node* l = dt->get("latency_ms")) {
    auto v = GetNonNeg(c, "disk.latency_ms", *l);
    if (!v.ok()) return v.status();
    d->latency_ms = v.value();
  }
  return Status::Ok();
}

Result<Workload> Walk(const Ctx& c, const toml::table& root) {
  if (Status s = CheckKeys(c, "", root,
                          {"seed", "budget", "prefetch", "request_bytes", "read_slots", "weigh_hits",
                           "storage", "disk", "epoch", "job"});
      !s.ok()) {
    return s;
  }
  Workload w;
  if (const toml::node* n = root.get("seed")) {
    auto v = GetInt(c, "seed", *n, 0, INT64_MAX);
    if (!v.ok()) return v.status();
    w.seed = v.value();
  }
  if (const toml::node* n = root.get("prefetch")) {
    auto v = GetInt(c, "prefetch", *n, 0, 64);
    if (!v.ok()) return v.status();
    w.prefetch = static_cast<uint32_t>(v.value());
  }
  if (const toml::node* n = root.get("request_bytes"); n != nullptr &&
                                                       n->value_exact<std::string>() == "auto") {
    w.request_bytes_auto = true;
  } else if (n != nullptr) {
    auto v = GetBytes(c, "request_bytes", *n, 0);
    if (!v.ok()) return v.status();
    w.request_bytes = v.value();
    w.request_bytes_auto = false;
  }
  if (const toml::node* n = root.get("read_slots")) {
    auto v = GetInt(c, "read_slots", *n, 0, 1024);
    if (!v.ok()) return v.status();
    w.read_slots = static_cast<uint32_t>(v.value());
  }
  if (const toml::node* n = root.get("weigh_hits")) {
    auto b = n->value_exact<bool>();
    if (!b) return c.Bad("weigh_hits", n, "expected true or false");
    w.weigh_hits = *b;
  }
  const toml::node* budget = root.get("budget");
  if (budget == nullptr) return c.Bad("budget", nullptr, "missing (required)");
  if (Status s = GetShare(c, "budget", *budget, &w.budget_is_percent, &w.budget_percent,
                          &w.budget_bytes);
      !s.ok()) {
    return s;
  }

  const toml::table* st = root.get_as<toml::table>("storage");
  if (st == nullptr) return c.Bad("storage", root.get("storage"), "missing table [storage]");
  if (Status s = CheckKeys(c, "storage.", *st, {"bandwidth", "latency_ms", "concurrency", "iops"});
      !s.ok()) {
    return s;
  }
  {
    const toml::node* n = st->get("bandwidth");
    if (n == nullptr) return c.Bad("storage.bandwidth", st, "missing (required)");
    auto b = GetBytes(c, "storage.bandwidth", *n, 1);
    if (!b.ok()) return b.status();
    w.storage.bandwidth = static_cast<double>(b.value());
  }
  if (const toml::node* n = st->get("latency_ms")) {
    auto v = GetNonNeg(c, "storage.latency_ms", *n);
    if (!v.ok()) return v.status();
    w.storage.latency_ms = v.value();
  }
  if (const toml::node* n = st->get("concurrency")) {
    auto v = GetInt(c, "storage.concurrency", *n, 1, 65536);
    if (!v.ok()) return v.status();
    w.storage.concurrency = static_cast<uint32_t>(v.value());
  }
  if (const toml::node* n = st->get("iops")) {
    auto v = GetNonNeg(c, "storage.iops", *n);
    if (!v.ok()) return v.status();
    w.storage.iops = v.value();
  }

  if (const toml::node* dn = root.get("disk")) {
    if (Status s = GetDisk(c, *dn, &w.disk); !s.ok()) return s;
  }

  if (const toml::node* en = root.get("epoch")) {
    const toml::table* et = en->as_table();
    if (et == nullptr) return c.Bad("epoch", en, "expected a table [epoch]");
    if (Status s = CheckKeys(c, "epoch.", *et, {"gain_max", "warmup_batches", "share_idle"});
        !s.ok()) {
      return s;
    }
    if (const toml::node* n = et->get("gain_max")) {
      auto v = GetNonNeg(c, "epoch.gain_max", *n);
      if (!v.ok()) return v.status();
      w.epoch.gain_max = v.value();
    }
    if (const toml::node* n = et->get("warmup_batches")) {
      auto v = GetInt(c, "epoch.warmup_batches", *n, 0, UINT32_MAX);
      if (!v.ok()) return v.status();
      w.epoch.warmup_batches = static_cast<uint32_t>(v.value());
    }
    if (const toml::node* n = et->get("share_idle")) {
      auto b = n->value_exact<bool>();
      if (!b) return c.Bad("epoch.share_idle", n, "expected true or false");
      w.epoch.share_idle = *b;
    }
  }

  const toml::node* jn = root.get("job");
  const toml::array* jobs = jn != nullptr ? jn->as_array() : nullptr;
  if (jobs == nullptr || jobs->empty()) {
    return c.Bad("job", jn, "missing: at least one [[job]] table");
  }
  for (size_t i = 0; i < jobs->size(); ++i) {
    const toml::table* t = (*jobs)[i].as_table();
    if (t == nullptr)
      return c.Bad("job[" + std::to_string(i) + "]", &(*jobs)[i], "expected a table");
    auto j = GetJob(c, i, *t);
    if (!j.ok()) return j.status();
    if (j.value().ranks == 1) {
      w.jobs.push_back(j.value());
      continue;
    }
    for (uint32_t r = 0; r < j.value().ranks; ++r) {  // one job per rank, one shuffle
      JobSpecW rank = j.value();
      rank.run = rank.name;
      rank.name += ".rank" + std::to_string(r);
      rank.rank = r;
      w.jobs.push_back(std::move(rank));
    }
  }
  if (Status s = ValidateWorkload(w); !s.ok())
    return InvalidArgument(c.origin() + ": " + s.message());
  return w;
}

}  // namespace

Status ValidateWorkload(const Workload& w) {
  if (w.jobs.empty()) return InvalidArgument("job: at least one job");
  std::set<std::string> names;
  std::map<std::string, const JobSpecW*> datasets;
  for (size_t i = 0; i < w.jobs.size(); ++i) {
    const JobSpecW& j = w.jobs[i];
    const std::string p = "job[" + std::to_string(i) + "]";
    if (j.name.empty()) return InvalidArgument(p + ".name: empty");
    if (!names.insert(j.name).second) {
      return InvalidArgument(p + ".name: '" + j.name + "' is used by an earlier job");
    }
    if (j.samples == 0 || j.batch_size == 0 || j.epochs == 0 || j.loaders == 0) {
      return InvalidArgument(p + ": samples, batch_size, epochs and loaders must be >= 1");
    }
    if (j.ranks == 0 || j.rank >= j.ranks || (j.ranks > 1 && j.run.empty())) {
      return InvalidArgument(p + ".ranks: rank " + std::to_string(j.rank) + " of " +
                             std::to_string(j.ranks) + " (a rank needs its run's name)");
    }
    auto [it, fresh] = datasets.emplace(j.dataset, &j);
    if (!fresh && (it->second->samples != j.samples || !(it->second->size == j.size))) {
      return InvalidArgument(p + ".dataset: '" + j.dataset + "' is shared with job '" +
                             it->second->name + "', whose samples and size differ");
    }
  }
  if (!(w.storage.bandwidth > 0)) return InvalidArgument("storage.bandwidth: must be > 0");
  if (w.storage.concurrency == 0) return InvalidArgument("storage.concurrency: must be >= 1");
  if (w.disk.enabled() && !(w.disk.bandwidth > 0)) {
    return InvalidArgument("disk.bandwidth: must be > 0");
  }
  return Status::Ok();
}

Result<Workload> ParseWorkload(std::string_view toml_text, const std::string& origin) {
  Ctx c(origin);
  Result<toml::table> root = ParseTomlText(toml_text, origin);
  if (!root.ok()) return root.status();
  return Walk(c, root.value());
}

Result<Workload> LoadWorkloadFile(const std::string& path) {
  auto text = ReadTextFile(path, "workload file");
  if (!text.ok()) return text.status();
  return ParseWorkload(text.value(), path);
}

}  // namespace epochfs::sim
