// `epochfs plan`: model file + flags → PlanInput → MakePlan → a table or JSON.
#include "epochfs/plan/plan_main.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "epochfs/common/bytes_text.h"
#include "epochfs/plan/model_file.h"
#include "epochfs/plan/planner.h"

namespace epochfs::plan {
namespace {

int Fail(std::ostream& err, const std::string& msg) {
  // One line per problem, each with the prefix.
  std::istringstream lines(msg);
  std::string line;
  while (std::getline(lines, line)) err << "epochfs plan: " << line << "\n";
  return 1;
}

std::string Human(uint64_t bytes) { return HumanBytes(bytes, 1); }

std::string Number(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", d);
  return buf;
}

Status ParseCount(const std::string& flag, const std::string& text, uint64_t lo, uint64_t hi,
                  uint64_t* out) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
    return InvalidArgument(flag + ": expected an integer " + std::to_string(lo) + ".." +
                           std::to_string(hi) + ", got '" + text + "'");
  }
  *out = v;
  return Status::Ok();
}

Status ParseSize(const std::string& flag, const std::string& text, uint64_t min, uint64_t* out) {
  Result<uint64_t> b = ParseBytes(text);
  if (!b.ok() || b.value() < min) {
    return InvalidArgument(flag + ": expected bytes" + (min > 0 ? " > 0" : "") +
                           " (an integer or \"16GiB\"), got '" + text + "'");
  }
  *out = b.value();
  return Status::Ok();
}

struct Flags {
  std::string model_file;
  std::string device_memory, reserve, gpus, base_batch, base_lr;
  bool json = false;
};

// Applies the flags that were given over the model file's values.
Status Override(const Flags& f, PlanInput* in) {
  uint64_t v = 0;
  if (!f.device_memory.empty()) {
    if (Status s = ParseSize("--device-memory", f.device_memory, 1, &v); !s.ok()) return s;
    in->device_memory = v;
  }
  if (!f.reserve.empty()) {
    if (Status s = ParseSize("--reserve", f.reserve, 0, &v); !s.ok()) return s;
    in->reserve = v;
  }
  if (!f.gpus.empty()) {
    if (Status s = ParseCount("--gpus", f.gpus, 1, 1u << 20, &v); !s.ok()) return s;
    in->gpus = static_cast<uint32_t>(v);
  }
  if (!f.base_batch.empty()) {
    if (Status s = ParseCount("--base-batch", f.base_batch, 1, UINT64_MAX, &v); !s.ok()) return s;
    in->base_batch = v;
  }
  if (!f.base_lr.empty()) {
    double d = 0;
    const std::string& t = f.base_lr;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(d) ||
        d <= 0) {
      return InvalidArgument("--base-lr: expected a number > 0, got '" + t + "'");
    }
    in->base_lr = d;
  }
  return Status::Ok();
}

nlohmann::ordered_json ModeJson(const ModePlan& m) {
  nlohmann::ordered_json j;
  j["per_gpu_batch"] = m.per_gpu_batch;
  j["global_batch"] = m.global_batch;
  j["learning_rate"] = m.learning_rate.has_value() ? nlohmann::ordered_json(*m.learning_rate) : nullptr;
  j["resident_bytes"] = m.resident_bytes;
  return j;
}

