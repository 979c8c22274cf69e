"""The PEP 517 build backend of tabula-client, in the tree and standard library only.

Why not setuptools: pip builds in an isolated environment into which it first downloads the
backend, so `pip install ./clients/python` would need the network; and with `--no-build-isolation`
setuptools before 70.1 still needs the separate `wheel` package, which a fresh venv lacks. This
backend needs nothing: it zips the pure-Python package `tabula` into a `py3-none-any` wheel (PEP 427)
with its metadata (core metadata 2.1, from pyproject.toml's [project] table), so the install works
offline in any Python 3.10+ environment. It knows only what this one package needs.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "tabula"
#: Fixed in every archive entry so that two builds of one tree are byte for byte the same.
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_STRING_KEY = re.compile(r'^([A-Za-z-]+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*$')


def _project() -> dict[str, str]:
    """The simple string fields of [project] (name, version, description, readme, requires-python)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if sys.version_info >= (3, 11):
        import tomllib

        project = tomllib.loads(text)["project"]
        return {key: value for key, value in project.items() if isinstance(value, str)}
    return _project_strings(text)


def _project_strings(text: str) -> dict[str, str]:
    """Python 3.10 has no tomllib: read the `key = "string"` lines of [project], which is all this needs."""
    fields: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
            continue
        match = _STRING_KEY.match(stripped)
        if section == "[project]" and match:
            fields[match.group(1)] = match.group(2)
    return fields


def _names() -> tuple[str, str, str]:
    project = _project()
    name, version = project["name"], project["version"]
    return name, version, re.sub(r"[-_.]+", "_", name).lower()


def _metadata() -> str:
    project = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
        f"Requires-Python: {project.get('requires-python', '>=3.10')}",
        "Classifier: Typing :: Typed",
    ]
    readme = ROOT / project.get("readme", "README.md")
    if readme.exists():
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + readme.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n"


def _package_files() -> list[Path]:
    folder = ROOT / PACKAGE
    return sorted(path for path in folder.rglob("*") if path.is_file() and (path.suffix == ".py" or path.name == "py.typed"))


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{name},sha256={digest},{len(data)}"


def _dist_info(name: str, version: str, distribution: str) -> dict[str, bytes]:
    folder = f"{distribution}-{version}.dist-info"
    wheel = f"Wheel-Version: 1.0\nGenerator: {name} build_backend/tabula_build.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    return {f"{folder}/METADATA": _metadata().encode("utf-8"), f"{folder}/WHEEL": wheel.encode("utf-8")}


def _write_wheel(wheel_directory: str, entries: dict[str, bytes], record_name: str, filename: str) -> str:
    record = [_record_line(path, data) for path, data in entries.items()] + [f"{record_name},,"]
    entries = {**entries, record_name: ("\n".join(record) + "\n").encode("utf-8")}
    with zipfile.ZipFile(Path(wheel_directory) / filename, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path, data in entries.items():
            info = zipfile.ZipInfo(path, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return filename


# --- PEP 517 hooks ------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict[str, Any]] = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict[str, Any]] = None) -> str:
    name, version, distribution = _names()
    for path, data in _dist_info(name, version, distribution).items():
        target = Path(metadata_directory) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return f"{distribution}-{version}.dist-info"


def build_wheel(wheel_directory: str, config_settings: Optional[dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    name, version, distribution = _names()
    entries = {path.relative_to(ROOT).as_posix(): path.read_bytes() for path in _package_files()}
    entries.update(_dist_info(name, version, distribution))
    record_name = f"{distribution}-{version}.dist-info/RECORD"
    return _write_wheel(wheel_directory, entries, record_name, f"{distribution}-{version}-py3-none-any.whl")


def build_sdist(sdist_directory: str, config_settings: Optional[dict[str, Any]] = None) -> str:
    name, version, distribution = _names()
    base = f"{distribution}-{version}"
    members = [ROOT / "pyproject.toml", ROOT / "README.md", Path(__file__).resolve(), *_package_files()]
    filename = f"{base}.tar.gz"
    with tarfile.open(Path(sdist_directory) / filename, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        pkg_info = _metadata().encode("utf-8")
        _add_tar_member(archive, f"{base}/PKG-INFO", pkg_info)
        for path in members:
            if path.exists():
                _add_tar_member(archive, f"{base}/{path.relative_to(ROOT).as_posix()}", path.read_bytes())
    return filename


def _add_tar_member(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    archive.addfile(info, io.BytesIO(data))
