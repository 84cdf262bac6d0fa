"""rankcli.runtime.cpus: the default thread count follows the CPUs this process may use (its affinity, its cgroup
quota), not the node's cores, which a job on a shared node is not given.

Affinity, cgroup files and the environment are all faked: nothing here depends on the machine running the tests.
"""

from __future__ import annotations

import os

import pytest

from rankcli.runtime import cpus


@pytest.fixture
def affinity(monkeypatch):
    def set_cpus(n: int) -> None:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(n)), raising=False)

    set_cpus(8)
    return set_cpus


def fake_proc(tmp_path, cgroup: str, mounts: list[tuple[str, str, str, str]]):
    """A /proc with self/cgroup and self/mountinfo; ``mounts`` = (root, mount point, fstype, super options)."""
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(cgroup)
    lines = [f"{30 + i} 23 0:{28 + i} {root} {point} rw,relatime - {fstype} {fstype} {opts}"
             for i, (root, point, fstype, opts) in enumerate(mounts)]
    (proc / "self" / "mountinfo").write_text("\n".join(["22 1 8:1 / / rw - ext4 /dev/sda1 rw", *lines]) + "\n")
    return proc


def write(path, text):
    path.mkdir(parents=True, exist_ok=True)
    for name, value in text.items():
        (path / name).write_text(value + "\n")


def test_affinity_alone(tmp_path, affinity):
    affinity(3)
    assert cpus.available_cpus(environ={}, proc=tmp_path / "no-proc") == 3


def test_cgroup_v2_quota_of_the_process_cgroup_and_its_ancestors(tmp_path, affinity):
    cg = tmp_path / "cg"
    proc = fake_proc(tmp_path, "0::/system.slice/job.scope\n", [("/", str(cg), "cgroup2", "rw")])
    write(cg, {"cpu.max": "max 100000"})
    write(cg / "system.slice", {"cpu.max": "300000 100000"})  # 3 CPUs for the whole slice
    write(cg / "system.slice" / "job.scope", {"cpu.max": "max 100000"})
    assert cpus.cgroup_cpu_limit(proc) == 3.0
    assert cpus.available_cpus(environ={}, proc=proc) == 3
    write(cg / "system.slice" / "job.scope", {"cpu.max": "150000 100000"})  # 1.5 CPUs: rounded down
    assert cpus.available_cpus(environ={}, proc=proc) == 1
    write(cg / "system.slice" / "job.scope", {"cpu.max": "50000 100000"})  # half a CPU: still one thread
    assert cpus.available_cpus(environ={}, proc=proc) == 1
    affinity(2)
    write(cg / "system.slice" / "job.scope", {"cpu.max": "max 100000"})
    assert cpus.available_cpus(environ={}, proc=proc) == 2  # the affinity is the smaller


def test_cgroup_v2_namespaced_container_root(tmp_path, affinity):
    cg = tmp_path / "cg"
    proc = fake_proc(tmp_path, "0::/\n", [("/", str(cg), "cgroup2", "rw")])
    write(cg, {"cpu.max": "200000 100000"})
    assert cpus.available_cpus(environ={}, proc=proc) == 2


def test_cgroup_v1_cfs_quota(tmp_path, affinity):
    cpu = tmp_path / "cpu,cpuacct"
    proc = fake_proc(tmp_path, "5:memory:/slurm/job7\n4:cpu,cpuacct:/slurm/job7\n0::/\n",
                     [("/", str(cpu), "cgroup", "rw,cpu,cpuacct"), ("/", str(tmp_path / "mem"), "cgroup", "rw,memory")])
    write(cpu, {"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000"})
    write(cpu / "slurm" / "job7", {"cpu.cfs_quota_us": "400000", "cpu.cfs_period_us": "100000"})
    assert cpus.available_cpus(environ={}, proc=proc) == 4
    write(cpu / "slurm" / "job7", {"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000"})  # -1: no quota
    assert cpus.cgroup_cpu_limit(proc) is None and cpus.available_cpus(environ={}, proc=proc) == 8


def test_cgroup_v1_mounted_at_the_job_cgroup(tmp_path, affinity):
    """A container sees its own cgroup mounted at the mount point (mountinfo root = the cgroup's path)."""
    cpu = tmp_path / "cpu"
    proc = fake_proc(tmp_path, "4:cpu:/docker/abc\n", [("/docker/abc", str(cpu), "cgroup", "rw,cpu")])
    write(cpu, {"cpu.cfs_quota_us": "200000", "cpu.cfs_period_us": "100000"})
    assert cpus.available_cpus(environ={}, proc=proc) == 2


@pytest.mark.parametrize("value, expected", [("2", 2), ("4,2", 4), ("16", 8), ("0", 8), ("abc", 8), ("", 8),
                                             (" 3 ", 3), ("\u00b2", 8), ("\u0663", 3), ("-2", 8), ("1e3", 8)])
def test_omp_num_threads(tmp_path, affinity, value, expected):
    assert cpus.available_cpus(environ={"OMP_NUM_THREADS": value}, proc=tmp_path / "no-proc") == expected


def test_unreadable_or_malformed_cgroup_files_are_skipped(tmp_path, affinity):
    cg = tmp_path / "cg"
    proc = fake_proc(tmp_path, "0::/a\n", [("/", str(cg), "cgroup2", "rw")])
    write(cg / "a", {"cpu.max": "lots 100000"})
    assert cpus.available_cpus(environ={}, proc=proc) == 8


