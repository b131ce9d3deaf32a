#!/usr/bin/env python3
"""`.epochfs/metrics`: the stats as Prometheus text, read through a real mount;
and the same served over HTTP (`-o metrics.listen=ADDR:PORT`), scraped.

A job reads its dataset twice; the metrics file, parsed by the Prometheus
client library's own parser, carries the same figures as `stats` (hits,
misses, budget, bytes from LOWER, the RAM tier, the job's row and hit ratio);
another user reads the totals but not the job's series. (Label escaping of
hostile strings: tests/unit/control/metrics_text_test.cc.)

SKIP (77) when not root or without /dev/fuse.
"""

import os
import socket
import sys
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epochfs_test as et  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

KiB = 1024
NOBODY = 65534


def parse(text):
    """{(sample name, frozenset(labels)): value}; one TYPE line per family."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, "series twice: %r" % (key,)
            out[key] = s.value
    return out


def value(m, name, **labels):
    return m[(name, frozenset(labels.items()))]


def read_as(uid, path):
    r, w = os.pipe()

    def child():
        with open(path, "rb") as f:
            os.write(w, f.read())
    err = et.as_user(uid, uid, child)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    return err, b"".join(chunks).decode()


class MetricsTest(et.MountTestCase):

    def test_metrics_carry_the_stats(self):
        lower = self.make_dir("lower")
        os.chmod(self.tmp, 0o755)
        os.chmod(lower, 0o755)
        want = {}
        for i in range(20):
            rel = "d/f%02d.bin" % i
            want[rel] = et.det_bytes(3 * KiB + i, i)
            et.write_file(os.path.join(lower, rel), want[rel])
        d = self.mount(lower, opts=["allow_other", "cache.policy=epoch", "cache.memory=64MiB"])
        self.assertIn("metrics", os.listdir(d.path(".epochfs")))

        name = "resnet-1.a"
        jd = d.path(".epochfs", "jobs", name)
        os.mkdir(jd)  # registers this process
        files = sorted(want)
        for f, text in (("config", 'batch_size = 4\nepochs = 2\nroot = "d"\n'),
                        ("samples", "".join(r[2:] + "\n" for r in files)),
                        ("order/0", " ".join(map(str, range(20))) + "\n"),
                        ("epoch", "0\n")):
            with open(os.path.join(jd, f), "w") as fh:
                fh.write(text)
        for _ in range(2):
            for rel in files:
                self.assertEqual(et.read_file_raw(d.path(rel)), want[rel])

        st = d.stats()
        with open(d.path(".epochfs", "metrics")) as f:
            text = f.read()
        self.assertEqual(d.stats()["hits"], st["hits"], "no read in between")
        m = parse(text)
        mp = d.mnt
        self.assertEqual(st["mountpoint"], mp)
        self.assertEqual(value(m, "epochfs_hits_total", mountpoint=mp), st["hits"])
        self.assertEqual(value(m, "epochfs_misses_total", mountpoint=mp), st["misses"])
        self.assertEqual(st["hits"] + st["misses"], 40)
        self.assertAlmostEqual(value(m, "epochfs_hit_ratio", mountpoint=mp), st["hits"] / 40)
        self.assertEqual(value(m, "epochfs_budget_bytes", mountpoint=mp), st["budget"])
        self.assertEqual(value(m, "epochfs_used_bytes", mountpoint=mp), st["used"])
        self.assertEqual(value(m, "epochfs_lower_read_bytes_total", mountpoint=mp),
                         st["bytes_read_lower"])
        self.assertEqual(value(m, "epochfs_tier_bytes", mountpoint=mp, tier="ram"),
                         st["tiers"]["ram"]["bytes"])
        self.assertEqual(value(m, "epochfs_info", mountpoint=mp, version=st["version"],
                               policy="epoch"), 1)
        [row] = st["jobs"]
        self.assertEqual(row["name"], name)
        job = dict(mountpoint=mp, job=name)
        self.assertEqual(value(m, "epochfs_job_info", state=row["state"], **job), 1)
        self.assertEqual(value(m, "epochfs_job_epoch_hits", **job), row["hits"])
        self.assertEqual(value(m, "epochfs_job_cur_bytes", **job), row["cur_bytes"])
        # The job's counters count every read of its run; its epoch gauges
        # only the current epoch's.
        self.assertGreaterEqual(value(m, "epochfs_job_hits_total", **job), row["hits"])
        self.assertEqual(value(m, "epochfs_job_hits_total", **job), st["hits"])
        self.assertEqual(value(m, "epochfs_job_misses_total", **job), st["misses"])
        self.assertGreater(st["hits"], 0, st)
        # Every family has HELP and TYPE (the parser drops neither), a
        # base unit where it has one, and the mountpoint on every series.
        families = list(text_string_to_metric_families(text))
        for fam in families:
            self.assertTrue(fam.documentation, fam.name)
            self.assertIn(fam.type, ("counter", "gauge", "histogram"), fam.name)
            for s in fam.samples:
                self.assertEqual(s.labels.get("mountpoint"), mp, s)
        self.assertIn("# HELP epochfs_hits_total ", text)
        # The histograms: one load per file from LOWER, a wait per read.
        self.assertEqual(value(m, "epochfs_lower_load_seconds_count", mountpoint=mp), 20)
        self.assertEqual(value(m, "epochfs_lower_load_seconds_bucket", mountpoint=mp,
                               le="+Inf"), 20)
        self.assertGreater(value(m, "epochfs_lower_load_seconds_sum", mountpoint=mp), 0)
        self.assertGreaterEqual(value(m, "epochfs_read_wait_seconds_count", mountpoint=mp),
                                st["misses"])

        # Another user: the totals, none of root's job series.
        err, other = read_as(NOBODY, d.path(".epochfs", "metrics"))
        self.assertEqual(err, 0)
        om = parse(other)
        self.assertEqual(value(om, "epochfs_hits_total", mountpoint=mp), st["hits"])
        self.assertEqual([k for k in om if k[0].startswith("epochfs_job_")], [])

        os.rmdir(jd)
        self.assertEqual([k for k in parse(open(d.path(".epochfs", "metrics")).read())
                          if k[0].startswith("epochfs_job_")], [])
        self.assertEqual(d.unmount(), 0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


class MetricsHttpTest(et.MountTestCase):

    def test_a_real_scrape_serves_the_aggregates_and_no_job(self):
        lower = self.make_dir("lower")
        want = {}
        for i in range(10):
            rel = "f%02d.bin" % i
            want[rel] = et.det_bytes(2 * KiB + i, i)
            et.write_file(os.path.join(lower, rel), want[rel])
        port = free_port()
        d = self.mount(lower, opts=["cache.memory=32MiB", "metrics.listen=127.0.0.1:%d" % port])
        jd = d.path(".epochfs", "jobs", "secret-job-name")
        os.mkdir(jd)
        for f, text in (("config", 'batch_size = 2\nepochs = 1\n'),
                        ("samples", "".join(r + "\n" for r in sorted(want)))):
            with open(os.path.join(jd, f), "w") as fh:
                fh.write(text)
        for rel in sorted(want):
            self.assertEqual(et.read_file_raw(d.path(rel)), want[rel])
        st = d.stats()
        [row] = st["jobs"]
        status, ctype, text = scrape("http://127.0.0.1:%d/metrics" % port)
        self.assertEqual(status, 200)
        self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
        m = parse(text)
        mp = d.mnt
        self.assertEqual(value(m, "epochfs_hits_total", mountpoint=mp), st["hits"])
        self.assertEqual(value(m, "epochfs_misses_total", mountpoint=mp), st["misses"])
        self.assertEqual(st["misses"], 10)
        self.assertEqual(value(m, "epochfs_lower_load_seconds_count", mountpoint=mp), 10)
        self.assertEqual(value(m, "epochfs_jobs", mountpoint=mp, state=row["state"]), 1)
        self.assertEqual(sum(v for k, v in m.items() if k[0] == "epochfs_jobs"), 1)
        self.assertNotIn("secret-job-name", text)
        self.assertEqual([k for k in m if any(l == "job" for l, _ in k[1])], [])
        for fam in text_string_to_metric_families(text):
            self.assertTrue(fam.documentation, fam.name)
        # The file has the job; HTTP never does.
        with open(d.path(".epochfs", "metrics")) as f:
            self.assertIn("secret-job-name", f.read())
        with self.assertRaises(urllib.error.HTTPError) as e:
            scrape("http://127.0.0.1:%d/stats" % port)
        self.assertEqual(e.exception.code, 404)
        req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port, data=b"x",
                                     method="POST")
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        self.assertEqual(e.exception.code, 405)
        os.rmdir(jd)
        self.assertEqual(d.unmount(), 0)
        with self.assertRaises(OSError):
            scrape("http://127.0.0.1:%d/metrics" % port)

    def test_a_port_taken_fails_the_mount(self):
        lower = self.make_dir("lower")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            d = self.mount(lower, opts=["metrics.listen=127.0.0.1:%d" % port], check=False)
            self.assertEqual(d.wait_exit(), 1)
            self.assertIn("metrics.listen 127.0.0.1:%d" % port, d.stderr_text())
            self.assertFalse(et.is_mounted(d.mnt))


if __name__ == "__main__":
    et.main()
