// readfiles — measures small-file read throughput the way a data loader sees
// it: open + read-to-EOF + close for every file of a list.
//
//   readfiles [-t THREADS] [-r REPEATS] [-q] FILE_LIST
//
// FILE_LIST holds one path per line. The list is split into THREADS
// contiguous slices; each thread reads its slice with a private 256 KiB
// buffer, and the whole list is read REPEATS times (threads meet at a
// barrier between repeats, so every repeat is timed as a whole). Prints the
// files/s and MB/s (10^6 bytes) of all repeats together, and of the best
// repeat. With -q prints one machine-readable line:
//   files_per_s=<all> mb_per_s=<all> best_files_per_s=<best> best_mb_per_s=<best> errors=<n>
//
// Any open/read error is counted and reported; the exit status is 1 if there
// was one, so a benchmark never silently measures a failing mount.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kBufferSize = 256 * 1024;

struct Options {
  int threads = 1;
  int repeats = 1;
  bool quiet = false;
  std::string list_path;
};

[[noreturn]] void Usage() {
  std::fprintf(stderr, "usage: readfiles [-t THREADS] [-r REPEATS] [-q] FILE_LIST\n");
  std::exit(2);
}

int ParsePositive(const char* s) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 1 || v > 4096) Usage();
  return static_cast<int>(v);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-t" && i + 1 < argc) {
      o.threads = ParsePositive(argv[++i]);
    } else if (a == "-r" && i + 1 < argc) {
      o.repeats = ParsePositive(argv[++i]);
    } else if (a == "-q") {
      o.quiet = true;
    } else if (!a.empty() && a[0] != '-' && o.list_path.empty()) {
      o.list_path = a;
    } else {
      Usage();
    }
  }
  if (o.list_path.empty()) Usage();
  return o;
}

// Reads one file to EOF; returns bytes read or -errno.
int64_t ReadOne(const std::string& path, char* buf) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, kBufferSize);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return -err;
    }
    if (n == 0) break;
    total += n;
  }
  close(fd);
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = ParseArgs(argc, argv);

  std::vector<std::string> files;
  {
    std::ifstream in(opt.list_path);
    if (!in) {
      std::fprintf(stderr, "readfiles: cannot open %s\n", opt.list_path.c_str());
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) files.push_back(line);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "readfiles: %s lists no files\n", opt.list_path.c_str());
    return 2;
  }
  const int nthreads = std::min<int>(opt.threads, static_cast<int>(files.size()));

  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> first_errno{0};
  using Clock = std::chrono::steady_clock;
  std::vector<double> repeat_seconds(static_cast<size_t>(opt.repeats));
  Clock::time_point repeat_start;
  int repeat_index = 0;

  // Completion step runs on one thread between phases: records the time.
  auto on_phase = [&]() noexcept {
    auto now = Clock::now();
    if (repeat_index > 0) {
      repeat_seconds[static_cast<size_t>(repeat_index - 1)] =
          std::chrono::duration<double>(now - repeat_start).count();
    }
    repeat_start = now;
    ++repeat_index;
  };
  std::barrier sync(nthreads, on_phase);

  auto worker = [&](int t) {
    auto buf = std::make_unique<char[]>(kBufferSize);
    size_t begin = files.size() * static_cast<size_t>(t) / static_cast<size_t>(nthreads);
    size_t end = files.size() * static_cast<size_t>(t + 1) / static_cast<size_t>(nthreads);
    sync.arrive_and_wait();  // start line
    for (int r = 0; r < opt.repeats; ++r) {
      int64_t local = 0;
      for (size_t i = begin; i < end; ++i) {
        int64_t n = ReadOne(files[i], buf.get());
        if (n < 0) {
          if (errors.fetch_add(1) == 0) first_errno = -n;
        } else {
          local += n;
        }
      }
      bytes += local;
      sync.arrive_and_wait();  // end of repeat r
    }
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();

  double total_s = 0, best_s = repeat_seconds[0];
  for (double s : repeat_seconds) {
    total_s += s;
    if (s < best_s) best_s = s;
  }
  const double nfiles = static_cast<double>(files.size());
  const double all_files = nfiles * opt.repeats;
  const double per_repeat_bytes = static_cast<double>(bytes.load()) / opt.repeats;
  double fps = all_files / total_s, mbps = static_cast<double>(bytes.load()) / total_s / 1e6;
  double best_fps = nfiles / best_s, best_mbps = per_repeat_bytes / best_s / 1e6;

  if (opt.quiet) {
    std::printf("files_per_s=%.0f mb_per_s=%.1f best_files_per_s=%.0f best_mb_per_s=%.1f "
                "errors=%lld\n",
                fps, mbps, best_fps, best_mbps, static_cast<long long>(errors.load()));
  } else {
    std::printf("files=%zu threads=%d repeats=%d bytes=%lld seconds=%.3f\n", files.size(),
                nthreads, opt.repeats, static_cast<long long>(bytes.load()), total_s);
    std::printf("all repeats: %.0f files/s  %.1f MB/s\n", fps, mbps);
    std::printf("best repeat: %.0f files/s  %.1f MB/s\n", best_fps, best_mbps);
  }
  if (errors.load() > 0) {
    std::fprintf(stderr, "readfiles: %lld errors (first: %s)\n",
                 static_cast<long long>(errors.load()),
                 std::strerror(static_cast<int>(first_errno.load())));
    return 1;
  }
  return 0;
}
