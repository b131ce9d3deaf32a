#!/usr/bin/python3
"""The container recipes of conf/kubernetes/ and conf/docker/ (docs/containers.md).

Structure, without a cluster: every Kubernetes manifest loads into the
python3-kubernetes models of its kind and back without losing a field (an
unknown or misspelt key, a wrong type fails), and the DaemonSet keeps what a
FUSE mount shared with other pods needs: privileged, /dev/fuse, hostPID, the
dataset read-only, the mount directory a hostPath shared Bidirectional into
which the daemon mounts (a dead mount unmounted first, unmounted at preStop,
ready when .epochfs/version reads), a cache hostPath for the disk tier; the
training pod reaches the same host path with HostToContainer. The Docker
recipe names --device /dev/fuse and --cap-add SYS_ADMIN, as the docs do.
(No Docker daemon here: the image is not built by this test.)

Exit 77 (SKIP) without python3-yaml or python3-kubernetes.
"""

import os
import shlex
import sys
import unittest

try:
    import yaml
    from kubernetes.client import ApiClient
except ImportError as e:
    print("SKIP: %s (apt install python3-yaml python3-kubernetes)" % e)
    sys.exit(77)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KUBE = os.path.join(REPO, "conf", "kubernetes")


def load(name):
    with open(os.path.join(KUBE, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def model_name(doc):
    version = doc["apiVersion"].split("/")[-1]
    return version.capitalize() + doc["kind"]  # apps/v1 DaemonSet -> V1DaemonSet


class ManifestsTest(unittest.TestCase):
    def test_every_manifest_is_its_kind_exactly(self):
        api = ApiClient()
        names = sorted(n for n in os.listdir(KUBE) if n.endswith(".yaml"))
        self.assertEqual(names, ["epochfs-daemonset.yaml", "training-pod.yaml"])
        for name in names:
            for doc in load(name):
                m = api._ApiClient__deserialize(doc, model_name(doc))
                self.assertEqual(api.sanitize_for_serialization(m), doc,
                                 "%s: %s %s has fields its kind does not know"
                                 % (name, doc["kind"], doc["metadata"]["name"]))

    def test_the_check_catches_a_misspelt_field(self):
        api = ApiClient()
        pod = load("training-pod.yaml")[0]
        pod["spec"]["containers"][0]["volumeMount"] = pod["spec"]["containers"][0].pop(
            "volumeMounts")
        m = api._ApiClient__deserialize(pod, "V1Pod")
        self.assertNotEqual(api.sanitize_for_serialization(m), pod)

    def daemonset(self):
        docs = {d["kind"]: d for d in load("epochfs-daemonset.yaml")}
        self.assertEqual(set(docs), {"Namespace", "DaemonSet"})
        ds = docs["DaemonSet"]
        self.assertEqual(ds["metadata"]["namespace"], docs["Namespace"]["metadata"]["name"])
        return ds

    def test_the_daemonset_shares_its_mount_with_the_host(self):
        ds = self.daemonset()
        spec = ds["spec"]["template"]["spec"]
        self.assertEqual(ds["spec"]["selector"]["matchLabels"],
                         ds["spec"]["template"]["metadata"]["labels"])
        self.assertIs(spec["hostPID"], True)
        (c,) = spec["containers"]
        self.assertIs(c["securityContext"]["privileged"], True)
        vols = {v["name"]: v for v in spec["volumes"]}
        mounts = {m["name"]: m for m in c["volumeMounts"]}
        self.assertEqual(set(vols), set(mounts))
        self.assertEqual(vols["fuse"]["hostPath"], {"path": "/dev/fuse", "type": "CharDevice"})
        self.assertEqual(mounts["fuse"]["mountPath"], "/dev/fuse")
        self.assertIs(mounts["dataset"].get("readOnly"), True)
        self.assertEqual(mounts["mnt"].get("mountPropagation"), "Bidirectional")
        for name in ("dataset", "mnt", "cache"):
            self.assertIn("hostPath", vols[name], name)
            self.assertNotIn("mountPropagation", mounts[name] if name != "mnt" else {}, name)
        # The command: a dead mount unmounted, then the daemon in the
        # foreground, LOWER the dataset's mount, MOUNTPOINT the shared one,
        # the disk tier on the cache volume.
        script = " ".join(c["args"])
        self.assertEqual(c["command"], ["/bin/sh", "-c"])
        first, daemon = [shlex.split(s) for s in script.split(";", 1)]
        mnt = mounts["mnt"]["mountPath"]
        self.assertEqual(first, ["fusermount3", "-uz", mnt, "2>/dev/null"])
        self.assertEqual(daemon[:3], ["exec", "epochfs", "-f"])
        self.assertEqual(daemon[-2:], [mounts["dataset"]["mountPath"], mnt])
        opts = dict(o.split("=", 1) if "=" in o else (o, "")
                    for o in daemon[daemon.index("-o") + 1].split(","))
        self.assertIn("allow_other", opts)  # training pods read as other uids
        self.assertTrue(opts["cache.disk_path"].startswith(mounts["cache"]["mountPath"] + "/"))
        self.assertEqual(c["lifecycle"]["preStop"]["exec"]["command"],
                         ["fusermount3", "-u", "-z", mnt])
        self.assertEqual(c["readinessProbe"]["exec"]["command"],
                         ["cat", mnt + "/.epochfs/version"])

    def test_the_training_pod_reaches_the_same_host_path(self):
        ds = self.daemonset()
        spec = ds["spec"]["template"]["spec"]
        host_mnt = {v["name"]: v for v in spec["volumes"]}["mnt"]["hostPath"]["path"]
        (pod,) = load("training-pod.yaml")
        self.assertEqual(pod["kind"], "Pod")
        vols = {v["name"]: v for v in pod["spec"]["volumes"]}
        (c,) = pod["spec"]["containers"]
        (m,) = c["volumeMounts"]
        self.assertEqual(vols[m["name"]]["hostPath"]["path"], host_mnt)
        self.assertEqual(m.get("mountPropagation"), "HostToContainer")
        self.assertTrue(any(a.startswith(m["mountPath"] + "/") for a in c["command"]),
                        "the script reads through the mount")
        self.assertNotIn("privileged", str(c.get("securityContext", {})))


class DockerRecipeTest(unittest.TestCase):
    def test_the_documented_run_has_fuse_and_sys_admin(self):
        with open(os.path.join(REPO, "conf", "docker", "Dockerfile")) as f:
            dockerfile = f.read()
        with open(os.path.join(REPO, "docs", "containers.md")) as f:
            doc = f.read()
        for text in (dockerfile, doc):
            self.assertIn("--device /dev/fuse", text)
            self.assertIn("--cap-add SYS_ADMIN", text)
            self.assertIn("bind-propagation=rshared", text)
        self.assertIn('ENTRYPOINT ["epochfs", "-f"]', dockerfile)
        for deb in ("build-deb/epochfs_0.1.0_amd64.deb", "build-deb/python3-epochfs_0.1.0_all.deb"):
            self.assertIn(deb, dockerfile)  # what scripts/deb builds (README, Installing)


if __name__ == "__main__":
    unittest.main(verbosity=2)
