"""HPC job mapping directory: file names, contents, changes while running, failures."""

from __future__ import annotations

import logging
import os
import time

import pytest

from dcgm_collector.attribution.hpc import MAX_JOBS_PER_GPU, HpcJobMapper, parse_jobs


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def write(path, text: str) -> None:
    path.write_text(text)


def test_dcgm_exporter_example(tmp_path):
    # hpc_test.go's example: 5 series from these files
    write(tmp_path / "0", "job1-0\n")
    write(tmp_path / "1", "job1-1\njob2-1\n")
    write(tmp_path / "3.0", "job3.0-0")
    mapper = HpcJobMapper(tmp_path)
    assert mapper.jobs_for(0) == ["job1-0"]
    assert mapper.jobs_for(1) == ["job1-1", "job2-1"]
    assert mapper.jobs_for(2) == []
    assert mapper.jobs_for(3) == []                 # a whole-GPU series does not get the instance's jobs
    assert mapper.jobs_for(3, instance_id=0) == ["job3.0-0"]
    assert mapper.mapping() == {"0": ["job1-0"], "1": ["job1-1", "job2-1"], "3.0": ["job3.0-0"]}


@pytest.mark.parametrize("name", ["foo", "bar.txt", ".gitkeep", "1e5", "NaN", "+3", "-2", ".5", "1.2.3", "0 ",
                                  "٣", "1.", "01x"])
def test_bad_names_are_ignored(tmp_path, name):
    write(tmp_path / name, "job\n")
    write(tmp_path / "7", "seven\n")
    mapper = HpcJobMapper(tmp_path)
    assert mapper.mapping() == {"7": ["seven"]}


def test_directories_and_special_files_are_ignored(tmp_path):
    (tmp_path / "4").mkdir()
    os.mkfifo(tmp_path / "5")       # opening a FIFO would block the scrape
    mapper = HpcJobMapper(tmp_path)
    assert mapper.mapping() == {}


def test_symlinked_file_is_followed(tmp_path):
    target = tmp_path / "jobs.txt"
    write(target, "linked\n")
    (tmp_path / "2").symlink_to(target)
    assert HpcJobMapper(tmp_path).jobs_for(2) == ["linked"]


@pytest.mark.parametrize("data, jobs", [
    (b"", []),
    (b"a\nb\n", ["a", "b"]),
    (b"a\r\nb\r\n", ["a", "b"]),
    (b"  a  \n\n\nb", ["a", "b"]),
    (b"a\na\nb\na\n", ["a", "b"]),
    (b"\xffjob\n", ["\ufffdjob"]),
])
def test_parse_jobs(data, jobs):
    assert parse_jobs(data) == jobs


def test_changes_are_picked_up_after_the_refresh_interval(tmp_path, clock):
    write(tmp_path / "0", "first\n")
    mapper = HpcJobMapper(tmp_path, refresh_s=5, clock=clock)
    assert mapper.jobs_for(0) == ["first"]
    generation = mapper.generation
    write(tmp_path / "0", "second\nthird\n")
    write(tmp_path / "1", "new\n")
    clock.now += 1
    assert mapper.jobs_for(0) == ["first"]         # cached until refresh_s passed
    clock.now += 5
    assert mapper.jobs_for(0) == ["second", "third"]
    assert mapper.jobs_for(1) == ["new"]
    assert mapper.generation > generation
    (tmp_path / "0").unlink()
    write(tmp_path / "1", "")
    clock.now += 5
    assert mapper.jobs_for(0) == [] and mapper.jobs_for(1) == []
    assert mapper.mapping() == {}


def test_same_size_rewrite_is_seen(tmp_path, clock):
    path = tmp_path / "0"
    write(path, "job-a\n")
    mapper = HpcJobMapper(tmp_path, refresh_s=1, clock=clock)
    assert mapper.jobs_for(0) == ["job-a"]
    write(path, "job-b\n")
    stamp = os.stat(path)
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))
    clock.now += 2
    assert mapper.jobs_for(0) == ["job-b"]


def test_unchanged_files_are_not_read_again(tmp_path, clock, monkeypatch):
    write(tmp_path / "0", "job\n")
    mapper = HpcJobMapper(tmp_path, refresh_s=1, clock=clock)
    assert mapper.jobs_for(0) == ["job"]
    opened = []
    real_open = os.open

    def spy(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    for _ in range(3):
        clock.now += 2
        assert mapper.jobs_for(0) == ["job"]
    assert opened == []


def test_generation_stays_when_nothing_changed(tmp_path, clock):
    write(tmp_path / "0", "job\n")
    mapper = HpcJobMapper(tmp_path, refresh_s=1, clock=clock)
    generation = mapper.generation
    clock.now += 2
    mapper.refresh()
    assert mapper.generation == generation


def test_reads_between_refreshes_do_not_list_the_directory(tmp_path, clock, monkeypatch):
    write(tmp_path / "0", "job\n")
    mapper = HpcJobMapper(tmp_path, refresh_s=10, clock=clock)
    mapper.jobs_for(0)
    listings = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listings.append(path) or real_scandir(path))
    for _ in range(100):
        mapper.jobs_for(0)
    assert listings == []
    clock.now += 11
    mapper.jobs_for(0)
    assert len(listings) == 1


