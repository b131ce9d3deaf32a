// MemoryModel on synthetic series: flat, noisy flat, linear rise, a step, a
// slow leak, a hog that grows then frees, urgency, clamps, time order.
#include "epochfs/governor/memory_model.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace epochfs::governor {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kTick = 500'000'000;  // 0.5 s
constexpr uint64_t kTotal = 16 * kGiB;

ModelParams Params() {
  ModelParams p;
  p.margin_bytes = 256 * kMiB;
  p.min_bytes = 64 * kMiB;
  p.max_bytes = 0;
  p.window_ns = 30'000'000'000;
  p.default_horizon_ns = 30'000'000'000;
  p.flat_samples = 6;
  p.flat_tolerance_bytes = 32 * kMiB;
  p.hysteresis_bytes = 16 * kMiB;
  p.grow_delay_ns = 5'000'000'000;
  return p;
}

// A sample where the non-cache usage is u and the cache holds `cache`.
MemorySample At(uint64_t i, uint64_t u, uint64_t cache = 0, uint64_t total = kTotal) {
  return {i * kTick, total, total - u - cache, cache};
}

// Deterministic noise in [-amp, +amp].
int64_t Noise(uint64_t i, int64_t amp) {
  uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ULL;
  return static_cast<int64_t>(z % static_cast<uint64_t>(2 * amp + 1)) - amp;
}

TEST(MemoryModel, FlatSeriesIsAPlateauAndTheBudgetIsWhatIsLeft) {
  MemoryModel m(Params());
  for (uint64_t i = 0; i < 40; ++i) {
    const Estimate& e = m.Add(At(i, 4 * kGiB), 0);
    EXPECT_TRUE(e.fit.plateau) << i;
    EXPECT_EQ(e.non_cache_bytes, 4 * kGiB);
    EXPECT_EQ(e.predicted_peak_bytes, 4 * kGiB);
    EXPECT_EQ(e.budget_bytes, kTotal - 4 * kGiB - 256 * kMiB) << i;
  }
  EXPECT_NEAR(m.last().fit.slope, 0.0, 1e-6);
  EXPECT_EQ(m.last().horizon_ns, 30'000'000'000u);
}

TEST(MemoryModel, TheCacheItselfIsNotCountedAsUsage) {
  MemoryModel m(Params());
  const uint64_t first = m.Add(At(0, 2 * kGiB, 0), 0).budget_bytes;
  // The cache fills up to its budget: u stays 2 GiB, so the budget stays.
  for (uint64_t i = 1; i < 20; ++i) {
    const Estimate& e = m.Add(At(i, 2 * kGiB, first * i / 20), 0);
    EXPECT_EQ(e.non_cache_bytes, 2 * kGiB);
    EXPECT_EQ(e.budget_bytes, first);
  }
}

TEST(MemoryModel, NoiseWithinTheHysteresisDoesNotMoveTheBudget) {
  MemoryModel m(Params());
  const uint64_t base = 3 * kGiB;
  uint64_t budget = 0;
  int rising = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    const uint64_t u = base + static_cast<uint64_t>(Noise(i, 6 * static_cast<int64_t>(kMiB)) +
                                                    static_cast<int64_t>(8 * kMiB));
    const Estimate& e = m.Add(At(i, u), 0);
    if (i == 0) budget = e.budget_bytes;
    EXPECT_EQ(e.budget_bytes, budget) << "budget moved at sample " << i;
    rising += e.fit.plateau ? 0 : 1;
  }
  // A noise series is a plateau nearly always (2-sigma test: a few false
  // alarms at most, and those cannot move the budget past the hysteresis).
  EXPECT_LE(rising, 20);
}

TEST(MemoryModel, LinearRiseIsExtrapolatedToTheHorizon) {
  MemoryModel m(Params());
  const uint64_t rate = 50 * kMiB;  // per second
  uint64_t prev_budget = UINT64_MAX;
  for (uint64_t i = 0; i < 40; ++i) {
    const uint64_t u = 2 * kGiB + rate * i / 2;
    const Estimate& e = m.Add(At(i, u), 0);
    EXPECT_LE(e.budget_bytes, prev_budget) << "grew while usage rises, sample " << i;
    prev_budget = e.budget_bytes;
    if (i >= 3) {
      EXPECT_FALSE(e.fit.plateau) << i;
      EXPECT_NEAR(e.fit.slope, static_cast<double>(rate), rate * 1e-6);
      // peak = u + 50 MiB/s · 30 s
      EXPECT_NEAR(static_cast<double>(e.predicted_peak_bytes),
                  static_cast<double>(u + rate * 30), static_cast<double>(kMiB));
      const uint64_t target = kTotal - (u + rate * 30) - 256 * kMiB;
      EXPECT_NEAR(static_cast<double>(e.target_bytes), static_cast<double>(target),
                  static_cast<double>(kMiB));
      EXPECT_LE(e.budget_bytes, e.target_bytes + 16 * kMiB);
    }
  }
}

