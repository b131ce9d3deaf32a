#include "epochfs/fs/session.h"

#include <fuse_lowlevel.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "epochfs/common/log.h"
#include "epochfs/common/mount_info.h"
#include "exit_signals.h"

namespace epochfs::fs {
namespace {

// libfuse reports mount problems through its log callback; keep the last
// message so that the mount error names the cause in one line.
std::mutex g_fuse_log_mu;
std::string g_last_fuse_message;

void FuseLog(enum fuse_log_level level, const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  std::string msg(buf);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  {
    std::lock_guard lock(g_fuse_log_mu);
    g_last_fuse_message = msg;
  }
  // Mount errors reach the user through Session::Mount's Status; the rest is
  // debugging detail.
  (void)level;
  log::Debug("libfuse: " + msg);
}

std::string LastFuseMessage() {
  std::lock_guard lock(g_fuse_log_mu);
  std::string m = g_last_fuse_message;
  if (m.rfind("fuse: ", 0) == 0) m = m.substr(6);
  return m;
}

// Escapes ',' and '\' for a -o option value.
std::string EscapeOpt(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == ',' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// The sysfs file of the new mount's readahead window, found through
// /proc/self/mountinfo (a stat of the mountpoint would wait on the
// not-yet-running session): the last FUSE mount on `mountpoint` (its type is
// fuse.epochfs, or fuse.SUBTYPE with -o subtype=); "" when not found.
std::string ReadaheadFile(const std::string& mountpoint) {
  char real[PATH_MAX];
  if (::realpath(mountpoint.c_str(), real) == nullptr) return "";
  std::string found;
  for (const MountEntry& m : ReadMountInfo()) {
    if (m.mount_point == real && m.fstype.rfind("fuse", 0) == 0) found = m.devno;
  }
  if (found.empty()) return "";
  return "/sys/class/bdi/" + found + "/read_ahead_kb";
}

}  // namespace

struct Session::Impl {
  Filesystem* fs = nullptr;
  fuse_session* se = nullptr;
  bool mounted = false;
  bool handlers = false;
  unsigned threads = 4;
};

Result<std::unique_ptr<Session>> Session::Mount(Filesystem& fs, const MountOptions& opts) {
  fuse_set_log_func(FuseLog);
  std::string o = "default_permissions,fsname=" + EscapeOpt(opts.fsname) + ",subtype=epochfs";
  for (const std::string& f : opts.fuse_opts) o += "," + f;
  std::vector<std::string> argv_s = {"epochfs", "-o", o};
  if (opts.debug) argv_s.push_back("-d");
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());

  std::unique_ptr<Session> session(new Session());
  session->impl_ = std::make_unique<Impl>();
  session->impl_->threads = opts.threads;
  Impl& im = *session->impl_;
  im.se = fuse_session_new(&args, &fs.ops(), sizeof(fuse_lowlevel_ops), &fs);
  fuse_opt_free_args(&args);
  if (im.se == nullptr) return InvalidArgument("bad FUSE option: " + LastFuseMessage());
  if (opts.signal_handlers) {
    if (!exit_signals::Install(im.se)) return Internal("cannot install signal handlers");
    im.handlers = true;
  }
  if (fuse_session_mount(im.se, opts.mountpoint.c_str()) != 0) {
    // Unprivileged mounts go through fusermount3, which prints its reason to
    // stderr itself and leaves libfuse nothing to log.
    std::string why = LastFuseMessage();
    if (why.empty()) why = "the kernel or fusermount3 refused (its reason, if any, is above)";
    return IoError("cannot mount " + opts.mountpoint + ": " + why);
  }
  im.mounted = true;
  im.fs = &fs;
  if (opts.read_ahead_kb != 0) fs.SetReadahead(ReadaheadFile(opts.mountpoint), opts.read_ahead_kb);
  return session;
}

Session::~Session() {
  if (!impl_) return;
  if (impl_->fs != nullptr) impl_->fs->Detach();
  if (impl_->mounted) fuse_session_unmount(impl_->se);
  if (impl_->handlers) exit_signals::Remove();
  if (impl_->se != nullptr) fuse_session_destroy(impl_->se);
}

Status Session::Run() {
  // Threads start here, after the caller's fork into the background.
  impl_->fs->Attach(impl_->se);
  fuse_loop_config* cfg = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(cfg, impl_->threads);
  fuse_loop_cfg_set_idle_threads(cfg, impl_->threads);
  fuse_loop_cfg_set_clone_fd(cfg, 1);
  if (impl_->handlers) exit_signals::LoopThread();
  int rc = fuse_session_loop_mt(impl_->se, cfg);
  fuse_loop_cfg_destroy(cfg);
  // The loop returns 0 after fusermount3 -u or SIGTERM/SIGINT/SIGHUP (both
  // clean ends), and -errno on failure.
  if (rc < 0) return Internal("session loop failed: " + std::string(std::strerror(-rc)));
  return Status::Ok();
}

}  // namespace epochfs::fs
