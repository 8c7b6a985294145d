"""requirements/constraints.txt (what CI and contributors install) satisfies pyproject.toml.

Every dependency pyproject.toml names, core and in the dev and spark extras, is pinned to one
exact version in the lock, and that version lies in pyproject's range. A range changed without
regenerating the lock (``bash requirements/lock.sh``) fails here, in CI, before any other test
can pass on versions the lock does not describe.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "constraints.txt"


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        assert sep, f"requirements/constraints.txt: {line!r} is not pinned with =="
        pins[canonicalize_name(name)] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = list(project["dependencies"])
    for extra in ("dev", "spark"):
        names += project["optional-dependencies"][extra]
    return [Requirement(r) for r in names]


@pytest.mark.parametrize("req", _requirements(), ids=str)
def test_the_lock_pins_every_dependency_within_pyprojects_range(req: Requirement) -> None:
    pins = _pins()
    name = canonicalize_name(req.name)
    assert name in pins, (
        f"{req.name} is not in requirements/constraints.txt: bash requirements/lock.sh"
    )
    assert req.specifier.contains(pins[name], prereleases=True), (
        f"requirements/constraints.txt pins {req.name}=={pins[name]}, outside pyproject's "
        f"{req.specifier}: bash requirements/lock.sh"
    )
