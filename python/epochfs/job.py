"""Job: the client of one job's control directory, MOUNT/.epochfs/jobs/NAME/.

The protocol (epochfs-control(7)), as files:

  mkdir NAME          registers a job owned by the caller; the calling process
                      is the job's first pid
  config              TOML: batch_size, epochs, root, loaders, compute_ms
  samples             one path per line, relative to `root`
  order/K             epoch K's order: sample indices, each at most once
  epoch               "K": the job starts epoch K now
  pids                one pid per line, appended: processes whose reads are
                      the job's (DataLoader workers)
  position            "K P": the first P samples of epoch K's order are handed
                      out (a mount with fuse.no_open learns hits from it);
                      each write(2) is one report, taken at once
  status              JSON: the registry's and the policy's view of the job
  rmdir NAME          ends the job; its cache is released

Each write is one open, write and close: the daemon validates the whole file
at close (flush) and refuses it with an errno; the reason is then the
status's `last_error`, which EpochfsError carries.

Every method raises OSError (EpochfsError for a refused write); callers that
must never fail (the sampler) catch it.

A dead mount: when the daemon exits (killed, crashed) its mount stays until
unmounted and every call on it fails with ENOTCONN (ECONNABORTED for calls in
flight, or once `auto_unmount` has removed it: then the path is a plain empty
directory again). Job.gone() tells that case from a refused write; the
message then says the mount is gone and how to recover (GONE_HELP), since the
dataset cannot be read through it either.
"""

import errno
import json
import os
import re

JOB_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,64}\Z")


DEAD_MOUNT_ERRNOS = (errno.ENOTCONN, errno.ECONNABORTED)

GONE_HELP = ("the dataset cannot be read through it either: unmount it (fusermount3 -u %s; "
             "umount -l when busy), mount it again (systemctl restart epochfs@UNIT, or "
             "epochfs LOWER %s), then restart training; epochfs(8), WHEN SOMETHING GOES WRONG")


class EpochfsError(OSError):
    """A control-file write was refused; the message carries the daemon's reason."""


def _unescape_mountinfo(field):
    # /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_fstype(path, mountinfo="/proc/self/mountinfo"):
    """The file system type mounted at exactly `path` ("fuse.epochfs", ...; the
    top of a stack of mounts), or None when nothing is mounted there."""
    path = os.path.realpath(path)
    found = None
    try:
        with open(mountinfo) as f:
            for line in f:
                left, sep, right = line.partition(" - ")
                fields = left.split()
                if sep and len(fields) >= 5 and _unescape_mountinfo(fields[4]) == path:
                    found = right.split()[0] if right.split() else ""
    except OSError:
        return None
    return found


