#include "epochfs/cache/request_cost.h"

#include <algorithm>
#include <cmath>

namespace epochfs::cache {

bool RequestCost::OnLoad(uint64_t bytes, uint64_t start_ns, uint64_t end_ns, uint32_t others) {
  end_ns = std::max(end_ns, start_ns);
  const double x = double(bytes), y = double(end_ns - start_ns) * 1e-9, q = double(others);
  if (n_ == 0) {
    first_ = start_ns;
    last_ = end_ns;
  }
  first_ = std::min(first_, start_ns);
  last_ = std::max(last_, end_ns);
  n_ += 1;
  sx_ += x;
  sy_ += y;
  sq_ += q;
  sxx_ += x * x;
  sxy_ += x * y;
  sqq_ += q * q;
  sxq_ += x * q;
  sqy_ += q * y;
  if (n_ < double(kWindow)) return false;

  const double n = n_;
  const double mx = sx_ / n, my = sy_ / n, mq = sq_ / n;
  // Centered second moments (per load).
  const double vxx = sxx_ / n - mx * mx, vqq = sqq_ / n - mq * mq, vxq = sxq_ / n - mx * mq;
  const double cxy = sxy_ / n - mx * my, cqy = sqy_ / n - mq * my;
  const double span = double(last_ - first_) * 1e-9;
  const double t = sx_ / std::max(span, 1e-12);  // T, bytes per second
  n_ = sx_ = sy_ = sq_ = sxx_ = sxy_ = sqq_ = sxq_ = sqy_ = 0;
  if (!(mx > 0) || !(vxx > mx * mx / 256) || !(span > 0)) return false;
  // d = a + b·s + c·q: a request's fixed cost when it finds the store to
  // itself (q = 0), its cost per byte, and what each load ahead of it adds
  // (a queue). Without spread in q (one loader), d = a + b·s.
  double b = cxy / vxx, c = 0;
  const double det = vxx * vqq - vxq * vxq;
  if (vqq > 1e-6 && det > 1e-9 * vxx * vqq) {
    b = (vqq * cxy - vxq * cqy) / det;
    c = (vxx * cqy - vxq * cxy) / det;
  }
  // Durations that shrink with size are noise (a queue's swings larger than
  // the bytes' part): no estimate from this window.
  if (!(b > 0)) return false;
  const double a = my - b * mx - c * mq;
  const double r = std::min(std::max(0.0, a / b) * std::max(0.0, 1 - t * b), double(kMax));
  const uint64_t before = r_;
  const double mixed = estimates_ == 0 ? r : (double(r_) + r) / 2;
  r_ = static_cast<uint64_t>(std::llround(std::min(mixed, double(kMax))));
  ++estimates_;
  return r_ != before;
}

}  // namespace epochfs::cache
