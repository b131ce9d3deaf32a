"""EpochfsSampler: declare a PyTorch job's epoch orders to an epochfs mount.

epochfs caches dataset files for several training jobs at once; it does best
when it knows each job's next epoch order ahead of time. EpochfsSampler wraps
the sampler you already use (RandomSampler, DistributedSampler, or any other)
and, through the files under MOUNT/.epochfs/jobs/NAME/ (see epochfs-control(7)):

  * on creation: mkdir the job, write `config` (TOML), `samples` (one path per
    line, relative to the dataset root), and append this process's pid to `pids`;
  * at the start of epoch K: write `order/K` and `order/K+1` (sample indices),
    then `epoch` = K, then yield K's indices;
  * every `loaders` batches handed out, but not sooner than
    `report_interval_s` (5 ms) after the previous report, and at the end of
    the epoch: write `position` = "K P" (P samples of K's order handed out).
    A mount whose hits never reach the daemon (fuse.no_open) learns the job's
    progress from it; each report is one write, a round trip to the daemon
    (50-150 us), so the floor keeps a job that reads hot files at tens of
    thousands a second from spending a tenth of its time reporting;
  * `worker_init_fn`: appends each DataLoader worker's pid to `pids` (needed
    with the spawn/forkserver start methods; harmless with fork);
  * `close()` (also at a clean interpreter exit): rmdir the job, releasing its
    cache. When an uncaught exception or Ctrl-C ends the program, the job is
    left in place: epochfs keeps its cache for jobs.orphan_grace, and a
    restarted job of the same name comes back warm.

Failure is never fatal to training (unless strict=True): when the mount is
missing or the daemon refuses a control write, the sampler warns once, stops
talking to epochfs and goes on yielding the wrapped sampler's indices (the
job then runs uncached). With strict=True the refusal raises EpochfsError.
When the mount is gone (the daemon exited: ENOTCONN or ECONNABORTED, or the
mount left /proc/self/mountinfo), the warning (or the error) says so and how
to recover instead (Job.gone): the dataset cannot be read through it either.

Where the orders come from (pluggable, `order_fn(epoch) -> list[int]`):
  * a sampler with set_epoch() (DistributedSampler): set_epoch(e), then list it;
  * RandomSampler (without replacement): a permutation seeded per epoch
    (seed + epoch), so that K+1 is known during K; the wrapper yields it;
  * anything else: the sampler is listed one epoch ahead and replayed.
Orders are declared without repeats (DistributedSampler pads with repeats);
the yielded indices are exactly the sampler's.

torch is imported only when a RandomSampler needs a permutation, so this module
imports (and its tests run) without torch. The files are written through
epochfs.job (Job), the one client of the control protocol.
"""

import atexit
import errno
import os
import sys
import time
import warnings

from epochfs.job import EpochfsError, Job, append_control, config_text, write_control

__all__ = ["EpochfsSampler", "EpochfsError", "PidRegistrar"]


def _torch_randperm(n, seed):
    import torch  # lazily: only RandomSampler needs it

    g = torch.Generator()
    g.manual_seed(seed)
    return torch.randperm(n, generator=g).tolist()


def _torch_seed():
    import torch

    return int(torch.empty((), dtype=torch.int64).random_().item())


class PidRegistrar:
    """A picklable worker_init_fn: appends os.getpid() to the job's `pids`.

    `chain`, when given, is called afterwards with the same worker_id.
    """

    def __init__(self, pids_path, chain=None):
        self.pids_path = pids_path
        self.chain = chain

    def __call__(self, worker_id):
        try:
            append_control(self.pids_path, "%d\n" % os.getpid())
        except OSError:
            pass  # attribution falls back to ancestry and orders
        if self.chain is not None:
            self.chain(worker_id)


