#include "epochfs/tools/top_main.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "epochfs/tools/mount_client.h"
#include "epochfs/tools/top_view.h"

namespace epochfs::tools {
namespace {

int Fail(const std::string& msg) {
  std::fprintf(stderr, "epochfs top: %s\n", msg.c_str());
  return 1;
}

size_t TerminalWidth() {
  struct winsize ws {};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  return 120;
}

}  // namespace

int TopMain(int argc, char** argv) {
  CLI::App app{"epochfs top: a live view of an epochfs mount (epochfs(8))"};
  std::string path;
  double interval = 1.0;
  bool once = false;
  uint64_t frames = 0;
  app.add_option("MOUNTPOINT", path, "the mount, or any path inside it")->required();
  app.add_option("-i,--interval", interval, "seconds between frames")
      ->check(CLI::Range(0.05, 3600.0));
  app.add_flag("--once", once, "print one frame and exit");
  app.add_option("-n,--frames", frames, "exit after N frames (0: until Ctrl-C)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  Result<std::string> root = FindMountRoot(path);
  if (!root.ok()) return Fail(root.status().message());
  if (once) frames = 1;
  const bool redraw = !once && ::isatty(STDOUT_FILENO) == 1;
  std::optional<nlohmann::json> before;
  auto then = std::chrono::steady_clock::now();
  for (uint64_t n = 0; frames == 0 || n < frames; ++n) {
    if (n > 0) std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    Result<nlohmann::json> now = ReadStats(root.value());
    if (!now.ok()) return Fail(now.status().message());
    const auto at = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(at - then).count();
    const std::string frame = RenderTop(now.value(), before ? &*before : nullptr, seconds,
                                        root.value(), TerminalWidth());
    std::fputs(redraw ? ("\x1b[H\x1b[2J" + frame).c_str() : (frame + "\n").c_str(), stdout);
    std::fflush(stdout);
    before = std::move(now).value();
    then = at;
  }
  return 0;
}

}  // namespace epochfs::tools
