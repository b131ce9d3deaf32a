// Model file loading for `epochfs plan`; the format is in
// include/epochfs/plan/model_file.h and conf/plan/example_model.toml.
//
// Syntax errors come from ParseTomlText (FILE:LINE:COLUMN).
#include "epochfs/plan/model_file.h"

#include "epochfs/common/bytes_text.h"
#include "epochfs/common/problem_list.h"
#include "epochfs/common/text_file.h"
#include "epochfs/common/toml_text.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace epochfs::plan {
namespace {

constexpr int64_t kMaxCopies = 1000;
constexpr int64_t kMaxGpus = 1 << 20;

// Reads the document into a PlanInput, collecting problems.
class Reader {
 public:
  explicit Reader(const std::string& origin) : origin_(origin) {}

  void Root(const toml::table& root, PlanInput* out) {
    for (auto&& [k, v] : root) {
      const std::string_view key = k.str();
      if (key == "model") {
        Section(key, v, [&](std::string_view name, const toml::node& n) {
          return ModelKey(name, n, out);
        });
      } else if (key == "device") {
        Section(key, v, [&](std::string_view name, const toml::node& n) {
          return DeviceKey(name, n, out);
        });
      } else if (key == "training") {
        Section(key, v, [&](std::string_view name, const toml::node& n) {
          return TrainingKey(name, n, out);
        });
      } else if (key == "layer") {
        Layers(v, out);
      } else {
        std::string hint;
        if (key == "layers") hint = " (layers are [[layer]] tables)";
        Add(v, std::string(key) + ": unknown key (known: [model], [device], [training], " +
                   "[[layer]])" + hint);
      }
    }
    if (!root.contains("layer")) {
      problems_.Add(0, 0, origin_ + ": no [[layer]] tables: the model has no layers");
    }
  }

  Status Finish() { return problems_.Finish(); }

 private:
  // A key handler returns "" when it took the value, else the expectation
  // ("integer >= 1"); "?" means the key is unknown.
  template <class Handler>
  void Section(std::string_view section, const toml::node& node, Handler handle) {
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      Add(node, std::string(section) + ": expected a table [" + std::string(section) + "], got " +
                    TomlValueText(node));
      return;
    }
    for (auto&& [k, v] : *t) {
      const std::string dotted = std::string(section) + "." + std::string(k.str());
      std::string expected = handle(k.str(), v);
      if (expected == "?") {
        Add(v, dotted + ": unknown key");
      } else if (!expected.empty()) {
        Add(v, dotted + ": expected " + expected + ", got " + TomlValueText(v));
      }
    }
  }

  void Layers(const toml::node& node, PlanInput* out) {
    const toml::array* arr = node.as_array();
    if (arr == nullptr || !arr->is_array_of_tables()) {
      Add(node, "layer: expected [[layer]] tables, got " + TomlValueText(node));
      return;
    }
    std::map<std::string, size_t, std::less<>> seen;  // name → layer number
    size_t number = 0;
    for (const toml::node& item : *arr) {
      ++number;
      const toml::table& t = *item.as_table();
      const std::string where = "layer[" + std::to_string(number) + "]";
      Layer layer;
      bool has_name = false;
      bool has_act = false;
      bool has_param = false;
      for (auto&& [k, v] : t) {
        const std::string_view key = k.str();
        const std::string dotted = where + "." + std::string(key);
        if (key == "name") {
          const auto* s = v.as_string();
          has_name = true;  // if bad, reported here, not as missing too
          if (s == nullptr || s->get().empty()) {
            Add(v, dotted + ": expected a non-empty string, got " + TomlValueText(v));
            continue;
          }
          layer.name = s->get();
          auto [it, inserted] = seen.emplace(layer.name, number);
          if (!inserted) {
            Add(v, dotted + ": \"" + layer.name + "\" is already the name of layer[" +
                       std::to_string(it->second) + "] (names must be unique)");
          }
        } else if (key == "activation_bytes") {
          if (Bytes(v, 1, &layer.activation_bytes)) {
            has_act = true;
          } else {
            Add(v, dotted + ": expected bytes per sample > 0 (integer or \"12KiB\"), got " +
                       TomlValueText(v));
            has_act = true;  // reported already; not "missing" as well
          }
        } else if (key == "parameter_bytes") {
          has_param = true;
          if (!Bytes(v, 0, &layer.parameter_bytes)) {
            Add(v, dotted + ": expected bytes >= 0 (integer or \"12KiB\"), got " + TomlValueText(v));
          }
        } else {
          Add(v, dotted + ": unknown key (known: name, activation_bytes, parameter_bytes)");
        }
      }
      const std::string label = !layer.name.empty() ? where + " (" + layer.name + ")" : where;
      if (!has_name) Add(item, where + ": name missing");
      if (!has_act) Add(item, label + ": activation_bytes missing (bytes per sample)");
      if (!has_param) Add(item, label + ": parameter_bytes missing (0 for a layer without parameters)");
      out->layers.push_back(std::move(layer));
    }
  }

