// The planner's arithmetic; the formulas are in include/epochfs/plan/planner.h.
#include "epochfs/plan/planner.h"

#include <cmath>
#include <limits>
#include <set>
#include <string_view>

namespace epochfs::plan {
namespace {

using u128 = unsigned __int128;
constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();

uint64_t Saturate(u128 v) { return v > kMaxU64 ? kMaxU64 : static_cast<uint64_t>(v); }

std::string U128Text(u128 v) {
  if (v == 0) return "0";
  std::string s;
  while (v > 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return s;
}

Status CheckInput(const PlanInput& in) {
  if (in.layers.empty()) return InvalidArgument("the model has no layers");
  std::set<std::string_view> names;
  for (size_t i = 0; i < in.layers.size(); ++i) {
    const Layer& l = in.layers[i];
    if (l.name.empty()) {
      return InvalidArgument("layer #" + std::to_string(i + 1) + " has no name");
    }
    if (!names.insert(l.name).second) {
      return InvalidArgument("layer '" + l.name + "' appears twice (names must be unique)");
    }
    if (l.activation_bytes == 0) {
      return InvalidArgument("layer '" + l.name + "': activation_bytes must be > 0");
    }
  }
  if (in.parameter_copies == 0) return InvalidArgument("parameter_copies must be >= 1");
  if (in.activation_copies == 0) return InvalidArgument("activation_copies must be >= 1");
  if (!in.device_memory.has_value()) {
    return InvalidArgument(
        "no device memory given (device.memory in the model file, or --device-memory)");
  }
  if (*in.device_memory == 0) return InvalidArgument("device memory must be > 0");
  if (in.reserve >= *in.device_memory) {
    return InvalidArgument("the reserve (" + std::to_string(in.reserve) +
                           " bytes) leaves nothing of the device memory (" +
                           std::to_string(*in.device_memory) + " bytes)");
  }
  if (in.gpus == 0) return InvalidArgument("gpus must be >= 1");
  if (in.base_batch.has_value() != in.base_lr.has_value()) {
    return InvalidArgument(in.base_batch.has_value()
                               ? "a base batch needs a base learning rate (base_lr, --base-lr)"
                               : "a base learning rate needs a base batch (base_batch, --base-batch)");
  }
  if (in.base_batch.has_value() && *in.base_batch == 0) {
    return InvalidArgument("the base batch must be >= 1");
  }
  if (in.base_lr.has_value() && !(std::isfinite(*in.base_lr) && *in.base_lr > 0)) {
    return InvalidArgument("the base learning rate must be a finite number > 0");
  }
  return Status::Ok();
}

// Fills global batch and learning rate from per_gpu_batch.
Status Scale(const PlanInput& in, ModePlan* m) {
  const u128 global = static_cast<u128>(m->per_gpu_batch) * in.gpus;
  if (global > kMaxU64) {
    return InvalidArgument("the global batch " + U128Text(global) + " is past 2^64-1");
  }
  m->global_batch = static_cast<uint64_t>(global);
  if (in.base_batch.has_value() && m->per_gpu_batch > 0) {
    m->learning_rate = *in.base_lr * static_cast<double>(m->global_batch) /
                       static_cast<double>(*in.base_batch);
  }
  return Status::Ok();
}

}  // namespace

Result<Plan> MakePlan(const PlanInput& in) {
  if (Status s = CheckInput(in); !s.ok()) return s;
  Plan plan;
  const u128 usable = *in.device_memory - in.reserve;
  plan.usable_bytes = static_cast<uint64_t>(usable);
  const u128 cp = in.parameter_copies;
  const u128 ca = in.activation_copies;

  // Layer-wise swapping: each layer alone. The layer that needs the most at
  // batch 1 is the one to name if anything does not fit.
  u128 sum_p = 0;
  u128 sum_a = 0;
  size_t worst = 0;
  u128 worst_need = 0;
  u128 best_batch = std::numeric_limits<u128>::max();
  for (size_t i = 0; i < in.layers.size(); ++i) {
    const Layer& l = in.layers[i];
    sum_p += l.parameter_bytes;
    sum_a += l.activation_bytes;
    const u128 fixed = cp * l.parameter_bytes;
    const u128 per_sample = ca * l.activation_bytes;
    if (fixed + per_sample > worst_need) {
      worst_need = fixed + per_sample;
      worst = i;
    }
    const u128 batch = fixed + per_sample > usable ? 0 : (usable - fixed) / per_sample;
    if (batch < best_batch) {
      best_batch = batch;
      plan.limiting_layer = i;
    }
  }
  if (worst_need > usable) {
    const Layer& l = in.layers[worst];
    std::string msg = "layer '" + l.name + "' does not fit on the device even at batch 1: it needs " +
                      std::to_string(in.parameter_copies) + "*" +
                      std::to_string(l.parameter_bytes) + " + " +
                      std::to_string(in.activation_copies) + "*" +
                      std::to_string(l.activation_bytes) + " = " + U128Text(worst_need) +
                      " bytes, the device has " + U128Text(usable) + " usable bytes";
    if (in.reserve > 0) {
      msg += " (" + std::to_string(*in.device_memory) + " minus a reserve of " +
             std::to_string(in.reserve) + ")";
    }
    return InvalidArgument(std::move(msg));
  }
  if (sum_p > kMaxU64 || sum_a > kMaxU64) {
    return InvalidArgument("the model's total parameter or activation bytes are past 2^64-1");
  }
  plan.total_parameter_bytes = static_cast<uint64_t>(sum_p);
  plan.total_activation_bytes = static_cast<uint64_t>(sum_a);

  // best_batch <= usable < 2^64: every layer has per_sample >= 1.
  plan.swapping.per_gpu_batch = static_cast<uint64_t>(best_batch);
  {
    const Layer& l = in.layers[plan.limiting_layer];
    plan.swapping.resident_bytes =
        Saturate(cp * l.parameter_bytes + best_batch * ca * l.activation_bytes);
  }
  if (Status s = Scale(in, &plan.swapping); !s.ok()) return s;

  // Everything resident.
  const u128 fixed = cp * sum_p;
  const u128 per_sample = ca * sum_a;
  const u128 all = fixed + per_sample > usable ? 0 : (usable - fixed) / per_sample;
  plan.all_resident.per_gpu_batch = static_cast<uint64_t>(all);
  plan.all_resident.resident_bytes = Saturate(fixed + (all == 0 ? 1 : all) * per_sample);
  if (Status s = Scale(in, &plan.all_resident); !s.ok()) return s;
  return plan;
}

}  // namespace epochfs::plan
