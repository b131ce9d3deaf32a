// ExitSignals: SIGTERM, SIGINT and SIGHUP end a session's loop, whichever
// thread the kernel hands them to. (libfuse's own handlers stand in for it.)
//
// The loop's thread waits on a semaphore that only a signal delivered to it,
// or a worker thread's end, wakes. libfuse's handlers mark the session exited
// in whichever thread takes the signal: taken by a thread that waits on
// something else (a prefetch worker on its condition variable, say; the
// kernel passes the main thread over while it is stopped by a tracer or has a
// signal pending), the loop went on until the next request. Here a thread
// other than the loop's that takes the signal forwards it to the loop's thread
// (pthread_kill, async-signal-safe). SIGPIPE is ignored, as libfuse does.
// Internal to src/fs. Thread safety: Install and Remove on the thread that
// mounts; LoopThread on the thread that runs the loop, before it does.
#pragma once

#include <fuse_lowlevel.h>

namespace epochfs::fs::exit_signals {

// Makes SIGTERM, SIGINT and SIGHUP end `se`'s loop. False when a handler
// cannot be installed. One session at a time.
bool Install(fuse_session* se);
// The calling thread runs the loop: the signals are forwarded to it.
void LoopThread();
// Restores the default actions (SIGPIPE's too).
void Remove();

}  // namespace epochfs::fs::exit_signals
