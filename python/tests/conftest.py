"""conftest.py: shared fixtures and helpers of the fhjit Python tests.

Backends the op tests run on:
  host   numpy through the host JIT (always; compared with the interpreter)
  fake   CUDA-array objects over the fake libcuda's memory (test/unit/
         fake_cuda), launches run on the host by an executor: the package's
         GPU path without a GPU. Needs FHJIT_LIBCUDA=.../libfake_cuda.so for
         the whole process (scripts/test.sh sets it).
  torch  torch CUDA tensors on a real GPU (skipped without torch + CUDA, or
         when the fake driver is in use).
"""
import ctypes
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import fhjit  # noqa: E402
from fhjit._lib import lib  # noqa: E402

# SPEC section 6's primes
R32_PRIMES = [268369921, 134176769]
R62_PRIMES = [1152921504606748673, 576460752303423649]


def primes(radix, rows, ntt_n=None):
    """Moduli for tests: SPEC's, or NTT-friendly ones (q = 1 mod 2N)."""
    if ntt_n:
        return fhjit.find_primes(30 if radix == "r32" else 60, 2 * ntt_n, rows)
    base = R32_PRIMES if radix == "r32" else R62_PRIMES
    if rows <= len(base):
        return base[:rows]
    return base + fhjit.find_primes(29 if radix == "r32" else 59, 1 << 10, rows - len(base))


def word(radix):
    return np.uint32 if radix == "r32" else np.uint64


def lazy(rng, shape, moduli, radix, row_axis=-2, bound=None):
    """Random lazy residues [0, 2q) of the row's modulus (row_axis None:
    below 2 * min(q), for key tables and broadcast rows)."""
    out = np.empty(shape, dtype=word(radix))
    if row_axis is None:
        b = bound or 2 * min(moduli)
        out[...] = rng.integers(0, b, size=shape, dtype=np.uint64).astype(out.dtype)
        return out
    idx = [slice(None)] * len(shape)
    for r in range(shape[row_axis]):
        idx[row_axis] = r
        sub = out[tuple(idx)]
        sub[...] = rng.integers(0, 2 * moduli[r], size=sub.shape,
                                dtype=np.uint64).astype(out.dtype)
    # SPEC section 6's boundary pairs at the start of the first row
    if row_axis in (-2, len(shape) - 2) and shape[-1] >= 6:
        q = moduli[0]
        first = out[tuple([0] * (len(shape) - 1))]
        first[:6] = np.array([0, 2 * q - 1, q - 1, q, 2 * q - 1, 0], dtype=out.dtype)
    return out


def graph_inputs(g, rng):
    """Inputs for the bound graph g: each polynomial random and lazy per
    row for the modulus of its chain position (its basis, SPEC section 7),
    with SPEC section 6's boundary pairs in its first row; table and
    twiddle inputs the constants the graph needs (g.constants():
    fhjit_input_table, and the forward or inverse twiddle table as
    fhjit_input_twiddle_use says); keys lazy below 2 min(q) (a key row
    serves any chain position)."""
    q = g.moduli
    radix = g.radix
    consts = g.constants()
    ins = []
    for v in g.inputs:
        t = v.type
        if v.name in consts:
            ins.append(consts[v.name])
        elif t.kind == "poly":
            ins.append(lazy(rng, t.shape, [q[b] for b in v.basis], radix))
        else:
            ins.append(lazy(rng, t.shape, q, radix, row_axis=None))
    return ins


def run_or_skip(fn, *args, **kw):
    """fn(*args, **kw) (a run or compile on a compiled backend); the test is
    skipped only when the library refuses the graph with
    FHJIT_ERR_UNSUPPORTED (SPEC section 7's lowering is not there yet), so
    it runs by itself once the lowering lands."""
    try:
        return fn(*args, **kw)
    except fhjit.FhjitError as e:
        if e.status == "FHJIT_ERR_UNSUPPORTED":
            pytest.skip("the library refuses it: %s" % e.message.splitlines()[0])
        raise


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)


# ------------------------------------------------------------ fake driver

class FakeLaunch(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 64), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("ctx", ctypes.c_void_p),
                ("nparams", ctypes.c_int), ("params", ctypes.c_uint64 * 64),
                ("tag", ctypes.c_void_p), ("pdl", ctypes.c_int),
                ("cluster", ctypes.c_uint * 3)]


EXECUTOR = ctypes.CFUNCTYPE(None, ctypes.POINTER(FakeLaunch))


