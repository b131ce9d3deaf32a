#include "epochfs/tools/top_view.h"

#include <cctype>
#include <cstdio>
#include <vector>

#include "epochfs/common/bytes_text.h"

namespace epochfs::tools {
namespace {

uint64_t U(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return 0;
  const double v = it->get<double>();
  return v > 0 ? static_cast<uint64_t>(v) : 0;
}

std::string S(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string Printable(std::string s) {
  for (char& c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return s;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? std::string("-") : Fmt("%.1f%%", 100.0 * double(part) / double(whole));
}

// A boolean under `key`; false if none.
bool Flag(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

// Seconds under `key` ("1.2s"), or "-".
std::string Seconds(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "-";
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? Fmt("%.1fs", it->get<double>()) : std::string("-");
}

// Rate of a counter between the snapshots, or "-".
std::string Rate(const nlohmann::json& now, const nlohmann::json* before, double seconds,
                 const char* key, bool bytes) {
  if (before == nullptr || !(seconds > 0)) return "-";
  const uint64_t a = U(*before, key), b = U(now, key);
  const double r = b >= a ? double(b - a) / seconds : 0;
  return bytes ? HumanBytes(static_cast<uint64_t>(r)) + "/s" : Fmt("%.0f/s", r);
}

std::string Cut(std::string s, size_t width) {
  if (s.size() > width) s.resize(width);
  return s;
}

std::string Pad(std::string s, size_t w, bool right) {
  if (s.size() > w) s.resize(w);
  const std::string fill(w - s.size(), ' ');
  return right ? fill + s : s + fill;
}

}  // namespace

std::string RenderTop(const nlohmann::json& now, const nlohmann::json* before, double seconds,
                      const std::string& mountpoint, size_t width) {
  std::vector<std::string> lines;
  const uint64_t budget = U(now, "budget"), used = U(now, "used");
  lines.push_back("epochfs " + Printable(S(now, "version")) + " on " + Printable(mountpoint) +
                  "   policy " + Printable(S(now, "policy")));
  lines.push_back("budget " + HumanBytes(budget) + "   used " + HumanBytes(used) + " (" +
                  Percent(used, budget) + ")   pool " + HumanBytes(U(now, "pool")) +
                  "   shared " + HumanBytes(U(now, "shared")) + "   objects " +
                  std::to_string(U(now, "objects")));
  // Every read counts once: hits (served at once), misses, joined loads
  // (coalesced) and refills; the hit ratio is hits over all of them.
  auto reads = [](const nlohmann::json& j) {
    return U(j, "hits") + U(j, "misses") + U(j, "coalesced") + U(j, "refills");
  };
  const uint64_t hits = U(now, "hits"), all = reads(now);
  std::string interval = "-";
  if (before != nullptr) {
    const uint64_t dh = hits >= U(*before, "hits") ? hits - U(*before, "hits") : 0;
    const uint64_t da = all >= reads(*before) ? all - reads(*before) : 0;
    interval = Percent(dh, da);
  }
  lines.push_back("hits " + Rate(now, before, seconds, "hits", false) + "   misses " +
                  Rate(now, before, seconds, "misses", false) + "   joined " +
                  Rate(now, before, seconds, "coalesced", false) + "   refills " +
                  Rate(now, before, seconds, "refills", false) + "   hit ratio " + interval +
                  " (all " + Percent(hits, all) + ")   from lower " +
                  Rate(now, before, seconds, "bytes_read_lower", true));
  std::string lower_calls;  // by kind: "lookup 3/s  open 2/s ..."
  if (auto k = now.is_object() ? now.find("lower_calls_by_kind") : now.end();
      k != now.end() && k->is_object()) {
    const nlohmann::json* was = nullptr;
    if (before != nullptr) {
      if (auto b = before->is_object() ? before->find("lower_calls_by_kind") : before->end();
          b != before->end() && b->is_object()) {
        was = &*b;
      }
    }
    for (const char* kind : {"lookup", "stat", "open", "read", "list"}) {
      lower_calls += std::string("   ") + kind + " " + Rate(*k, was, seconds, kind, false);
    }
  }
  lines.push_back(std::string("lower: ") + (Flag(now, "lower_down") ? "DOWN   " : "") +
                  "in flight " + std::to_string(U(now, "lower_in_flight")) + "   errors " +
                  std::to_string(U(now, "lower_errors")) + "   timeouts " +
                  std::to_string(U(now, "lower_timeouts")) + "   evictions " +
                  std::to_string(U(now, "evictions")));
  if (!lower_calls.empty()) lines.push_back("lower calls:" + lower_calls);
  if (auto t = now.find("tiers"); t != now.end() && t->is_object()) {
    if (auto sp = t->find("spill"); sp != t->end() && sp->is_object()) {
      lines.push_back("spill: " + std::to_string(U(*sp, "files")) + " files, " +
                      HumanBytes(U(*sp, "logical_bytes")) + " stored as " +
                      HumanBytes(U(*sp, "stored_bytes")) + ", dirty " +
                      HumanBytes(U(*sp, "dirty_bytes")));
    }
    if (auto dk = t->find("disk"); dk != t->end() && dk->is_object()) {
      std::string state = S(*dk, "state");
      for (char& ch : state) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      lines.push_back("disk: " + (state == "OK" ? std::string() : state + "   ") +
                      std::to_string(U(*dk, "objects")) + " files, " +
                      HumanBytes(U(*dk, "bytes")) + " of " + HumanBytes(U(*dk, "budget")) +
                      "   hits " + std::to_string(U(*dk, "hits")) + "   read " +
                      HumanBytes(U(*dk, "reads_bytes")) + "   written " +
                      HumanBytes(U(*dk, "writes_bytes")) + "   checksum errors " +
                      std::to_string(U(*dk, "checksum_errors")));
    }
  }
  if (auto g = now.find("governor"); g != now.end() && g->is_object()) {
    const auto fit = g->find("fit");
    const bool plateau = fit != g->end() && fit->is_object() && fit->value("plateau", false);
    lines.push_back("governor: budget " + HumanBytes(U(*g, "budget")) + "   non-cache " +
                    HumanBytes(U(*g, "non_cache")) + "   " +
                    (plateau ? "plateau" : "rising") +
                    (g->value("urgent", false) ? "   URGENT" : ""));
  }
  if (auto w = now.find("warnings"); w != now.end() && w->is_array()) {
    for (const auto& line : *w) {
      if (line.is_string()) lines.push_back("warning: " + Printable(line.get<std::string>()));
    }
  }
  if (auto ws = now.find("warm"); ws != now.end() && ws->is_array()) {
    for (const auto& w : *ws) {
      if (!w.is_object()) continue;
      const uint64_t bytes = U(w, "bytes_done"), total = U(w, "bytes_total");
      lines.push_back("warm: pid " + std::to_string(U(w, "pid")) + " " +
                      Printable(S(w, "state")) + (Flag(w, "running") ? "" : " (exited)") + "   " +
                      std::to_string(U(w, "files_done")) + "/" +
                      std::to_string(U(w, "files_total")) + " files   " + HumanBytes(bytes) +
                      " of " + HumanBytes(total) + " (" + Percent(bytes, total) + ")   " +
                      std::to_string(U(w, "errors")) + " errors");
    }
  }
  lines.push_back("");
  lines.push_back(Pad("JOB", 24, false) + " " + Pad("STATE", 10, false) + Pad("EPOCH", 7, true) +
                  Pad("BATCH", 8, true) + Pad("HITS", 10, true) + Pad("MISSES", 10, true) +
                  Pad("JOINED", 8, true) + Pad("HIT%", 8, true) + Pad("WAIT", 9, true) + Pad("CUR", 12, true) +
                  Pad("NEXT", 12, true));
  size_t jobs = 0;
  if (auto js = now.find("jobs"); js != now.end() && js->is_array()) {
    for (const auto& j : *js) {
      if (!j.is_object()) continue;
      ++jobs;
      const uint64_t h = U(j, "hits"), m = U(j, "misses");
      const uint64_t waited = U(j, "coalesced") + U(j, "refills");  // reads that waited, not hits
      lines.push_back(Pad(Printable(S(j, "name")), 24, false) + " " +
                      Pad(Printable(S(j, "state")), 10, false) +
                      Pad(std::to_string(U(j, "epoch")), 7, true) +
                      Pad(std::to_string(U(j, "batch")), 8, true) +
                      Pad(std::to_string(h), 10, true) + Pad(std::to_string(m), 10, true) +
                      Pad(std::to_string(waited), 8, true) +
                      Pad(Percent(h, h + m + waited), 8, true) +
                      Pad(Seconds(j, "lower_wait_s"), 9, true) +
                      Pad(HumanBytes(U(j, "cur_bytes")), 12, true) +
                      Pad(HumanBytes(U(j, "next_bytes")), 12, true));
    }
  }
  if (jobs == 0) lines.push_back("(no jobs registered)");
  std::string out;
  for (const std::string& l : lines) out += Cut(l, width) + "\n";
  return out;
}

}  // namespace epochfs::tools