class EpochfsSampler:
    """Wraps `sampler`; yields its indices and declares each epoch's order.

    sampler          the sampler to wrap (RandomSampler, DistributedSampler, ...)
    mount            the epochfs mount point
    job_name         [A-Za-z0-9._-]{1,64}; with a DistributedSampler of more than
                     one replica, each rank's job is job_name.rankR
    dataset_samples  sample k's file: a list of paths, or of (path, class) pairs
                     as in ImageFolder.samples; absolute or relative to the cwd,
                     inside `mount`
    batch_size, epochs, loaders (= DataLoader num_workers; 0 counts as 1)
    root             dataset subdir relative to the mount (default: the
                     samples' common directory)
    seed             RandomSampler permutation seed (default: drawn from torch's
                     global RNG, so torch.manual_seed makes runs reproducible)
    start_epoch      first epoch when set_epoch() is never called
    order_fn         epoch -> list of indices; replaces the built-in sources
    compute_ms       compute per batch, when the job knows it
    report_interval_s  least time between two `position` reports within an
                     epoch (default 0.005; 0: every `loaders` batches)
    exist_ok         reuse an existing job of that name (a restarted job: its
                     first write re-attaches an orphaned job, whose current
                     epoch restarts warm; man epochfs-control(7))
    close_at_exit    rmdir the job when this process exits normally (not when
                     an uncaught exception or Ctrl-C ends it: the job stays for
                     epochfs' orphan grace, to come back warm)
    strict           raise EpochfsError when epochfs refuses a control write
                     (default: warn once and go on uncached)

    After a failure, `disabled` holds its message and `mount_gone` says
    whether the mount was gone (its daemon exited).
    """

    def __init__(self, sampler, mount, job_name, dataset_samples, batch_size, epochs,
                 loaders=1, *, root=None, seed=None, start_epoch=0, order_fn=None,
                 compute_ms=None, exist_ok=True, close_at_exit=True, strict=False,
                 report_interval_s=0.005):
        self.sampler = sampler
        self.mount = os.path.abspath(mount)
        self.batch_size = int(batch_size)
        self.epochs = int(epochs)
        self.loaders = max(1, int(loaders))
        self.report_interval_s = max(0.0, float(report_interval_s))
        self.epoch = None
        self._next_epoch = int(start_epoch)
        self._orders = {}  # epoch -> materialised order (built-in sources)
        self._declared = {}  # epoch -> declared (deduplicated) order
        self._closed = False
        self._strict = bool(strict)
        self.disabled = None  # why the sampler stopped talking to epochfs, if it did
        self.mount_gone = False  # it stopped because the mount is gone
        self._owner_pid = os.getpid()
        # Ranks of one DistributedSampler run each read their own shard: one
        # job per rank, NAME.rankR, so that the ranks do not collide on one
        # job's files (each declares what its rank reads). Under
        # cache.policy=future the ranks' jobs, reading the same files, share
        # one cache as one job would (docs/future_policy.md).
        if int(getattr(sampler, "num_replicas", 1) or 1) > 1:
            job_name = "%s.rank%d" % (job_name, int(getattr(sampler, "rank", 0)))
        self.job = Job(self.mount, job_name)  # the control protocol (epochfs.job)
        self.job_name = job_name
        self.job_dir = self.job.dir

        paths = [p[0] if isinstance(p, (tuple, list)) else p for p in dataset_samples]
        self.root, rel = self._relative_samples([os.fspath(p) for p in paths], root)
        self._order_fn = order_fn or self._builtin_order_fn(seed)

        try:
            self._mkdir(self.job_dir)
        except FileExistsError:
            if not exist_ok:
                raise
        except OSError as e:
            self._refused(self.job.error(self.job_dir, e))
        self._write("config", config_text(self.batch_size, self.epochs, self.root,
                                          self.loaders, compute_ms))
        self._write("samples", "".join(p + "\n" for p in rel))
        if self.disabled is None:
            try:
                self._write_pid(os.getpid())
            except EpochfsError as e:  # names the file and the daemon's reason
                self._refused(e)
        self.worker_init_fn = PidRegistrar(self.job.path("pids"))
        if close_at_exit:
            atexit.register(self._close_at_exit)

    # ---- the sampler protocol ----

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        """Selects the epoch the next iteration covers (as DistributedSampler)."""
        self._next_epoch = int(epoch)

    def __iter__(self):
        k = self._next_epoch
        self._next_epoch = k + 1
        self.epoch = k
        order = self._order(k)
        if k < self.epochs:
            self._declare(k, order)
            if k + 1 < self.epochs:
                self._declare(k + 1, self._order(k + 1))
            self._write("epoch", "%d\n" % k)
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(k)  # leave the wrapped sampler where the job is
        for epoch in [e for e in self._orders if e < k]:
            del self._orders[epoch]
        if k >= self.epochs or k not in self._declared:
            return iter(order)
        return self._reporting(k, order, len(self._declared[k]))

    def _reporting(self, epoch, order, declared):
        """Yields `order`, writing `position` every `loaders` batches (at most
        one per report_interval_s) and at the end."""
        every = self.batch_size * self.loaders
        last = None  # monotonic time of this epoch's last report
        # The position counts distinct samples (the declared order has no
        # repeats; DistributedSampler pads with some).
        seen = set() if len(order) != declared else None
        position = 0
        for n, index in enumerate(order, 1):
            yield index
            if seen is None:
                position = n
            elif index not in seen:
                seen.add(index)
                position += 1
            if n % every == 0 and n < len(order):
                now = self._clock()
                if last is None or now - last >= self.report_interval_s:
                    last = now
                    self._report(epoch, position)
        self._report(epoch, declared)

    _clock = staticmethod(time.monotonic)  # tests replace it

    def _report(self, epoch, position):
        if self.disabled is None and not self._closed:
            try:
                self._report_position(epoch, position)
            except EpochfsError as e:
                self._refused(e)

    def _report_position(self, epoch, position):
        self.job.report_position(epoch, position)  # one write to the open `position`

    def make_worker_init_fn(self, chain=None):
        """A worker_init_fn that registers the worker, then calls `chain`."""
        return PidRegistrar(self.job.path("pids"), chain)

    def close(self):
        """Ends the job (rmdir): epochfs releases its cache. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.job.close_reports()
        if self.disabled is not None:
            return
        try:
            self._rmdir(self.job_dir)
        except FileNotFoundError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- orders ----

    def _builtin_order_fn(self, seed):
        s = self.sampler
        if hasattr(s, "set_epoch"):
            def distributed(epoch):
                s.set_epoch(epoch)
                return [int(i) for i in s]
            return distributed
        if (type(s).__name__ == "RandomSampler" and not getattr(s, "replacement", False)
                and getattr(s, "num_samples", None) == len(s.data_source)):
            n = len(s.data_source)
            base = _torch_seed() if seed is None else int(seed)
            return lambda epoch: _torch_randperm(n, base + epoch)
        return None  # list the sampler one epoch ahead

    def _order(self, epoch):
        if epoch not in self._orders:
            if self._order_fn is not None:
                self._orders[epoch] = [int(i) for i in self._order_fn(epoch)]
            else:
                self._orders[epoch] = [int(i) for i in self.sampler]
        return self._orders[epoch]

    def _declare(self, epoch, order):
        seen = set()
        unique = [i for i in order if not (i in seen or seen.add(i))]
        if not unique or self._declared.get(epoch) == unique:
            return
        self._write("order/%d" % epoch, " ".join(map(str, unique)) + "\n")
        self._declared = {e: o for e, o in self._declared.items() if e >= epoch - 1}
        self._declared[epoch] = unique

    # ---- files ----

    def _relative_samples(self, paths, root):
        absolute = [os.path.abspath(p) for p in paths]
        if root is None:
            if not absolute:
                raise ValueError("dataset_samples is empty")
            common = os.path.commonpath([os.path.dirname(p) for p in absolute])
            root = os.path.relpath(common, self.mount)
        root = os.path.normpath(root)
        if root == ".":
            root = ""
        if os.path.isabs(root) or root == ".." or root.startswith("../"):
            raise ValueError("dataset root %r is not inside the mount %s" % (root, self.mount))
        base = os.path.join(self.mount, root)
        rel = []
        for p in absolute:
            r = os.path.relpath(p, base)
            if r == ".." or r.startswith("../") or os.path.isabs(r):
                raise ValueError("sample %s is not under %s" % (p, base))
            if "\n" in r or "\r" in r:
                raise ValueError("sample path %r contains a line break" % (p,))
            rel.append(r)
        return root, rel

    def _write(self, name, text):
        if self.disabled is not None:
            return
        path = self.job.path(name)
        try:
            self._write_file(path, text)
        except OSError as e:
            self._refused(self.job.error(path, e))

    def _write_file(self, path, text):
        d = os.path.dirname(path)
        if d != self.job_dir and not os.path.isdir(d):
            os.mkdir(d)  # never the job's directory: a mount that went away stays bare
        write_control(path, text)  # the daemon validates at close (flush)

    def _refused(self, err):
        """A control operation failed: raise (strict), or warn once and stop.

        When the mount is gone (its daemon exited) the warning says so and how
        to recover, not that training goes on: its files cannot be read."""
        if self._strict:
            raise err
        self.disabled = str(err)
        if self.job.gone(err.errno):
            self.mount_gone = True
            warnings.warn("epochfs: %s" % err, RuntimeWarning, stacklevel=3)
        else:
            warnings.warn("epochfs: %s; training goes on uncached" % err, RuntimeWarning,
                          stacklevel=3)

    def _write_pid(self, pid):
        self.job.add_pid(pid)

    def _mkdir(self, path):
        os.mkdir(path)

    def _rmdir(self, path):
        os.rmdir(path)

    def _close_at_exit(self):
        # An uncaught exception (Ctrl-C too) ended the program: leave the job
        # for the orphan grace, so that a restart comes back warm.
        if getattr(sys, "last_value", None) is not None or getattr(sys, "last_exc", None):
            return
        if os.getpid() == self._owner_pid:
            try:
                self.close()
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EBUSY):
                    raise
