// PathList: a list of paths held in one buffer (path k is a view into it).
//
// A samples list runs to millions of paths: one string each would cost a
// heap block and ~64 bytes per path, and the first touch of that memory is
// most of the time a list takes to register. Here a path costs its bytes
// plus 4. Paths are at most kMaxControlFileBytes in total (control_parse.h),
// so 32-bit offsets suffice.
// Thread safety: none; a const PathList may be read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace epochfs::control {

class PathList {
 public:
  PathList() = default;
  PathList(std::initializer_list<std::string_view> paths) {
    for (std::string_view p : paths) push_back(p);
  }

  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](size_t k) const {
    const uint32_t begin = k == 0 ? 0 : ends_[k - 1];
    return std::string_view(blob_).substr(begin, ends_[k] - begin);
  }
  void reserve(size_t paths, size_t bytes) {
    ends_.reserve(paths);
    blob_.reserve(bytes);
  }
  void push_back(std::string_view p) {
    blob_.append(p);
    ends_.push_back(static_cast<uint32_t>(blob_.size()));
  }
  // Copies, one string per path (for short lists).
  std::vector<std::string> ToStrings() const {
    std::vector<std::string> out;
    out.reserve(size());
    for (size_t k = 0; k < size(); ++k) out.emplace_back((*this)[k]);
    return out;
  }

 private:
  std::string blob_;
  std::vector<uint32_t> ends_;
};

}  // namespace epochfs::control
