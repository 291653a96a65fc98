"""test_host.py: numpy on the host backend: strided, broadcast, transposed,
offset and Fortran-order views bound as they are; negative strides and
misaligned data refused (or copied with copy=True); preallocated outputs;
rebinding; every example graph of examples/ (examples/s7 too: inputs per
chain position, tables and twiddles from the graph) against the
interpreter; and
every error of a host run (nothing written on failure)."""
import glob
import os

import numpy as np
import pytest

import fhjit
from conftest import ROOT, graph_inputs, lazy, primes, run_or_skip

N = 128


def mulplain(radix="r62", batch=(3,), name="mp"):
    q = primes(radix, 2)
    g = fhjit.Graph(name, radix, moduli=q)
    c = g.input("c", fhjit.ct(2, list(batch), 2, None))  # n left open
    p = g.input("p", fhjit.pt([1] * len(batch), 2, None))
    g.output(fhjit.mul_plain(c, p) + c, "r")
    return g, q


def check(g, *ins, **kw):
    got = g.run(*ins, **kw)
    want = g.run(*[np.ascontiguousarray(x) for x in ins], backend="interp")
    if isinstance(got, tuple):
        for a, b in zip(got, want):
            assert np.array_equal(a, b)
    else:
        assert np.array_equal(got, want)
    return got


@pytest.mark.parametrize("radix", ["r32", "r62"])
def test_views(radix, rng):
    g, q = mulplain(radix)
    big = lazy(rng, (2, 3, 2, 3 * N), q, radix)
    c = big[:, :, :, N:2 * N]                   # offset slice of the index axis
    c2 = big[:, :, :, ::3]                      # index stride 3
    p_row = lazy(rng, (N,), q, radix, row_axis=None)
    p = np.broadcast_to(p_row, (1, 2, N))       # row stride 0 (read-only view)
    pf = np.asfortranarray(lazy(rng, (1, 2, N), q, radix))
    ct_t = np.ascontiguousarray(big[:, :, :, :N].transpose(3, 0, 1, 2)).transpose(1, 2, 3, 0)
    assert not ct_t.flags.c_contiguous
    for x, y in ((c, p), (c2, p), (c, pf), (ct_t, p), (np.ascontiguousarray(c), pf)):
        check(g, x, y)
    g.run(c2, p)  # the binding follows the arrays
    assert "strides(%d, %d, %d, 3)" % (18 * N, 6 * N, 3 * N) in str(g)


def test_batch_broadcast_of_both(rng):
    g, q = mulplain("r62", batch=(2, 3))
    c = np.broadcast_to(lazy(rng, (2, 1, 3, 2, N), q, "r62"), (2, 2, 3, 2, N))
    p = lazy(rng, (1, 1, 2, N), q, "r62")
    out = check(g, c, p)
    assert out.shape == (2, 2, 3, 2, N)


def test_negative_strides_and_copy(rng):
    g, q = mulplain()
    c = lazy(rng, (2, 3, 2, N), q, "r62")
    p = lazy(rng, (1, 2, N), q, "r62")
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(c[:, :, :, ::-1], p)
    assert e.value.status == "FHJIT_ERR_ARGUMENT"
    assert "negative strides" in e.value.message and "copy=True" in e.value.message
    got = g.run(c[:, :, :, ::-1], p, copy=True)
    assert np.array_equal(got, g.run(np.ascontiguousarray(c[:, :, :, ::-1]), p))


def test_misaligned_and_byte_order(rng):
    g, q = mulplain()
    c = lazy(rng, (2, 3, 2, N), q, "r62")
    p = lazy(rng, (1, 2, N), q, "r62")
    raw = np.zeros(p.nbytes + 1, np.uint8)
    mis = np.frombuffer(raw.data, dtype=np.uint64, count=p.size, offset=1).reshape(p.shape)
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(c, mis)
    assert "aligned" in e.value.message
    big_endian = p.astype(">u8")
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(c, big_endian)
    assert "byte order" in e.value.message
    assert np.array_equal(g.run(c, big_endian, copy=True), g.run(c, p))


def test_signed_words_and_torch_cpu_like(rng):
    g, q = mulplain("r32")
    c = lazy(rng, (2, 3, 2, N), q, "r32")
    p = lazy(rng, (1, 2, N), q, "r32")
    want = g.run(c, p)
    got = g.run(c.view(np.int32), p.view(np.int32))
    assert got.dtype == np.int32 and np.array_equal(got.view(np.uint32), want)


def test_preallocated_outputs(rng):
    g, q = mulplain()
    c = lazy(rng, (2, 3, 2, N), q, "r62")
    p = lazy(rng, (1, 2, N), q, "r62")
    want = g.run(c, p)
    out = np.empty_like(want)
    assert g.run(c, p, out=out) is out and np.array_equal(out, want)
    out2 = np.zeros_like(want)
    assert g.run(c, p, out={"r": out2}) is out2 and np.array_equal(out2, want)
    assert g.run(c, p, out=[None]).shape == want.shape
    bad = [(np.zeros((2, 3, 2, N - 1), np.uint64), "FHJIT_ERR_SHAPE", "shape"),
           (np.zeros(want.shape, np.float64), "FHJIT_ERR_ARGUMENT", "dtype"),
           (np.zeros(want.shape, np.uint32), "FHJIT_ERR_ARGUMENT", "dtype"),
           (np.zeros(want.shape[::-1], np.uint64).T, "FHJIT_ERR_ARGUMENT", "C-contiguous"),
           (np.broadcast_to(np.zeros(N, np.uint64), want.shape), "FHJIT_ERR_ARGUMENT",
            "writeable"),
           ([out, out], "FHJIT_ERR_ARGUMENT", "1 result"),
           ({"nope": out}, "FHJIT_ERR_ARGUMENT", "no output"),
           (object(), "FHJIT_ERR_ARGUMENT", "numpy")]
    for o, status, text in bad:
        keep = o.copy() if isinstance(o, np.ndarray) else None
        with pytest.raises(fhjit.FhjitError) as e:
            g.run(c, p, out=o)
        assert e.value.status == status and text in e.value.message, e.value
        if keep is not None:
            assert np.array_equal(o, keep)