  std::string ModelKey(std::string_view key, const toml::node& v, PlanInput* out) {
    if (key == "name") {
      const auto* s = v.as_string();
      if (s == nullptr) return "a string";
      out->model_name = s->get();
      return "";
    }
    if (key == "parameter_copies") {
      return U32(v, 1, kMaxCopies, &out->parameter_copies) ? "" : "integer 1..1000";
    }
    if (key == "activation_copies") {
      return U32(v, 1, kMaxCopies, &out->activation_copies) ? "" : "integer 1..1000";
    }
    return "?";
  }

  std::string DeviceKey(std::string_view key, const toml::node& v, PlanInput* out) {
    uint64_t b = 0;
    if (key == "memory") {
      if (!Bytes(v, 1, &b)) return "bytes > 0 (integer or \"16GiB\")";
      out->device_memory = b;
      return "";
    }
    if (key == "reserve") {
      if (!Bytes(v, 0, &b)) return "bytes >= 0 (integer or \"1GiB\")";
      out->reserve = b;
      return "";
    }
    if (key == "gpus") {
      return U32(v, 1, kMaxGpus, &out->gpus) ? "" : "integer 1..1048576";
    }
    return "?";
  }

  std::string TrainingKey(std::string_view key, const toml::node& v, PlanInput* out) {
    if (key == "base_batch") {
      const auto* i = v.as_integer();
      if (i == nullptr || i->get() < 1) return "integer >= 1";
      out->base_batch = static_cast<uint64_t>(i->get());
      return "";
    }
    if (key == "base_lr") {
      double d = 0;
      if (const auto* f = v.as_floating_point()) {
        d = f->get();
      } else if (const auto* i = v.as_integer()) {
        d = static_cast<double>(i->get());
      } else {
        return "a number > 0";
      }
      if (!(std::isfinite(d) && d > 0)) return "a number > 0";
      out->base_lr = d;
      return "";
    }
    return "?";
  }

  static bool U32(const toml::node& v, int64_t lo, int64_t hi, uint32_t* out) {
    const auto* i = v.as_integer();
    if (i == nullptr || i->get() < lo || i->get() > hi) return false;
    *out = static_cast<uint32_t>(i->get());
    return true;
  }

  // Bytes as an integer or a size string, at least `min`.
  static bool Bytes(const toml::node& v, uint64_t min, uint64_t* out) {
    uint64_t b = 0;
    if (const auto* i = v.as_integer()) {
      if (i->get() < 0) return false;
      b = static_cast<uint64_t>(i->get());
    } else if (const auto* s = v.as_string()) {
      Result<uint64_t> parsed = ParseBytes(s->get());
      if (!parsed.ok()) return false;
      b = parsed.value();
    } else {
      return false;
    }
    if (b < min) return false;
    *out = b;
    return true;
  }

  void Add(const toml::node& at, const std::string& what) {
    AddTomlProblem(problems_, origin_, at, what);
  }

  const std::string& origin_;
  ProblemList problems_;
};

}  // namespace

Result<PlanInput> ParseModelFile(std::string_view toml_text, const std::string& origin) {
  Result<toml::table> parsed = ParseTomlText(toml_text, origin);
  if (!parsed.ok()) return parsed.status();
  const toml::table root = std::move(parsed).value();
  PlanInput input;
  Reader reader(origin);
  reader.Root(root, &input);
  if (Status s = reader.Finish(); !s.ok()) return s;
  return input;
}

Result<PlanInput> LoadModelFile(const std::string& path) {
  auto text = ReadTextFile(path, "model file");
  if (!text.ok()) return text.status();
  return ParseModelFile(text.value(), path);
}

}  // namespace epochfs::plan
