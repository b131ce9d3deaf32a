"""Unit tests for the epochfs Python package (python/: Job, EpochfsSampler) as
pip installs it into a venv (tests/python_venv.py), without torch and without
a mount: a temp dir stands in for the mount and the orders come from fake
samplers."""

import os
import pickle
import random
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import python_venv  # noqa: E402

python_venv.reexec_in_venv()
import epochfs  # noqa: E402
import epochfs.job  # noqa: E402
import epochfs.sampler as epochfs_sampler  # noqa: E402
from epochfs import EpochfsSampler, Job, PidRegistrar  # noqa: E402


class FakeDistributedSampler:
    """DistributedSampler's contract: set_epoch(e), a seeded shuffle of the whole
    dataset, this rank's stride, padded with repeats to equal length."""

    def __init__(self, n, rank, world):
        self.n, self.rank, self.world, self.epoch = n, rank, world, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        idx = list(range(self.n))
        random.Random(1000 + self.epoch).shuffle(idx)
        per_rank = -(-self.n // self.world)
        idx += idx[:per_rank * self.world - self.n]
        return iter(idx[self.rank::self.world])

    def __len__(self):
        return -(-self.n // self.world)


class FreshShuffleSampler:
    """A sampler with internal state: each iteration is a new shuffle."""

    def __init__(self, n):
        self.n, self.rng = n, random.Random(7)

    def __iter__(self):
        idx = list(range(self.n))
        self.rng.shuffle(idx)
        return iter(idx)

    def __len__(self):
        return self.n


class RandomSampler:  # same name as torch's: exercises the seeded-permutation source
    def __init__(self, data_source):
        self.data_source, self.replacement, self.num_samples = data_source, False, len(data_source)

    def __iter__(self):
        raise AssertionError("the wrapper must not consume RandomSampler's own RNG")

    def __len__(self):
        return self.num_samples


class RecordingSampler(EpochfsSampler):
    removed = None

    def _rmdir(self, path):
        self.removed = path


class SamplerTest(unittest.TestCase):
    def setUp(self):
        self.mount = tempfile.mkdtemp(prefix="epochfs_mount_")
        os.makedirs(os.path.join(self.mount, ".epochfs", "jobs"))
        self.files = []
        for cls in ("cat", "dog"):
            for i in range(5):
                p = os.path.join(self.mount, "data", "train", cls, "%d.jpg" % i)
                os.makedirs(os.path.dirname(p), exist_ok=True)
                open(p, "wb").close()
                self.files.append((p, 0 if cls == "cat" else 1))
        self.job = os.path.join(self.mount, ".epochfs", "jobs", "job1")

    def tearDown(self):
        shutil.rmtree(self.mount)

    def read(self, name):
        with open(os.path.join(self.job, name)) as f:
            return f.read()

    def order(self, epoch):
        return [int(t) for t in self.read("order/%d" % epoch).split()]

    def make(self, sampler, **kw):
        kw.setdefault("close_at_exit", False)
        return RecordingSampler(sampler, self.mount, "job1", self.files, batch_size=4,
                                epochs=kw.pop("epochs", 3), loaders=2, **kw)

    def test_registration_files(self):
        s = self.make(FakeDistributedSampler(10, 0, 1), compute_ms=12.5)
        self.assertEqual(self.read("config"),
                         'batch_size = 4\nepochs = 3\nroot = "data/train"\nloaders = 2\n'
                         'compute_ms = 12.5\n')
        self.assertEqual(self.read("samples").splitlines(),
                         ["cat/%d.jpg" % i for i in range(5)] + ["dog/%d.jpg" % i for i in range(5)])
        self.assertEqual(self.read("pids"), "%d\n" % os.getpid())
        self.assertEqual(s.root, "data/train")
        self.assertFalse(os.path.exists(os.path.join(self.job, "epoch")))

    def test_distributed_orders_for_k_and_k_plus_1(self):
        inner = FakeDistributedSampler(10, 1, 3)  # shards of 4, padded with repeats
        s = self.make(inner)
        ref = FakeDistributedSampler(10, 1, 3)
        for epoch in range(3):
            s.set_epoch(epoch)
            got = list(iter(s))
            ref.set_epoch(epoch)
            self.assertEqual(got, list(ref))  # the job sees exactly the sampler's indices
            self.assertEqual(self.read("epoch"), "%d\n" % epoch)
            self.assertEqual(inner.epoch, epoch)
            for e in (epoch, epoch + 1):
                if e >= 3:
                    self.assertFalse(os.path.exists(os.path.join(self.job, "order/3")))
                    continue
                ref.set_epoch(e)
                want = list(dict.fromkeys(ref))  # declared without repeats
                self.assertEqual(self.order(e), want)
                self.assertEqual(len(set(self.order(e))), len(self.order(e)))

    def test_epochs_advance_without_set_epoch(self):
        s = self.make(FakeDistributedSampler(10, 0, 1), start_epoch=1)
        list(iter(s))
        self.assertEqual(self.read("epoch"), "1\n")
        list(iter(s))
        self.assertEqual(self.read("epoch"), "2\n")
        # Past the declared epochs: indices still flow, nothing is declared.
        self.assertEqual(len(list(iter(s))), 10)
        self.assertEqual(self.read("epoch"), "2\n")

    def test_position_is_reported_every_loaders_batches_and_at_the_end(self):
        class Reporting(RecordingSampler):
            def _report_position(self, epoch, position):
                self.reports.append((len(self.seen), "%d %d\n" % (epoch, position)))
                super()._report_position(epoch, position)

        for n, world in ((20, 1), (10, 3)):
            s = Reporting(FakeDistributedSampler(n, 0, world), self.mount, "job1", self.files,
                          batch_size=4, epochs=2, loaders=2, close_at_exit=False,
                          report_interval_s=0)
            for epoch in range(3):
                s.reports, s.seen = [], []
                for i in iter(s):
                    s.seen.append(i)
                want_len = len(self.order(epoch)) if epoch < 2 else None
                if epoch == 2:  # past the declared epochs: nothing reported
                    self.assertEqual(s.reports, [])
                elif world == 1:
                    # Every 2 x 4 indices handed out (after the consumer got
                    # them), then the whole epoch once the order is exhausted.
                    self.assertEqual(s.reports, [(8, "%d 8\n" % epoch), (16, "%d 16\n" % epoch),
                                                 (20, "%d 20\n" % epoch)])
                else:
                    # 10 samples over 3 ranks: 4 indices, one a padding repeat
                    # of this rank's own, and a declared order of 3 or 4.
                    self.assertEqual(s.reports, [(4, "%d %d\n" % (epoch, want_len))])

    def test_reports_are_at_least_report_interval_apart_within_an_epoch(self):
        class Clocked(RecordingSampler):
            now = 100.0

            def _clock(self):
                return Clocked.now

            def _report_position(self, epoch, position):
                self.reports.append("%d %d\n" % (epoch, position))
                super()._report_position(epoch, position)

        s = Clocked(FakeDistributedSampler(10, 0, 1), self.mount, "job1", self.files,
                    batch_size=1, epochs=2, loaders=1, close_at_exit=False,
                    report_interval_s=0.0025)
        for epoch in range(2):
            s.reports = []
            for _ in iter(s):
                Clocked.now += 0.001  # 1 ms per sample, so per batch
            # A report may follow the previous one by 2.5 ms or more: after
            # samples 1, 4 and 7; the end of the epoch is always reported,
            # and each epoch's first batch boundary at once.
            self.assertEqual(s.reports, ["%d %d\n" % (epoch, p) for p in (1, 4, 7, 10)])

    def test_lookahead_replays_the_listed_order(self):
        s = self.make(FreshShuffleSampler(10))
        first = list(iter(s))
        self.assertEqual(self.order(0), first)
        declared_next = self.order(1)
        self.assertNotEqual(declared_next, first)
        self.assertEqual(list(iter(s)), declared_next)  # epoch 1 yields what was declared

    def test_random_sampler_uses_seeded_permutations(self):
        calls = []

        def fake_randperm(n, seed):
            calls.append(seed)
            idx = list(range(n))
            random.Random(seed).shuffle(idx)
            return idx

        saved = epochfs_sampler._torch_randperm
        epochfs_sampler._torch_randperm = fake_randperm
        try:
            s = self.make(RandomSampler(self.files), seed=40)
            e0 = list(iter(s))
            self.assertEqual(sorted(e0), list(range(10)))
            self.assertEqual(self.order(0), e0)
            self.assertEqual(self.order(1), fake_randperm(10, 41))
            self.assertEqual(list(iter(s)), self.order(1))
            self.assertEqual(calls[:3], [40, 41, 41])
        finally:
            epochfs_sampler._torch_randperm = saved

    def test_pluggable_order_fn(self):
        s = self.make([0] * 10, order_fn=lambda e: list(range(10))[::(-1 if e % 2 else 1)])
        self.assertEqual(list(iter(s)), list(range(10)))
        self.assertEqual(self.order(1), list(range(9, -1, -1)))

    def test_worker_init_fn_appends_pid_and_pickles(self):
        s = self.make(FakeDistributedSampler(10, 0, 1))
        seen = []
        fn = pickle.loads(pickle.dumps(s.worker_init_fn))
        fn(0)
        chained = s.make_worker_init_fn(chain=seen.append)
        self.assertIsInstance(chained, PidRegistrar)
        chained(3)
        self.assertEqual(seen, [3])
        self.assertEqual(self.read("pids"), "%d\n" % os.getpid() * 3)

    def test_paths_and_close(self):
        with self.assertRaises(ValueError):
            self.make(None, root="data/train/cat")  # dog/* outside the root
        outside = tempfile.NamedTemporaryFile()
        with self.assertRaises(ValueError):
            RecordingSampler(None, self.mount, "job2", [outside.name], 1, 1, close_at_exit=False)
        s = self.make(FakeDistributedSampler(10, 0, 1), root="data")
        self.assertEqual(self.read("samples").splitlines()[0], "train/cat/0.jpg")
        s.close()
        s.close()
        self.assertEqual(s.removed, self.job)
        # A restarted job reuses its directory (identical files), unless told not to.
        self.make(FakeDistributedSampler(10, 0, 1), root="data")
        with self.assertRaises(FileExistsError):
            self.make(FakeDistributedSampler(10, 0, 1), exist_ok=False)

    def test_each_rank_of_a_distributed_run_is_its_own_job(self):
        # torch's DistributedSampler has num_replicas and rank: one job per
        # rank under the same name given, so that the ranks do not collide.
        class Ddp(FakeDistributedSampler):
            def __init__(self, n, rank, world):
                super().__init__(n, rank, world)
                self.num_replicas = world

        ranks = [self.make(Ddp(10, r, 2)) for r in range(2)]
        self.assertEqual([s.job_name for s in ranks], ["job1.rank0", "job1.rank1"])
        for s in ranks:
            list(s)
        jobs = os.path.join(self.mount, ".epochfs", "jobs")
        self.assertEqual(sorted(os.listdir(jobs)), ["job1.rank0", "job1.rank1"])
        for r in range(2):
            ref = Ddp(10, r, 2)
            ref.set_epoch(0)
            with open(os.path.join(jobs, "job1.rank%d" % r, "order", "0")) as f:
                declared = [int(t) for t in f.read().split()]
            self.assertEqual(declared, list(dict.fromkeys(ref)))  # its own shard
        self.assertEqual(self.make(FakeDistributedSampler(10, 0, 1)).job_name, "job1")

    def test_toml_string_escaping(self):
        self.assertEqual(epochfs.job.toml_string('a"b\\c'), '"a\\"b\\\\c"')
        with self.assertRaises(ValueError):
            epochfs.job.toml_string("a\nb")

    def test_a_refused_write_warns_once_and_training_goes_on(self):
        class Refusing(RecordingSampler):
            refuse = "order/1"

            def _write_file(self, path, text):
                if path.endswith(self.refuse):
                    raise OSError(22, "Invalid argument")
                super()._write_file(path, text)

        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = Refusing(FakeDistributedSampler(10, 0, 1), self.mount, "job1", self.files,
                         batch_size=4, epochs=3, close_at_exit=False)
            got = [list(s) for _ in range(3)]
        want = []
        for e in range(3):
            ref = FakeDistributedSampler(10, 0, 1)
            ref.set_epoch(e)
            want.append(list(ref))
        self.assertEqual(got, want)  # the job's indices, whatever epochfs said
        self.assertEqual(len(w), 1, [str(x.message) for x in w])
        self.assertIn("order/1", str(w[0].message))
        self.assertIn("uncached", str(w[0].message))
        self.assertIsNotNone(s.disabled)
        self.assertFalse(os.path.exists(os.path.join(self.job, "epoch")))  # stopped at order/1
        self.assertFalse(os.path.exists(os.path.join(self.job, "order", "2")))  # stopped
        s.close()
        self.assertIsNone(s.removed)  # nothing more is sent to epochfs
        # strict=True: the refusal raises, with the reason.
        Refusing.refuse = "config"
        with self.assertRaises(epochfs_sampler.EpochfsError):
            Refusing(FakeDistributedSampler(10, 0, 1), self.mount, "job1", self.files,
                     batch_size=4, epochs=3, close_at_exit=False, strict=True)

    def test_a_missing_mount_warns_and_training_goes_on(self):
        import warnings
        gone = os.path.join(self.mount, "not-a-mount")
        os.makedirs(os.path.join(gone, "data"))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = EpochfsSampler(FakeDistributedSampler(4, 0, 1), gone, "j",
                               [os.path.join(gone, "data", "x")], 1, 2, close_at_exit=False)
            self.assertEqual(sorted(s), [0, 1, 2, 3])
        self.assertEqual(len(w), 1)
        self.assertIn("No such file", str(w[0].message))

    def test_exit_by_exception_leaves_the_job_warm(self):
        # A clean exit removes the job; an uncaught exception or Ctrl-C leaves
        # it for epochfs' orphan grace (the restart comes back warm).
        import subprocess
        script = """
import os, sys
sys.path.insert(0, %r)
import epochfs
class S(epochfs.EpochfsSampler):
    def _rmdir(self, path):
        open(os.path.join(%r, "removed"), "w").close()
s = S(list(range(4)), %r, "jx", %r, 1, 2)
list(s)
if sys.argv[1] == "raise":
    raise RuntimeError("training failed")
if sys.argv[1] == "interrupt":
    raise KeyboardInterrupt
""" % (os.path.dirname(os.path.dirname(epochfs.__file__)), self.mount, self.mount,
           [f for f, _ in self.files])
        marker = os.path.join(self.mount, "removed")
        for how, removed in (("clean", True), ("raise", False), ("interrupt", False)):
            with self.subTest(how=how):
                if os.path.exists(marker):
                    os.unlink(marker)
                r = subprocess.run([sys.executable, "-c", script, how], capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(r.returncode == 0, how == "clean", r.stderr)
                self.assertEqual(os.path.exists(marker), removed, (how, r.stderr))

    def test_imports_without_torch(self):
        if "torch" in sys.modules:
            self.skipTest("torch already imported")
        self.make(FakeDistributedSampler(10, 0, 1))
        self.assertNotIn("torch", sys.modules)


class PackageTest(unittest.TestCase):
    def test_the_installed_package_is_what_runs(self):
        # Imported from the venv's site-packages, where pip put it.
        self.assertTrue(os.path.realpath(epochfs.__file__).startswith(
            os.path.realpath(sys.prefix) + os.sep), epochfs.__file__)
        self.assertEqual(epochfs.__version__, "0.1.0")
        self.assertIs(epochfs.EpochfsSampler, EpochfsSampler)


class MountInfoTest(unittest.TestCase):
    """epochfs.job.mount_fstype reads /proc/self/mountinfo (a dead mount's test)."""

    def test_exact_mount_point_escapes_and_stacks(self):
        import epochfs.job as job_mod
        with tempfile.TemporaryDirectory() as d:
            info = os.path.join(d, "mountinfo")
            with open(info, "w") as f:
                f.write("21 1 0:20 / /mnt/a\\040b rw - fuse.epochfs /data rw\n"
                        "22 1 0:21 / /mnt/ab rw,relatime shared:3 - tmpfs tmpfs rw\n"
                        "23 22 0:22 / /mnt/ab rw - fuse.epochfs lower rw\n")
            self.assertEqual(job_mod.mount_fstype("/mnt/a b", info), "fuse.epochfs")
            self.assertEqual(job_mod.mount_fstype("/mnt/ab", info), "fuse.epochfs")  # top
            self.assertIsNone(job_mod.mount_fstype("/mnt/a", info))
            self.assertIsNone(job_mod.mount_fstype("/mnt/a b", os.path.join(d, "none")))

    def test_gone_only_for_a_dead_mount(self):
        import errno
        with tempfile.TemporaryDirectory() as d:
            job = Job(d, "j")  # a plain directory: never a mount
            self.assertFalse(job.was_mounted)
            self.assertIsNone(job.gone())
            self.assertIsNone(job.gone(errno.EINVAL))
            self.assertIn("is gone", job.gone(errno.ECONNABORTED))
            err = job.error(job.path("epoch"), OSError(errno.ENOTCONN, os.strerror(errno.ENOTCONN)))
            self.assertEqual(err.errno, errno.ENOTCONN)
            self.assertIn("fusermount3 -u %s" % d, str(err))


class JobTest(unittest.TestCase):
    """Job writes the protocol's files (a temp dir stands in for the mount)."""

    def setUp(self):
        self.mount = tempfile.mkdtemp(prefix="epochfs_mount_")
        self.addCleanup(shutil.rmtree, self.mount)
        os.makedirs(os.path.join(self.mount, ".epochfs", "jobs"))

    def read(self, job, name):
        with open(job.path(name)) as f:
            return f.read()

    def test_every_file_of_the_protocol(self):
        job = Job(self.mount, "r50.a-1")
        self.assertFalse(job.exists())
        job.create()
        with self.assertRaises(FileExistsError):
            job.create()
        job.create(exist_ok=True)
        job.configure(4, 2, root='d "x"', loaders=0, compute_ms=12.5)
        self.assertEqual(self.read(job, "config"), 'batch_size = 4\nepochs = 2\n'
                         'root = "d \\"x\\""\nloaders = 1\ncompute_ms = 12.5\n')
        job.set_samples(["a/1.jpg", "b/2.jpg"])
        self.assertEqual(self.read(job, "samples"), "a/1.jpg\nb/2.jpg\n")
        with self.assertRaises(ValueError):
            job.set_samples(["a\nb"])
        os.makedirs(job.path("order"))
        job.declare(1, [1, 0])
        self.assertEqual(self.read(job, "order/1"), "1 0\n")
        job.start_epoch(1)
        self.assertEqual(self.read(job, "epoch"), "1\n")
        job.begin_epoch(2, [0, 1], [1, 0])  # declares 2 and 3, then starts 2
        self.assertEqual((self.read(job, "order/2"), self.read(job, "order/3"),
                          self.read(job, "epoch")), ("0 1\n", "1 0\n", "2\n"))
        job.begin_epoch(3, [1, 0])  # the last: no next order
        self.assertEqual(self.read(job, "epoch"), "3\n")
        self.assertFalse(os.path.exists(job.path("order/4")))
        job.report_position(1, 2)  # one write each, to the file kept open
        job.report_position(1, 3)
        self.assertEqual(self.read(job, "position"), "1 2\n1 3\n")  # a plain file here
        job.close_reports()
        job.add_pid(123)
        job.add_pid()
        self.assertEqual(self.read(job, "pids"), "123\n%d\n" % os.getpid())
        for f in os.listdir(job.dir):
            p = os.path.join(job.dir, f)
            shutil.rmtree(p) if os.path.isdir(p) else os.unlink(p)
        job.remove()
        self.assertFalse(job.exists())
        job.remove()  # gone already: fine
        with self.assertRaises(FileNotFoundError):
            job.remove(missing_ok=False)

    def test_names_are_checked_before_anything_is_sent(self):
        for bad in ("", "a/b", "..", ".", "x" * 65, "caf\u00e9"):
            with self.subTest(name=bad), self.assertRaises(ValueError):
                Job(self.mount, bad)

    def test_a_refused_write_carries_the_daemons_reason(self):
        job = Job(self.mount, "j")
        job.create()
        with open(job.path("status"), "w") as f:
            f.write('{"last_error": "config: line 1: batch_size must be an integer"}')
        os.mkdir(job.path("config"))  # writing it fails (EISDIR), as a refusal would
        with self.assertRaises(epochfs.EpochfsError) as cm:
            job.configure(1, 1)
        self.assertIn("(config: line 1: batch_size must be an integer)", str(cm.exception))
        self.assertEqual(job.last_error(), "config: line 1: batch_size must be an integer")
        self.assertIsNone(Job(self.mount, "other").last_error())


if __name__ == "__main__":
    unittest.main()
