#!/usr/bin/python3
"""The Debian packaging (debian/) agrees with the meson install, checked
without building a package (that takes minutes: scripts/dev/deb-check does it).

1. debian/control parses (deb822 stanzas): debhelper-compat 13, dh-python,
   meson; the binary packages epochfs and python3-epochfs; every library
   meson.build asks pkg-config for is in Build-Depends (by the package that
   owns its .pc file here) and in scripts/common.sh's list.
2. One version: debian/changelog, meson.build, python/pyproject.toml and
   epochfs.__version__.
3. `meson install --destdir` of this build tree, with the tree's dirs mapped
   to Debian's (PREFIX/bin -> /usr/bin, SYSCONFDIR -> /etc, ...): every path
   debian/epochfs.install names is installed, and every installed file is
   named (what dh_missing would fail the package build on).
4. The installed files name each other's paths: the unit's ExecStart runs
   BINDIR/epochfs and its EnvironmentFile is in SYSCONFDIR/epochfs/, and the
   daemon's default config (its --help) is the config meson installs.

Needs EPOCHFS_BUILD_ROOT (meson sets it); SKIP (77) without dpkg-query or
pkg-config.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("EPOCHFS_BUILD_ROOT", os.path.join(ROOT, "build"))


def read(*rel):
    with open(os.path.join(ROOT, *rel)) as f:
        return f.read()


def deb822(text):
    """[{field: value}] of the stanzas of a control file (continuation lines
    joined with newlines, comments dropped)."""
    stanzas, cur, last = [], {}, None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                stanzas.append(cur)
            cur, last = {}, None
            continue
        if line[0] in " \t":
            if last is None:
                raise ValueError("continuation line before any field: %r" % line)
            cur[last] += "\n" + line.strip()
            continue
        name, sep, value = line.partition(":")
        if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", name):
            raise ValueError("not a field: %r" % line)
        if name in cur:
            raise ValueError("field %s twice in a stanza" % name)
        cur[name], last = value.strip(), name
    if cur:
        stanzas.append(cur)
    return stanzas


def relation_names(value):
    """Package names of a relation field ("a (>= 1), b | c, ${x:Depends}")."""
    names = []
    for part in value.replace("\n", " ").split(","):
        for alt in part.split("|"):
            alt = alt.strip()
            if alt and not alt.startswith("${"):
                names.append(re.match(r"[a-z0-9][a-z0-9+.-]*", alt).group(0))
    return names


def meson_options():
    r = subprocess.run(["meson", "introspect", "--buildoptions", BUILD], capture_output=True,
                       text=True, check=True)
    return {o["name"]: o["value"] for o in json.loads(r.stdout)}


class ControlTest(unittest.TestCase):

    def setUp(self):
        self.stanzas = deb822(read("debian", "control"))
        self.source = self.stanzas[0]
        self.packages = {s["Package"]: s for s in self.stanzas[1:]}

    def test_source_and_binary_packages(self):
        self.assertEqual(self.source["Source"], "epochfs")
        build_deps = self.source["Build-Depends"]
        self.assertIn("debhelper-compat (= 13)", build_deps)
        names = relation_names(build_deps)
        for want in ("dh-sequence-python3", "meson", "python3-all", "pybuild-plugin-pyproject"):
            self.assertIn(want, names)
        self.assertEqual(sorted(self.packages), ["epochfs", "python3-epochfs"])
        self.assertEqual(self.packages["python3-epochfs"]["Architecture"], "all")
        self.assertIn("fuse3", relation_names(self.packages["epochfs"]["Depends"]))
        self.assertIn("${python3:Depends}", self.packages["python3-epochfs"]["Depends"])
        for s in self.packages.values():
            self.assertTrue(s["Description"].split("\n")[0], s["Package"])
        self.assertFalse(os.path.exists(os.path.join(ROOT, "debian", "compat")),
                         "the compat level is Build-Depends' debhelper-compat alone")
        self.assertEqual(read("debian", "source", "format").strip(), "3.0 (native)")
        self.assertTrue(os.access(os.path.join(ROOT, "debian", "rules"), os.X_OK))

    def test_every_library_is_a_build_dependency(self):
        if not shutil.which("pkg-config") or not shutil.which("dpkg-query"):
            self.skipTest("no pkg-config or dpkg-query")
        meson = read("meson.build")
        libs = re.findall(r"^\w+_dep = dependency\('([^']+)'(.*)\)$", meson, re.M)
        self.assertGreaterEqual(len(libs), 7, libs)
        build_deps = relation_names(self.source["Build-Depends"])
        scripts = read("scripts", "common.sh")
        for name, rest in libs:
            if name in ("threads", "gtest_main"):  # the compiler's; the tests' alone
                continue
            pcdir = subprocess.run(["pkg-config", "--variable=pcfiledir", name],
                                   capture_output=True, text=True).stdout.strip()
            self.assertTrue(pcdir, "pkg-config does not know %s" % name)
            owner = subprocess.run(["dpkg-query", "-S", os.path.join(pcdir, name + ".pc")],
                                   capture_output=True, text=True).stdout
            pkg = owner.split(":")[0].strip()
            self.assertTrue(pkg, "no package owns %s.pc" % name)
            self.assertIn(pkg, build_deps, "%s (%s.pc) is not in Build-Depends" % (pkg, name))
            self.assertRegex(scripts, r"\b%s\b" % re.escape(pkg), "%s not in common.sh" % pkg)

    def test_one_version(self):
        changelog = read("debian", "changelog").splitlines()[0]
        m = re.match(r"epochfs \(([^)]+)\) \S+; urgency=\w+$", changelog)
        self.assertTrue(m, changelog)
        meson = re.search(r"version : '([^']+)'", read("meson.build")).group(1)
        pyproject = re.search(r'^version = "([^"]+)"', read("python", "pyproject.toml"),
                              re.M).group(1)
        module = re.search(r'^__version__ = "([^"]+)"', read("python", "epochfs", "__init__.py"),
                           re.M).group(1)
        self.assertEqual({m.group(1), meson, pyproject, module}, {meson})


class InstallTest(unittest.TestCase):
    """meson install into a temporary root, compared with debian/*.install."""

    @classmethod
    def setUpClass(cls):
        cls.destdir = tempfile.mkdtemp(prefix="epochfs-install-")
        r = subprocess.run(["meson", "install", "-C", BUILD, "--destdir", cls.destdir,
                            "--no-rebuild", "--quiet"], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("meson install failed: %s%s" % (r.stdout, r.stderr))
        opts = meson_options()
        prefix = opts["prefix"]

        def under_prefix(d):
            return d if d.startswith("/") else os.path.join(prefix, d)
        rules = read("debian", "rules")
        debian_unit_dir = re.search(r"-Dsystemd_unit_dir=(\S+)", rules).group(1)
        cls.bindir = under_prefix(opts["bindir"])
        cls.sysconfdir = under_prefix(opts["sysconfdir"])
        # Debian's dir (meson's dh buildsystem: prefix /usr, sysconfdir /etc;
        # the unit dir from debian/rules) -> this tree's dir.
        cls.dirs = [
            ("usr/bin", cls.bindir),
            ("usr/share/man", under_prefix(opts["mandir"])),
            ("etc", cls.sysconfdir),
            (debian_unit_dir.strip("/"), opts["systemd_unit_dir"] or
             os.path.join(prefix, "lib", "systemd", "system")),
        ]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.destdir, True)

    def here(self, debian_path):
        """A Debian path (as debian/*.install names it) in this tree's install."""
        for deb, ours in sorted(self.dirs, key=lambda d: -len(d[0])):
            if debian_path == deb or debian_path.startswith(deb + "/"):
                return self.destdir + ours + debian_path[len(deb):]
        self.fail("%s: no Debian dir in the map %r" % (debian_path, self.dirs))

    def install_lines(self):
        lines = [l.strip() for l in read("debian", "epochfs.install").splitlines()]
        return [l for l in lines if l and not l.startswith("#")]

    def test_every_listed_path_is_installed(self):
        lines = self.install_lines()
        self.assertIn("usr/bin/epochfs", lines)
        for line in lines:
            self.assertNotIn(" ", line, "one path per line, no destination: %r" % line)
            self.assertTrue(os.path.isfile(self.here(line)), line)

    def test_every_installed_file_is_listed(self):
        listed = {self.here(l) for l in self.install_lines()}
        installed = set()
        for d, _, files in os.walk(self.destdir):
            installed.update(os.path.join(d, f) for f in files)
        self.assertTrue(installed)
        self.assertEqual(sorted(installed - listed), [],
                         "installed but in no debian/*.install (dh_missing fails on it)")

    def test_installed_paths_name_each_other(self):
        unit = read_abs(self.destdir + dict(self.dirs)[self.dirs[3][0]] + "/epochfs@.service")
        exe = os.path.join(self.bindir, "epochfs")
        self.assertRegex(unit, r"(?m)^ExecStart=%s -f " % re.escape(exe))
        self.assertIn("EnvironmentFile=%s/epochfs/%%i.env" % self.sysconfdir, unit)
        self.assertIn("%s/epochfs/mnt-imagenet.env" % self.sysconfdir, unit)  # its comment
        conf = os.path.join(self.sysconfdir, "epochfs", "epochfs.toml")
        self.assertEqual(read_abs(self.destdir + conf), read("conf", "epochfs.toml"))
        help_text = subprocess.run([self.destdir + exe, "--help"], capture_output=True,
                                   text=True).stdout
        self.assertIn("else %s when it exists" % conf, help_text)


def read_abs(path):
    with open(path) as f:
        return f.read()


if __name__ == "__main__":
    if not shutil.which("meson"):
        print("SKIP: no meson")
        sys.exit(77)
    unittest.main(verbosity=2)
