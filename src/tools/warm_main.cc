#include "epochfs/tools/warm_main.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "epochfs/common/bytes_text.h"
#include "epochfs/common/text_file.h"
#include "epochfs/common/unique_fd.h"
#include "epochfs/tools/mount_client.h"
#include "epochfs/tools/warm_list.h"
#include "epochfs/tools/warm_report.h"

namespace epochfs::tools {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void Warn(const std::string& msg) { std::fprintf(stderr, "epochfs warm: %s\n", msg.c_str()); }

// The walk: the regular files under the entries, each once, their sizes
// summed into the counts as they are found; `.epochfs` and `.spill` at the
// mount root are not data. Errors are reported (with the list line they
// came from) and counted.
class Walk {
 public:
  Walk(const std::string& root, WarmCounts& counts, std::function<void()> tick)
      : root_(root), counts_(counts), tick_(std::move(tick)) {}

  void Add(const WarmEntry& e) {
    const std::string from = e.origin.empty() ? "" : e.origin + ": ";
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(e.path, ec);
    if (ec) return Error(from + e.path + ": " + ec.message());
    if (fs::is_regular_file(st)) return File(e.path, fs::file_size(e.path, ec));
    if (!fs::is_directory(st)) {
      if (!e.origin.empty()) Error(from + e.path + ": not a regular file or a directory");
      return;
    }
    fs::recursive_directory_iterator it(e.path, fs::directory_options::none, ec), end;
    if (ec) return Error(from + e.path + ": " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) return Error(from + e.path + ": " + ec.message());
      const fs::path& p = it->path();
      if (p.parent_path() == fs::path(root_) &&
          (p.filename() == ".epochfs" || p.filename() == ".spill")) {
        it.disable_recursion_pending();
        continue;
      }
      std::error_code fe;
      if (it->is_regular_file(fe) && !it->is_symlink(fe)) File(p.string(), it->file_size(fe));
    }
  }

  std::vector<std::string>& files() { return files_; }

 private:
  void File(const std::string& path, uint64_t size) {
    if (!seen_.insert(path).second) return;  // listed twice, or under two entries
    files_.push_back(path);
    counts_.files_total.fetch_add(1);
    counts_.bytes_total.fetch_add(size == static_cast<uintmax_t>(-1) ? 0 : size);
    tick_();
  }
  void Error(const std::string& msg) {
    Warn(msg);
    counts_.errors.fetch_add(1);
  }

  std::string root_;
  WarmCounts& counts_;
  std::function<void()> tick_;
  std::vector<std::string> files_;
  std::set<std::string> seen_;
};

// Reads the whole file; errno on failure.
int ReadAll(const std::string& path, std::vector<char>& buf, std::atomic<uint64_t>& bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return errno;
  while (true) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n == 0) return 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }
}

std::string Progress(const WarmCounts& c, double secs) {
  char buf[160];
  const uint64_t bytes = c.bytes_done.load();
  std::snprintf(buf, sizeof buf, "\rwarm: %llu/%llu files, %s of %s, %s/s   ",
                static_cast<unsigned long long>(c.files_done.load()),
                static_cast<unsigned long long>(c.files_total.load()), HumanBytes(bytes).c_str(),
                HumanBytes(c.bytes_total.load()).c_str(),
                HumanBytes(secs > 0 ? static_cast<uint64_t>(double(bytes) / secs) : 0).c_str());
  return buf;
}

// --background: forks; the caller returns once the child has sent its first
// report (so that `stats` shows the warm when the command returns), saying
// where to watch it. The child leaves the caller: a new session, and its
// output to /dev/null unless it goes to a file (`> warm.log 2>&1` keeps it;
// a terminal or a pipe would hold the caller's reader until the warm ends).
// Returns, in the child, the pipe end that ReadyToDetach closes.
int Detach(const std::string& root) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    Warn(std::string("pipe: ") + std::strerror(errno));
    std::exit(1);
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    Warn(std::string("fork: ") + std::strerror(errno));
    std::exit(1);
  }
  if (pid == 0) {
    ::close(ready[0]);
    ::setsid();
    UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    ::dup2(null.get(), STDIN_FILENO);
    for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
      struct stat st;
      if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) ::dup2(null.get(), fd);
    }
    return ready[1];
  }
  ::close(ready[1]);
  char c;
  const bool ok = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  std::printf("warm: in the background as pid %d; its progress: epochfs top %s, or the \"warm\" "
              "rows of %s/.epochfs/stats\n",
              static_cast<int>(pid), root.c_str(), root == "/" ? "" : root.c_str());
  std::exit(ok ? 0 : 1);
}