class FakeDriver:
    """The fake libcuda, reached through fhjit_cuda_driver_proc: device
    memory (host memory it hands out), launches run on the host through the
    graph tagged with fake_cuda_set_tag."""

    def __init__(self):
        self.ctx = fhjit.Context()
        h = self.ctx.handle()

        def proc(name, restype, *args):
            addr = lib.fhjit_cuda_driver_proc(h, name.encode())
            return ctypes.CFUNCTYPE(restype, *args)(addr) if addr else None
        set_exec = proc("fake_cuda_set_executor", None, EXECUTOR)
        if set_exec is None:
            raise RuntimeError("not the fake driver")
        self.set_tag = proc("fake_cuda_set_tag", None, ctypes.c_void_p)
        self.launches = proc("fake_cuda_launches", ctypes.c_int)
        self.launch_get = proc("fake_cuda_launch_get", ctypes.c_int, ctypes.c_int,
                               ctypes.POINTER(FakeLaunch))
        self.calls = proc("fake_cuda_calls", ctypes.c_int, ctypes.c_char_p)
        self.cuStreamCreate = proc("cuStreamCreate", ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint)
        self.cuStreamBeginCapture = proc("cuStreamBeginCapture_v2", ctypes.c_int,
                                         ctypes.c_void_p, ctypes.c_int)
        self.cuStreamEndCapture = proc("cuStreamEndCapture", ctypes.c_int, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_void_p))
        self.errors = []
        self.executed = 0
        self._last = None
        self._exec = EXECUTOR(self._execute)
        set_exec(self._exec)

    def _execute(self, lp):
        try:
            launch = lp.contents
            # the driver records only its first 256 launches; this is the last
            self._last = FakeLaunch.from_buffer_copy(launch)
            g = launch.tag
            if not g:
                return
            nin, nres = lib.fhjit_num_inputs(g), lib.fhjit_num_results(g)
            p = launch.params
            ins = (ctypes.c_void_p * max(1, nin))(*[p[2 + i] for i in range(nin)])
            res = (ctypes.c_void_p * max(1, nres))(*[p[2 + nin + i] for i in range(nres)])
            st = lib.fhjit_run_host(g, p[0], p[1], ins, res, 1)
            if st:
                self.errors.append(lib.fhjit_last_error(lib.fhjit_graph_context(g)).decode())
            self.executed += 1
        except Exception as e:  # never let an exception cross the C frame
            self.errors.append(repr(e))

    def alloc(self, shape, dtype):
        n = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
        p = ctypes.c_uint64()
        with self.ctx.lock:
            self.ctx.check(lib.fhjit_cuda_alloc(self.ctx.handle(), n, ctypes.byref(p)))
        buf = (ctypes.c_uint8 * n).from_address(p.value)
        return FakeArray(np.frombuffer(buf, dtype=dtype)[:int(np.prod(shape))].reshape(shape))

    def upload(self, a):
        d = self.alloc(a.shape, a.dtype)
        d.host[...] = a
        return d

    def stream(self):
        s = ctypes.c_void_p()
        assert self.cuStreamCreate(ctypes.byref(s), 0) == 0
        return s.value

    def last_launch(self):
        """The last launch run (not captured)."""
        assert self.launches() > 0 and self._last is not None
        return self._last

    def run_tagged(self, g, *dev_inputs, **kw):
        """g.run on fake arrays, executed on the host by a clone of g bound
        like the launch."""
        g.compile(*dev_inputs)
        clone = fhjit.parse(str(g), "clone")
        clone.bind()
        self.set_tag(clone.handle())
        try:
            self.errors.clear()
            return g.run(*dev_inputs, **kw)
        finally:
            self.set_tag(None)
            assert not self.errors, self.errors
            clone.close()


class FakeArray:
    """A CUDA-array object (__cuda_array_interface__ v3) over fake device
    memory; .host is the numpy view of the same memory."""

    def __init__(self, host, stream=None, readonly=False):
        self.host = host
        self.stream = stream
        self.readonly = readonly

    @property
    def __cuda_array_interface__(self):
        a = self.host
        d = {"data": (a.ctypes.data, self.readonly), "shape": a.shape, "strides": a.strides,
             "typestr": a.dtype.str, "version": 3}
        if self.stream is not None:
            d["stream"] = self.stream
        return d

    @property
    def shape(self):
        return self.host.shape

    def __getitem__(self, i):
        return FakeArray(self.host[i], self.stream, self.readonly)


_fake = None


def fake_driver():
    """The FakeDriver, or None when the process does not use the fake."""
    global _fake
    if _fake is None:
        lc = os.environ.get("FHJIT_LIBCUDA", "")
        if "fake_cuda" not in os.path.basename(lc):
            return None
        _fake = FakeDriver()
    return _fake


def torch_cuda():
    """torch when it is installed and sees a GPU (and the fake is not in use)."""
    if fake_driver() is not None:
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


@pytest.fixture
def fake():
    f = fake_driver()
    if f is None:
        pytest.skip("the fake libcuda is not in use (FHJIT_LIBCUDA)")
    return f


@pytest.fixture
def torch():
    t = torch_cuda()
    if t is None:
        pytest.skip("needs torch with a CUDA GPU")
    return t


def to_torch(torch, a):
    signed = a.view(np.int32 if a.dtype.itemsize == 4 else np.int64)
    return torch.from_numpy(np.ascontiguousarray(signed)).cuda()


def from_torch(t, dtype):
    return t.cpu().numpy().view(dtype)


def on_backend(backend, g, inputs, params, fake=None, torch=None):
    """Runs g on `backend` from numpy inputs; numpy outputs (a tuple)."""
    dt = params.dtype
    if backend in ("host", "interp"):
        out = g.run(*inputs, params=params, backend=backend)
    elif backend == "fake":
        dev = [fake.upload(np.ascontiguousarray(x)) for x in inputs]
        g.compile(*dev)
        res = [fake.alloc(s.shape, dt) for s in g.results]
        out = fake.run_tagged(g, *dev, params=fake.upload(params), out=res)
        out = out if isinstance(out, tuple) else (out,)
        return tuple(np.array(o.host) for o in out)
    else:
        tin = [to_torch(torch, np.ascontiguousarray(x)) for x in inputs]
        out = g.run(*tin, params=to_torch(torch, params))
        out = out if isinstance(out, tuple) else (out,)
        return tuple(from_torch(o, dt) for o in out)
    return out if isinstance(out, tuple) else (out,)