def toml_string(s):
    """s as a TOML basic string ("..." with \\" \\\\ \\t escaped)."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ch == "\x7f":
            raise ValueError("control character in %r" % (s,))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def config_text(batch_size, epochs, root="", loaders=1, compute_ms=None):
    """The `config` file for these values."""
    lines = ["batch_size = %d" % int(batch_size),
             "epochs = %d" % int(epochs),
             "root = %s" % toml_string(root),
             "loaders = %d" % max(1, int(loaders))]
    if compute_ms is not None:
        lines.append("compute_ms = %r" % float(compute_ms))
    return "\n".join(lines) + "\n"


def write_control(path, text):
    """One control-file write: open, write all, close (the daemon takes it at close)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = text.encode()
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def append_control(path, line):
    """One appended line (`pids`), in one write.

    One open + write() + close per line: each close hands the daemon exactly
    this line (control writes start empty), so concurrent writers never
    interleave. Not O_APPEND: on a FUSE mount the kernel writes an O_APPEND
    write at its cached i_size, which a concurrent writer may have raised;
    the daemon would then see NUL bytes before the line and refuse it. SEEK_END
    asks the daemon for the size (0 for control files).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, line.encode())
    finally:
        os.close(fd)


class Job:
    """One job of an epochfs mount: `Job(mount, name)` names it, `create()`
    registers it (the calling process becomes its first pid)."""

    def __init__(self, mount, name):
        if not JOB_NAME_RE.match(name) or name in (".", ".."):
            raise ValueError("job name %r: 1 to 64 of A-Z a-z 0-9 . _ -" % (name,))
        self.mount = os.path.abspath(mount)
        self.name = name
        self.dir = os.path.join(self.mount, ".epochfs", "jobs", name)
        self._position_fd = None  # report_position's open `position`
        # A mount seen here that later leaves /proc/self/mountinfo is gone
        # (auto_unmount after the daemon died); a plain directory never was one.
        self.was_mounted = mount_fstype(self.mount) is not None

    def gone(self, err_no=None):
        """Why the mount is gone (its daemon exited), or None while it is there.

        `err_no`: the errno of a failed call on it; ENOTCONN and ECONNABORTED
        mean a dead mount. Otherwise the mount is gone when it was mounted
        at Job() and no longer is."""
        if err_no in DEAD_MOUNT_ERRNOS:
            return "the epochfs mount %s is gone (%s: its daemon exited)" % (
                self.mount, os.strerror(err_no))
        if self.was_mounted and mount_fstype(self.mount) is None:
            return "the epochfs mount %s is gone (no longer mounted: its daemon exited)" % (
                self.mount,)
        return None

    def error(self, path, e):
        """The EpochfsError for OSError `e` of a call on `path`: with the daemon's
        reason, or, when the mount is gone, what happened and how to recover."""
        gone = self.gone(e.errno)
        if gone:
            return EpochfsError(e.errno, "%s: %s; %s; %s" % (
                path, e.strerror, gone, GONE_HELP % (self.mount, self.mount)))
        return EpochfsError(e.errno, "%s: %s%s" % (path, e.strerror, self._reason()))

    def path(self, name):
        """The path of one of the job's files ("config", "order/3", ...)."""
        return os.path.join(self.dir, *name.split("/"))

    # ---- lifecycle ----

    def create(self, exist_ok=False):
        """mkdir: registers the job. FileExistsError when it exists (unless
        exist_ok: a restarted job re-attaches with its first write)."""
        try:
            os.mkdir(self.dir)
        except FileExistsError:
            if not exist_ok:
                raise

    def remove(self, missing_ok=True):
        """rmdir: ends the job and releases its cache."""
        self.close_reports()
        try:
            os.rmdir(self.dir)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def exists(self):
        return os.path.isdir(self.dir)

    # ---- declarations ----

    def write(self, name, text):
        """Writes one control file; EpochfsError (with the daemon's reason) when refused."""
        path = self.path(name)
        try:
            write_control(path, text)
        except OSError as e:
            raise self.error(path, e) from e

    def configure(self, batch_size, epochs, root="", loaders=1, compute_ms=None):
        self.write("config", config_text(batch_size, epochs, root, loaders, compute_ms))

    def set_samples(self, paths):
        """Sample k is paths[k], relative to the config's root."""
        for p in paths:
            if "\n" in p or "\r" in p:
                raise ValueError("sample path %r contains a line break" % (p,))
        self.write("samples", "".join(p + "\n" for p in paths))

    def declare(self, epoch, order):
        """Epoch `epoch`'s order: sample indices, each at most once."""
        self.write("order/%d" % int(epoch), " ".join(map(str, order)) + "\n")

    def start_epoch(self, epoch):
        self.write("epoch", "%d\n" % int(epoch))

    def begin_epoch(self, epoch, order, next_order=None):
        """What a loop that is not EpochfsSampler does at the start of each
        epoch: declares `order` for `epoch` (again: allowed until it begins),
        `next_order` for epoch + 1 when it is known (the cache loads for it
        during this epoch), then starts `epoch`."""
        self.declare(epoch, order)
        if next_order is not None:
            self.declare(int(epoch) + 1, next_order)
        self.start_epoch(epoch)

    def report_position(self, epoch, position):
        """The job has handed out the first `position` samples of epoch `epoch`'s order.

        `position` takes each write(2) as one report, so the file stays open
        between reports (one request each); remove() closes it.
        """
        path = self.path("position")
        try:
            if self._position_fd is None:
                self._position_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            os.write(self._position_fd, b"%d %d\n" % (int(epoch), int(position)))
        except OSError as e:
            raise self.error(path, e) from e

    def close_reports(self):
        """Closes the `position` file kept open by report_position."""
        fd, self._position_fd = self._position_fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def add_pid(self, pid=None):
        """Attributes process `pid` (default: this one) to the job."""
        path = self.path("pids")
        try:
            append_control(path, "%d\n" % (os.getpid() if pid is None else int(pid)))
        except OSError as e:
            raise self.error(path, e) from e

    # ---- reading ----

    def status(self):
        """The job's status (dict); OSError when the job is gone."""
        with open(self.path("status"), "rb") as f:
            return json.loads(f.read().decode("utf-8"))

    def last_error(self):
        """The daemon's reason for the last refused write, or None."""
        try:
            return self.status().get("last_error") or None
        except (OSError, ValueError, AttributeError):
            return None

    def _reason(self):
        err = self.last_error()
        return " (%s)" % err if err else ""


__all__ = ["DEAD_MOUNT_ERRNOS", "EpochfsError", "Job", "JOB_NAME_RE", "append_control",
           "config_text", "mount_fstype", "toml_string", "write_control"]