void PrintJson(const PlanInput& in, const Plan& p, std::ostream& out) {
  nlohmann::ordered_json j;
  j["model"] = in.model_name;
  j["layers"] = in.layers.size();
  j["parameter_bytes"] = p.total_parameter_bytes;
  j["activation_bytes_per_sample"] = p.total_activation_bytes;
  j["parameter_copies"] = in.parameter_copies;
  j["activation_copies"] = in.activation_copies;
  j["device_memory"] = *in.device_memory;
  j["reserve"] = in.reserve;
  j["usable_bytes"] = p.usable_bytes;
  j["gpus"] = in.gpus;
  j["base_batch"] = in.base_batch.has_value() ? nlohmann::ordered_json(*in.base_batch) : nullptr;
  j["base_lr"] = in.base_lr.has_value() ? nlohmann::ordered_json(*in.base_lr) : nullptr;
  j["swapping"] = ModeJson(p.swapping);
  j["swapping"]["limiting_layer"] = in.layers[p.limiting_layer].name;
  j["all_resident"] = ModeJson(p.all_resident);
  j["all_resident"]["fits"] = p.all_resident.per_gpu_batch > 0;
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void PrintTable(const PlanInput& in, const Plan& p, std::ostream& out) {
  const std::string name = in.model_name.empty() ? "model" : in.model_name;
  out << name << ": " << in.layers.size() << " layers, parameters "
      << Human(p.total_parameter_bytes) << " (x" << in.parameter_copies
      << " resident), activations " << Human(p.total_activation_bytes) << " per sample (x"
      << in.activation_copies << " resident)\n";
  out << "device: " << Human(*in.device_memory);
  if (in.reserve > 0) out << " - reserve " << Human(in.reserve) << " = " << Human(p.usable_bytes);
  out << " usable, " << in.gpus << (in.gpus == 1 ? " GPU" : " GPUs");
  if (in.base_batch.has_value()) {
    out << "; learning rate " << Number(*in.base_lr) << " at batch " << *in.base_batch
        << ", scaled linearly";
  }
  out << "\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-20s %14s %13s %14s  %s\n", "", "per-GPU batch",
                "global batch", "learning rate", "resident");
  out << line;
  auto row = [&](const char* label, const ModePlan& m, const std::string& note) {
    const std::string lr = m.learning_rate.has_value() ? Number(*m.learning_rate) : "-";
    if (m.per_gpu_batch == 0) {
      std::snprintf(line, sizeof line, "%-20s %14s %13s %14s  %s at batch 1%s\n", label,
                    "does not fit", "-", "-", Human(m.resident_bytes).c_str(), note.c_str());
    } else {
      std::snprintf(line, sizeof line, "%-20s %14llu %13llu %14s  %s%s\n", label,
                    static_cast<unsigned long long>(m.per_gpu_batch),
                    static_cast<unsigned long long>(m.global_batch), lr.c_str(),
                    Human(m.resident_bytes).c_str(), note.c_str());
    }
    out << line;
  };
  row("layer-wise swapping", p.swapping,
      " (layer " + in.layers[p.limiting_layer].name + " limits)");
  row("all resident", p.all_resident, "");
}

}  // namespace

int Run(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{
      "epochfs plan: the largest per-GPU minibatch with layer-wise swapping and with the whole "
      "network resident, and the linearly scaled learning rate (epochfs-plan(1))",
      "epochfs plan"};
  Flags f;
  app.add_option("MODEL", f.model_file, "model file (TOML): per-layer memory")
      ->required()
      ->type_name("MODEL.toml");
  app.add_option("--device-memory", f.device_memory, "memory of one GPU (\"16GiB\")")
      ->type_name("SIZE");
  app.add_option("--reserve", f.reserve, "bytes of it kept free (\"1GiB\")")->type_name("SIZE");
  app.add_option("--gpus", f.gpus, "number of GPUs (data parallel)")->type_name("N");
  app.add_option("--base-batch", f.base_batch, "global batch the base learning rate is for")
      ->type_name("B");
  app.add_option("--base-lr", f.base_lr, "learning rate known good at the base batch")
      ->type_name("LR");
  app.add_flag("--json", f.json, "print one JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    return Fail(err, std::string(e.what()) + " (see epochfs plan --help)");
  }

  Result<PlanInput> loaded = LoadModelFile(f.model_file);
  if (!loaded.ok()) return Fail(err, loaded.status().message());
  PlanInput in = std::move(loaded).value();
  if (Status s = Override(f, &in); !s.ok()) return Fail(err, s.message());
  Result<Plan> plan = MakePlan(in);
  if (!plan.ok()) return Fail(err, f.model_file + ": " + plan.status().message());
  if (f.json) {
    PrintJson(in, plan.value(), out);
  } else {
    PrintTable(in, plan.value(), out);
  }
  return 0;
}

int Main(int argc, char** argv) { return Run(argc, argv, std::cout, std::cerr); }

}  // namespace epochfs::plan
