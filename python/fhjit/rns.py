"""rns.py: the RNS host helpers of fhjit.h as arrays: parameter tables
(SPEC section 2), NTT twiddle tables and roots (section 5), NTT-friendly
primes, and SPEC section 7's constant tables (bconv, rescale, modup,
moddown; docs/section7.md gives their layouts) from a chain and lists of
chain positions, or exactly those a bound graph's inputs need
(input_table, twiddle_use, graph_constants). Tables come back as numpy
arrays of the radix's word (uint32 for r32, uint64 for r62); to_torch()
puts one on a GPU for a torch run.
"""
import ctypes
import threading

from ._lib import FhjitError, lib
from .graph import Context, Graph, _positions, _radix

__all__ = ["param_table", "twiddle_tables", "ntt_psi", "find_primes", "is_prime",
           "check_modulus", "to_torch", "bconv_table", "rescale_table", "modup_table",
           "moddown_table", "input_table", "twiddle_use", "graph_constants"]

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


# ------------------------------------------------ SPEC section 7 constants

def _chain(moduli):
    arr, m = _moduli(moduli)
    if m >= 1 << 31:
        raise FhjitError("FHJIT_ERR_ARGUMENT", "a chain of %d moduli is too long" % m)
    return arr, m


def bconv_table(moduli, src, dst, radix="r62"):
    """The table of bconv from chain positions `src` (the source basis, in
    its row order) to `dst` (the target): l + l*m words, Montgomery form,
    canonical (fhjit_bconv_table; docs/section7.md). moduli: the chain."""
    np = _np()
    chain, m = _chain(moduli)
    s, ns = _positions(src, "bconv_table: src")
    d, nd = _positions(dst, "bconv_table: dst")
    size = int(lib.fhjit_bconv_table_size(ns, nd))
    if size < 0:
        raise FhjitError("FHJIT_ERR_ARGUMENT", "bconv_table: %d source and %d target "
                         "positions give no table" % (ns, nd))
    out = np.empty(max(size, 1), dtype=_word(radix))
    ctx = _context()
    with ctx.lock:
        ctx.check(lib.fhjit_bconv_table(ctx.handle(), _radix(radix), chain, m, s, ns, d, nd,
                                        out.ctypes.data))
    return out[:size]


def rescale_table(moduli, basis, radix="r62"):
    """The table of rescale of a value on chain positions `basis` (its last
    position divided out): len(basis) - 1 words (fhjit_rescale_table)."""
    np = _np()
    chain, m = _chain(moduli)
    b, nb = _positions(basis, "rescale_table: basis")
    out = np.empty(max(nb - 1, 1), dtype=_word(radix))
    ctx = _context()
    with ctx.lock:
        ctx.check(lib.fhjit_rescale_table(ctx.handle(), _radix(radix), chain, m, b, nb,
                                          out.ctypes.data))
    return out[:max(nb - 1, 0)]


def moddown_table(moduli, q, p, radix="r62"):
    """The table of moddown of a value on Q ++ P (chain positions q, then
    the special primes p): len(p) + len(p)*len(q) + len(q) words
    (fhjit_moddown_table)."""
    np = _np()
    chain, m = _chain(moduli)
    qa, nq = _positions(q, "moddown_table: q")
    pa, npp = _positions(p, "moddown_table: p")
    size = npp + npp * nq + nq
    out = np.empty(max(size, 1), dtype=_word(radix))
    ctx = _context()
    with ctx.lock:
        ctx.check(lib.fhjit_moddown_table(ctx.handle(), _radix(radix), chain, m, qa, nq, pa,
                                          npp, out.ctypes.data))
    return out[:size]