// The child has reported once: the caller may return.
void ReadyToDetach(int fd) {
  const char c = 1;
  if (::write(fd, &c, 1) != 1) Warn("the caller of --background is gone");
  ::close(fd);
}

uint64_t NumberAt(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

// The disk tier's entry in the stats, or null (no disk tier).
const nlohmann::json* DiskOf(const nlohmann::json& stats) {
  auto t = stats.find("tiers");
  if (t == stats.end() || !t->is_object()) return nullptr;
  auto d = t->find("disk");
  return d != t->end() && d->is_object() ? &*d : nullptr;
}

// Where the cached bytes are: "RAM X (n files), kernel Y (m), disk tier Z
// (k) of W".
std::string Where(const nlohmann::json& stats) {
  std::string out;
  auto tier = [&](const char* name, const char* label) {
    auto t = stats.find("tiers");
    if (t == stats.end() || !t->is_object()) return;
    auto e = t->find(name);
    if (e == t->end() || !e->is_object()) return;
    if (!out.empty()) out += ", ";
    out += std::string(label) + " " + HumanBytes(NumberAt(*e, "bytes")) + " (" +
           std::to_string(NumberAt(*e, "objects")) + ")";
  };
  tier("ram", "RAM");
  tier("kernel", "kernel page cache");
  tier("disk", "disk tier");
  if (const nlohmann::json* d = DiskOf(stats)) {
    out += " of " + HumanBytes(NumberAt(*d, "budget"));
    const std::string state = d->value("state", std::string());
    if (!state.empty() && state != "ok") out += " (" + state + ")";
  }
  return out;
}

}  // namespace

