"""test_library.py: finding and loading libfhjit (FHJIT_LIBRARY, next to
the package, a missing or wrong library), the RNS helpers against SPEC's
formulas in exact integers, and the driver-less answers."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import fhjit
from conftest import ROOT, R32_PRIMES, R62_PRIMES


def py(code, env_extra, cwd=None):
    env = dict(os.environ)
    env.pop("FHJIT_LIBRARY", None)
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, text=True,
                          capture_output=True, timeout=60)


CODE = ("import fhjit\n"
        "try:\n"
        "    print(fhjit.version(), fhjit.library_path())\n"
        "except fhjit.FhjitError as e:\n"
        "    print('ERROR', e.status); print(e.message)\n")


def test_missing_library_is_reported_with_what_was_tried(tmp_path):
    missing = str(tmp_path / "nowhere" / "libfhjit.so")
    r = py(CODE, {"FHJIT_LIBRARY": missing, "PYTHONPATH": os.path.join(ROOT, "python")})
    assert r.returncode == 0, r.stderr
    assert "ERROR FHJIT_ERR_LIBRARY" in r.stdout
    assert missing in r.stdout and "no such file" in r.stdout and "FHJIT_LIBRARY" in r.stdout
    notlib = tmp_path / "libfhjit.so"
    notlib.write_text("not a library")
    r = py(CODE, {"FHJIT_LIBRARY": str(notlib), "PYTHONPATH": os.path.join(ROOT, "python")})
    assert "ERROR FHJIT_ERR_LIBRARY" in r.stdout and str(notlib) in r.stdout
    # import works without the library; building a graph reports it
    r = py("import fhjit\ntry:\n    fhjit.Graph('g')\nexcept fhjit.FhjitError as e:\n"
           "    print(e.status)\n", {"FHJIT_LIBRARY": missing,
                                     "PYTHONPATH": os.path.join(ROOT, "python")})
    assert r.stdout.strip() == "FHJIT_ERR_LIBRARY"


def test_library_next_to_the_package(tmp_path):
    lib = fhjit.library_path()
    pkg = tmp_path / "fhjit"
    shutil.copytree(os.path.join(ROOT, "python", "fhjit"), pkg,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(lib, pkg / "libfhjit.so")
    r = py(CODE, {"PYTHONPATH": str(tmp_path), "LD_LIBRARY_PATH": ""}, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[1] == str(pkg / "libfhjit.so"), r.stdout


def test_version_and_targets():
    assert fhjit.version() == fhjit.__version__
    assert "sm_90" in fhjit.targets()
    assert fhjit.STATUS_NAMES[0] == "FHJIT_OK"


def test_no_driver(tmp_path):
    r = py("import fhjit, numpy as np\nprint(fhjit.cuda_available())\n"
           "g = fhjit.Graph('g', 'r32', moduli=[268369921])\n"
           "a = g.input('a', 'pt<[], 1, 16>'); g.output(a + a)\n"
           "class D:\n"
           "    __cuda_array_interface__ = {'data': (4096, False), 'shape': (1, 16),\n"
           "        'strides': None, 'typestr': '<u4', 'version': 3}\n"
           "try:\n    g.run(D(), params=D())\nexcept fhjit.FhjitError as e:\n"
           "    print(e.status)\n",
           {"FHJIT_LIBCUDA": str(tmp_path / "libcuda-none.so"),
            "FHJIT_LIBRARY": fhjit.library_path(),
            "PYTHONPATH": os.path.join(ROOT, "python")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "FHJIT_ERR_NO_DRIVER"], r.stdout


# ------------------------------------------------------------------ helpers

def spec_table(q, w, n, scale):
    R = 1 << w
    half = w // 2
    k = (-pow(q, -1, R)) % R
    rows = [2 * q, q % (1 << half), q >> half, k % (1 << half), k >> half, R * R % q,
            scale * R * R % q, (pow(n, -1, q) * R % q) if n else 0]
    return rows


@pytest.mark.parametrize("radix,moduli,w", [("r32", R32_PRIMES, 32), ("r62", R62_PRIMES, 62)])
def test_param_table_against_spec(radix, moduli, w):
    t = fhjit.param_table(moduli, radix, n=4096, scale=3)
    assert t.shape == (8, len(moduli)) and t.dtype == (np.uint32 if w == 32 else np.uint64)
    for j, q in enumerate(moduli):
        assert [int(x) for x in t[:, j]] == spec_table(q, w, 4096, 3)
    wide = fhjit.param_table(moduli, radix, pstride=5)
    assert wide.shape == (8, len(moduli)) and wide.strides[0] == 5 * wide.itemsize


def test_param_table_errors():
    for bad, status in (([4], "FHJIT_ERR_MODULUS"), ([1 << 61], "FHJIT_ERR_MODULUS"),
                        ([0], "FHJIT_ERR_MODULUS"), ([], "FHJIT_ERR_ARGUMENT")):
        with pytest.raises(fhjit.FhjitError) as e:
            fhjit.param_table(bad, "r62")
        assert e.value.status == status
    with pytest.raises(fhjit.FhjitError) as e:
        fhjit.param_table([R32_PRIMES[0]], "r32", n=1 << 20, ntt=True)
    assert e.value.status == "FHJIT_ERR_MODULUS"
    with pytest.raises(fhjit.FhjitError):
        fhjit.check_modulus(R62_PRIMES[0], "r32")
    fhjit.check_modulus(R32_PRIMES[0], "r32")


def test_twiddles_primes_and_psi():
    n = 64
    q = fhjit.find_primes(60, 2 * n, 2)
    assert q == sorted(q, reverse=True) and all(fhjit.is_prime(x) and x % (2 * n) == 1
                                                  for x in q)
    assert not fhjit.is_prime(q[0] + 2 * n * 0 + 2)
    fwd, inv = fhjit.twiddle_tables(q, n, "r62")
    R = 1 << 62
    bits = n.bit_length() - 1
    for j, qq in enumerate(q):
        psi = fhjit.ntt_psi(qq, n)
        assert pow(psi, n, qq) == qq - 1
        for k in (1, 2, 7, n - 1):
            br = int(format(k, "0%db" % bits)[::-1], 2)
            assert int(fwd[j, k]) % qq == pow(psi, br, qq) * R % qq
            assert int(inv[j, k]) % qq == pow(psi, -br, qq) * R % qq
    with pytest.raises(fhjit.FhjitError):
        fhjit.ntt_psi(R62_PRIMES[0], 1 << 20)