def test_missing_directory_is_logged_once_and_recovers(tmp_path, clock, caplog):
    directory = tmp_path / "jobs"
    mapper = HpcJobMapper(directory, refresh_s=1, clock=clock)
    with caplog.at_level(logging.INFO, logger="dcgm_collector.attribution.hpc"):
        for _ in range(3):
            assert mapper.jobs_for(0) == []
            clock.now += 2
        directory.mkdir()
        write(directory / "0", "back\n")
        assert mapper.jobs_for(0) == ["back"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(directory) in warnings[0].getMessage()
    assert any("readable again" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_logged_once_and_counts_as_empty(tmp_path, clock, caplog):
    path = tmp_path / "0"
    write(path, "secret\n")
    write(tmp_path / "1", "fine\n")
    path.chmod(0)
    mapper = HpcJobMapper(tmp_path, refresh_s=1, clock=clock)
    with caplog.at_level(logging.WARNING, logger="dcgm_collector.attribution.hpc"):
        for _ in range(3):
            assert mapper.jobs_for(0) == [] and mapper.jobs_for(1) == ["fine"]
            clock.now += 2
    assert sum("cannot read HPC job mapping file" in r.getMessage() for r in caplog.records) == 1
    path.chmod(0o644)
    clock.now += 2
    assert mapper.jobs_for(0) == ["secret"]


def test_read_error_is_logged_once_and_counts_as_empty(tmp_path, clock, caplog, monkeypatch):
    # the same as above for root, who can read any file: make the open fail
    write(tmp_path / "0", "secret\n")
    write(tmp_path / "1", "fine\n")
    real_open = os.open

    def failing_open(path, *args, **kwargs):
        if str(path).endswith(os.sep + "0"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", failing_open)
    mapper = HpcJobMapper(tmp_path, refresh_s=1, clock=clock)
    with caplog.at_level(logging.WARNING, logger="dcgm_collector.attribution.hpc"):
        for _ in range(3):
            assert mapper.jobs_for(0) == [] and mapper.jobs_for(1) == ["fine"]
            clock.now += 2
            os.utime(tmp_path / "0")      # a changed file is tried again, and fails again
    messages = [r.getMessage() for r in caplog.records]
    assert sum("cannot read HPC job mapping file" in m and "Permission denied" in m for m in messages) == 1
    monkeypatch.setattr(os, "open", real_open)
    os.utime(tmp_path / "0", ns=(0, 1))
    clock.now += 2
    assert mapper.jobs_for(0) == ["secret"]


def test_too_many_jobs_are_capped(tmp_path, caplog):
    write(tmp_path / "0", "".join(f"job{i}\n" for i in range(MAX_JOBS_PER_GPU + 10)))
    with caplog.at_level(logging.WARNING, logger="dcgm_collector.attribution.hpc"):
        jobs = HpcJobMapper(tmp_path).jobs_for(0)
    assert jobs == [f"job{i}" for i in range(MAX_JOBS_PER_GPU)]
    assert [r.getMessage() for r in caplog.records] == [
        f"HPC job mapping file {tmp_path / '0'} lists more than 64 jobs (or is larger than 64 KiB); using the first 64"]


def test_refresh_zero_checks_every_call(tmp_path):
    mapper = HpcJobMapper(tmp_path, refresh_s=0)
    assert mapper.jobs_for(0) == []
    write(tmp_path / "0", "now\n")
    assert mapper.jobs_for(0) == ["now"]


@pytest.mark.parametrize("kwargs, message", [
    ({"directory": ""}, "directory is empty"),
    ({"directory": "/x", "refresh_s": -1}, "refresh_s"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HpcJobMapper(**kwargs)


def test_attribution_copies_pods_and_jobs(tmp_path):
    from dcgm_collector.attribution.copies import NO_COPIES, GpuAttribution

    class Pods:
        generation = 3

        def labels_for(self, gpu_index, uuid):
            return {"pod": "p", "namespace": "n", "container": "c"} if uuid == "GPU-a" else {}

    write(tmp_path / "0", "j1\nj2\n")
    jobs = HpcJobMapper(tmp_path)
    both = GpuAttribution(Pods(), jobs)
    pod = (("container", "c"), ("namespace", "n"), ("pod", "p"))
    assert both.copies(0, "GPU-a") == (tuple(sorted(pod + (("hpc_job", "j1"),))),
                                       tuple(sorted(pod + (("hpc_job", "j2"),))))
    assert both.copies(1, "GPU-a") == (pod,)
    assert both.copies(1, "GPU-b") == NO_COPIES
    assert GpuAttribution(None, jobs).copies(0, "GPU-a") == ((("hpc_job", "j1"),), (("hpc_job", "j2"),))
    assert GpuAttribution().copies(0, "x") == NO_COPIES and GpuAttribution().generation == (0, 0)
    assert both.generation == (3, jobs.generation)


def test_fifos_and_links_out_of_the_folder_are_not_read(tmp_path, clock):
    """A FIFO would block the reader for ever; a link out of the folder would read what the scheduler never wrote."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    outside = tmp_path / "elsewhere"
    outside.write_text("not-a-job-of-this-node\n")
    os.mkfifo(jobs / "0")
    (jobs / "1").symlink_to(outside)
    write(jobs / "2", "train-7\n")
    (jobs / "3").symlink_to(jobs / "2")   # a link inside the folder is fine
    mapper = HpcJobMapper(jobs, refresh_s=1, clock=clock)
    started = time.monotonic()
    assert [mapper.jobs_for(g) for g in range(4)] == [[], [], ["train-7"], ["train-7"]]
    assert time.monotonic() - started < 1.0