@pytest.mark.parametrize("cpu_max", ["inf 100000", "1e400 1", "100000 1e-400", "nan 100000", "-1 100000"])
def test_cgroup_quotas_that_are_not_finite_are_skipped(tmp_path, affinity, cpu_max):
    """'inf 100000' parsed as an infinite quota and math.floor(inf) raised OverflowError (a traceback)."""
    cg = tmp_path / "cg"
    proc = fake_proc(tmp_path, "0::/a\n", [("/", str(cg), "cgroup2", "rw")])
    write(cg / "a", {"cpu.max": cpu_max})
    assert cpus.available_cpus(environ={}, proc=proc) == 8
    v1 = tmp_path / "v1"
    proc = fake_proc(tmp_path / "p1", "3:cpu,cpuacct:/a\n", [("/", str(v1), "cgroup", "rw,cpu,cpuacct")])
    quota, _, period = cpu_max.partition(" ")
    write(v1 / "a", {"cpu.cfs_quota_us": quota, "cpu.cfs_period_us": period})
    assert cpus.available_cpus(environ={}, proc=proc) == 8


@pytest.mark.parametrize("threads", [-1, 1025, 3_000_000_000, 10**20])
def test_threads_beyond_what_lightgbm_and_openmp_take_are_a_usage_error(monkeypatch, threads):
    """--threads 3000000000 wrapped in LightGBM's 32-bit count (every core, without a word); 10**20 killed the
    process in libgomp ("Out of memory allocating 372286424160 bytes", no Error: line)."""
    from rankcli.errors import UsageError

    monkeypatch.setattr(cpus.os, "cpu_count", lambda: 8)
    with pytest.raises(UsageError, match=f"--threads must be at (least 1|most 1024 .*), got {threads}$"):
        cpus.default_threads(threads)
    with pytest.raises(UsageError, match="--threads must be at least 1, got 0"):
        cpus.check_threads(0)
    assert cpus.default_threads(1024) == 1024 and cpus.check_threads(None) is None


def test_default_threads_is_the_option_when_given(monkeypatch):
    monkeypatch.setattr(cpus, "available_cpus", lambda **kw: 3)
    assert cpus.default_threads(None) == 3 and cpus.default_threads(5) == 5


def test_convert_parse_threads_follow_the_cpus_this_process_may_use(monkeypatch):
    """convert used min(2, os.cpu_count()) parse threads: two threads on a one-CPU job."""
    import types

    from rankcli import convert

    monkeypatch.setattr(convert, "available_cpus", lambda: 1)
    assert convert._Converter(types.SimpleNamespace(on_rows=None), convert.ConvertOptions()).threads == 1
    monkeypatch.setattr(convert, "available_cpus", lambda: 8)
    assert convert._Converter(types.SimpleNamespace(on_rows=None), convert.ConvertOptions()).threads == 2


def test_the_default_thread_count_follows_the_training_rows(monkeypatch):
    """Threads cost more than they save on few rows: 20 trees on 2k rows took 4.7-15 s with 2 threads on a busy machine
    and 0.2-0.3 s with one. The default is the CPUs this process may use, at most one thread per ROWS_PER_THREAD
    training rows (a pure function of the two: the same job on the same machine gets the same count); --threads
    overrides it."""
    monkeypatch.setattr(cpus, "available_cpus", lambda **kw: 8)
    per = cpus.ROWS_PER_THREAD
    for rows, expected in [(0, 1), (1, 1), (2_000, 1), (2 * per - 1, 1), (2 * per, 2), (5 * per + 7, 5),
                           (8 * per, 8), (10**9, 8)]:
        assert cpus.threads_for_rows(rows) == max(1, rows // per)
        assert cpus.default_threads(None, rows) == expected, rows
        assert cpus.default_threads(None, rows) == cpus.default_threads(None, rows)
    assert cpus.default_threads(None) == 8  # scoring: every CPU this process may use
    assert cpus.default_threads(3, 2_000) == 3  # --threads is taken as given
    monkeypatch.setattr(cpus, "available_cpus", lambda **kw: 2)
    assert cpus.default_threads(None, 10**9) == 2


def test_the_thread_count_is_recorded_and_shown(monkeypatch, tmp_path, capsys):
    """The count a model was trained with is in rankcli.json and in the one-line summary (a model is byte-identical
    only for the same count); the small sample trains on one thread even where two CPUs are available, and twice
    alike."""
    import json

    from rankcli.cli import main
    from rankcli.train import TrainConfig, resolve_params
    from tests.conftest import SAMPLE

    monkeypatch.setattr(cpus, "available_cpus", lambda **kw: 2)
    assert resolve_params(TrainConfig(), rows=2 * cpus.ROWS_PER_THREAD)["num_threads"] == 2
    assert resolve_params(TrainConfig(), rows=2_181)["num_threads"] == 1
    assert resolve_params(TrainConfig(threads=2), rows=2_181)["num_threads"] == 2
    data = tmp_path / "train.parquet"
    assert main(["convert", str(SAMPLE / "letor" / "train.txt"), "-o", str(data)]) == 0
    models = {}
    for name, extra in (("a", []), ("b", []), ("two", ["--threads", "2"])):
        capsys.readouterr()
        assert main(["train", str(data), "-o", str(tmp_path / name), "--trees", "3", *extra]) == 0
        line = capsys.readouterr().out
        threads = json.loads((tmp_path / name / "rankcli.json").read_text())["params"]["num_threads"]
        assert threads == (2 if extra else 1)
        assert line.rstrip().endswith(f", {threads} thread{'s' if threads > 1 else ''}"), line
        models[name] = (tmp_path / name / "model.txt").read_bytes()
    assert models["a"] == models["b"]
