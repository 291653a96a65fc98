"""test_packaging.py: `pip install ./python` works offline with the
interpreter's own setuptools (no build isolation, no index), and the
installed package runs a graph and the example from outside the source
tree. It installs with --target, so it runs under any interpreter that has
pip, setuptools and wheel (Debian's, a venv's), without touching it."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

import fhjit
from conftest import ROOT


def test_pip_install_offline(tmp_path):
    missing = [m for m in ("pip", "setuptools", "wheel") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip("needs %s (scripts/install-deps.sh)" % ", ".join(missing))
    src = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "tests", "build", "*.egg-info"))
    site = tmp_path / "site"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                        "--no-deps", "--target", str(site), str(src)],
                       env=env, text=True, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (site / "fhjit" / "_lib.py").exists()
    env["PYTHONPATH"] = str(site)
    env["FHJIT_LIBRARY"] = fhjit.library_path()
    code = ("import fhjit, numpy as np\n"
            "g = fhjit.Graph('g', 'r32', moduli=[268369921])\n"
            "a = g.input('a', 'pt<[], 1, 16>'); g.output(a + a)\n"
            "x = np.arange(16, dtype=np.uint32).reshape(1, 16)\n"
            "assert (g.run(x) == 2 * x).all()\n"
            "print(fhjit.__file__)\n")
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path), text=True,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(str(site))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "tensor_ntt.py")],
                       env=env, cwd=str(tmp_path), text=True, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "WRONG" not in r.stdout and "DIFFERENT" not in r.stdout
