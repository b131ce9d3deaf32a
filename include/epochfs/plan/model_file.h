// The model file of `epochfs plan`: a model's per-layer memory, and optionally
// the device and the training base, in TOML. conf/plan/example_model.toml
// documents every key; scripts/layer_profile.py writes one from a PyTorch
// model.
//
//   [model]     name, parameter_copies, activation_copies   (all optional)
//   [device]    memory, reserve, gpus                        (all optional here;
//                                                             memory is required
//                                                             by the plan)
//   [training]  base_batch, base_lr                          (both or neither)
//   [[layer]]   name, activation_bytes, parameter_bytes      (one per layer, in
//                                                             execution order)
//
// Byte values are integers or size strings ("16GiB", "512MiB"; units as in
// epochfs.toml(5)). The file is checked once, here: a TOML syntax error names
// FILE:LINE:COLUMN; an unknown key, a value of the wrong type or range, a
// missing layer key or a repeated layer name names FILE:LINE and the key
// (layer[N] counts from 1), one line per problem, in file order. The cross-key
// checks (a layer that does not fit, base batch without base lr) are
// MakePlan's, after command-line overrides.
//
// Besides src/config/config.cc, model_file.cc is the only file that includes
// toml++; toml::parse_error stops there. Thread safety: free functions.
#pragma once

#include <string>
#include <string_view>

#include "epochfs/common/status.h"
#include "epochfs/plan/planner.h"

namespace epochfs::plan {

// Parses TOML text; `origin` names it in errors. Anything wrong is
// InvalidArgument.
Result<PlanInput> ParseModelFile(std::string_view toml_text, const std::string& origin);
// Reads and parses PATH. A file that cannot be read is NotFound,
// PermissionDenied or IoError (naming PATH and the reason).
Result<PlanInput> LoadModelFile(const std::string& path);

}  // namespace epochfs::plan
