#include "exit_signals.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>

namespace epochfs::fs::exit_signals {
namespace {

constexpr int kExitSignals[] = {SIGTERM, SIGINT, SIGHUP};

std::atomic<fuse_session*> g_session{nullptr};
// The loop's thread, once it runs (g_has_loop_thread tells whether it is set).
pthread_t g_loop_thread;
std::atomic<bool> g_has_loop_thread{false};

extern "C" void OnExitSignal(int sig) {
  fuse_session* se = g_session.load();
  if (se == nullptr) return;
  fuse_session_exit(se);
  if (g_has_loop_thread.load() && !pthread_equal(pthread_self(), g_loop_thread)) {
    pthread_kill(g_loop_thread, sig);  // wakes its wait; its handler runs there too
  }
}

bool Set(int sig, void (*handler)(int)) {
  struct sigaction sa = {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the loop's wait returns EINTR
  return sigaction(sig, &sa, nullptr) == 0;
}

}  // namespace

bool Install(fuse_session* se) {
  g_session.store(se);
  for (int sig : kExitSignals) {
    if (!Set(sig, OnExitSignal)) return false;
  }
  return Set(SIGPIPE, SIG_IGN);
}

void LoopThread() {
  g_loop_thread = pthread_self();
  g_has_loop_thread.store(true);
}

void Remove() {
  for (int sig : kExitSignals) Set(sig, SIG_DFL);
  Set(SIGPIPE, SIG_DFL);
  g_has_loop_thread.store(false);
  g_session.store(nullptr);
}

}  // namespace epochfs::fs::exit_signals
