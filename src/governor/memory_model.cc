// The memory governor's model; docs/governor.md is its prose version.
#include "epochfs/governor/memory_model.h"

#include <algorithm>
#include <cmath>

namespace epochfs::governor {
namespace {

constexpr double kNsPerS = 1e9;

// Least squares of y against x; fills slope, intercept (at x = 0), residual
// standard deviation and the slope's standard error.
struct Ls {
  double slope = 0, intercept = 0, resid_sd = 0, slope_se = 0;
};

template <class It>
Ls LeastSquares(It begin, It end, uint64_t t0) {
  Ls r;
  const double n = static_cast<double>(std::distance(begin, end));
  if (n < 1) return r;
  double mx = 0, my = 0;
  for (It it = begin; it != end; ++it) {
    mx += (static_cast<double>(it->t_ns) - static_cast<double>(t0)) / kNsPerS;
    my += static_cast<double>(it->u_bytes);
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (It it = begin; it != end; ++it) {
    const double dx = (static_cast<double>(it->t_ns) - static_cast<double>(t0)) / kNsPerS - mx;
    sxx += dx * dx;
    sxy += dx * (static_cast<double>(it->u_bytes) - my);
  }
  r.slope = sxx > 0 ? sxy / sxx : 0.0;
  r.intercept = my - r.slope * mx;
  double ssr = 0;
  for (It it = begin; it != end; ++it) {
    const double x = (static_cast<double>(it->t_ns) - static_cast<double>(t0)) / kNsPerS;
    const double e = static_cast<double>(it->u_bytes) - (r.intercept + r.slope * x);
    ssr += e * e;
  }
  if (n > 2) {
    r.resid_sd = std::sqrt(ssr / (n - 2));
    r.slope_se = sxx > 0 ? std::sqrt(ssr / (n - 2) / sxx) : 0.0;
  }
  return r;
}

uint64_t SatSub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

}  // namespace

MemoryModel::MemoryModel(const ModelParams& params) : params_(params) {
  if (params_.flat_samples < 2) params_.flat_samples = 2;
  if (params_.max_samples < 3) params_.max_samples = 3;
}

Fit MemoryModel::FitLine(const std::deque<Point>& points, const ModelParams& params) {
  Fit f;
  f.n = points.size();
  if (points.empty()) return f;
  const uint64_t t_last = points.back().t_ns;
  const Ls all = LeastSquares(points.begin(), points.end(), t_last);
  f.slope = all.slope;
  f.slope_stderr = all.slope_se;
  f.intercept = all.intercept;
  f.residual_stddev = all.resid_sd;
  // Rising: at least 3 samples, a slope significantly above 0 (three standard
  // errors), a fitted rise over the window larger than the flat tolerance
  // (noise over a short span can be "significant" without mattering), and
  // the recent samples not flat.
  const double span_s =
      static_cast<double>(points.back().t_ns - points.front().t_ns) / kNsPerS;
  const bool significant = f.n >= 3 && f.slope > 0 && f.slope > 3.0 * f.slope_stderr &&
                           f.slope * span_s > static_cast<double>(params.flat_tolerance_bytes);
  if (!significant) {
    f.plateau = true;
    return f;
  }
  // The recent samples are not rising with the window: their own slope is at
  // most a quarter of the window's. Covers a step that has settled (flat
  // since), a drop (negative), but not a steady leak that is merely small
  // over a few samples (its recent slope is the window's).
  const size_t k = std::min(params.flat_samples, points.size());
  auto recent = points.end() - static_cast<std::ptrdiff_t>(k);
  const Ls rec = LeastSquares(recent, points.end(), t_last);
  const bool flat = k >= 2 && k < points.size() && rec.slope <= f.slope / 4;
  f.plateau = flat;
  return f;
}

const Estimate& MemoryModel::Add(const MemorySample& s, uint64_t horizon_ns) {
  if (started_ && s.t_ns < last_.t_ns) return last_;
  const uint64_t total = s.total_bytes;
  const uint64_t avail = std::min(s.available_bytes, total);
  const uint64_t u = SatSub(SatSub(total, avail), s.cache_bytes);

  window_.push_back({s.t_ns, u});
  while (window_.size() > params_.max_samples ||
         (window_.size() > 1 && window_.front().t_ns + params_.window_ns < s.t_ns)) {
    window_.pop_front();
  }

  Estimate e;
  e.t_ns = s.t_ns;
  e.total_bytes = total;
  e.available_bytes = avail;
  e.cache_bytes = s.cache_bytes;
  e.non_cache_bytes = u;
  e.fit = FitLine(window_, params_);
  e.horizon_ns = horizon_ns != 0 ? horizon_ns : params_.default_horizon_ns;

  // Predicted peak of u: a plateau stays at its recent maximum; a rising
  // curve continues at the fitted slope from where it is now.
  const size_t k = std::min(params_.flat_samples, window_.size());
  uint64_t recent_max = 0;
  for (auto it = window_.end() - static_cast<std::ptrdiff_t>(k); it != window_.end(); ++it) {
    recent_max = std::max(recent_max, it->u_bytes);
  }
  double peak = static_cast<double>(recent_max);
  if (!e.fit.plateau) {
    const double base = std::max(e.fit.intercept, static_cast<double>(u));
    peak = std::max(peak, base + e.fit.slope * static_cast<double>(e.horizon_ns) / kNsPerS);
  }
  e.predicted_peak_bytes =
      peak >= static_cast<double>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(peak);

  const uint64_t max_budget = params_.max_bytes != 0 ? params_.max_bytes : UINT64_MAX;
  uint64_t target = SatSub(SatSub(total, e.predicted_peak_bytes), params_.margin_bytes);
  target = std::clamp(target, params_.min_bytes, std::max(params_.min_bytes, max_budget));
  e.target_bytes = target;
  e.urgent = avail < params_.margin_bytes;

  // Hysteresis: shrink fast, grow slowly.
  uint64_t budget = started_ ? last_.budget_bytes : target;
  if (started_) {
    const bool shrink = target + params_.hysteresis_bytes < budget || (e.urgent && target < budget);
    if (shrink) {
      budget = target;
      grow_since_ns_ = 0;
    } else if (target > budget + params_.hysteresis_bytes) {
      if (grow_since_ns_ == 0) {
        grow_since_ns_ = s.t_ns == 0 ? 1 : s.t_ns;
        grow_min_ = target;
      }
      grow_min_ = std::min(grow_min_, target);
      if (s.t_ns >= grow_since_ns_ + params_.grow_delay_ns) {
        budget = grow_min_;
        grow_since_ns_ = 0;
      }
    } else {
      grow_since_ns_ = 0;
    }
  }
  e.budget_bytes = budget;
  last_ = e;
  started_ = true;
  return last_;
}

}  // namespace epochfs::governor