def test_in_place_on_the_host(rng):
    g, q = mulplain()
    c = lazy(rng, (2, 3, 2, N), q, "r62")
    p = lazy(rng, (1, 2, N), q, "r62")
    want = g.run(c, p)
    g.run(c, p, out=c)
    assert np.array_equal(c, want)


def test_rebind_false(rng):
    g, q = mulplain()
    c = lazy(rng, (2, 3, 2, N), q, "r62")
    p = lazy(rng, (1, 2, N), q, "r62")
    g.run(c, p)
    g.run(c, p, rebind=False)
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(c[:, :, :, :N // 2], p[:, :, :N // 2], rebind=False)
    assert e.value.status == "FHJIT_ERR_SHAPE" and "rebind=False" in e.value.message
    g.run(c[:, :, :, :N // 2], p[:, :, :N // 2])  # rebinds
    assert g.results[0].shape == (2, 3, 2, N // 2)


def test_inputs_by_name_and_explicit_bind(rng):
    g, q = mulplain()
    c = lazy(rng, (2, 3, 2, N), q, "r62")
    p = lazy(rng, (1, 2, N), q, "r62")
    want = g.run(c, p)
    assert np.array_equal(g.run({"p": p, "c": c}), want)
    g2, _ = mulplain()
    g2.bind(c=fhjit.View((2, 3, 2, N)), p=fhjit.View((1, 2, N), (0, 0, 1)))
    assert g2.is_bound and "strides(0, 0, 1)" in str(g2)
    assert "fhjit_mp" in g2.emit("ptx") and "define" in g2.emit("llvm")
    assert g2.hash() != 0 and g2.results[0].shape == (2, 3, 2, N)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "examples", "*.fh")) +
                                        glob.glob(os.path.join(ROOT, "examples", "*", "*.fh"))),
                         ids=lambda p: os.path.relpath(p, os.path.join(ROOT, "examples")))
def test_examples(path, rng):
    """Every example, with arrays laid out as its text binds them, on the
    interpreter and the host backend (equal words)."""
    g = fhjit.load(path)
    g.bind()
    q = g.moduli
    radix = g.radix
    ins = graph_inputs(g, rng)
    params = fhjit.param_table(q, radix, n=max(r.n for r in g.results) if g.results else 0)
    want = g.run(*ins, params=params, backend="interp")
    got = run_or_skip(g.run, *ins, params=params)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


# ------------------------------------------------------------------ errors

def test_run_errors(rng):
    g, q = mulplain()
    c = lazy(rng, (2, 3, 2, N), q, "r62")
    p = lazy(rng, (1, 2, N), q, "r62")
    P = fhjit.param_table(q, "r62")
    cases = [
        ((c.astype(np.float64), p), {}, "FHJIT_ERR_ARGUMENT", "float64"),
        ((c.astype(np.uint16), p), {}, "FHJIT_ERR_ARGUMENT", "64-bit"),
        ((c.astype(np.uint32), p), {}, "FHJIT_ERR_ARGUMENT", "64-bit"),
        ((c[0], p), {}, "FHJIT_ERR_SHAPE", "dimensions"),
        ((c[:, :, :1], p), {}, "FHJIT_ERR_SHAPE", "declared ct<2, [3], 2, ?>"),
        ((c, p[:, :, :N // 2]), {}, "FHJIT_ERR_SHAPE", "mp"),
        ((c,), {}, "FHJIT_ERR_ARGUMENT", "2 inputs"),
        (({"c": c, "x": p},), {}, "FHJIT_ERR_ARGUMENT", "no input %x"),
        ((c, p), {"params": P[:, :1]}, "FHJIT_ERR_SHAPE", "columns"),
        ((c, p), {"params": P[:7]}, "FHJIT_ERR_SHAPE", "[8, rows]"),
        ((c, p), {"params": P.astype(np.uint32)}, "FHJIT_ERR_ARGUMENT", "64-bit"),
        ((c, p), {"params": np.asfortranarray(P)}, "FHJIT_ERR_SHAPE", "column stride"),
        ((c, p), {"backend": "gpu"}, "FHJIT_ERR_ARGUMENT", "unknown backend"),
        ((c, p), {"stream": 7}, "FHJIT_ERR_ARGUMENT", "stream="),
    ]
    for args, kw, status, text in cases:
        with pytest.raises(fhjit.FhjitError) as e:
            g.run(*args, **kw)
        assert e.value.status == status, (text, e.value)
        assert text in e.value.message, (text, e.value.message)


def test_interpreter_refuses_non_lazy_inputs(rng):
    g, q = mulplain()
    c = lazy(rng, (2, 3, 2, N), q, "r62")
    p = lazy(rng, (1, 2, N), q, "r62")
    p[0, 1, 5] = 2 * q[1]
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(c, p, backend="interp")
    assert "%p" in e.value.message


def test_no_moduli_needs_params(rng):
    g = fhjit.Graph("nomod", "r32")
    a = g.input("a", "pt<[], 1, 16>")
    g.output(a + a)
    x = np.zeros((1, 16), np.uint32)
    with pytest.raises(fhjit.FhjitError) as e:
        g.run(x)
    assert "params=" in e.value.message
    assert np.array_equal(g.run(x, params=fhjit.param_table([268369921], "r32")), x)
