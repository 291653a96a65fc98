"""test_cuda.py: the package's GPU path: zero-copy CUDA arrays (torch,
__cuda_array_interface__, __dlpack__), strided, broadcast and misaligned
views, preallocated and allocated outputs, streams, CUDA graph capture,
threads, and every error raised before a launch (nothing launched, no
output touched).

Each test runs on the fake libcuda (CI: FHJIT_LIBCUDA, launches executed on
the host) and/or on a real GPU through torch; each skips where its backend
is missing."""
import threading

import numpy as np
import pytest

import fhjit
from conftest import fake_driver, from_torch, lazy, primes, to_torch, torch_cuda

N = 256


class FakeDev:
    """Device helpers over the fake driver (arrays are conftest.FakeArray)."""
    name = "fake"

    def __init__(self, fake):
        self.fake = fake

    def up(self, a):
        return self.fake.upload(np.ascontiguousarray(a))

    def empty(self, shape, dtype):
        return self.fake.alloc(shape, dtype)

    def down(self, x, dtype):
        return np.array(x.host).view(dtype)

    def run(self, g, *ins, **kw):
        return self.fake.run_tagged(g, *ins, **kw)

    def launches(self):
        return self.fake.launches()


class TorchDev:
    name = "torch"

    def __init__(self, torch):
        self.torch = torch

    def up(self, a):
        return to_torch(self.torch, a)

    def empty(self, shape, dtype):
        return self.torch.empty(shape, dtype=self.torch.int32 if np.dtype(dtype).itemsize == 4
                                else self.torch.int64, device="cuda")

    def down(self, x, dtype):
        self.torch.cuda.synchronize()
        return from_torch(x, dtype)

    def run(self, g, *ins, **kw):
        return g.run(*ins, **kw)

    def launches(self):
        return None


def _devs():
    return [pytest.param("fake", marks=pytest.mark.skipif(fake_driver() is None,
                                                          reason="fake libcuda not in use")),
            pytest.param("torch", marks=pytest.mark.skipif(torch_cuda() is None,
                                                           reason="needs torch + CUDA"))]


@pytest.fixture(params=_devs())
def dev(request):
    return FakeDev(fake_driver()) if request.param == "fake" else TorchDev(torch_cuda())


def mulplain(radix="r62", batch=2):
    q = primes(radix, 2)
    g = fhjit.Graph("mp_%s" % radix, radix, moduli=q)
    c = g.input("c", fhjit.ct(2, [batch], 2, N))
    p = g.input("p", fhjit.pt([1], 2, N))
    g.output(fhjit.add_lazy(fhjit.mul_plain(c, p), c), "r")
    return g, q


def data(rng, q, radix="r62", batch=2):
    return (lazy(rng, (2, batch, 2, N), q, radix), lazy(rng, (1, 2, N), q, radix))


