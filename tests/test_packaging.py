"""The installed package holds every module of the source tree."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_porter_package_is_listed_for_installation():
    # pyproject lists the packages one by one: a new folder left out installs
    # nowhere but an editable checkout.
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
            "packages"
        ]
    )
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "porter").rglob("__init__.py")
    }
    assert found and found <= listed, sorted(found - listed)
