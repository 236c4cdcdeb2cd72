"""Link profiles: the shipped pcie5-x16, name and path resolution, calibration saved and picked up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from profiler.errors import ProfilerError
from profiler.model import Link, Meta, Run
from profiler.trace.link import DEFAULT_MODEL, available, load_link, model_for, resolve, save_link

from ..kit import PROGRAMS, ROOT, prof


def test_the_shipped_profile_has_the_h200_figures() -> None:
    link = resolve("pcie5-x16")
    assert (link.h2d_pinned_gbps, link.d2h_pinned_gbps, link.h2d_pageable_gbps, link.d2h_pageable_gbps) == (54.0, 54.0, 6.3, 2.7)
    assert link.latency_us == 13.0 and link.source.startswith("shipped")
    assert DEFAULT_MODEL in available()


def test_resolution_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_PROF_HOME", str(tmp_path / "home"))
    path = save_link(Link("mine", 1.0, 2.0, latency_us=3.0), tmp_path / "home" / "links" / "mine.yaml")
    assert resolve("mine") == load_link(path) == resolve(str(path))
    assert resolve("mine").h2d_pinned_gbps is None
    with pytest.raises(ProfilerError, match=r"no link profile named 'nope' \(available: mine, pcie5-x16;"):
        resolve("nope")
    for text, problem in [("- 1\n", "a link profile is a mapping"), ("name: x\n", "missing key 'h2d_pageable_gbps'"),
                          ("name: x\nh2d_pageable_gbps: 1\nd2h_pageable_gbps: 0\n", "'d2h_pageable_gbps' must be positive"),
                          ("name: x\nh2d_pageable_gbps: 1\nd2h_pageable_gbps: 1\nspeed: 3\n", "unknown key(s) speed"),
                          ("name: [x\n", "not a link profile (invalid YAML")]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(ProfilerError) as exc:
            load_link(bad)
        assert str(exc.value).startswith(f"{bad}: ") and problem in str(exc.value)


def test_model_for_numpy_runs_defaults_to_pcie5() -> None:
    numpy_run = Run(Meta("numpy", "host", "batched", "", 0))
    gpu_run = Run(Meta("cupy", "H200", "batched", "", 0))
    assert model_for(numpy_run, None)[0].name == "pcie5-x16"  # type: ignore[union-attr]
    assert model_for(gpu_run, None) == (None, False), "a GPU run's times are measured, not modelled"
    assert model_for(gpu_run, "pcie5-x16")[1] is True


def test_calibrate_measures_saves_and_recordings_pick_it_up(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = prof("calibrate", "--size", "1MiB", "--repeats", "2", cwd=tmp_path, OFFLOAD_PROF_HOME=str(home))
    assert proc.returncode == 0, proc.stderr
    saved = home / "links" / "local-numpy.yaml"
    assert f"saved {saved}" in proc.stderr and "measuring pageable H2D" in proc.stderr
    data = yaml.safe_load(saved.read_text())
    assert data["name"] == "local-numpy" and data["h2d_pageable_gbps"] > 0 and data["d2h_pageable_gbps"] > 0
    assert data["latency_us"] > 0 and data["launch_us"] > 0 and "h2d_pinned_gbps" not in data
    assert re.search(r"H2D pinned +not available on this backend", proc.stdout)
    # what recording costs: per launch and per other event of offload_core's recorder; no CUPTI without CuPy
    assert data["recorded_launch_us"] >= 0 and data["recorded_event_us"] >= 0
    assert "cupti_launch_us" not in data and "cupti_event_us" not in data
    assert "measuring what recording costs" in proc.stderr and re.search(r"CUPTI, per launch +-", proc.stdout)
    run = prof("run", "-o", str(tmp_path / "t.json"), "--", str(PROGRAMS / "heat.py"), "64", "1", cwd=ROOT,
               OFFLOAD_PROF_HOME=str(home))
    assert run.returncode == 0
    assert Run.load(tmp_path / "t.json").meta.link == load_link(saved)
    listing = prof("links", cwd=tmp_path, OFFLOAD_PROF_HOME=str(home)).stdout
    assert "local-numpy" in listing and "pcie5-x16" in listing


def test_calibrate_dry_run_and_bad_size(tmp_path: Path) -> None:
    proc = prof("calibrate", "--size", "64KiB", "--repeats", "1", "--dry-run", cwd=tmp_path, OFFLOAD_PROF_HOME=str(tmp_path))
    assert proc.returncode == 0 and not (tmp_path / "links").exists()
    bad = prof("calibrate", "--size", "lots", cwd=tmp_path)
    assert bad.returncode == 2 and "--size 'lots' is not a size" in bad.stderr