def test_preallocated_output(dev, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    want = g.run(c, p)
    P = dev.up(fhjit.param_table(q, "r62"))
    out = dev.empty(want.shape, np.uint64)
    got = dev.run(g, dev.up(c), dev.up(p), params=P, out=out)
    assert got is out
    assert np.array_equal(dev.down(out, np.uint64), want)


def test_allocated_output(rng):
    torch = torch_cuda()
    if torch is None:
        pytest.skip("needs torch + CUDA")
    for radix, tdt in (("r62", torch.int64), ("r32", torch.int32)):
        g, q = mulplain(radix)
        c, p = data(rng, q, radix)
        want = g.run(c, p)
        got = g.run(to_torch(torch, c), to_torch(torch, p),
                    params=to_torch(torch, fhjit.param_table(q, radix)))
        assert isinstance(got, torch.Tensor) and got.is_cuda and got.dtype == tdt
        assert tuple(got.shape) == want.shape
        assert np.array_equal(from_torch(got, want.dtype), want)


def test_allocation_without_torch_says_so(fake, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(fake.upload(c), fake.upload(p), params=fake.upload(fhjit.param_table(q, "r62")))
    assert e.value.status == "FHJIT_ERR_ARGUMENT" and "out=" in e.value.message


def test_strided_broadcast_and_misaligned_views(dev, rng):
    """A slice of a larger buffer, and a stride-0 broadcast whose base is 8
    bytes past 16-byte alignment (the package rounds the base down and binds
    the difference as the layout's offset)."""
    g, q = mulplain()
    c = lazy(rng, (2, 2, 2, N), q, "r62")
    p_row = lazy(rng, (1, 1, N), q, "r62", row_axis=None)
    want = g.run(c, np.broadcast_to(p_row, (1, 2, N)))
    P = dev.up(fhjit.param_table(q, "r62"))
    D = dev.up(np.concatenate([c, c], axis=-1))
    dc = D[:, :, :, :N]
    flat = np.zeros(N + 1, np.uint64)
    flat[1:] = p_row.reshape(-1)
    F = dev.up(flat)
    if dev.name == "torch":
        dp = F[1:].reshape(1, 1, N).expand(1, 2, N)
    else:
        dp = type(F)(np.lib.stride_tricks.as_strided(F.host[1:], (1, 2, N), (0, 0, 8)))
    out = dev.empty(want.shape, np.uint64)
    dev.run(g, dc, dp, params=P, out=out)
    assert np.array_equal(dev.down(out, np.uint64), want)
    assert "offset(1)" in str(g)


def test_outputs_that_are_views(dev, rng):
    q = primes("r32", 2)
    g = fhjit.Graph("views", "r32", moduli=q)
    a = g.input("a", fhjit.ct(2, [], 2, N))
    s = a[0] + a[1]
    g.output(fhjit.pack(s, a[1]), "r")
    g.output(a[1], "a1")
    x = lazy(rng, (2, 2, N), q, "r32")
    want_r, want_a1 = g.run(x)
    X = dev.up(x)
    out = dev.empty(want_r.shape, np.uint32)
    r, a1 = dev.run(g, X, params=dev.up(fhjit.param_table(q, "r32")), out=out)
    assert r is out
    assert np.array_equal(dev.down(r, np.uint32), want_r)
    assert np.array_equal(dev.down(a1, np.uint32), want_a1)


def test_stream_is_the_callers(fake, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    s = fake.stream()
    args = (fake.upload(c), fake.upload(p))
    P = fake.upload(fhjit.param_table(q, "r62"))
    out = fake.alloc((2, 2, 2, N), np.uint64)
    fake.run_tagged(g, *args, params=P, out=out, stream=s)
    assert fake.last_launch().stream == s

    class S:  # any object with the __cuda_stream__ protocol
        def __cuda_stream__(self):
            return (0, s)
    fake.run_tagged(g, *args, params=P, out=out, stream=S())
    assert fake.last_launch().stream == s
    fake.run_tagged(g, *args, params=P, out=out)  # no stream anywhere: the legacy default
    assert not fake.last_launch().stream
    # __cuda_array_interface__'s stream is the default launch stream
    args2 = (type(args[0])(args[0].host, stream=s), args[1])
    fake.run_tagged(g, *args2, params=P, out=out)
    assert fake.last_launch().stream == s


def test_capture(fake, rng):
    """Launches on a capturing stream go into the graph, not to the device."""
    g, q = mulplain()
    c, p = data(rng, q)
    args = (fake.upload(c), fake.upload(p))
    P = fake.upload(fhjit.param_table(q, "r62"))
    out = fake.alloc((2, 2, 2, N), np.uint64)
    s = fake.stream()
    g.run(*args, params=P, out=out, stream=s)  # compile before capturing
    n = fake.launches()
    assert fake.cuStreamBeginCapture(s, 0) == 0
    g.run(*args, params=P, out=out, stream=s, pointer_checks=False)
    import ctypes
    graph = ctypes.c_void_p()
    assert fake.cuStreamEndCapture(s, ctypes.byref(graph)) == 0
    assert fake.launches() == n and graph.value


def test_binding_is_reused(fake, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    args = (fake.upload(c), fake.upload(p))
    P = fake.upload(fhjit.param_table(q, "r62"))
    out = fake.alloc((2, 2, 2, N), np.uint64)
    compiles = fake.calls(b"cuModuleLoadData")
    for _ in range(3):
        g.run(*args, params=P, out=out)
    other = (fake.upload(c), fake.upload(p))  # new pointers, same views
    g.run(*other, params=P, out=out)
    assert fake.calls(b"cuModuleLoadData") - compiles <= 1
    assert len(g._plans) == 1


# ------------------------------------------------------------------ errors

def _error_cases(dev, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    C, Pp = dev.up(c), dev.up(p)
    P = dev.up(fhjit.param_table(q, "r62"))
    out = dev.empty((2, 2, 2, N), np.uint64)
    cases = {
        "numpy input": (lambda: g.run(c, Pp, params=P, out=out, backend="cuda"),
                        "FHJIT_ERR_ARGUMENT", "never copies"),
        "numpy among CUDA arrays": (lambda: g.run(C, p, params=P, out=out),
                                    "FHJIT_ERR_ARGUMENT", "numpy"),
        "32-bit words for r62": (lambda: g.run(dev.up(c.astype(np.uint32)), Pp, params=P,
                                               out=out), "FHJIT_ERR_ARGUMENT", "64-bit"),
        "wrong shape": (lambda: g.run(dev.up(c[:, :1]), Pp, params=P, out=out),
                        "FHJIT_ERR_SHAPE", "declared"),
        "wrong rank": (lambda: g.run(dev.up(c[0]), Pp, params=P, out=out),
                       "FHJIT_ERR_SHAPE", "dimensions"),
        "out of wrong shape": (lambda: g.run(C, Pp, params=P, out=dev.empty((2, 2, N),
                                                                             np.uint64)),
                               "FHJIT_ERR_SHAPE", "shape"),
        "out of wrong words": (lambda: g.run(C, Pp, params=P, out=dev.empty((2, 2, 2, N),
                                                                             np.uint32)),
                               "FHJIT_ERR_ARGUMENT", "64-bit"),
        "no params": (lambda: g.run(C, Pp, out=out), "FHJIT_ERR_ARGUMENT", "params="),
        "params of one column": (lambda: g.run(C, Pp, params=dev.up(
            fhjit.param_table(q[:1], "r62")), out=out), "FHJIT_ERR_SHAPE", "columns"),
        "host params": (lambda: g.run(C, Pp, params=fhjit.param_table(q, "r62"), out=out),
                        "FHJIT_ERR_ARGUMENT", "numpy"),
        "too few inputs": (lambda: g.run(C, params=P, out=out), "FHJIT_ERR_ARGUMENT",
                           "2 inputs"),
    }
    return g, out, cases


@pytest.mark.parametrize("which", ["numpy input", "numpy among CUDA arrays",
                                   "32-bit words for r62", "wrong shape", "wrong rank",
                                   "out of wrong shape", "out of wrong words", "no params",
                                   "params of one column", "host params", "too few inputs"])
def test_errors_before_launch(dev, rng, which):
    g, out, cases = _error_cases(dev, rng)
    fn, status, text = cases[which]
    before = dev.down(out, np.uint64).copy()
    n = dev.launches()
    with pytest.raises(fhjit.FhjitError) as e:
        fn()
    assert e.value.status == status, e.value
    assert text in e.value.message, e.value.message
    assert dev.launches() == n
    assert np.array_equal(dev.down(out, np.uint64), before)


def test_fake_only_errors(fake, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    C, Pp = fake.upload(c), fake.upload(p)
    P = fake.upload(fhjit.param_table(q, "r62"))
    out = fake.alloc((2, 2, 2, N), np.uint64)
    n = fake.launches()
    FA = type(out)
    bad = {
        "misaligned out": (FA(fake.alloc((2 * 2 * 2 * N + 1,), np.uint64).host[1:]
                              .reshape(2, 2, 2, N)), "16-byte"),
        "strided out": (FA(fake.alloc((2, 2, 2, 2 * N), np.uint64).host[..., ::2]), "dense"),
        "read-only out": (FA(out.host, readonly=True), "read-only"),
    }
    for name, (o, text) in bad.items():
        with pytest.raises(fhjit.FhjitError) as e:
            g.run(C, Pp, params=P, out=o)
        assert text in e.value.message, (name, e.value.message)
    with pytest.raises(fhjit.FhjitError) as e:  # negative strides
        g.run(FA(C.host[:, :, :, ::-1]), Pp, params=P, out=out)
    assert "negative" in e.value.message
    with pytest.raises(fhjit.FhjitError) as e:  # a CUDA array to the host backend
        g.run(C, Pp, backend="host")
    assert "host backend" in e.value.message
    assert fake.launches() == n


# ---------------------------------------------------------------- torch only

def test_torch_non_default_stream_and_no_sync(torch, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    want = g.run(c, p)
    C, Pp = to_torch(torch, c), to_torch(torch, p)
    P = to_torch(torch, fhjit.param_table(q, "r62"))
    s = torch.cuda.Stream()
    g.run(C, Pp, params=P)  # compiled
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        if hasattr(torch.cuda, "_sleep"):
            # ~0.5 s of GPU time on s: the bound below is half of it, so
            # that a host loaded by other GPU checks (the session round
            # runs them side by side) still tells waiting from launching
            torch.cuda._sleep(1_000_000_000)
        import time
        t0 = time.perf_counter()
        out = g.run(C, Pp, params=P)  # torch's current stream: s
        host = time.perf_counter() - t0
        assert not s.query() or not hasattr(torch.cuda, "_sleep")
    if hasattr(torch.cuda, "_sleep"):
        assert host < 0.25, "the launch waited for the device"
    s.synchronize()
    assert np.array_equal(from_torch(out, np.uint64), want)
    # explicit stream= while the current stream is the default one
    out2 = torch.empty_like(out)
    g.run(C, Pp, params=P, out=out2, stream=s)
    s.synchronize()
    assert np.array_equal(from_torch(out2, np.uint64), want)


def test_torch_graph_capture(torch, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    C, Pp = to_torch(torch, c), to_torch(torch, p)
    P = to_torch(torch, fhjit.param_table(q, "r62"))
    out = torch.empty((2, 2, 2, N), dtype=torch.int64, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up (compiles) on the side stream
        g.run(C, Pp, params=P, out=out)
    torch.cuda.current_stream().wait_stream(s)
    cg = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cg):
        g.run(C, Pp, params=P, out=out, pointer_checks=False)
        alloc = g.run(C, Pp, params=P)  # allocated from the graph's pool
    c2, p2 = data(rng, q)
    C.copy_(to_torch(torch, c2))
    Pp.copy_(to_torch(torch, p2))
    cg.replay()
    torch.cuda.synchronize()
    want = g.run(c2, p2)
    assert np.array_equal(from_torch(out, np.uint64), want)
    assert np.array_equal(from_torch(alloc, np.uint64), want)


def test_torch_interfaces(torch, rng):
    """The same launch through __cuda_array_interface__ and __dlpack__
    objects (zero-copy), and a CAI producer stream ordered by an event."""
    g, q = mulplain()
    c, p = data(rng, q)
    want = g.run(c, p)
    C, Pp = to_torch(torch, c), to_torch(torch, p)
    P = to_torch(torch, fhjit.param_table(q, "r62"))

    class CAI:
        def __init__(self, t, stream=None):
            self.t = t
            self.__cuda_array_interface__ = dict(t.__cuda_array_interface__)
            if stream is not None:
                self.__cuda_array_interface__["stream"] = stream

    class DL:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()
    out = torch.empty((2, 2, 2, N), dtype=torch.int64, device="cuda")
    for wrap in (CAI, DL):
        out.zero_()
        g.run(wrap(C), wrap(Pp), params=wrap(P), out=CAI(out))
        torch.cuda.synchronize()
        assert np.array_equal(from_torch(out, np.uint64), want), wrap.__name__
    s = torch.cuda.Stream()
    out.zero_()
    g.run(CAI(C, stream=s.cuda_stream), Pp, params=P, out=out)
    torch.cuda.synchronize()
    assert np.array_equal(from_torch(out, np.uint64), want)


def test_torch_errors(torch, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    C, Pp = to_torch(torch, c), to_torch(torch, p)
    P = to_torch(torch, fhjit.param_table(q, "r62"))
    out = torch.zeros((2, 2, 2, N), dtype=torch.int64, device="cuda")
    bad = [((C.cpu(), Pp), {}, "never copies"),
           ((C.float(), Pp), {}, "dtype"),
           ((C, Pp), {"out": torch.zeros((2 * 2 * 2 * N + 1,), dtype=torch.int64,
                                         device="cuda")[1:].view(2, 2, 2, N)}, "16-byte"),
           ((C, Pp), {"out": out.transpose(0, 1)}, "dense"),
           ((C.flip(-1), Pp), {}, None)]  # torch flips copy: fine
    for args, kw, text in bad:
        kw.setdefault("out", out)
        if text is None:
            g.run(*args, params=P, **kw)
            continue
        with pytest.raises(fhjit.FhjitError) as e:
            g.run(*args, params=P, **kw)
        assert text in e.value.message
    torch.cuda.synchronize()


def test_torch_threads(torch, rng):
    """Threads launching different graphs on their own streams at once."""
    graphs = [mulplain("r62", batch=b) for b in (1, 2, 3)] + \
        [mulplain("r32", batch=b) for b in (1, 2)]
    errors = []
    barrier = threading.Barrier(len(graphs))

    def work(i, g, q):
        try:
            radix = g.radix
            b = (1, 2, 3, 1, 2)[i]
            c, p = data(np.random.default_rng(i), q, radix, batch=b)
            want = g.run(c, p)
            s = torch.cuda.Stream()
            C, Pp = to_torch(torch, c), to_torch(torch, p)
            P = to_torch(torch, fhjit.param_table(q, radix))
            torch.cuda.synchronize()
            barrier.wait()
            for _ in range(20):
                out = g.run(C, Pp, params=P, stream=s)
            s.synchronize()
            if not np.array_equal(from_torch(out, want.dtype), want):
                errors.append("graph %d differs" % i)
        except Exception as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=work, args=(i, g, q)) for i, (g, q) in enumerate(graphs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


# ------------------------------------------- torch's fast path, on the fake

class _FakeTorch:
    """Just enough of torch's API, over the fake driver's memory, to drive
    the package's torch path (data_ptr, stride, get_device, the current
    stream, torch.empty) without a GPU."""

    def __init__(self, fake):
        import types
        torch = self
        self.fake = fake
        self.int32, self.int64 = "torch.int32", "torch.int64"
        self.current = 0
        self.allocs = []

        class Tensor:
            def __init__(self, host):
                self.host = host
                self.is_cuda = True
                self.dtype = "torch.float32" if host.dtype.kind == "f" else \
                    torch.int32 if host.dtype.itemsize == 4 else torch.int64

            def data_ptr(self):
                return self.host.ctypes.data

            @property
            def shape(self):
                return self.host.shape

            def stride(self):
                return tuple(s // self.host.itemsize for s in self.host.strides)

            def get_device(self):
                return 0

            def __getitem__(self, i):
                return Tensor(self.host[i])
        self.Tensor = Tensor

        class Stream:
            def __init__(self, handle=None):
                self.cuda_stream = handle or fake.stream()

        class StreamCtx:
            def __init__(self, s):
                self.s = s

            def __enter__(self):
                self.prev, torch.current = torch.current, self.s.cuda_stream

            def __exit__(self, *e):
                torch.current = self.prev
        self.cuda = types.SimpleNamespace(
            Stream=Stream, ExternalStream=lambda h, device=None: Stream(h),
            stream=StreamCtx, current_device=lambda: 0)
        self._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: torch.current)

    def device(self, kind, index):
        return (kind, index)

    def empty(self, shape, dtype, device):
        a = self.fake.alloc(shape, np.int32 if dtype == self.int32 else np.int64)
        self.allocs.append((tuple(shape), dtype, self.current))
        return self.Tensor(a.host)

    def tensor(self, a):
        return self.Tensor(self.fake.upload(a).host)


def test_torch_path_on_the_fake(fake, rng, monkeypatch):
    import sys
    ft = _FakeTorch(fake)
    monkeypatch.setitem(sys.modules, "torch", ft)
    g, q = mulplain()
    c, p = data(rng, q)
    want = g.run(c, p)
    C, Pp = ft.tensor(c.view(np.int64)), ft.tensor(p.view(np.int64))
    P = ft.tensor(fhjit.param_table(q, "r62").view(np.int64))
    out = fake.run_tagged(g, C, Pp, params=P)  # allocated, on the current stream (legacy)
    assert isinstance(out, ft.Tensor) and out.dtype == ft.int64
    assert np.array_equal(out.host.view(np.uint64), want)
    assert not fake.last_launch().stream and ft.allocs[-1] == ((2, 2, 2, N), ft.int64, 0)
    s = ft.cuda.Stream()
    with ft.cuda.stream(s):  # torch's current stream is the default
        out = fake.run_tagged(g, C, Pp, params=P)
    assert fake.last_launch().stream == s.cuda_stream
    assert ft.allocs[-1][2] == s.cuda_stream
    other = ft.cuda.Stream()
    out = fake.run_tagged(g, C, Pp, params=P, stream=other)  # allocated on the launch stream
    assert fake.last_launch().stream == other.cuda_stream
    assert ft.allocs[-1][2] == other.cuda_stream
    assert np.array_equal(out.host.view(np.uint64), want)
    # views: a component output of a torch result
    g2 = fhjit.Graph("comp", "r62", moduli=q)
    a = g2.input("a", fhjit.ct(2, [2], 2, N))
    r = a * a
    g2.output(r[1], "r1")
    g2.output(a[0], "a0")
    r1, a0 = fake.run_tagged(g2, C, params=P)
    assert isinstance(r1, ft.Tensor) and r1.shape == (2, 2, N)
    assert np.array_equal(r1.host.view(np.uint64), g2.run(c)[0])
    assert a0.data_ptr() == C.data_ptr()
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(C, ft.Tensor(Pp.host.astype(np.float32)), params=P)
    assert "dtype" in e.value.message


def test_collected_graphs_keep_their_kernels(fake, rng):
    """Garbage collection never unloads a module behind the caller's back
    (its launches may still run); close() does."""
    import ctypes
    import gc
    live = ctypes.CFUNCTYPE(ctypes.c_int)(
        fhjit._lib.lib.fhjit_cuda_driver_proc(fake.ctx.handle(), b"fake_cuda_live_modules"))

    def launch_once(name):
        g, q = mulplain()
        g2 = fhjit.parse(str(g).replace("@mp_r62", "@" + name))
        c, p = data(rng, q)
        out = fake.alloc((2, 2, 2, N), np.uint64)
        g2.run(fake.upload(c), fake.upload(p), params=fake.upload(fhjit.param_table(q, "r62")),
               out=out)
        return g2
    before = live()
    g = launch_once("collected")
    assert live() == before + 1
    del g
    gc.collect()
    assert live() == before + 1
    g = launch_once("closed")
    g.close()
    assert live() == before + 1


def test_cupy_arrays(torch, rng):
    """CuPy arrays (__cuda_array_interface__ v3 with a stream) in and out,
    on CuPy's current stream."""
    cupy = pytest.importorskip("cupy")
    g, q = mulplain()
    c, p = data(rng, q)
    want = g.run(c, p)
    C, Pp = cupy.asarray(c), cupy.asarray(p)
    P = cupy.asarray(np.ascontiguousarray(fhjit.param_table(q, "r62")))
    out = cupy.zeros(want.shape, dtype=cupy.uint64)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        got = g.run(C, Pp, params=P, out=out)
        assert got is out
        s.synchronize()
    assert np.array_equal(cupy.asnumpy(out), want)
    alloc = g.run(C, Pp, params=P)  # allocated by torch (present): a torch tensor
    cupy.cuda.Device().synchronize()
    assert np.array_equal(alloc.cpu().numpy().view(np.uint64), want)


# ------------------------------------------------- the fast path (g._fast)

def _no_full_path(monkeypatch):
    """Makes the full GPU path fail loudly: a launch that succeeds then went
    through the fast path."""
    from fhjit import _run

    def full(*a, **k):
        raise AssertionError("the full path ran")
    monkeypatch.setattr(_run, "_gather_device", full)
    return lambda: monkeypatch.undo()


@pytest.fixture(params=["cai", "torch"])
def fastdev(request, fake, monkeypatch):
    """(up, empty, Array) on the fake: __cuda_array_interface__ objects, or
    the stand-in torch module's tensors."""
    if request.param == "cai":
        return (lambda a: fake.upload(np.ascontiguousarray(a)), fake.alloc,
                lambda host, **kw: type(fake.alloc((1,), np.uint64))(host, **kw))
    import sys
    ft = _FakeTorch(fake)
    monkeypatch.setitem(sys.modules, "torch", ft)
    signed = {4: np.int32, 8: np.int64}
    return (lambda a: ft.tensor(np.ascontiguousarray(a).view(signed[a.dtype.itemsize])),
            lambda shape, dt: ft.Tensor(fake.alloc(shape, signed[np.dtype(dt).itemsize]).host),
            lambda host, **kw: ft.Tensor(host))


def test_fast_path_launches_new_pointers(fake, rng, fastdev, monkeypatch):
    up, empty, _ = fastdev
    g, q = mulplain()
    c, p = data(rng, q)
    want = g.run(c, p)
    P = up(fhjit.param_table(q, "r62"))
    out = empty(want.shape, np.uint64)
    fake.run_tagged(g, up(c), up(p), params=P, out=out)
    assert g._fast
    restore = _no_full_path(monkeypatch)
    c2, p2 = data(np.random.default_rng(7), q)
    out2 = empty(want.shape, np.uint64)
    n = fake.launches()
    for args, o, w in (((up(c2), up(p2)), out2, g.run(c2, p2)), ((up(c), up(p)), out, want)):
        got = fake.run_tagged(g, *args, params=P, out=o)
        assert got is o
        assert np.array_equal(o.host.view(np.uint64), w)
    s = fake.stream()
    fake.run_tagged(g, up(c), up(p), params=P, out=[out], stream=s)  # a list, a stream
    assert fake.last_launch().stream == s
    fake.run_tagged(g, up(c), up(p), params=P, out=out)  # back on the default stream
    assert not fake.last_launch().stream
    assert fake.launches() == n + 4
    restore()


def _fast_error_cases(fake, up, empty, Array, g, q, c, p, P, out):
    """name -> (call, status, text): each differs from a launch that was
    just made by one fact the fast path reads."""
    C, Pp = up(c), up(p)
    shape = out.shape

    def strided_out():  # same shape, every other word
        return Array(empty(shape[:-1] + (2 * N,), np.uint64).host[..., ::2])

    def misaligned(shape, dt, by):  # `by` bytes past 16-byte alignment
        n = int(np.prod(shape)) * np.dtype(dt).itemsize
        raw = fake.alloc((n + 16,), np.uint8).host
        return Array(raw[by:by + n].view(dt).reshape(shape))

    def mutated():  # the same object, its shape changed after the first launch
        x = up(c)
        g.run(x, Pp, params=P, out=out)
        x.host = x.host[:, :1]
        return g.run(x, Pp, params=P, out=out)

    def closed():
        g.run(C, Pp, params=P, out=out)
        g.close()
        return g.run(C, Pp, params=P, out=out)
    return {
        "input of 32-bit words": (lambda: g.run(up(c.astype(np.uint32)), Pp, params=P, out=out),
                                  "FHJIT_ERR_ARGUMENT", "64-bit"),
        "input of another shape": (lambda: g.run(up(c[:, :1]), Pp, params=P, out=out),
                                   "FHJIT_ERR_SHAPE", "declared"),
        "input of another rank": (lambda: g.run(up(c[0]), Pp, params=P, out=out),
                                  "FHJIT_ERR_SHAPE", "dimensions"),
        "input mutated in place": (mutated, "FHJIT_ERR_SHAPE", "declared"),
        "input not word-aligned": (lambda: g.run(misaligned(c.shape, np.uint64, 4), Pp,
                                                 params=P, out=out),
                                   "FHJIT_ERR_ARGUMENT", "aligned"),
        "input with negative strides": (lambda: g.run(Array(up(c).host[..., ::-1]), Pp,
                                                      params=P, out=out),
                                        "FHJIT_ERR_ARGUMENT", "negative"),
        "out of another shape": (lambda: g.run(C, Pp, params=P, out=empty((2, 2, N), np.uint64)),
                                 "FHJIT_ERR_SHAPE", "shape"),
        "out of 32-bit words": (lambda: g.run(C, Pp, params=P, out=empty(shape, np.uint32)),
                                "FHJIT_ERR_ARGUMENT", "64-bit"),
        "out strided": (lambda: g.run(C, Pp, params=P, out=strided_out()),
                        "FHJIT_ERR_ARGUMENT", "dense"),
        "out not 16-byte aligned": (lambda: g.run(C, Pp, params=P,
                                                  out=misaligned(shape, np.uint64, 8)),
                                    "FHJIT_ERR_ARGUMENT", "16-byte"),
        "out in a list of two": (lambda: g.run(C, Pp, params=P, out=[out, out]),
                                 "FHJIT_ERR_ARGUMENT", "1 result"),
        "params of one column": (lambda: g.run(C, Pp, params=up(fhjit.param_table(q[:1], "r62")),
                                               out=out), "FHJIT_ERR_SHAPE", "columns"),
        "params not 16-byte aligned": (lambda: g.run(C, Pp, params=misaligned(
            (8, 2), np.uint64, 8), out=out), "FHJIT_ERR_ARGUMENT", "16-byte"),
        "params of 32-bit words": (lambda: g.run(C, Pp, params=up(
            fhjit.param_table(q, "r62").astype(np.uint32)), out=out),
            "FHJIT_ERR_ARGUMENT", "64-bit"),
        "host params": (lambda: g.run(C, Pp, params=fhjit.param_table(q, "r62"), out=out),
                        "FHJIT_ERR_ARGUMENT", "numpy"),
        "numpy input": (lambda: g.run(c, Pp, params=P, out=out, backend="cuda"),
                        "FHJIT_ERR_ARGUMENT", "never copies"),
        "host backend": (lambda: g.run(C, Pp, params=P, out=out, backend="host"),
                         "FHJIT_ERR_ARGUMENT", "host backend"),
        "too few inputs": (lambda: g.run(C, params=P, out=out), "FHJIT_ERR_ARGUMENT",
                           "2 inputs"),
        "no params": (lambda: g.run(C, Pp, out=out), "FHJIT_ERR_ARGUMENT", "params="),
        "closed context": (closed, "FHJIT_ERR_ARGUMENT", "closed"),
    }


FAST_ERRORS = ["input of 32-bit words", "input of another shape", "input of another rank",
               "input mutated in place", "input not word-aligned", "input with negative strides",
               "out of another shape", "out of 32-bit words", "out strided",
               "out not 16-byte aligned", "out in a list of two", "params of one column",
               "params not 16-byte aligned", "params of 32-bit words", "host params",
               "numpy input", "host backend", "too few inputs", "no params", "closed context"]


@pytest.mark.parametrize("which", FAST_ERRORS)
def test_fast_path_errors_after_a_launch(fake, rng, fastdev, which):
    """Every check still raises, before launching or writing anything, when
    the arrays differ from a launch that succeeded (and made the fast path)."""
    up, empty, Array = fastdev
    g, q = mulplain()
    c, p = data(rng, q)
    P = up(fhjit.param_table(q, "r62"))
    out = empty((2, 2, 2, N), np.uint64)
    g.run(up(c), up(p), params=P, out=out)
    assert g._fast
    fn, status, text = _fast_error_cases(fake, up, empty, Array, g, q, c, p, P,
                                         out)[which]
    out.host[...] = 12345
    n = fake.launches()
    with pytest.raises(fhjit.FhjitError) as e:
        fn()
    assert e.value.status == status, e.value
    assert text in e.value.message, e.value.message
    launched = 1 if which in ("input mutated in place", "closed context") else 0
    assert fake.launches() == n + launched
    if not launched:
        assert (out.host.view(np.uint64) == 12345).all()


def test_fast_path_read_only_out(fake, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    C, Pp, P = fake.upload(c), fake.upload(p), fake.upload(fhjit.param_table(q, "r62"))
    out = fake.alloc((2, 2, 2, N), np.uint64)
    g.run(C, Pp, params=P, out=out)
    n = fake.launches()
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(C, Pp, params=P, out=type(out)(out.host, readonly=True))
    assert "read-only" in e.value.message and fake.launches() == n


def test_fast_path_device(fake, rng, monkeypatch):
    """torch tensors: another device than the first launch's raises."""
    import sys
    ft = _FakeTorch(fake)
    monkeypatch.setitem(sys.modules, "torch", ft)
    g, q = mulplain()
    c, p = data(rng, q)
    C, Pp = ft.tensor(c.view(np.int64)), ft.tensor(p.view(np.int64))
    P = ft.tensor(fhjit.param_table(q, "r62").view(np.int64))
    out = ft.Tensor(fake.alloc((2, 2, 2, N), np.int64).host)
    g.run(C, Pp, params=P, out=out)
    n = fake.launches()
    for which in ("input", "params", "out"):
        x = ft.Tensor({"input": Pp, "params": P, "out": out}[which].host)
        x.get_device = lambda: 1
        args = {"input": (C, x, P, out), "params": (C, Pp, x, out),
                "out": (C, Pp, P, x)}[which]
        with pytest.raises(fhjit.FhjitError) as e:
            g.run(args[0], args[1], params=args[2], out=args[3])
        assert "device 1" in e.value.message, (which, e.value.message)
    x = ft.Tensor(Pp.host)
    x.is_cuda, x.device = False, "cpu"
    x.get_device = lambda: -1
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(C, x, params=P, out=out)
    assert "never copies" in e.value.message
    assert fake.launches() == n


def test_fast_path_other_cuda_context(fake, rng):
    """A fast launch while another CUDA context is current: the kernel's
    context is pushed for it, and the caller's is current again after."""
    import ctypes
    from fhjit import _run
    g, q = mulplain()
    c, p = data(rng, q)
    args = (fake.upload(c), fake.upload(p))
    P = fake.upload(fhjit.param_table(q, "r62"))
    out = fake.alloc((2, 2, 2, N), np.uint64)
    want = g.run(c, p)
    fake.run_tagged(g, *args, params=P, out=out)
    drv = _run.driver()
    mine = drv.current()
    cuCtxCreate = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint,
                                   ctypes.c_int)(
        fhjit._lib.lib.fhjit_cuda_driver_proc(fake.ctx.handle(), b"cuCtxCreate_v2"))
    other = ctypes.c_void_p()
    assert cuCtxCreate(ctypes.byref(other), 0, 0) == 0  # made current
    try:
        assert drv.current() == other.value != mine
        for _ in range(3):
            out.host[...] = 0
            fake.run_tagged(g, *args, params=P, out=out)
            assert np.array_equal(out.host, want)
            assert fake.last_launch().ctx == mine
            assert drv.current() == other.value
        # arrays allocated in the other context launch there (their
        # allocation's context), though mine is current again
        args2 = (fake.upload(c), fake.upload(p))
        P2 = fake.upload(fhjit.param_table(q, "r62"))
        out2 = fake.alloc((2, 2, 2, N), np.uint64)
        drv.set_current(mine)
        for o, a, pp, ctx in ((out2, args2, P2, other.value), (out, args, P, mine),
                              (out2, args2, P2, other.value)):
            o.host[...] = 0
            fake.run_tagged(g, *a, params=pp, out=o)
            assert np.array_equal(o.host, want)
            assert fake.last_launch().ctx == ctx
            assert drv.current() == mine
    finally:
        drv.set_current(mine)


def test_fast_path_threads(fake, rng):
    """Several threads launching one graph through the fast path at once,
    each with its own arrays: every launch gets its own pointers."""
    g, q = mulplain()
    P = fake.upload(fhjit.param_table(q, "r62"))
    sets = []
    for i in range(4):
        c, p = data(np.random.default_rng(i), q)
        sets.append(((fake.upload(c), fake.upload(p)), fake.alloc((2, 2, 2, N), np.uint64),
                     g.run(c, p)))
    g.run(*sets[0][0], params=P, out=sets[0][1])
    assert g._fast
    errors = []
    barrier = threading.Barrier(4)

    def work(i):
        args, out, _ = sets[i]
        barrier.wait()
        try:
            for _ in range(100):
                g.run(*args, params=P, out=out)
        except Exception as e:
            errors.append(repr(e))
    # every launch executed on the host, on its own pointers (the launches
    # are serialised by the graph's lock, so the executor's graph is used by
    # one thread at a time)
    clone = fhjit.parse(str(g), "clone")
    clone.bind()
    for _, out, _ in sets:
        out.host[...] = 0
    fake.set_tag(clone.handle())
    fake.errors.clear()
    try:
        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        n = fake.launches()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        fake.set_tag(None)
        clone.close()
    assert not errors and not fake.errors, (errors, fake.errors)
    assert fake.launches() == n + 400
    for _, out, want in sets:
        assert np.array_equal(out.host, want)


def test_fast_paths_of_several_layouts(fake, rng, monkeypatch):
    """Launches alternating between layouts each keep their fast path (the
    FAST_PATHS most recent ones), with the right kernel for each."""
    from fhjit import _run
    g, q = mulplain()
    c, p = data(rng, q)
    P = fake.upload(fhjit.param_table(q, "r62"))
    want = g.run(c, p)
    wide = fake.upload(np.concatenate([c] * 4, axis=-1))
    h = wide.host  # 6 layouts: element offsets 0 and 1 (8 bytes), strides 1, 2 and 4
    views = [type(wide)(v) for v in (h[..., :N], h[..., 1:N + 1], h[..., :2 * N:2],
                                     h[..., 1:2 * N + 1:2], h[..., ::4], h[..., 1::4])]
    Pp = fake.upload(p)
    assert np.array_equal(views[0].host, c)
    outs = [fake.alloc((2, 2, 2, N), np.uint64) for _ in views]
    for v, o in zip(views[:3], outs):
        fake.run_tagged(g, v, Pp, params=P, out=o)
    assert len(g._fast) == 3
    restore = _no_full_path(monkeypatch)
    for _ in range(2):
        for k in (0, 1, 2):
            outs[k].host[...] = 0
            fake.run_tagged(g, views[k], Pp, params=P, out=outs[k])
            assert np.array_equal(outs[k].host, g.run(np.ascontiguousarray(views[k].host), p))
    assert np.array_equal(outs[0].host, want)
    restore()
    for v, o in zip(views[3:], outs[3:]):
        fake.run_tagged(g, v, Pp, params=P, out=o)
    assert len(g._fast) == _run.FAST_PATHS
    for k, (v, o) in enumerate(zip(views, outs)):
        o.host[...] = 0
        fake.run_tagged(g, v, Pp, params=P, out=o)
        assert np.array_equal(o.host, g.run(np.ascontiguousarray(v.host), p)), k


def test_fast_paths_dropped_when_the_graph_changes(fake, rng):
    g, q = mulplain()
    c, p = data(rng, q)
    C, Pp, P = fake.upload(c), fake.upload(p), fake.upload(fhjit.param_table(q, "r62"))
    out = fake.alloc((2, 2, 2, N), np.uint64)
    for change in (lambda: g.set_moduli(q), lambda: g["c"].rename("c2"),
                   lambda: g.input("extra", fhjit.pt([1], 2, N))):
        g.run(C, Pp, params=P, out=out)
        assert g._fast
        change()
        assert g._fast == []


def test_fast_path_allocates_on_torchs_stream(fake, rng, monkeypatch):
    """Results allocated by the fast path: torch.empty of the input's dtype,
    on torch's current stream, which is the launch's, read each launch."""
    import sys
    ft = _FakeTorch(fake)
    monkeypatch.setitem(sys.modules, "torch", ft)
    g, q = mulplain()
    c, p = data(rng, q)
    want = g.run(c, p)
    C, Pp = ft.tensor(c.view(np.int64)), ft.tensor(p.view(np.int64))
    P = ft.tensor(fhjit.param_table(q, "r62").view(np.int64))
    fake.run_tagged(g, C, Pp, params=P)
    assert g._fast
    restore = _no_full_path(monkeypatch)
    s = ft.cuda.Stream()
    for stream in (0, s.cuda_stream, 0):
        ft.current = stream
        n = len(ft.allocs)
        out = fake.run_tagged(g, C, Pp, params=P)
        assert isinstance(out, ft.Tensor) and out.dtype == ft.int64
        assert np.array_equal(out.host.view(np.uint64), want)
        assert len(ft.allocs) == n + 1 and ft.allocs[-1] == ((2, 2, 2, N), ft.int64, stream)
        assert (fake.last_launch().stream or 0) == stream
    restore()
    ft.current = 0
