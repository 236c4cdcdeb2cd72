"""Link profiles: the shipped ones, the user's calibrations, and how a name is resolved.

A profile is a `profiler.trace.records.Link` stored as a small YAML file.
Shipped profiles live in `profiler/trace/links/`; `offload-prof calibrate` writes the
user's into `<config>/links/` (`$OFFLOAD_PROF_HOME`, else
`$XDG_CONFIG_HOME/offload-guard`, else `~/.config/offload-guard`), named
`local-<backend>` unless told otherwise. Reports resolve `--link` as a
path first, then as a profile name, user profiles shadowing shipped ones.

On the NumPy backend every copy is a host memcpy, so reports there show
what the recorded copies would cost on a real link, the `pcie5-x16`
profile unless another is chosen, always labelled *modelled*.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from offload_core.outfiles import write_atomically

from ..errors import ProfilerError
from ..files import read_yaml
from .model import Run
from .records import Link

SHIPPED_DIR = Path(__file__).resolve().parent / "links"
#: the profile that models NumPy-backend runs when no other is chosen
DEFAULT_MODEL = "pcie5-x16"


def config_dir() -> Path:
    """Where the user's calibrations are kept."""
    home = os.environ.get("OFFLOAD_PROF_HOME")
    if home:
        return Path(home)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "offload-guard"


def user_dir() -> Path:
    return config_dir() / "links"


def load_link(path: str | os.PathLike[str]) -> Link:
    """One profile file; `ProfilerError` naming the file on any problem."""
    name = str(path)
    data: Any = read_yaml(path, "link profile")
    if not isinstance(data, dict):
        raise ProfilerError(f"{name}: a link profile is a mapping of figures")
    try:
        return Link.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise ProfilerError(f"{name}: {exc}") from None


def save_link(link: Link, path: str | os.PathLike[str]) -> Path:
    target = Path(path)
    data = {k: v for k, v in vars(link).items() if v is not None}
    header = "# offload-prof link profile (figures in GB/s and microseconds)\n"
    # as every file offload-prof writes: whole or not at all, through a symlink, to a device in place
    write_atomically(target, (header + yaml.safe_dump(data, sort_keys=False)).encode("utf-8"))
    return target


def available() -> dict[str, Path]:
    """Profile name -> file; the user's calibrations shadow shipped profiles of the same name."""
    found: dict[str, Path] = {}
    for folder in (SHIPPED_DIR, user_dir()):
        if folder.is_dir():
            for p in sorted(folder.glob("*.yaml")):
                found[p.stem] = p
    return found


def resolve(spec: str) -> Link:
    """A profile from a path or a name; a one-line error listing the names otherwise."""
    if spec.endswith((".yaml", ".yml")) or os.sep in spec or Path(spec).is_file():
        return load_link(spec)
    profiles = available()
    path = profiles.get(spec)
    if path is None:
        names = ", ".join(sorted(profiles)) or "none"
        raise ProfilerError(f"no link profile named {spec!r} (available: {names}; `offload-prof calibrate` makes one)")
    return load_link(path)


def calibrated(backend: str) -> Link | None:
    """This machine's calibration for `backend`, if `calibrate` saved one."""
    path = user_dir() / f"local-{backend}.yaml"
    if not path.is_file():
        return None
    try:
        return load_link(path)
    except ProfilerError:
        return None  # a broken calibration must not stop a recording; `calibrate` rewrites it


def model_for(run: Run, spec: str | None) -> tuple[Link | None, bool]:
    """(link, modelled) a report should use: the chosen profile, or pcie5-x16 for NumPy runs.

    `modelled` is True when the figures describe another machine than the
    one that recorded the copies, so the costs are estimates, not
    measurements; reports label them so.
    """
    if spec:
        return resolve(spec), True
    if run.meta.backend == "numpy":
        return resolve(DEFAULT_MODEL), True
    return None, False
