// readfiles — measures small-file read throughput the way a data loader sees
// it: open + read-to-EOF + close for every file of a list.
//
//   readfiles [-t THREADS] [-r REPEATS] [-q] [-j JOB_DIR -e EPOCH -b BATCH [-m MS]] FILE_LIST
//
// FILE_LIST holds one path per line. The list is split into THREADS
// contiguous slices; each thread reads its slice with a private 256 KiB
// buffer, and the whole list is read REPEATS times (threads meet at a
// barrier between repeats, so every repeat is timed as a whole). Prints the
// files/s and MB/s (10^6 bytes) of all repeats together, and of the best
// repeat. With -q prints one machine-readable line:
//   files_per_s=<all> mb_per_s=<all> best_files_per_s=<best> best_mb_per_s=<best> errors=<n>
//
// With -j, the reader is a registered epochfs job reading in its declared
// order (JOB_DIR = MOUNT/.epochfs/jobs/NAME, config and samples written,
// sample k = line k): each repeat is one epoch, EPOCH, EPOCH+1, ...; before
// it (outside the timed part) the order of the next epoch (the list order)
// and the `epoch` marker are written, as EpochfsSampler does, and the
// threads take batches of BATCH files in list order, as DataLoader workers
// do; every THREADS batches handed out, but not sooner than MS (default 5)
// milliseconds after the epoch's previous report, and at the end of the
// epoch, the thread that took the batch writes `position` (timed: part of
// the job; the file stays open, each write(2) one report, as epochfs.job
// does; the floor is EpochfsSampler's report_interval_s).
//
// Any open/read error is counted and reported; the exit status is 1 if there
// was one, so a benchmark never silently measures a failing mount.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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
  std::string job_dir;  // -j: a registered job (see above)
  long epoch = -1;      // -e
  int batch = 0;        // -b
  int report_ms = 5;    // -m: least time between two `position` reports
};

[[noreturn]] void Usage() {
  std::fprintf(stderr,
               "usage: readfiles [-t THREADS] [-r REPEATS] [-q] "
               "[-j JOB_DIR -e EPOCH -b BATCH [-m MS]] "
               "FILE_LIST\n");
  std::exit(2);
}

int ParseInt(const char* s, long lo = 1, long hi = 4096) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) Usage();
  return static_cast<int>(v);
}

