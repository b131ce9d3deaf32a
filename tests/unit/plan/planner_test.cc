// Unit tests for the planner's arithmetic (src/plan/planner.cc): every case is
// computed by hand in the comment above it.
#include "epochfs/plan/planner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace epochfs::plan {
namespace {

PlanInput Input(std::vector<Layer> layers, uint64_t memory, uint32_t cp = 1, uint32_t ca = 1) {
  PlanInput in;
  in.layers = std::move(layers);
  in.device_memory = memory;
  in.parameter_copies = cp;
  in.activation_copies = ca;
  return in;
}

Plan MustPlan(const PlanInput& in) {
  Result<Plan> r = MakePlan(in);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r.value() : Plan{};
}

std::string ErrorOf(const PlanInput& in) {
  Result<Plan> r = MakePlan(in);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  return r.status().message();
}

// Seed 003 literally (one copy of everything): memory / per-sample size of the
// layer that needs the most.
//   swapping: min(1000/100, 1000/250, 1000/50) = min(10, 4, 20) = 4, layer "b";
//             resident 4*250 = 1000; global 4*4 = 16; lr 0.1*16/32 = 0.05.
//   all resident: 1000 / (100+250+50) = 2.5 -> 2; resident 2*400 = 800;
//             global 8; lr 0.1*8/32 = 0.025.
TEST(Planner, SeedLiteral) {
  PlanInput in = Input({{"a", 100, 0}, {"b", 250, 0}, {"c", 50, 0}}, 1000);
  in.gpus = 4;
  in.base_batch = 32;
  in.base_lr = 0.1;
  Plan p = MustPlan(in);
  EXPECT_EQ(p.usable_bytes, 1000u);
  EXPECT_EQ(p.total_parameter_bytes, 0u);
  EXPECT_EQ(p.total_activation_bytes, 400u);
  EXPECT_EQ(p.swapping.per_gpu_batch, 4u);
  EXPECT_EQ(p.limiting_layer, 1u);
  EXPECT_EQ(p.swapping.resident_bytes, 1000u);
  EXPECT_EQ(p.swapping.global_batch, 16u);
  ASSERT_TRUE(p.swapping.learning_rate.has_value());
  EXPECT_DOUBLE_EQ(*p.swapping.learning_rate, 0.05);
  EXPECT_EQ(p.all_resident.per_gpu_batch, 2u);
  EXPECT_EQ(p.all_resident.resident_bytes, 800u);
  EXPECT_EQ(p.all_resident.global_batch, 8u);
  ASSERT_TRUE(p.all_resident.learning_rate.has_value());
  EXPECT_DOUBLE_EQ(*p.all_resident.learning_rate, 0.025);
}

// Default copies (2 and 2), a reserve: usable = 100000 - 10000 = 90000.
//   conv: (90000 - 2*1000) / (2*300) = 88000/600 = 146.67 -> 146
//   fc:   (90000 - 2*40000) / (2*10) = 10000/20  = 500
//   swapping 146 (conv), resident 2000 + 146*600 = 89600.
//   all resident: (90000 - 2*41000) / (2*310) = 8000/620 = 12.9 -> 12,
//   resident 82000 + 12*620 = 89440. No base: no learning rate.
TEST(Planner, DefaultCopiesAndReserve) {
  PlanInput in;
  in.layers = {{"conv", 300, 1000}, {"fc", 10, 40000}};
  in.device_memory = 100000;
  in.reserve = 10000;
  Plan p = MustPlan(in);
  EXPECT_EQ(p.usable_bytes, 90000u);
  EXPECT_EQ(p.total_parameter_bytes, 41000u);
  EXPECT_EQ(p.total_activation_bytes, 310u);
  EXPECT_EQ(p.swapping.per_gpu_batch, 146u);
  EXPECT_EQ(p.limiting_layer, 0u);
  EXPECT_EQ(p.swapping.resident_bytes, 89600u);
  EXPECT_EQ(p.swapping.global_batch, 146u);  // 1 GPU
  EXPECT_FALSE(p.swapping.learning_rate.has_value());
  EXPECT_EQ(p.all_resident.per_gpu_batch, 12u);
  EXPECT_EQ(p.all_resident.resident_bytes, 89440u);
  EXPECT_FALSE(p.all_resident.learning_rate.has_value());
}

// Parameters can make a layer the limit although its activations are small:
//   big:   (1000 - 990) / 1 = 10
//   small: (1000 - 0) / 10  = 100      -> 10, limited by "big".
TEST(Planner, ParametersCanLimit) {
  Plan p = MustPlan(Input({{"small", 10, 0}, {"big", 1, 990}}, 1000));
  EXPECT_EQ(p.swapping.per_gpu_batch, 10u);
  EXPECT_EQ(p.limiting_layer, 1u);
  EXPECT_EQ(p.swapping.resident_bytes, 1000u);  // 990 + 10*1
  // all: 990 + B*11 <= 1000 -> B = 0 (990 + 11 = 1001 > 1000): does not fit.
  EXPECT_EQ(p.all_resident.per_gpu_batch, 0u);
  EXPECT_EQ(p.all_resident.resident_bytes, 1001u);  // at batch 1
}

// The boundary is inclusive: 10 + 7*5 = 45 fits in 45 bytes, not in 44.
TEST(Planner, ExactFitIsInclusive) {
  EXPECT_EQ(MustPlan(Input({{"l", 5, 10}}, 45)).swapping.per_gpu_batch, 7u);
  EXPECT_EQ(MustPlan(Input({{"l", 5, 10}}, 44)).swapping.per_gpu_batch, 6u);
  // Exactly batch 1: 10 + 5 = 15.
  EXPECT_EQ(MustPlan(Input({{"l", 5, 10}}, 15)).swapping.per_gpu_batch, 1u);
}

// Equal batches: the first layer in model order is the limit.
TEST(Planner, TieNamesTheFirstLayer) {
  // x: 100/10 = 10; y: (100 - 50)/5 = 10.
  Plan p = MustPlan(Input({{"x", 10, 0}, {"y", 5, 50}}, 100));
  EXPECT_EQ(p.swapping.per_gpu_batch, 10u);
  EXPECT_EQ(p.limiting_layer, 0u);
}

// Each layer fits alone at batch 1 (60 <= 100) but not both (120 > 100):
// swapping gives 100/60 = 1; all resident does not fit (0, no learning rate).
TEST(Planner, OnlySwappingFits) {
  PlanInput in = Input({{"l1", 60, 0}, {"l2", 60, 0}}, 100);
  in.gpus = 3;
  in.base_batch = 6;
  in.base_lr = 0.3;
  Plan p = MustPlan(in);
  EXPECT_EQ(p.swapping.per_gpu_batch, 1u);
  EXPECT_EQ(p.swapping.global_batch, 3u);
  EXPECT_DOUBLE_EQ(*p.swapping.learning_rate, 0.15);  // 0.3 * 3 / 6
  EXPECT_EQ(p.all_resident.per_gpu_batch, 0u);
  EXPECT_EQ(p.all_resident.global_batch, 0u);
  EXPECT_FALSE(p.all_resident.learning_rate.has_value());
  EXPECT_EQ(p.all_resident.resident_bytes, 120u);
}

// The learning rate scales with the global batch, not the per-GPU batch:
// 1000/10 = 100 per GPU, 8 GPUs -> 800; 0.1 * 800 / 256 = 0.3125.
TEST(Planner, LearningRateScalesWithGlobalBatch) {
  PlanInput in = Input({{"l", 10, 0}}, 1000);
  in.gpus = 8;
  in.base_batch = 256;
  in.base_lr = 0.1;
  Plan p = MustPlan(in);
  EXPECT_EQ(p.swapping.global_batch, 800u);
  EXPECT_DOUBLE_EQ(*p.swapping.learning_rate, 0.3125);
}

// A layer that does not fit at batch 1 is an error naming it and its bytes:
// l2 needs 1*30 + 1*40 = 70 > 60.
TEST(Planner, LayerTooLargeAtBatchOne) {
  EXPECT_EQ(ErrorOf(Input({{"l1", 50, 0}, {"l2", 40, 30}}, 60)),
            "layer 'l2' does not fit on the device even at batch 1: it needs 1*30 + 1*40 = 70 "
            "bytes, the device has 60 usable bytes");
  // With copies 2 and a reserve: 2*30 + 2*40 = 140 > 150 - 20 = 130.
  PlanInput in = Input({{"l1", 10, 0}, {"l2", 40, 30}}, 150, 2, 2);
  in.reserve = 20;
  EXPECT_EQ(ErrorOf(in),
            "layer 'l2' does not fit on the device even at batch 1: it needs 2*30 + 2*40 = 140 "
            "bytes, the device has 130 usable bytes (150 minus a reserve of 20)");
  // Several too large: the one needing the most is named (b: 90 > a: 80 > 50).
  EXPECT_NE(ErrorOf(Input({{"a", 80, 0}, {"b", 90, 0}, {"c", 1, 0}}, 50)).find("layer 'b'"),
            std::string::npos);
}

TEST(Planner, RejectsBadInput) {
  const PlanInput good = Input({{"l", 10, 0}}, 1000);
  ASSERT_TRUE(MakePlan(good).ok());
  PlanInput in = good;

  in.layers.clear();
  EXPECT_EQ(ErrorOf(in), "the model has no layers");
  in = good;
  in.layers[0].name = "";
  EXPECT_EQ(ErrorOf(in), "layer #1 has no name");
  in = good;
  in.layers.push_back({"l", 5, 0});
  EXPECT_EQ(ErrorOf(in), "layer 'l' appears twice (names must be unique)");
  in = good;
  in.layers[0].activation_bytes = 0;
  EXPECT_EQ(ErrorOf(in), "layer 'l': activation_bytes must be > 0");
  in = good;
  in.parameter_copies = 0;
  EXPECT_EQ(ErrorOf(in), "parameter_copies must be >= 1");
  in = good;
  in.activation_copies = 0;
  EXPECT_EQ(ErrorOf(in), "activation_copies must be >= 1");
  in = good;
  in.device_memory.reset();
  EXPECT_EQ(ErrorOf(in),
            "no device memory given (device.memory in the model file, or --device-memory)");
  in = good;
  in.device_memory = 0;
  EXPECT_EQ(ErrorOf(in), "device memory must be > 0");
  in = good;
  in.reserve = 1000;
  EXPECT_EQ(ErrorOf(in),
            "the reserve (1000 bytes) leaves nothing of the device memory (1000 bytes)");
  in = good;
  in.gpus = 0;
  EXPECT_EQ(ErrorOf(in), "gpus must be >= 1");
  in = good;
  in.base_batch = 32;
  EXPECT_EQ(ErrorOf(in), "a base batch needs a base learning rate (base_lr, --base-lr)");
  in = good;
  in.base_lr = 0.1;
  EXPECT_EQ(ErrorOf(in), "a base learning rate needs a base batch (base_batch, --base-batch)");
  for (double lr : {0.0, -0.1, std::nan(""), std::numeric_limits<double>::infinity()}) {
    in = good;
    in.base_batch = 32;
    in.base_lr = lr;
    EXPECT_EQ(ErrorOf(in), "the base learning rate must be a finite number > 0") << lr;
  }
  in = good;
  in.base_batch = 0;
  in.base_lr = 0.1;
  EXPECT_EQ(ErrorOf(in), "the base batch must be >= 1");
}

// Large values are exact (128-bit intermediates) and a global batch past
// 2^64-1 is an error, not a wrap.
TEST(Planner, LargeValues) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  // 2 copies of 2^63 parameter bytes would wrap in 64 bits: 2*2^63 + 2*1 > 2^64-1.
  EXPECT_NE(ErrorOf(Input({{"huge", 1, uint64_t{1} << 63}}, kMax, 2, 2)).find("layer 'huge'"),
            std::string::npos);
  // 1 byte per sample in 2^64-1 bytes: batch 2^64-1; times 2 GPUs is too large.
  PlanInput in = Input({{"tiny", 1, 0}}, kMax);
  EXPECT_EQ(MustPlan(in).swapping.per_gpu_batch, kMax);
  in.gpus = 2;
  EXPECT_EQ(ErrorOf(in), "the global batch 36893488147419103230 is past 2^64-1");
}

}  // namespace
}  // namespace epochfs::plan
