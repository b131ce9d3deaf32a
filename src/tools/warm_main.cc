#include "epochfs/tools/warm_main.h"

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "epochfs/common/bytes_text.h"
#include "epochfs/common/unique_fd.h"
#include "epochfs/tools/mount_client.h"

namespace epochfs::tools {
namespace {

namespace fs = std::filesystem;

struct File {
  std::string path;
  uint64_t size;
};

void Warn(const std::string& msg) { std::fprintf(stderr, "epochfs warm: %s\n", msg.c_str()); }

// Regular files under `path`; `.epochfs` and `.spill` at the mount root are
// not data. Errors are reported and counted.
void Collect(const std::string& root, const std::string& path, std::vector<File>* out,
             int* errors) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec) {
    Warn(path + ": " + ec.message());
    ++*errors;
    return;
  }
  if (fs::is_regular_file(st)) {
    out->push_back({path, static_cast<uint64_t>(fs::file_size(path, ec))});
    return;
  }
  if (!fs::is_directory(st)) return;
  fs::recursive_directory_iterator it(path, fs::directory_options::none, ec), end;
  if (ec) {
    Warn(path + ": " + ec.message());
    ++*errors;
    return;
  }
  for (; it != end; it.increment(ec)) {
    if (ec) {
      Warn(path + ": " + ec.message());
      ++*errors;
      break;
    }
    const fs::path& p = it->path();
    if (p.parent_path() == fs::path(root) &&
        (p.filename() == ".epochfs" || p.filename() == ".spill")) {
      it.disable_recursion_pending();
      continue;
    }
    std::error_code fe;
    if (it->is_regular_file(fe) && !it->is_symlink(fe)) {
      out->push_back({p.string(), static_cast<uint64_t>(it->file_size(fe))});
    }
  }
}

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

std::string Progress(size_t done, size_t files, uint64_t bytes, uint64_t total, double secs) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "\rwarm: %zu/%zu files, %s of %s, %s/s   ", done, files,
                HumanBytes(bytes).c_str(), HumanBytes(total).c_str(),
                HumanBytes(secs > 0 ? static_cast<uint64_t>(double(bytes) / secs) : 0).c_str());
  return buf;
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
  unsigned threads = 4;
  bool quiet = false;
  app.add_option("PATH", paths, "files or directories inside the mount")->required();
  app.add_option("-j,--jobs", threads, "files read at once")->check(CLI::Range(1u, 256u));
  app.add_flag("-q,--quiet", quiet, "no progress line");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  std::string root;
  int errors = 0;
  std::vector<File> files;
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
    Collect(root, ec ? p : real.string(), &files, &errors);
  }
  uint64_t total = 0;
  for (const File& f : files) total += f.size;
  Result<nlohmann::json> before = ReadStats(root);
  if (!before.ok()) {
    Warn(before.status().message());
    return 1;
  }
  // With a disk tier, what RAM cannot hold goes there.
  const nlohmann::json* disk = DiskOf(before.value());
  const uint64_t budget = before.value().value("budget", uint64_t{0}) +
                          (disk != nullptr ? NumberAt(*disk, "budget") : 0);
  if (total > budget) {
    Warn(HumanBytes(total) + " to warm, the budget is " + HumanBytes(budget) +
         (disk != nullptr ? " (RAM and disk tier)" : "") + ": only part will stay cached");
  }

  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0}, done{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex err_mu;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < std::min<size_t>(threads, std::max<size_t>(files.size(), 1)); ++t) {
    workers.emplace_back([&] {
      std::vector<char> buf(1 << 20);
      for (size_t i; (i = next.fetch_add(1)) < files.size();) {
        if (int e = ReadAll(files[i].path, buf, bytes); e != 0) {
          std::lock_guard lk(err_mu);
          Warn(files[i].path + ": " + std::strerror(e));
          ++errors;
        }
        done.fetch_add(1);
      }
    });
  }
  const bool show = !quiet && ::isatty(STDERR_FILENO) == 1;
  auto secs = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  while (show && done.load() < files.size()) {
    std::fputs(Progress(done, files.size(), bytes, total, secs()).c_str(), stderr);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (std::thread& w : workers) w.join();
  if (show) std::fputs((Progress(done, files.size(), bytes, total, secs()) + "\n").c_str(), stderr);

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
  std::printf("warm: %zu files, %s read in %.1f s", files.size(), HumanBytes(bytes).c_str(), s);
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
  std::printf("%s\n", errors ? (", " + std::to_string(errors) + " errors").c_str() : "");
  if (after.ok()) std::printf("warm: cached now: %s\n", Where(after.value()).c_str());
  return errors ? 1 : 0;
}

}  // namespace epochfs::tools