// One control-file write (open, write all, close: the daemon takes it at close).
bool WriteControl(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  return close(fd) == 0 && done == text.size();
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-t" && i + 1 < argc) {
      o.threads = ParseInt(argv[++i]);
    } else if (a == "-r" && i + 1 < argc) {
      o.repeats = ParseInt(argv[++i]);
    } else if (a == "-q") {
      o.quiet = true;
    } else if (a == "-j" && i + 1 < argc) {
      o.job_dir = argv[++i];
    } else if (a == "-e" && i + 1 < argc) {
      o.epoch = ParseInt(argv[++i], 0, 999999);
    } else if (a == "-b" && i + 1 < argc) {
      o.batch = ParseInt(argv[++i]);
    } else if (a == "-m" && i + 1 < argc) {
      o.report_ms = ParseInt(argv[++i], 0, 60000);
    } else if (!a.empty() && a[0] != '-' && o.list_path.empty()) {
      o.list_path = a;
    } else {
      Usage();
    }
  }
  if (o.list_path.empty()) Usage();
  if (!o.job_dir.empty() && (o.epoch < 0 || o.batch == 0)) Usage();
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

  // -j: the job's control files; the order is the list's, every epoch.
  const bool job = !opt.job_dir.empty();
  std::string order_text;
  if (job) {
    for (size_t k = 0; k < files.size(); ++k) order_text += std::to_string(k) + " ";
    order_text += "\n";
  }
  const size_t batch = job ? static_cast<size_t>(opt.batch) : 1;
  const size_t nbatches = (files.size() + batch - 1) / batch;
  std::atomic<size_t> next_batch{0};
  std::atomic<int64_t> control_errors{0};
  auto control = [&](const std::string& file, const std::string& text) {
    if (!WriteControl(opt.job_dir + "/" + file, text)) ++control_errors;
  };
  // `position` takes each write(2) as one report: kept open, one request each.
  int position_fd = -1;
  if (job) {
    position_fd = open((opt.job_dir + "/position").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (position_fd < 0) {
      std::fprintf(stderr, "readfiles: %s/position: %s\n", opt.job_dir.c_str(), std::strerror(errno));
      return 2;
    }
  }
  auto position = [&](long epoch, size_t p) {
    const std::string text = std::to_string(epoch) + " " + std::to_string(p) + "\n";
    if (pwrite(position_fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      ++control_errors;
    }
  };
  // When the epoch's last report went out (steady clock, ns; 0: none yet).
  std::atomic<int64_t> last_report_ns{0};
  const int64_t report_gap_ns = int64_t{opt.report_ms} * 1000000;
  auto report_due = [&]() {
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            Clock::now().time_since_epoch()).count();
    int64_t last = last_report_ns.load();
    if (last != 0 && now - last < report_gap_ns) return false;
    return last_report_ns.compare_exchange_strong(last, now);  // one thread reports
  };
  auto epoch_of = [&](int r) { return opt.epoch + r; };

  // Completion step runs on one thread between phases: records the time,
  // and (-j) declares the next epoch and begins it (not timed).
  auto on_phase = [&]() noexcept {
    auto now = Clock::now();
    if (repeat_index > 0) {
      repeat_seconds[static_cast<size_t>(repeat_index - 1)] =
          std::chrono::duration<double>(now - repeat_start).count();
    }
    if (job && repeat_index < opt.repeats) {
      const long e = epoch_of(repeat_index);
      if (repeat_index == 0) control("order/" + std::to_string(e), order_text);
      control("order/" + std::to_string(e + 1), order_text);
      control("epoch", std::to_string(e) + "\n");
      next_batch = 0;
      last_report_ns = 0;
    }
    repeat_start = Clock::now();
    ++repeat_index;
  };
  std::barrier sync(nthreads, on_phase);

  auto read_range = [&](size_t begin, size_t end, char* buf) {
    int64_t local = 0;
    for (size_t i = begin; i < end; ++i) {
      int64_t n = ReadOne(files[i], buf);
      if (n < 0) {
        if (errors.fetch_add(1) == 0) first_errno = -n;
      } else {
        local += n;
      }
    }
    bytes += local;
  };
  auto worker = [&](int t) {
    auto buf = std::make_unique<char[]>(kBufferSize);
    size_t begin = files.size() * static_cast<size_t>(t) / static_cast<size_t>(nthreads);
    size_t end = files.size() * static_cast<size_t>(t + 1) / static_cast<size_t>(nthreads);
    sync.arrive_and_wait();  // start line
    for (int r = 0; r < opt.repeats; ++r) {
      if (!job) {
        read_range(begin, end, buf.get());
      } else {
        // Batches in list order, as loaders take them; `position` every
        // nthreads batches handed out, and at the end.
        for (size_t b; (b = next_batch.fetch_add(1)) < nbatches;) {
          const size_t lo = b * batch, hi = std::min(files.size(), lo + batch);
          if ((b + 1) % static_cast<size_t>(nthreads) == 0 && b + 1 < nbatches &&
              report_due()) {
            position(epoch_of(r), hi);
          }
          read_range(lo, hi, buf.get());
          if (b + 1 == nbatches) position(epoch_of(r), files.size());
        }
      }
      sync.arrive_and_wait();  // end of repeat r
    }
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  if (position_fd >= 0) close(position_fd);

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
  if (control_errors.load() > 0) {
    std::fprintf(stderr, "readfiles: %lld control-file writes under %s failed\n",
                 static_cast<long long>(control_errors.load()), opt.job_dir.c_str());
    return 1;
  }
  if (errors.load() > 0) {
    std::fprintf(stderr, "readfiles: %lld errors (first: %s)\n",
                 static_cast<long long>(errors.load()),
                 std::strerror(static_cast<int>(first_errno.load())));
    return 1;
  }
  return 0;
}
