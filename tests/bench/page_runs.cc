// page_runs — how the kernel's page cache lays out the pages of some files
// in physical memory: of the pages it holds for them, the share whose page
// frame is the one just after (or just before) the previous page's frame.
//
//   page_runs FILE_LIST        (root: page frame numbers need CAP_SYS_ADMIN)
//
// Each file of FILE_LIST (one path per line) is mapped read-only and each of
// its pages touched (a page the kernel does not hold is read in, as any read
// would); /proc/self/pagemap gives each page's frame. Prints one line:
//   pages=<n> ascending=<pct> descending=<pct>
// A hot read copies page by page, so a file whose pages sit in frames one
// after the other reads faster than one whose pages are scattered (fewer
// cache and TLB misses on the pages and on their struct pages): read_bench.sh
// prints this for the fuse.no_open mount after its warm-up (see
// docs/benchmarks.md, "One copy, and a job's hits").
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kPresent = 1ull << 63;
constexpr uint64_t kFrameMask = (1ull << 55) - 1;

struct Tally {
  uint64_t pages = 0, ascending = 0, descending = 0, previous = 0;
  void Add(uint64_t frame) {
    if (pages != 0 && frame == previous + 1) ++ascending;
    if (pages != 0 && frame + 1 == previous) ++descending;
    previous = frame;
    ++pages;
  }
};

// Adds the frames of `path`'s pages to `t`; false if it cannot be read.
bool AddFile(const std::string& path, int pagemap, Tally& t) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return false;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return true;
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return false;
  const auto* bytes = static_cast<const volatile char*>(map);
  const uint64_t first = reinterpret_cast<uintptr_t>(map) / kPage;
  bool ok = true;
  for (uint64_t k = 0; k < (size + kPage - 1) / kPage; ++k) {
    (void)bytes[k * kPage];  // map the page in
    uint64_t entry = 0;
    if (pread(pagemap, &entry, sizeof entry, static_cast<off_t>((first + k) * sizeof entry)) !=
        static_cast<ssize_t>(sizeof entry)) {
      ok = false;
      break;
    }
    if ((entry & kPresent) != 0 && (entry & kFrameMask) != 0) t.Add(entry & kFrameMask);
  }
  munmap(map, size);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: page_runs FILE_LIST\n");
    return 2;
  }
  const int pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) {
    std::perror("page_runs: /proc/self/pagemap");
    return 1;
  }
  std::ifstream list(argv[1]);
  if (!list) {
    std::fprintf(stderr, "page_runs: cannot read %s\n", argv[1]);
    return 1;
  }
  Tally t;
  int errors = 0;
  for (std::string path; std::getline(list, path);) {
    if (!path.empty() && !AddFile(path, pagemap, t)) ++errors;
  }
  if (t.pages == 0) {
    std::fprintf(stderr, "page_runs: no page frames (not root?)\n");
    return 1;
  }
  std::printf("pages=%llu ascending=%.0f descending=%.0f\n",
              static_cast<unsigned long long>(t.pages), 100.0 * t.ascending / t.pages,
              100.0 * t.descending / t.pages);
  return errors == 0 ? 0 : 1;
}
