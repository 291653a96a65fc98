"""rns.py: the RNS host helpers of fhjit.h as arrays: parameter tables
(SPEC section 2), NTT twiddle tables and roots (section 5), NTT-friendly
primes. Tables come back as numpy arrays of the radix's word (uint32 for
r32, uint64 for r62); to_torch() puts one on a GPU for a torch run.

SPEC section 7's constants (basis conversion, rescale, key switching) join
here when the C library gains their helpers.
"""
import ctypes
import threading

from ._lib import FhjitError, lib
from .graph import Context, _radix

__all__ = ["param_table", "twiddle_tables", "ntt_psi", "find_primes", "is_prime",
           "check_modulus", "to_torch"]

_ctx = None
_ctx_lock = threading.Lock()


def _context():
    global _ctx
    if _ctx is None:
        with _ctx_lock:
            if _ctx is None:
                _ctx = Context()
    return _ctx


def _moduli(moduli):
    m = [int(q) for q in moduli]
    if not m:
        raise FhjitError("FHJIT_ERR_ARGUMENT", "no moduli")
    for q in m:
        if not 0 <= q < 1 << 64:
            raise FhjitError("FHJIT_ERR_MODULUS", "modulus %d does not fit 64 bits" % q)
    return (ctypes.c_uint64 * len(m))(*m), len(m)


def _np():
    from ._run import _numpy
    return _numpy()


def _word(radix):
    np = _np()
    return np.uint32 if _radix(radix) == 0 else np.uint64


def param_table(moduli, radix="r62", n=0, ntt=False, scale=1, pstride=None):
    """The [8, rows] parameter table of SPEC section 2 (fhjit_param_table):
    n is the transform length N for row 7 (0 leaves it 0), ntt=True also
    requires q = 1 mod 2N, scale is D of row 6. pstride > rows gives a view
    of an [8, pstride] buffer (row stride pstride)."""
    np = _np()
    arr, rows = _moduli(moduli)
    ps = rows if pstride is None else int(pstride)
    buf = np.zeros((8, max(ps, rows)), dtype=_word(radix))
    ctx = _context()
    with ctx.lock:
        ctx.check(lib.fhjit_param_table(ctx.handle(), _radix(radix), arr, rows, int(n),
                                        1 if ntt else 0, int(scale), buf.ctypes.data,
                                        buf.shape[1]))
    return buf[:, :rows]


def twiddle_tables(moduli, n, radix="r62"):
    """(forward, inverse) twiddle tables [rows, n] in Montgomery form
    (fhjit_twiddle_tables), for ntt_fwd and ntt_inv."""
    np = _np()
    arr, rows = _moduli(moduli)
    fwd = np.empty((rows, int(n)), dtype=_word(radix))
    inv = np.empty_like(fwd)
    ctx = _context()
    with ctx.lock:
        ctx.check(lib.fhjit_twiddle_tables(ctx.handle(), _radix(radix), arr, rows, int(n),
                                           fwd.ctypes.data, inv.ctypes.data))
    return fwd, inv


def ntt_psi(q, n):
    """psi of SPEC section 5: the primitive 2N-th root of unity mod q."""
    out = ctypes.c_uint64()
    ctx = _context()
    with ctx.lock:
        ctx.check(lib.fhjit_ntt_psi(ctx.handle(), int(q), int(n), ctypes.byref(out)))
    return int(out.value)


def find_primes(bits, m, count):
    """The `count` largest primes q < 2^bits with q = 1 mod m (m a power of
    two), descending."""
    out = (ctypes.c_uint64 * max(1, int(count)))()
    ctx = _context()
    with ctx.lock:
        ctx.check(lib.fhjit_find_primes(ctx.handle(), int(bits), int(m), int(count), out))
    return [int(out[i]) for i in range(int(count))]


def is_prime(q):
    return bool(lib.fhjit_is_prime(int(q)))


def check_modulus(q, radix="r62", ntt_n=0):
    """Raises FhjitError (FHJIT_ERR_MODULUS) when q does not suit the radix
    (and, with ntt_n > 0, an NTT of that length)."""
    ctx = _context()
    with ctx.lock:
        ctx.check(lib.fhjit_check_modulus(ctx.handle(), _radix(radix), int(q), int(ntt_n)))


def to_torch(array, device="cuda"):
    """A torch tensor on `device` holding a copy of numpy `array`, its words
    viewed as signed (int32/int64: what every torch version handles); the
    copy is torch's, on torch's current stream."""
    import torch
    np = _np()
    a = np.ascontiguousarray(array)
    if a.dtype.kind == "u":
        a = a.view(np.int32 if a.dtype.itemsize == 4 else np.int64)
    return torch.from_numpy(a).to(device)
