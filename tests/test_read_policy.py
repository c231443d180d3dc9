# SPDX-License-Identifier: GPL-2.0-or-later
"""btrfsx read-policy and the read_policy property on the host.

Against the running kernel, which has mainline's read_policy file without
CONFIG_BTRFS_EXPERIMENTAL (``[pid]`` only): get, set, the property, the
records of every mount. The kernel with every mainline policy is in
tests/vm/test_vm_read_policy.py (each value form, every refusal, apply at a
new mount, the module parameter, the reads' spread).

Fake sysfs trees stay where no kernel here has the interface or the fault: the
earlier read_policies/ patches of seed 001 and their tunables, a kernel before
5.11 without the file, one offering a policy btrfsx does not know, one whose
allocation/ directory is missing, policy files no kernel writes, and a kernel
that refuses (EINVAL) what btrfsx writes or shows something else afterwards
(tests/helpers/fake_sysfs_write.c, LD_PRELOAD). A fake tree is
<tmp>/fs/btrfs/<FSID of a real mounted filesystem>/..., since the FSID, sector
size and device ids still come from the real filesystem's ioctls; a fake
attribute is a regular file: what btrfsx writes is what it reads back.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import fsutil

pytestmark = pytest.mark.root

TESTS = Path(__file__).resolve().parent
EXPERIMENTAL = "[pid] round-robin:262144 devid:1"
RR_TUNABLES = {
    "roundrobin_nonlocal_inc_mixed_only": "1",
    "roundrobin_nonrot_nonlocal_inc": "0",
    "roundrobin_rot_nonlocal_inc": "1",
}


# --------------------------------------------------------------------------- fixtures

class Fs:
    """A mounted filesystem on loop devices, for one module."""

    def __init__(self, tmp: Path, n: int, data: str, metadata: str):
        imgs = fsutil.make_images(tmp / "images", ["320M"] * n)
        self.loops = fsutil.LoopDevices(imgs)
        self.loops.attach()
        try:
            self.fsid = fsutil.mkfs(list(self.loops), data=data, metadata=metadata)
            self.mnt = fsutil.mount(list(self.loops))
        except BaseException:
            self.loops.detach()
            raise
        self.devs = list(self.loops)

    def remount(self):
        fsutil.umount(self.mnt)
        fsutil.mount(self.devs, self.mnt)

    def close(self):
        try:
            fsutil.umount(self.mnt)
            with __import__("contextlib").suppress(OSError):
                os.rmdir(self.mnt)
        finally:
            self.loops.detach()


def _require_loop():
    ok, why = fsutil.can_use_loop()
    if not ok:
        pytest.skip(why)


@pytest.fixture(scope="module")
def raid1(tmp_path_factory):
    _require_loop()
    fs = Fs(tmp_path_factory.mktemp("rp-raid1"), 2, "raid1", "raid1")
    yield fs
    fs.close()


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    _require_loop()
    fs = Fs(tmp_path_factory.mktemp("rp-single"), 1, "single", "dup")
    yield fs
    fs.close()


@pytest.fixture(scope="session")
def preload(tmp_path_factory):
    """The LD_PRELOAD helper, built with the system compiler."""
    cc = os.environ.get("CC_FOR_TESTS") or shutil.which("cc") or shutil.which("gcc") \
        or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler for the LD_PRELOAD helper")
    out = tmp_path_factory.mktemp("preload") / "fake_sysfs_write.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out),
                    str(TESTS / "helpers" / "fake_sysfs_write.c"), "-ldl"], check=True)
    return out


class Fake:
    """A fake sysfs tree (and config dir) for one filesystem."""

    def __init__(self, root: Path, fsid: str):
        self.root = root / "sys"
        self.config = root / "etc-btrfsx"
        self.dir = self.root / "fs" / "btrfs" / fsid
        self.dir.mkdir(parents=True)

    @property
    def env(self):
        return {"BTRFSX_SYSFS_ROOT": str(self.root), "BTRFSX_CONFIG_DIR": str(self.config)}

    def write(self, rel: str, text: str):
        p = self.dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    def read(self, rel: str) -> str:
        return (self.dir / rel).read_text()

    def profiles(self, *names: str):
        for name in names:
            (self.dir / "allocation" / name).mkdir(parents=True, exist_ok=True)


def make_fake(tmp_path, fsid, kind, profiles=("data/raid1", "metadata/raid1", "system/raid1")):
    fake = Fake(tmp_path, fsid)
    if profiles is not None:
        fake.profiles(*profiles)
    if kind == "experimental":
        fake.write("read_policy", EXPERIMENTAL + "\n")
    elif kind == "plain":
        fake.write("read_policy", "[pid]\n")
    elif kind == "earlier":
        fake.write("read_policies/policy", "[pid] roundrobin\n")
        for name, value in RR_TUNABLES.items():
            fake.write(f"read_policies/{name}", value + "\n")
    else:
        assert kind == "none"
    return fake


@pytest.fixture
def fake(tmp_path, raid1):
    def _make(kind, **kw):
        return make_fake(tmp_path, raid1.fsid, kind, **kw)
    return _make


def rp(run_btrfsx, *args, env=None, check=True):
    return run_btrfsx("read-policy", *args, env=env, check=check)


def rp_json(btrfsx_json, *args, env=None, check=True):
    return btrfsx_json("read-policy", *args, env=env, check=check)


# --------------------------------------------------------------------------- the running kernel

def real_offers(raid1) -> str:
    return Path(f"/sys/fs/btrfs/{raid1.fsid}/read_policy").read_text().strip()


def test_real_kernel_get_shows_pid(raid1, btrfsx_json, run_btrfsx):
    doc = rp_json(btrfsx_json, "get", raid1.mnt)
    assert doc["fsid"] == raid1.fsid
    assert doc["interface"] == "read_policy"
    assert doc["policy"] == "pid"
    assert "pid" in doc["available"]
    assert doc["kernel_shows"] == real_offers(raid1)
    assert set(doc["mirrored"]) >= {"data/raid1", "metadata/raid1"}
    assert doc["affects_reads"] is True
    assert doc["persistent"] is None
    rc, out, err = rp(run_btrfsx, "get", raid1.mnt)
    assert "policy" in out and "pid" in out and err == ""


def test_real_kernel_set_round_robin_fails_clearly(raid1, run_btrfsx):
    if real_offers(raid1) != "[pid]":
        pytest.skip("this kernel offers more than pid")
    for value in ("round-robin", "round-robin:256K", "devid", "devid:1"):
        rc, out, err = rp(run_btrfsx, "set", raid1.mnt, value, check=1)
        assert "this kernel offers only the 'pid' read policy" in err, err
        assert "Linux 6.14" in err and "CONFIG_BTRFS_EXPERIMENTAL" in err
        assert out == ""
    assert real_offers(raid1) == "[pid]"


def test_real_kernel_set_pid(raid1, btrfsx_json):
    doc = rp_json(btrfsx_json, "set", raid1.mnt, "pid")
    assert doc["previous"] == "pid" and doc["policy"] == "pid"
    assert doc["changed"] is False and doc["persistent"] is None


def test_real_kernel_property(raid1, run_btrfsx, btrfsx_json):
    rc, out, err = run_btrfsx("property", "get", raid1.mnt, "read_policy")
    assert out == "read_policy=pid\n"
    assert btrfsx_json("property", "get", raid1.mnt) == \
        {"__header": {"version": "2"}, "read_policy": "pid"}
    rc, out, err = run_btrfsx("property", "set", raid1.mnt, "read_policy", "pid")
    assert out == "" and err == ""
    rc, out, err = run_btrfsx("property", "set", raid1.mnt, "read_policy", "latency", check=1)
    assert "unknown read policy 'latency' (this kernel offers: " in err
    if real_offers(raid1) == "[pid]":
        rc, out, err = run_btrfsx("property", "set", raid1.mnt, "read_policy", "round-robin",
                                  check=1)
        assert "offers only the 'pid' read policy" in err


def test_real_single_profile_warns(single, btrfsx_json, run_btrfsx):
    doc = rp_json(btrfsx_json, "get", single.mnt)
    assert doc["mirrored"] == [] and doc["affects_reads"] is False
    assert any("no RAID1, RAID1C3, RAID1C4 or RAID10 block group" in w for w in doc["warnings"])
    rc, out, err = rp(run_btrfsx, "set", single.mnt, "pid")
    assert "changes nothing on this filesystem" in err


def test_not_btrfs(run_btrfsx, tmp_path):
    rc, out, err = rp(run_btrfsx, "get", tmp_path, check=1)
    assert "not on a mounted btrfs filesystem" in err
    rc, out, err = rp(run_btrfsx, "get", tmp_path / "nosuch", check=1)
    assert "No such file or directory" in err


# --------------------------------------------------------------------------- faults no kernel makes
# btrfsx checks a request before writing it, so the real kernel never refuses
# what btrfsx writes nor shows something else afterwards: a preloaded write()
# makes it, for the paths that handle it.

def test_kernel_einval(fake, run_btrfsx, raid1, preload):
    f = fake("experimental")
    env = dict(f.env, LD_PRELOAD=str(preload), FAKE_SYSFS_EINVAL="/read_policy",
               FAKE_SYSFS_SHOW=EXPERIMENTAL + "\n")
    rc, out, err = rp(run_btrfsx, "set", raid1.mnt, "round-robin:64K", env=env, check=1)
    assert "the kernel rejected read policy 'round-robin:65536' (EINVAL)" in err, err
    assert f.read("read_policy") == EXPERIMENTAL + "\n"
    rc, out, err = run_btrfsx("property", "set", raid1.mnt, "read_policy", "devid:2", env=env,
                              check=1)
    assert "the kernel rejected read policy 'devid:2' (EINVAL)" in err, err
    rc, out, err = rp(run_btrfsx, "set", "--persistent", raid1.mnt, "devid", env=env, check=1)
    assert not (f.config / "read-policy.conf").exists()


def test_read_back_disagrees(fake, run_btrfsx, raid1, preload):
    f = fake("experimental")
    env = dict(f.env, LD_PRELOAD=str(preload), FAKE_SYSFS_IGNORE="/read_policy",
               FAKE_SYSFS_SHOW=EXPERIMENTAL)
    rc, out, err = rp(run_btrfsx, "set", raid1.mnt, "round-robin", env=env, check=1)
    assert "wrote 'round-robin' but the kernel now shows '[pid] round-robin:262144 devid:1'" \
        in err, err
    env["FAKE_SYSFS_SHOW"] = "pid [round-robin:4096] devid:1"
    rc, out, err = rp(run_btrfsx, "set", raid1.mnt, "round-robin:8192", env=env, check=1)
    assert "but the kernel now shows" in err


def test_unparsable_policy_file(fake, run_btrfsx, raid1):
    f = fake("experimental")
    for text in ("", "[pid] [devid]", "pid devid", "[pid] round-robin:abc"):
        f.write("read_policy", text)
        rc, out, err = rp(run_btrfsx, "get", raid1.mnt, env=f.env, check=1)
        assert "read_policy" in err and ("cannot" in err or "empty" in err), err


def test_property_objects(raid1, run_btrfsx, btrfsx_json):
    doc = btrfsx_json("property", "list", raid1.mnt)
    assert [p["name"] for p in doc["properties"]] == ["read_policy"]
    assert doc["properties"][0]["object"] == "filesystem"
    rc, out, err = run_btrfsx("property", "get", raid1.mnt, "nosuch", check=2)
    assert "unknown property 'nosuch'" in err
    rc, out, err = run_btrfsx("property", "get", "-t", "device", raid1.mnt, "read_policy",
                              check=2)
    assert "does not apply to a device object" in err
    rc, out, err = run_btrfsx("property", "get", raid1.devs[0], "read_policy", check=2)
    assert "does not apply to a device object" in err
    rc, out, err = run_btrfsx("property", "get", "-t", "bogus", raid1.mnt, check=2)
    assert "unknown object type 'bogus'" in err
    rc, out, err = run_btrfsx("property", "set", raid1.mnt, "read_policy", check=2)


def test_kernel_offering_an_unknown_policy(fake, btrfsx_json, raid1):
    f = fake("plain")
    f.write("read_policy", "[pid] latency\n")
    doc = rp_json(btrfsx_json, "set", raid1.mnt, "latency", env=f.env)
    assert f.read("read_policy") == "latency"
    assert doc["policy"] == "latency"


# --------------------------------------------------------------------------- the earlier read_policies/ patches

def test_earlier_get(fake, btrfsx_json, run_btrfsx, raid1):
    f = fake("earlier")
    doc = rp_json(btrfsx_json, "get", raid1.mnt, env=f.env)
    assert doc["interface"] == "read_policies"
    assert doc["policy"] == "pid"
    assert doc["available"] == ["pid", "round-robin"]
    assert doc["kernel_shows"] == "[pid] roundrobin"
    assert doc["tunables"] == {k: int(v) for k, v in RR_TUNABLES.items()}
    rc, out, err = rp(run_btrfsx, "get", raid1.mnt, env=f.env)
    assert "tunables:" in out and "roundrobin_rot_nonlocal_inc" in out


@pytest.mark.parametrize("request_", ["round-robin", "roundrobin"])
def test_earlier_set_round_robin(fake, btrfsx_json, raid1, request_):
    f = fake("earlier")
    doc = rp_json(btrfsx_json, "set", raid1.mnt, request_, env=f.env)
    assert f.read("read_policies/policy") == "roundrobin"
    assert doc["policy"] == "round-robin" and doc["changed"] is True
    f.write("read_policies/policy", "pid [roundrobin]\n")
    doc = rp_json(btrfsx_json, "set", raid1.mnt, "pid", env=f.env)
    assert f.read("read_policies/policy") == "pid"
    assert doc["previous"] == "round-robin"


@pytest.mark.parametrize("request_, message", [
    ("round-robin:64K", "the read_policies/ interface of this kernel takes no argument"),
    ("devid", "does not offer the 'devid' read policy (it offers: pid, roundrobin)"),
    ("devid:1", "does not offer the 'devid' read policy"),
    ("round-robin:6000", "takes no argument"),
])
def test_earlier_rejects(fake, run_btrfsx, raid1, request_, message):
    f = fake("earlier")
    rc, out, err = rp(run_btrfsx, "set", raid1.mnt, request_, env=f.env, check=1)
    assert message in err, err
    assert f.read("read_policies/policy") == "[pid] roundrobin\n"


def test_earlier_einval(fake, run_btrfsx, raid1, preload):
    f = fake("earlier")
    env = dict(f.env, LD_PRELOAD=str(preload), FAKE_SYSFS_EINVAL="/read_policies/policy",
               FAKE_SYSFS_SHOW="[pid] roundrobin\n")
    rc, out, err = rp(run_btrfsx, "set", raid1.mnt, "round-robin", env=env, check=1)
    assert "the kernel rejected read policy 'roundrobin' (EINVAL)" in err


# --------------------------------------------------------------------------- tunables

TUNABLE_OK = [
    ("roundrobin_nonlocal_inc_mixed_only", "0", "0"),
    ("roundrobin_nonlocal_inc_mixed_only", "1", "1"),
    ("roundrobin_nonlocal_inc_mixed_only", "off", "0"),
    ("roundrobin_nonlocal_inc_mixed_only", "yes", "1"),
    ("roundrobin_nonlocal_inc_mixed_only", "False", "0"),
    ("roundrobin_nonrot_nonlocal_inc", "0", "0"),
    ("roundrobin_nonrot_nonlocal_inc", "7", "7"),
    ("roundrobin_rot_nonlocal_inc", "4294967295", "4294967295"),
    ("roundrobin_rot_nonlocal_inc", "0x10", "16"),
]


@pytest.mark.parametrize("name, value, written", TUNABLE_OK)
def test_tunable_set(fake, btrfsx_json, raid1, name, value, written):
    f = fake("earlier")
    doc = rp_json(btrfsx_json, "tunables", raid1.mnt, name, value, env=f.env)
    assert f.read(f"read_policies/{name}") == written
    assert doc["name"] == name
    assert doc["previous"] == int(RR_TUNABLES[name])
    assert doc["value"] == int(written)


TUNABLE_BAD = [
    ("roundrobin_nonlocal_inc_mixed_only", "2", "invalid value '2' (0 or 1)"),
    ("roundrobin_nonlocal_inc_mixed_only", "maybe", "(0 or 1)"),
    ("roundrobin_nonlocal_inc_mixed_only", "", "(0 or 1)"),
    ("roundrobin_nonrot_nonlocal_inc", "4294967296", "a number from 0 to 4294967295"),
    ("roundrobin_rot_nonlocal_inc", "abc", "a number from 0 to 4294967295"),
    ("roundrobin_rot_nonlocal_inc", "1.5", "a number from 0 to 4294967295"),
    ("roundrobin_rot_nonlocal_inc", "", "a number from 0 to 4294967295"),
    ("no_such_tunable", "1", "unknown tunable 'no_such_tunable'"),
]


@pytest.mark.parametrize("name, value, message", TUNABLE_BAD)
def test_tunable_rejects(fake, run_btrfsx, raid1, name, value, message):
    f = fake("earlier")
    rc, out, err = rp(run_btrfsx, "tunables", raid1.mnt, name, value, env=f.env, check=1)
    assert message in err, err
    for n, v in RR_TUNABLES.items():
        assert f.read(f"read_policies/{n}") == v + "\n"


def test_tunable_negative(fake, run_btrfsx, raid1):
    f = fake("earlier")
    name = "roundrobin_nonrot_nonlocal_inc"
    rc, out, err = rp(run_btrfsx, "tunables", "--", raid1.mnt, name, "-1", env=f.env, check=1)
    assert "invalid value '-1' (a number from 0 to 4294967295)" in err
    assert f.read(f"read_policies/{name}") == "0\n"


def test_tunables_get(fake, btrfsx_json, run_btrfsx, raid1):
    f = fake("earlier")
    f.write("read_policies/roundrobin_rot_nonlocal_inc", "3\n")
    doc = rp_json(btrfsx_json, "tunables", raid1.mnt, env=f.env)
    assert doc["tunables"] == [
        {"name": "roundrobin_nonlocal_inc_mixed_only", "value": 1, "default": 1},
        {"name": "roundrobin_nonrot_nonlocal_inc", "value": 0, "default": 0},
        {"name": "roundrobin_rot_nonlocal_inc", "value": 3, "default": 1},
    ]
    doc = rp_json(btrfsx_json, "tunables", raid1.mnt, "roundrobin_rot_nonlocal_inc", env=f.env)
    assert doc["tunables"] == [{"name": "roundrobin_rot_nonlocal_inc", "value": 3, "default": 1}]
    rc, out, err = rp(run_btrfsx, "tunables", raid1.mnt, env=f.env)
    assert out.splitlines()[2] == "roundrobin_rot_nonlocal_inc 3 default 1"


def test_tunable_einval_and_read_back(fake, run_btrfsx, raid1, preload):
    f = fake("earlier")
    name = "roundrobin_rot_nonlocal_inc"
    env = dict(f.env, LD_PRELOAD=str(preload), FAKE_SYSFS_EINVAL=f"/{name}",
               FAKE_SYSFS_SHOW="1\n")
    rc, out, err = rp(run_btrfsx, "tunables", raid1.mnt, name, "9", env=env, check=1)
    assert "the kernel rejected '9' (EINVAL)" in err
    env = dict(f.env, LD_PRELOAD=str(preload), FAKE_SYSFS_IGNORE=f"/{name}",
               FAKE_SYSFS_SHOW="1\n")
    rc, out, err = rp(run_btrfsx, "tunables", raid1.mnt, name, "9", env=env, check=1)
    assert "wrote 9 but the kernel now shows 1" in err


@pytest.mark.parametrize("kind", ["running", "none"])
def test_tunables_absent_on_mainline(fake, run_btrfsx, raid1, kind):
    env = None if kind == "running" else fake(kind).env
    rc, out, err = rp(run_btrfsx, "tunables", raid1.mnt, env=env, check=1)
    assert "come only with the earlier round-robin patches" in err and "not with mainline" in err
    rc, out, err = rp(run_btrfsx, "tunables", raid1.mnt, "roundrobin_rot_nonlocal_inc", "1",
                      env=env, check=1)
    assert "not with mainline" in err


# --------------------------------------------------------------------------- no interface; profiles

def test_no_interface(fake, btrfsx_json, run_btrfsx, raid1):
    f = fake("none")
    doc = rp_json(btrfsx_json, "get", raid1.mnt, env=f.env)
    assert doc["interface"] == "none" and doc["policy"] == "pid"
    assert doc["available"] == ["pid"] and doc["kernel_shows"] is None
    doc = rp_json(btrfsx_json, "set", raid1.mnt, "pid", env=f.env)
    assert doc["changed"] is False
    rc, out, err = rp(run_btrfsx, "set", raid1.mnt, "round-robin", env=f.env, check=1)
    assert "no read policy interface (it came with Linux 5.11)" in err


def test_not_mounted_fake(tmp_path, raid1, run_btrfsx):
    f = Fake(tmp_path, "00000000-0000-0000-0000-000000000000")
    rc, out, err = rp(run_btrfsx, "get", raid1.mnt, env=f.env, check=1)
    assert f"is filesystem {raid1.fsid} mounted?" in err


def test_mirrored_profiles_from_ioctl(fake, btrfsx_json, raid1):
    """Without allocation/ in sysfs, BTRFS_IOC_SPACE_INFO of the real fs decides."""
    f = fake("experimental", profiles=None)
    doc = rp_json(btrfsx_json, "get", raid1.mnt, env=f.env)
    assert set(doc["mirrored"]) == {"data/raid1", "metadata/raid1", "system/raid1"}


# --------------------------------------------------------------------------- persistence
# The records, on the running kernel (pid only here; the kernel with every
# policy, a new mount and the shipped unit at each mount: tests/vm/).

def conf_records(config: Path) -> list[str]:
    return [l for l in (config / "read-policy.conf").read_text().splitlines()
            if l and not l.startswith("#")]


def test_set_persistent_and_apply(btrfsx_json, run_btrfsx, raid1, tmp_path):
    config = tmp_path / "etc" / "nested" / "dir"     # created on demand
    env = {"BTRFSX_CONFIG_DIR": config}
    doc = rp_json(btrfsx_json, "set", "--persistent", raid1.mnt, "pid", env=env)
    assert doc["persistent"] == "pid"
    assert conf_records(config) == [f"{raid1.fsid} pid"]
    assert sorted(os.listdir(config)) == ["read-policy.conf"]      # no temporary left
    assert rp_json(btrfsx_json, "get", raid1.mnt, env=env)["persistent"] == "pid"
    doc = rp_json(btrfsx_json, "list", env=env)
    assert doc["records"] == [{"fsid": raid1.fsid, "policy": "pid", "mounted": True,
                               "mountpoint": str(raid1.mnt)}]
    doc = rp_json(btrfsx_json, "apply", env=env)
    assert doc["filesystems"] == [{"fsid": raid1.fsid, "mountpoint": str(raid1.mnt),
                                   "policy": "pid", "status": "unchanged"}]

    # a plain set over a different record warns that the record comes back
    (config / "read-policy.conf").write_text(f"{raid1.fsid} devid:1\n")
    doc = rp_json(btrfsx_json, "set", raid1.mnt, "pid", env=env)
    assert doc["changed"] is False
    assert any("has 'devid:1' recorded for every mount" in w for w in doc["warnings"])

    # a second set --persistent replaces the record
    rp_json(btrfsx_json, "set", "-p", raid1.mnt, "pid", env=env)
    assert conf_records(config) == [f"{raid1.fsid} pid"]

    doc = rp_json(btrfsx_json, "forget", raid1.mnt, env=env)
    assert doc["fsid"] == raid1.fsid and doc["forgotten"] is True
    assert conf_records(config) == []
    rc, out, err = rp(run_btrfsx, "forget", raid1.fsid, env=env, check=1)
    assert "no read policy is recorded" in err


def test_set_persistent_not_recorded_when_refused(run_btrfsx, raid1, tmp_path):
    if real_offers(raid1) != "[pid]":
        pytest.skip("this kernel offers more than pid")
    env = {"BTRFSX_CONFIG_DIR": tmp_path / "etc"}
    rc, out, err = rp(run_btrfsx, "set", "--persistent", raid1.mnt, "round-robin", env=env,
                      check=1)
    assert not (tmp_path / "etc").exists()


def test_apply_every_record(btrfsx_json, run_btrfsx, raid1, tmp_path):
    config = tmp_path / "etc"
    env = {"BTRFSX_CONFIG_DIR": config}
    other = "12345678-1234-1234-1234-123456789abc"
    config.mkdir()
    (config / "read-policy.conf").write_text(
        "# hand-written\n"
        f"{other} round-robin\n"
        "this line is broken\n"
        f"{raid1.fsid.upper()} pid\n")
    doc = rp_json(btrfsx_json, "apply", env=env)
    assert doc["filesystems"] == [
        {"fsid": other, "mountpoint": None, "policy": "round-robin", "status": "not-mounted"},
        {"fsid": raid1.fsid, "mountpoint": str(raid1.mnt), "policy": "pid",
         "status": "unchanged"},
    ]
    assert any("this line is broken" in w for w in doc["warnings"])
    # saving keeps comments and unreadable lines as they were
    rp_json(btrfsx_json, "forget", other, env=env)
    assert (config / "read-policy.conf").read_text() == (
        "# hand-written\n"
        "this line is broken\n"
        f"{raid1.fsid} pid\n")


def test_apply_failure_exits_1(btrfsx_json, run_btrfsx, raid1, tmp_path):
    """A record this kernel cannot take: reported, exit 1, the policy left alone."""
    if real_offers(raid1) != "[pid]":
        pytest.skip("this kernel offers more than pid")
    config = tmp_path / "etc"
    env = {"BTRFSX_CONFIG_DIR": config}
    config.mkdir()
    (config / "read-policy.conf").write_text(f"{raid1.fsid} devid:9\n")
    doc = rp_json(btrfsx_json, "apply", env=env, check=1)
    fs = doc["filesystems"][0]
    assert fs["status"] == "failed" and "offers only the 'pid' read policy" in fs["error"]
    assert "1 recorded read policy could not be applied" in doc["error"]["message"]
    assert real_offers(raid1) == "[pid]"
    rc, out, err = rp(run_btrfsx, "apply", raid1.mnt, env=env, check=1)
    assert "offers only the 'pid' read policy" in err


def test_apply_without_records(btrfsx_json, raid1, tmp_path):
    env = {"BTRFSX_CONFIG_DIR": tmp_path / "etc"}
    assert rp_json(btrfsx_json, "apply", env=env)["filesystems"] == []
    doc = rp_json(btrfsx_json, "apply", raid1.mnt, env=env)
    assert doc["filesystems"][0]["status"] == "no-record"
    assert rp_json(btrfsx_json, "list", env=env)["records"] == []


def test_apply_watch_refuses_json(run_btrfsx):
    rc, out, err = run_btrfsx("--format", "json", "read-policy", "apply", "--watch", check=2)
    assert "--watch prints text only" in err
    rc, out, err = run_btrfsx("read-policy", "apply", "--watch", "/", check=2)


# --------------------------------------------------------------------------- the shipped unit

def test_systemd_unit_runs_apply_watch():
    unit = (TESTS.parent / "systemd" / "btrfsx-read-policy.service.in").read_text()
    assert "ExecStart=@bindir@/btrfsx read-policy apply --watch" in unit
    assert "Before=local-fs.target" in unit and "WantedBy=sysinit.target" in unit


def test_man_page_documents_persistence():
    page = (TESTS.parent / "Documentation" / "btrfsx-read-policy.adoc").read_text()
    for word in ("--persistent", "read-policy.conf", "btrfsx-read-policy.service",
                 "apply --watch", "CONFIG_BTRFS_EXPERIMENTAL", "roundrobin_rot_nonlocal_inc"):
        assert word in page, word


def test_a_member_device_stands_for_its_mount_point(raid1, btrfsx_json):
    """Like filesystem usage, every command that needs a mounted filesystem takes one of
    its devices: read-policy get, device io-stats, property get -t filesystem."""
    for dev in raid1.devs:
        doc = btrfsx_json("read-policy", "get", dev)
        assert doc["fsid"] == raid1.fsid and doc["mountpoint"] == str(raid1.mnt)
        doc = btrfsx_json("device", "io-stats", "-i", "0.05", dev)
        assert doc["mountpoint"] == str(raid1.mnt)
        doc = btrfsx_json("property", "get", "-t", "filesystem", dev, "read_policy")
        assert doc["read_policy"] == btrfsx_json("read-policy", "get", raid1.mnt)["policy"]
