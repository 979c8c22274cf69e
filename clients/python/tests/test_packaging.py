"""The package installs offline: the in-tree build backend makes a complete wheel (the package,
py.typed, core metadata, a RECORD that matches), and `pip install ./clients/python` into a fresh
virtual environment works with every index switched off."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "build_backend"))

import tabula_build  # noqa: E402  (the backend, from its backend-path)

INSTALL_TIMEOUT_S = 180


class PackagingTest(unittest.TestCase):
    def test_the_wheel_holds_the_typed_package_and_its_metadata(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            name = tabula_build.build_wheel(folder)
            self.assertEqual(name, "tabula_client-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(Path(folder) / name) as wheel:
                names = wheel.namelist()
                self.assertIn("tabula/py.typed", names)
                self.assertIn("tabula/client.py", names)
                self.assertFalse([entry for entry in names if entry.startswith("tests/") or "__pycache__" in entry])
                metadata = wheel.read("tabula_client-0.1.0.dist-info/METADATA").decode("utf-8")
                self.assertIn("Name: tabula-client\n", metadata)
                self.assertIn("Requires-Python: >=3.10\n", metadata)
                self.assertNotIn("Requires-Dist", metadata)
                for line in wheel.read("tabula_client-0.1.0.dist-info/RECORD").decode("utf-8").splitlines():
                    path, digest, size = line.split(",")
                    if digest == "":
                        continue
                    data = wheel.read(path)
                    expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
                    self.assertEqual((digest, int(size)), (f"sha256={expected}", len(data)), path)

    def test_the_project_table_is_read_without_tomllib_too(self) -> None:
        text = (PROJECT / "pyproject.toml").read_text(encoding="utf-8")
        fields = tabula_build._project_strings(text)
        self.assertEqual((fields["name"], fields["version"], fields["requires-python"]), ("tabula-client", "0.1.0", ">=3.10"))

    def test_pip_installs_it_into_a_fresh_venv_with_no_index(self) -> None:
        with tempfile.TemporaryDirectory() as folder:
            venv = Path(folder) / "venv"
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=INSTALL_TIMEOUT_S, capture_output=True)
            python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
            offline = {**os.environ, "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "",
                       "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"}
            installed = subprocess.run([str(python), "-m", "pip", "install", str(PROJECT)], env=offline, timeout=INSTALL_TIMEOUT_S,
                                       capture_output=True, text=True)
            self.assertEqual(installed.returncode, 0, installed.stdout + installed.stderr)
            check = "import tabula, pathlib; print(tabula.TabulaClient.__name__, (pathlib.Path(tabula.__file__).parent / 'py.typed').exists())"
            imported = subprocess.run([str(python), "-c", check], cwd=folder, env=offline, timeout=60, capture_output=True, text=True)
            self.assertEqual(imported.stdout.strip(), "TabulaClient True", imported.stderr)


if __name__ == "__main__":
    unittest.main()