int WarmMain(int argc, char** argv) {
  CLI::App app{"epochfs warm: load files of an epochfs mount into its cache (epochfs(8))"};
  std::vector<std::string> paths;
  std::string from;
  unsigned threads = 4;
  bool quiet = false, background = false;
  app.add_option("PATH", paths,
                 "files or directories inside the mount; with --from, the mount (any path in it)");
  app.add_option("--from", from,
                 "LIST: paths, one a line, relative to the mount's root (- : standard input)");
  app.add_option("-j,--jobs", threads, "files read at once")->check(CLI::Range(1u, 256u));
  app.add_flag("-q,--quiet", quiet, "no progress line");
  app.add_flag("--background", background,
               "detach; the progress is in stats (\"warm\") and epochfs top");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (paths.empty()) {
    Warn(from.empty() ? "PATH is required (a file or directory inside a mount)"
                      : "--from needs the mount: epochfs warm --from LIST MOUNTPOINT");
    return 1;
  }
  if (!from.empty() && paths.size() != 1) {
    Warn("with --from, one PATH: the mount whose root the listed paths are relative to");
    return 1;
  }
  std::string root;
  std::vector<WarmEntry> entries;
  for (const std::string& p : paths) {
    Result<std::string> r = FindMountRoot(p);
    if (!r.ok()) {
      Warn(r.status().message());
      return 1;
    }
    if (!root.empty() && r.value() != root) {
      Warn(p + " is in another mount than " + root + " (warm one mount at a time)");
      return 1;
    }
    root = r.value();
    std::error_code ec;
    const fs::path real = fs::canonical(p, ec);  // what `root` is compared with
    if (from.empty()) entries.push_back({ec ? p : real.string(), ""});
  }
  WarmCounts counts;
  size_t bad_lines = 0;
  if (!from.empty()) {
    Result<std::string> text = from == "-" ? ReadTextFile("/dev/stdin", "list")
                                           : ReadTextFile(from, "list");
    if (!text.ok()) {
      Warn(text.status().message());
      return 1;
    }
    WarmList list = ParseWarmList(text.value(), from == "-" ? "stdin" : from, root);
    for (const std::string& b : list.bad) Warn(b);
    bad_lines = list.bad.size();
    counts.errors.fetch_add(bad_lines);
    entries = std::move(list.entries);
  }
  Result<nlohmann::json> before = ReadStats(root);
  if (!before.ok()) {
    Warn(before.status().message());
    return 1;
  }
  const int ready = background ? Detach(root) : -1;  // from here on, the child

  // The time reported is the whole warm's: the walk, then the reads.
  const auto t0 = Clock::now();
  auto secs = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  WarmReporter reporter(root);
  reporter.Report(counts, "walking");
  if (ready >= 0) ReadyToDetach(ready);
  auto last = Clock::now();
  const auto every = std::chrono::milliseconds(200);
  Walk walk(root, counts, [&] {
    if (Clock::now() - last >= every) {
      last = Clock::now();
      reporter.Report(counts, "walking");
    }
  });
  for (const WarmEntry& e : entries) walk.Add(e);
  const std::vector<std::string>& files = walk.files();
  const double walk_s = secs();
  const uint64_t total = counts.bytes_total.load();
  // With a disk tier, what RAM cannot hold goes there.
  const nlohmann::json* disk = DiskOf(before.value());
  const uint64_t budget = before.value().value("budget", uint64_t{0}) +
                          (disk != nullptr ? NumberAt(*disk, "budget") : 0);
  if (total > budget) {
    Warn(HumanBytes(total) + " to warm, the budget is " + HumanBytes(budget) +
         (disk != nullptr ? " (RAM and disk tier)" : "") + ": only part will stay cached");
  }
  reporter.Report(counts, "reading");

  std::atomic<size_t> next{0};
  std::mutex err_mu;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < std::min<size_t>(threads, std::max<size_t>(files.size(), 1)); ++t) {
    workers.emplace_back([&] {
      std::vector<char> buf(1 << 20);
      for (size_t i; (i = next.fetch_add(1)) < files.size();) {
        if (int e = ReadAll(files[i], buf, counts.bytes_done); e != 0) {
          std::lock_guard lk(err_mu);
          Warn(files[i] + ": " + std::strerror(e));
          counts.errors.fetch_add(1);
        }
        counts.files_done.fetch_add(1);
      }
    });
  }
  const bool show = !quiet && ::isatty(STDERR_FILENO) == 1;
  while (counts.files_done.load() < files.size()) {
    if (Clock::now() - last >= every) {
      last = Clock::now();
      if (show) std::fputs(Progress(counts, secs()).c_str(), stderr);
      reporter.Report(counts, "reading");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (std::thread& w : workers) w.join();
  if (show) std::fputs((Progress(counts, secs()) + "\n").c_str(), stderr);
  reporter.Report(counts, "done");

  const double s = secs();
  Result<nlohmann::json> after = ReadStats(root);
  // The disk tier writes in the background: wait (at most a minute) for what
  // is queued to land, so that the figures below say where the bytes are.
  for (int i = 0; i < 600 && after.ok(); ++i) {
    const nlohmann::json* d = DiskOf(after.value());
    if (d == nullptr || NumberAt(*d, "queued_bytes") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    after = ReadStats(root);
  }
  const uint64_t errors = counts.errors.load();
  std::printf("warm: %zu files, %s read in %.1f s (walk %.1f s)", files.size(),
              HumanBytes(counts.bytes_done.load()).c_str(), s, walk_s);
  if (after.ok()) {
    std::printf("; cache used %s -> %s of %s; %s from lower",
                HumanBytes(before.value().value("used", uint64_t{0})).c_str(),
                HumanBytes(after.value().value("used", uint64_t{0})).c_str(),
                HumanBytes(after.value().value("budget", uint64_t{0})).c_str(),
                HumanBytes(after.value().value("bytes_read_lower", uint64_t{0}) -
                           std::min(after.value().value("bytes_read_lower", uint64_t{0}),
                                    before.value().value("bytes_read_lower", uint64_t{0})))
                    .c_str());
  }
  std::string tail;
  if (errors != 0) tail += ", " + std::to_string(errors) + " errors";
  if (bad_lines != 0) tail += " (" + std::to_string(bad_lines) + " bad lines in " + from + ")";
  std::printf("%s\n", tail.c_str());
  if (after.ok()) std::printf("warm: cached now: %s\n", Where(after.value()).c_str());
  return errors ? 1 : 0;
}

}  // namespace epochfs::tools
