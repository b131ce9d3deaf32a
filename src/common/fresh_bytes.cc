#include "epochfs/common/fresh_bytes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace epochfs {
namespace {
// Below this, the bytes come from the heap, mostly present already.
constexpr size_t kPopulateFrom = 64 * 1024;

// Reserves n bytes in v and makes their whole pages present.
void Populate(std::vector<char>* v, size_t n) {
  v->reserve(n);
  if (n >= kPopulateFrom) {
    static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto at = reinterpret_cast<uintptr_t>(v->data());
    const uintptr_t begin = (at + page - 1) & ~(page - 1);
    const uintptr_t end = (at + n) & ~(page - 1);
    // The advice only: whatever it answers, the caller then writes every byte.
    if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
  }
}

}  // namespace

void SizeForRead(std::vector<char>* v, size_t n) {
  Populate(v, n);
  v->resize(n);
}

void CopyFresh(std::vector<char>* v, const char* src, size_t n) {
  Populate(v, n);
  v->assign(src, src + n);  // within the capacity reserved: no reallocation, no zero-fill
}

}  // namespace epochfs