TEST(MemoryModel, AKnownJobEndIsTheHorizon) {
  MemoryModel m(Params());
  const uint64_t rate = 10 * kMiB;
  for (uint64_t i = 0; i < 10; ++i) m.Add(At(i, kGiB + rate * i / 2), 100'000'000'000);
  const Estimate& e = m.last();
  EXPECT_EQ(e.horizon_ns, 100'000'000'000u);
  EXPECT_NEAR(static_cast<double>(e.predicted_peak_bytes),
              static_cast<double>(kGiB + rate * 9 / 2 + rate * 100), static_cast<double>(kMiB));
}

TEST(MemoryModel, AStepShrinksAtOnceAndThenSettlesAsAPlateau) {
  MemoryModel m(Params());
  for (uint64_t i = 0; i < 20; ++i) m.Add(At(i, 2 * kGiB), 0);
  const uint64_t before = m.budget();
  EXPECT_EQ(before, kTotal - 2 * kGiB - 256 * kMiB);
  // u jumps by 2 GiB: the budget drops in the same tick, by at least the step.
  const Estimate& e = m.Add(At(20, 4 * kGiB), 0);
  EXPECT_LE(e.budget_bytes, before - 2 * kGiB);
  // Flat after the step: within flat_samples it is a plateau again and the
  // peak is the new level (no extrapolation of the step's slope).
  for (uint64_t i = 21; i < 27; ++i) m.Add(At(i, 4 * kGiB), 0);
  EXPECT_TRUE(m.last().fit.plateau);
  EXPECT_GT(m.last().fit.slope, 0.0);  // the window still holds the step
  EXPECT_EQ(m.last().predicted_peak_bytes, 4 * kGiB);
  EXPECT_EQ(m.last().target_bytes, kTotal - 4 * kGiB - 256 * kMiB);
}

TEST(MemoryModel, ASlowLeakIsNotTakenForAPlateau) {
  MemoryModel m(Params());
  // 2 MiB/s: the last 6 samples span 5 MiB, inside the flat tolerance, but
  // their slope is the window's: still rising.
  for (uint64_t i = 0; i < 60; ++i) {
    const uint64_t u = kGiB + 2 * kMiB * i / 2 +
                       static_cast<uint64_t>(Noise(i, static_cast<int64_t>(kMiB / 4)) +
                                             static_cast<int64_t>(kMiB));
    m.Add(At(i, u), 0);
  }
  EXPECT_FALSE(m.last().fit.plateau);
  EXPECT_NEAR(m.last().fit.slope, 2.0 * kMiB, 0.2 * kMiB);
  EXPECT_GT(m.last().predicted_peak_bytes, m.last().non_cache_bytes + 50 * kMiB);
}

TEST(MemoryModel, AHogThatGrowsThenFreesShrinksFastAndGrowsBackSlowly) {
  ModelParams p = Params();
  MemoryModel m(p);
  const uint64_t base = 2 * kGiB;
  uint64_t i = 0;
  uint64_t cache = 0;
  std::vector<uint64_t> budgets;
  auto add = [&](uint64_t u) {
    // The cache follows its budget (evictions are immediate, fills are not).
    const Estimate& e = m.Add(At(i, u, std::min(cache, kTotal - u)), 0);
    cache = std::min(cache + 512 * kMiB, e.budget_bytes);
    budgets.push_back(e.budget_bytes);
    // Never more than what is left now (the hysteresis aside).
    if (e.budget_bytes > p.min_bytes) {
      EXPECT_LE(e.budget_bytes, kTotal - u - p.margin_bytes + p.hysteresis_bytes) << i;
    }
    ++i;
    return e;
  };
  for (int k = 0; k < 20; ++k) add(base);
  const uint64_t full = m.budget();
  // Grows 800 MiB per tick up to 12 GiB, holds 10 s.
  for (uint64_t hog = 0; hog <= 12 * kGiB; hog += 800 * kMiB) {
    add(base + hog);
    EXPECT_LE(budgets.back(), budgets[budgets.size() - 2]) << "grew while the hog grows";
  }
  EXPECT_LT(m.budget(), full - 12 * kGiB);
  const uint64_t low = m.budget();
  EXPECT_GE(low, p.min_bytes);
  for (int k = 0; k < 20; ++k) add(base + 12 * kGiB);
  EXPECT_TRUE(m.last().fit.plateau);
  const uint64_t held = m.budget();
  EXPECT_EQ(held, std::max(p.min_bytes, kTotal - base - 12 * kGiB - p.margin_bytes));
  // Frees: the budget stays for grow_delay, then grows back to full.
  const size_t freed_at = budgets.size();
  for (int k = 0; k < 40; ++k) add(base);
  for (size_t k = freed_at; k < freed_at + 5; ++k) EXPECT_EQ(budgets[k], held) << k;
  EXPECT_EQ(m.budget(), full);
  // Growth happened in few steps, never by a shrink-grow-shrink flap.
  int changes = 0;
  for (size_t k = freed_at + 1; k < budgets.size(); ++k) changes += budgets[k] != budgets[k - 1];
  EXPECT_LE(changes, 3);
  for (size_t k = freed_at + 1; k < budgets.size(); ++k) EXPECT_GE(budgets[k], budgets[k - 1]);
}

TEST(MemoryModel, UrgencyShrinksInsideTheHysteresis) {
  ModelParams p = Params();
  MemoryModel m(p);
  const uint64_t total = 1000 * kMiB;
  EXPECT_EQ(m.Add(At(0, 0, 0, total), 0).budget_bytes, 744 * kMiB);
  // The cache filled its budget; 8 MiB of usage appear: available 248 MiB is
  // below the margin, so the 8 MiB shrink happens although 8 < hysteresis.
  const Estimate& e = m.Add(At(1, 8 * kMiB, 744 * kMiB, total), 0);
  EXPECT_TRUE(e.urgent);
  EXPECT_EQ(e.budget_bytes, 736 * kMiB);
  // Not urgent: the same small change is ignored.
  MemoryModel calm(p);
  calm.Add(At(0, 0, 0, total), 0);
  const Estimate& c = calm.Add(At(1, 8 * kMiB, 0, total), 0);
  EXPECT_FALSE(c.urgent);
  EXPECT_EQ(c.budget_bytes, 744 * kMiB);
}

TEST(MemoryModel, BudgetIsClampedToMinAndMax) {
  ModelParams p = Params();
  p.max_bytes = 4 * kGiB;
  MemoryModel m(p);
  EXPECT_EQ(m.Add(At(0, kGiB), 0).budget_bytes, 4 * kGiB);
  MemoryModel tight(Params());
  // Usage above total − margin: the budget is the minimum, never 0.
  EXPECT_EQ(tight.Add(At(0, kTotal - 100 * kMiB), 0).budget_bytes, 64 * kMiB);
  EXPECT_EQ(tight.Add(At(1, kTotal), 0).budget_bytes, 64 * kMiB);
}

TEST(MemoryModel, TimeGoingBackIsIgnoredAndTheWindowSlides) {
  MemoryModel m(Params());
  m.Add(At(10, kGiB), 0);
  const uint64_t b = m.budget();
  m.Add(At(5, 8 * kGiB), 0);  // older than the newest: ignored
  EXPECT_EQ(m.budget(), b);
  EXPECT_EQ(m.window().size(), 1u);
  for (uint64_t i = 11; i < 500; ++i) m.Add(At(i, kGiB), 0);
  // 30 s of 0.5 s ticks: 61 samples at most.
  EXPECT_LE(m.window().size(), 61u);
  EXPECT_GE(m.window().size(), 60u);
  EXPECT_EQ(m.window().back().t_ns, 499 * kTick);
}

TEST(MemoryModel, AvailableAboveTotalIsClamped) {
  MemoryModel m(Params());
  const Estimate& e = m.Add({0, kGiB, 2 * kGiB, 0}, 0);
  EXPECT_EQ(e.non_cache_bytes, 0u);
  EXPECT_EQ(e.budget_bytes, kGiB - 256 * kMiB);
}

TEST(MemoryModel, FitLineOfAPerfectLine) {
  std::deque<MemoryModel::Point> pts;
  for (uint64_t i = 0; i < 10; ++i) pts.push_back({i * 1'000'000'000, 100 + 7 * kMiB * i});
  Fit f = MemoryModel::FitLine(pts, Params());
  EXPECT_NEAR(f.slope, 7.0 * kMiB, 1e-3);
  EXPECT_NEAR(f.intercept, 100 + 63.0 * kMiB, 1e-3);  // at the newest sample
  EXPECT_NEAR(f.residual_stddev, 0.0, 1e-3);
  EXPECT_EQ(f.n, 10u);
  // A perfect line is rising: 63 MiB over the window, and its last 6 samples
  // (35 MiB, inside the flat tolerance) keep the window's slope.
  EXPECT_FALSE(f.plateau);
  // The same line at 7 bytes per second is a plateau: its rise over the
  // window is far below the tolerance, however significant.
  std::deque<MemoryModel::Point> tiny;
  for (uint64_t i = 0; i < 10; ++i) tiny.push_back({i * 1'000'000'000, 100 + 7 * i});
  EXPECT_TRUE(MemoryModel::FitLine(tiny, Params()).plateau);
}

}  // namespace
}  // namespace epochfs::governor
