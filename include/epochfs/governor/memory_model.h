// MemoryModel: the memory governor's arithmetic (cache.memory = "auto").
//
// Fed one MemorySample per governor tick, it tracks the memory used outside
// the cache,
//   u(t) = total − available − cache,
// fits u against time by least squares over a sliding window, decides whether
// u has reached a plateau or is still rising (seed 004: a plateau stays where
// it is, a rising curve is extrapolated to the jobs' expected end), predicts
// the peak of u at the horizon, and derives the cache budget
//   target = total − predicted_peak − margin, clamped to [min, max],
// i.e. what is available plus what the cache already holds, minus the growth
// still to come, minus a safety margin. docs/governor.md states every formula.
//
// Hysteresis, so that the budget does not flap with measurement noise:
//   - shrink at once when the target is more than `hysteresis` below the
//     budget, or whenever available < margin (urgent);
//   - grow only when every target of the last `grow_delay` was more than
//     `hysteresis` above the budget, and then to the smallest of them.
//
// Pure: no I/O, no clock (time comes in the samples), deterministic.
// Thread safety: not thread-safe; the governor thread owns it.
// Errors: none. Samples whose time goes backwards are ignored; figures that do
// not add up (available > total) are clamped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

namespace epochfs::governor {

// One reading of the memory the daemon lives in.
struct MemorySample {
  uint64_t t_ns = 0;             // monotonic time of the reading
  uint64_t total_bytes = 0;      // min(MemTotal, the cgroup's limit)
  uint64_t available_bytes = 0;  // min(MemAvailable, the cgroup's limit − its working set)
  uint64_t cache_bytes = 0;      // bytes the cache holds (RAM store)
};

struct ModelParams {
  uint64_t margin_bytes = 256ull << 20;  // kept free beyond the predicted peak
  uint64_t min_bytes = 64ull << 20;      // the budget never goes below this
  uint64_t max_bytes = 0;                // ... nor above this; 0: total − margin
  uint64_t window_ns = 30'000'000'000;   // samples the fit uses (sliding window)
  uint64_t default_horizon_ns = 30'000'000'000;  // when no job's end is known
  // Rising (not a plateau) needs all of: a slope over the window larger than
  // three standard errors, a fitted rise over the window (slope × its span)
  // above `flat_tolerance_bytes`, and the last `flat_samples` samples rising
  // too (their own slope above a quarter of the window's). The peak of a
  // plateau is the largest of the last `flat_samples` values.
  size_t flat_samples = 6;
  uint64_t flat_tolerance_bytes = 32ull << 20;
  uint64_t hysteresis_bytes = 16ull << 20;
  uint64_t grow_delay_ns = 5'000'000'000;
  size_t max_samples = 4096;  // hard cap on the window's length
};

// Least-squares line u(t) ≈ intercept + slope·(t − t_last) over the window.
struct Fit {
  size_t n = 0;                 // samples in the window
  double slope = 0.0;           // bytes per second
  double slope_stderr = 0.0;    // standard error of the slope (bytes per second)
  double intercept = 0.0;       // fitted u at the newest sample (bytes)
  double residual_stddev = 0.0; // bytes
  bool plateau = true;          // not (yet) rising: the peak is the recent level
};

// What one sample led to.
struct Estimate {
  uint64_t t_ns = 0;
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
  uint64_t cache_bytes = 0;
  uint64_t non_cache_bytes = 0;  // u at this sample
  Fit fit;
  uint64_t horizon_ns = 0;       // how far ahead the peak is predicted
  uint64_t predicted_peak_bytes = 0;  // of u, at the horizon
  uint64_t target_bytes = 0;     // total − peak − margin, clamped to [min, max]
  uint64_t budget_bytes = 0;     // after hysteresis: what the cache should use
  bool urgent = false;           // available < margin: shrunk without delay
};

class MemoryModel {
 public:
  explicit MemoryModel(const ModelParams& params);

  // Adds a sample and returns the new estimate (budget_bytes is the budget to
  // apply). horizon_ns: time until the jobs' expected end; 0 means unknown
  // (params.default_horizon_ns is used). A sample older than the newest one
  // is ignored and the previous estimate returned.
  const Estimate& Add(const MemorySample& s, uint64_t horizon_ns);

  // Margin, min and max in bytes (the daemon recomputes them from the config
  // when total changes: they may be percentages of it).
  void SetBounds(uint64_t margin_bytes, uint64_t min_bytes, uint64_t max_bytes) {
    params_.margin_bytes = margin_bytes;
    params_.min_bytes = min_bytes;
    params_.max_bytes = max_bytes;
  }

  // The latest estimate (zeros before the first sample).
  const Estimate& last() const { return last_; }
  uint64_t budget() const { return last_.budget_bytes; }
  bool has_budget() const { return started_; }

  // The fit window: (t, u) pairs, oldest first.
  struct Point {
    uint64_t t_ns;
    uint64_t u_bytes;
  };
  const std::deque<Point>& window() const { return window_; }
  const ModelParams& params() const { return params_; }

  // Least-squares fit and plateau test of `points` (exposed for tests).
  static Fit FitLine(const std::deque<Point>& points, const ModelParams& params);

 private:
  ModelParams params_;
  std::deque<Point> window_;
  // Growth pending: since when every target was above budget + hysteresis
  // (0: not now), and the smallest of those targets.
  uint64_t grow_since_ns_ = 0;
  uint64_t grow_min_ = 0;
  Estimate last_;
  bool started_ = false;
};

}  // namespace epochfs::governor
