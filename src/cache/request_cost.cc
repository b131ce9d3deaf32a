#include "epochfs/cache/request_cost.h"

#include <algorithm>
#include <cmath>

namespace epochfs::cache {

bool RequestCost::OnLoad(uint64_t bytes, uint64_t start_ns, uint64_t end_ns) {
  end_ns = std::max(end_ns, start_ns);
  const double x = double(bytes), y = double(end_ns - start_ns) * 1e-9;
  if (n_ == 0) {
    first_ = start_ns;
    last_ = end_ns;
  }
  first_ = std::min(first_, start_ns);
  last_ = std::max(last_, end_ns);
  n_ += 1;
  sx_ += x;
  sy_ += y;
  sxx_ += x * x;
  sxy_ += x * y;
  if (n_ < double(kWindow)) return false;

  const double n = n_, sx = sx_, sy = sy_, sxx = sxx_, sxy = sxy_;
  const double span = double(last_ - first_) * 1e-9;
  n_ = sx_ = sy_ = sxx_ = sxy_ = 0;
  const double mean = sx / n;
  const double var = sxx / n - mean * mean;  // of the sizes
  if (!(mean > 0) || !(var > mean * mean / 256) || !(span > 0)) return false;
  const double b = (sxy / n - mean * (sy / n)) / var;  // seconds per byte
  const double a = sy / n - b * mean;                  // seconds
  double r = double(kMax);
  if (b > 0) {
    const double used = (sx / span) * b;  // T · b
    r = std::max(0.0, a / b) * std::max(0.0, 1 - used);
  }
  r = std::min(r, double(kMax));
  const uint64_t before = r_;
  const double mixed = estimates_ == 0 ? r : (double(r_) + r) / 2;
  r_ = static_cast<uint64_t>(std::llround(std::min(mixed, double(kMax))));
  ++estimates_;
  return r_ != before;
}

}  // namespace epochfs::cache