def modup_table(moduli, basis, digit, special, digits, radix="r62"):
    """The table of modup of digit `digit` of a value on chain positions
    `basis` (Q), for a graph with special(special) digits(digits): the bconv
    table from the rows of Q in the digit's group G_j = [j*alpha,
    min((j+1)*alpha, M-K)) (in Q's order) to the other output rows (the
    rest of Q, then P = the chain's last K positions). A digit holding no
    row of Q has no table (modup refuses it)."""
    M, K, alpha, j = len(list(moduli)), int(special), int(digits), int(digit)
    if not (1 <= K < M and 1 <= alpha <= M - K):
        raise FhjitError("FHJIT_ERR_ARGUMENT", "modup_table: special(%d) digits(%d) do not "
                         "suit a chain of %d moduli (1 <= K < M, 1 <= alpha <= M-K)"
                         % (K, alpha, M))
    lo, hi = j * alpha, min((j + 1) * alpha, M - K)
    if not (0 <= j and lo < hi):
        raise FhjitError("FHJIT_ERR_ARGUMENT", "modup_table: digit %d is out of range (%d "
                         "digits of %d positions)" % (j, -(-(M - K) // alpha), alpha))
    basis = [int(b) for b in basis]
    src = [b for b in basis if lo <= b < hi]
    if not src:
        raise FhjitError("FHJIT_ERR_ARGUMENT", "modup_table: digit %d (positions %d..%d) "
                         "holds no row of the basis %s" % (j, lo, hi - 1, basis))
    dst = [b for b in basis if not lo <= b < hi] + list(range(M - K, M))
    return bconv_table(moduli, src, dst, radix)


def _input_index(graph, index):
    """The input number of `index`: an int, an input's name or its Value."""
    from .graph import Value
    if isinstance(index, Value):
        index = index.name
    if isinstance(index, str):
        names = graph.input_names
        name = index[1:] if index.startswith("%") else index
        if name not in names:
            raise FhjitError("FHJIT_ERR_ARGUMENT", "graph @%s has no input %%%s (inputs: %s)"
                             % (graph.name, name, ", ".join("%" + k for k in names)))
        return names.index(name)
    return int(index)


def input_table(graph, index):
    """The constants table input `index` (number, name or Value) of a bound
    graph needs, built from the graph's chain (fhjit_input_table): a 1-D
    array of the radix's words, what fhjit-run gives such inputs."""
    np = _np()
    if not isinstance(graph, Graph):
        raise FhjitError("FHJIT_ERR_ARGUMENT", "input_table: expected an fhjit.Graph")
    i = _input_index(graph, index)
    n = ctypes.c_int64()
    with graph.context.lock:
        h = graph.handle()
        graph._check(lib.fhjit_input_table(h, i, None, ctypes.byref(n)))
        out = np.empty(max(n.value, 1), dtype=np.uint32 if graph.word_bytes == 4
                       else np.uint64)
        graph._check(lib.fhjit_input_table(h, i, out.ctypes.data, ctypes.byref(n)))
    return out[:n.value]


_USES = {0: None, 1: "forward", 2: "inverse", 3: "both"}


def twiddle_use(graph, index):
    """How a bound graph reads input `index` (number, name or Value) as NTT
    twiddles (fhjit_input_twiddle_use): "forward" (a forward NTT, or the
    forward table of a rescale, modup or moddown), "inverse", "both" (no
    one table serves it) or None."""
    i = _input_index(graph, index)
    use = ctypes.c_int()
    with graph.context.lock:
        graph._check(lib.fhjit_input_twiddle_use(graph.handle(), i, ctypes.byref(use)))
    return _USES[use.value & 3]


def graph_constants(graph):
    """Every constant a bound graph's inputs need, built from its chain: a
    dict {input name: array} with each table input (input_table) and each
    twiddle input read as twiddles (the forward or inverse table of
    twiddle_tables for the chain's first `rows` moduli and the input's n).
    Other inputs are the caller's. Raises for a twiddle input read both as
    a forward and an inverse table."""
    moduli = graph.moduli
    out = {}
    tw_cache = {}
    for i, v in enumerate(graph.inputs):
        t = v.type
        if t.kind == "table":
            out[v.name] = input_table(graph, i)
        elif t.kind == "twiddles":
            use = twiddle_use(graph, i)
            if use is None:
                continue
            if use == "both":
                raise FhjitError("FHJIT_ERR_ARGUMENT", "input %%%s of graph @%s is read both "
                                 "as a forward and as an inverse twiddle table"
                                 % (v.name, graph.name))
            if t.rows is None or t.n is None or t.rows > len(moduli):
                raise FhjitError("FHJIT_ERR_ARGUMENT", "input %%%s of graph @%s: twiddles<%s, "
                                 "%s> need bound extents and at most %d rows (the chain)"
                                 % (v.name, graph.name, t.rows, t.n, len(moduli)))
            key = (t.rows, t.n)
            if key not in tw_cache:
                tw_cache[key] = twiddle_tables(moduli[:t.rows], t.n, graph.radix)
            out[v.name] = tw_cache[key][0 if use == "forward" else 1]
    return out


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
