// The minibatch planner of seed 003 (patent CN109902818B): how large a
// per-GPU minibatch fits in device memory, with layer-wise swapping and with
// the whole network resident, and the learning rate scaled linearly to the
// global minibatch.
//
// Memory model (docs/plan.md, epochfs-plan(1)). A layer l has p_l parameter
// bytes and a_l activation bytes per sample (the bytes of its output for one
// sample). At per-GPU batch B it needs resident
//
//   need_l(B) = c_p·p_l + B·c_a·a_l
//
// where c_p = parameter_copies (weights, their gradients, and any optimizer
// state kept on the GPU; default 2: weights + gradients, seed 003 keeps the
// optimizer on the parameter server) and c_a = activation_copies (default 2:
// a layer's output and, in the backward pass, its gradient). The device gives
// usable = device_memory − reserve.
//
//   layer-wise swapping: only the layer that runs is resident, so
//     B_swap = min_l floor((usable − c_p·p_l) / (c_a·a_l));
//     the layer attaining the minimum is the limiting layer (the first one in
//     model order on a tie). Seed 003: memory divided by the per-sample size
//     of the layer that needs the most memory.
//   all resident: every layer's parameters and activations at once,
//     B_all = floor((usable − c_p·Σp) / (c_a·Σa)), 0 when not even batch 1 fits.
//   global batch = B · gpus;
//   learning rate = base_lr · global batch / base_batch (seed 003, claim 7),
//     when a base batch and base learning rate are given.
//
// Errors (InvalidArgument, one line): no layers; a layer with an empty or
// repeated name, zero activation bytes; copies or gpus of 0; no or zero device
// memory; a reserve that leaves nothing; only one of base_batch / base_lr; a
// non-positive or non-finite base_lr; a layer that does not fit even at batch 1
// under swapping (the message names the layer that needs the most memory at
// batch 1, and its bytes); a global batch past 2^64−1. An all-resident batch
// of 0 is a result, not an error.
//
// Pure arithmetic (exact, in 128-bit integers; the learning rate in double):
// no I/O, no allocation beyond the result. Thread safety: a free function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "epochfs/common/status.h"

namespace epochfs::plan {

struct Layer {
  std::string name;
  uint64_t activation_bytes = 0;  // per sample, > 0
  uint64_t parameter_bytes = 0;   // may be 0 (ReLU, pooling)
};

struct PlanInput {
  std::string model_name;             // for the report only
  std::vector<Layer> layers;          // in execution order
  uint32_t parameter_copies = 2;      // c_p >= 1
  uint32_t activation_copies = 2;     // c_a >= 1
  std::optional<uint64_t> device_memory;  // bytes, required, > 0
  uint64_t reserve = 0;               // bytes kept free (CUDA context, workspace)
  uint32_t gpus = 1;                  // >= 1
  std::optional<uint64_t> base_batch;  // together with base_lr, or neither
  std::optional<double> base_lr;
};

// One of the two residency modes.
struct ModePlan {
  uint64_t per_gpu_batch = 0;     // 0: does not fit at batch 1 (all resident only)
  uint64_t global_batch = 0;      // per_gpu_batch · gpus
  std::optional<double> learning_rate;  // when a base is given and per_gpu_batch > 0
  // Resident bytes at per_gpu_batch (at batch 1 when per_gpu_batch == 0):
  // need_l(B) of the limiting layer, or the whole network's need.
  uint64_t resident_bytes = 0;
};

struct Plan {
  uint64_t usable_bytes = 0;  // device_memory − reserve
  uint64_t total_parameter_bytes = 0;   // Σp
  uint64_t total_activation_bytes = 0;  // Σa, per sample
  ModePlan swapping;
  size_t limiting_layer = 0;  // index into PlanInput::layers
  ModePlan all_resident;
};

Result<Plan> MakePlan(const PlanInput& input);

}  // namespace epochfs::plan
