"""_run.py: binding graphs to arrays and running them, on the host (numpy,
fhjit_run_host / fhjit_interpret) and on the GPU (torch tensors, anything
with __cuda_array_interface__ or __dlpack__; fhjit_cuda_compile /
fhjit_cuda_launch_kernel on the caller's stream).

A graph keeps one *plan* per binding: the arrays' shapes, element strides
and offsets (the binding key), the result shapes, where each output comes
from, and the GPU kernels compiled for it per CUDA context and target.
Arrays with a known key skip binding and compiling entirely. A GPU launch
whose arrays look like a recent launch's (same shapes, strides, dtypes,
device, alignment...) takes the fast path (see "fast path" below): the
facts re-read and compared, the pointers written, one
fhjit_cuda_launch_kernel. Every check is made before anything is launched
or written.
"""
import ctypes
import sys
import threading

from . import _lib
from ._lib import FhjitError, lib
from .graph import View

ARG = "FHJIT_ERR_ARGUMENT"
SHAPE = "FHJIT_ERR_SHAPE"

# ------------------------------------------------------------ graph facts


class _Meta:
    """Per graph version: inputs' names and declared structure."""
    __slots__ = ("names", "decl", "facts", "values", "radix", "word", "gname")

    def __init__(self, g):
        h = g.handle()
        n = lib.fhjit_num_inputs(h)
        self.values = [lib.fhjit_input_value(h, i) for i in range(n)]
        self.names = [lib.fhjit_value_name(h, v).decode() for v in self.values]
        self.decl = []   # (kind, comps, nbatch): what the array's axes are
        self.facts = []  # (domain, form)
        for v in self.values:
            t = _lib.CType()
            g._check(lib.fhjit_value_type(h, v, t))
            self.decl.append((t.kind, t.comps, t.nbatch))
            self.facts.append((t.domain, t.form))
        self.radix = lib.fhjit_graph_radix(h)
        self.word = 4 if self.radix == 0 else 8
        self.gname = lib.fhjit_graph_name(h).decode("utf-8", "replace")


def _meta(g):
    m = g.__dict__.get("_meta_cache")
    if m is None:
        m = _Meta(g)
        g._meta_cache = m
    return m


def _axes(decl):
    kind, comps, nbatch = decl
    if kind == 1:
        return ("digit", "component", "row", "index")
    if kind == 2:
        return ("row", "index")
    if kind == 3:  # a constant table (SPEC section 7): one row, a 1-D array
        return ("index",)
    lead = ("component",) if comps else ()
    return lead + tuple("batch%d" % i for i in range(nbatch)) + ("row", "index")


def _shape_text(decl):
    return "[" + ", ".join(_axes(decl)) + "]"


def _label(m, i):
    return "input #%d (%%%s) of graph @%s" % (i, m.names[i], m.gname)


# -------------------------------------------------------------- binding


def _canon(shape, strides):
    """Strides of axes of extent 1 do not matter: 0, as fhjit canonicalises."""
    return tuple(0 if e == 1 else s for e, s in zip(shape, strides))


def _c_binding(m, i, shape, strides, offset):
    """The fhjit_type and fhjit_layout of input i viewed as (shape, strides)."""
    decl = m.decl[i]
    kind, comps, nbatch = decl
    axes = _axes(decl)
    if len(shape) != len(axes):
        raise FhjitError(SHAPE, "%s: expected an array of %d dimensions %s, got shape %s"
                         % (_label(m, i), len(axes), _shape_text(decl), tuple(shape)))
    t = _lib.CType()
    lay = _lib.CLayout()
    t.kind, t.nbatch = kind, nbatch
    t.domain, t.form = m.facts[i]
    lay.offset = offset
    if kind == 1:  # key [digits, 2, rows, n]
        if shape[1] != 2:
            raise FhjitError(SHAPE, "%s: a key table is [digits, 2, rows, n], got shape %s"
                             % (_label(m, i), tuple(shape)))
        t.comps, t.digits = 2, shape[0]
        lay.digit_stride, lay.comp_stride = strides[0], strides[1]
    elif kind == 3:  # table<n>: type rows 1, n words
        t.comps, t.rows, t.n = 0, 1, shape[0]
        lay.index_stride = strides[0]
        return t, lay
    elif kind == 0 and comps:
        t.comps = shape[0]
        lay.comp_stride = strides[0]
        for a in range(nbatch):
            t.batch[a] = shape[1 + a]
            lay.batch_stride[a] = strides[1 + a]
    else:
        t.comps = 0
        for a in range(nbatch):
            t.batch[a] = shape[a]
            lay.batch_stride[a] = strides[a]
    t.rows, t.n = shape[-2], shape[-1]
    lay.row_stride, lay.index_stride = strides[-2], strides[-1]
    return t, lay


class Plan:
    """What a run of one binding needs: result shapes, output sources, the
    parameter columns it reads, and GPU kernels per (CUDA context, target)."""

    def __init__(self, g, key):
        h = g.handle()
        self.key = key
        self.results = []
        rows = 0
        for k in range(lib.fhjit_num_results(h)):
            t = _lib.CType()
            g._check(lib.fhjit_result_type(h, k, t))
            lead = (t.comps,) if t.comps else ()
            self.results.append(lead + tuple(t.batch[a] for a in range(t.nbatch)) +
                                (t.rows, t.n))
            rows = max(rows, t.rows)
        self.outputs = []
        self.names = []
        for o in range(lib.fhjit_num_outputs(h)):
            info = _lib.OutputInfo()
            g._check(lib.fhjit_output_info_get(h, o, info))
            self.outputs.append((bool(info.is_input_alias), info.source, info.component))
            self.names.append(info.name.decode("utf-8", "replace"))
        # SPEC section 7: columns are read by chain position (bases, modup's
        # special primes): the parameter table needs one column per position
        # any value uses, not only as many as results have rows
        rows = max(rows, _chain_columns(g, h))
        if rows == 0:  # only aliases: nothing reads the table
            rows = 1
        self.rows = rows
        self.max_n = max([s[-1] for s in self.results] or [0])
        self.kernels = {}
        nin, nres = len(key), len(self.results)
        self.in_arr = (ctypes.c_uint64 * max(1, nin))()
        self.res_arr = (ctypes.c_uint64 * max(1, nres))()
        self.args = _lib.CudaArgs()
        self.args.inputs = ctypes.addressof(self.in_arr)
        self.args.ninputs = nin
        self.args.results = ctypes.addressof(self.res_arr)
        self.args.nresults = nres
        self.args_addr = ctypes.addressof(self.args)
        self.params_ok = set()   # parameter-table views checked for this plan
        self.results_ok = set()  # preallocated result views checked
        # every output a whole result, in result order
        self.simple = len(self.outputs) == nres and all(
            not a and s == k and c < 0 for k, (a, s, c) in enumerate(self.outputs))


def _chain_columns(g, h):
    """1 + the largest chain position of a polynomial value of the bound
    graph (0 when none); one fhjit_value_basis per value, once per binding."""
    top = 0
    t = _lib.CType()
    cnt = ctypes.c_int32()
    for v in range(lib.fhjit_num_values(h)):
        if lib.fhjit_value_type(h, v, t) or t.kind != 0 or t.rows <= 0:
            continue
        buf = (ctypes.c_int32 * t.rows)()
        if lib.fhjit_value_basis(h, v, buf, t.rows, ctypes.byref(cnt)):
            lib.fhjit_clear_error(g._ctx.handle())
            continue
        top = max(top, max(buf[:cnt.value]) + 1)
    return top


def _bind(g, m, key):
    """Binds every input of g to key's (shape, strides, offset) entries."""
    h = g.handle()
    g._bound_key = None
    for i, d in enumerate(key):
        t, lay = _c_binding(m, i, *d)
        g._check(lib.fhjit_bind_input(h, m.values[i], t, lay))
    g._check(lib.fhjit_bind(h))
    g._bound_key = key


def _current_binding(g, m):
    """The key of g's current binding as fhjit reports it."""
    h = g.handle()
    out = []
    for i in range(len(m.values)):
        t = _lib.CType()
        lay = _lib.CLayout()
        g._check(lib.fhjit_input_binding(h, i, t, lay))
        kind, comps, nbatch = m.decl[i]
        if kind == 1:
            shape = (t.digits, 2, t.rows, t.n)
            st = (lay.digit_stride, lay.comp_stride, lay.row_stride, lay.index_stride)
        elif kind == 3:
            shape, st = (t.n,), (lay.index_stride,)
        else:
            lead = (t.comps,) if kind == 0 and comps else ()
            slead = (lay.comp_stride,) if lead else ()
            shape = lead + tuple(t.batch[a] for a in range(nbatch)) + (t.rows, t.n)
            st = slead + tuple(lay.batch_stride[a] for a in range(nbatch)) + \
                (lay.row_stride, lay.index_stride)
        out.append((shape, _canon(shape, st), lay.offset))
    return tuple(out)


def _plan_for(g, m, key, rebind):
    """The plan of binding `key`, binding g to it when needed (rebind=False:
    refusing a key that differs from the graph's current binding)."""
    h = g.handle()
    if not rebind and g._bound_key != key and lib.fhjit_is_bound(h):
        cur = _current_binding(g, m)
        for i, (a, b) in enumerate(zip(key, cur)):
            if a != b:
                raise FhjitError(SHAPE, "%s: the array's shape %s, element strides %s and "
                                 "offset %d differ from the bound layout (shape %s, strides "
                                 "%s, offset %d), and rebind=False"
                                 % ((_label(m, i),) + tuple(a) + tuple(b)))
        g._bound_key = key
    p = g._plans.get(key)
    if p is not None:
        return p
    if g._bound_key != key:
        _bind(g, m, key)
    p = Plan(g, key)
    g._plans[key] = p
    return p


def _ensure_bound(g, m, key):
    if g._bound_key != key or not lib.fhjit_is_bound(g.handle()):
        _bind(g, m, key)


def bind_explicit(g, arrays, named):
    with g._ctx.lock:
        m = _meta(g)
        given = _match_inputs(m, arrays, named, partial=True)
        h = g.handle()
        g._bound_key = None
        for i, x in enumerate(given):
            if x is None:
                continue
            if isinstance(x, View):
                shape, strides, offset = x.shape, x.strides, x.offset
            elif _is_device(x):
                d = _dev_desc(x, m, i, None)
                shape, strides, offset = d[1], d[2], d[0] % 16 // d[3]
            else:
                a, strides = _host_array(x, m, i, m.word, False)
                shape, offset = a.shape, 0
            t, lay = _c_binding(m, i, tuple(shape), _canon(shape, strides), offset)
            g._check(lib.fhjit_bind_input(h, m.values[i], t, lay))
        g._check(lib.fhjit_bind(h))
        key = _current_binding(g, m)
        g._bound_key = key
        if key not in g._plans:
            g._plans[key] = Plan(g, key)


def _match_inputs(m, arrays, named, partial=False):
    n = len(m.names)
    if len(arrays) == 1 and isinstance(arrays[0], dict) and not named:
        named, arrays = arrays[0], ()
    if named:
        if arrays:
            raise FhjitError(ARG, "give inputs either in order or by name, not both")
        unknown = [k for k in named if k not in m.names]
        if unknown:
            raise FhjitError(ARG, "graph @%s has no input %s (inputs: %s)"
                             % (m.gname, ", ".join("%" + k for k in unknown),
                                ", ".join("%" + k for k in m.names)))
        out = [named.get(k) for k in m.names]
        if not partial:
            missing = [k for k, x in zip(m.names, out) if x is None]
            if missing:
                raise FhjitError(ARG, "graph @%s: no array for input %s"
                                 % (m.gname, ", ".join("%" + k for k in missing)))
        return out
    if len(arrays) != n and not (partial and len(arrays) < n):
        raise FhjitError(ARG, "graph @%s has %d input%s (%s), got %d array%s"
                         % (m.gname, n, "" if n == 1 else "s",
                            ", ".join("%" + k for k in m.names), len(arrays),
                            "" if len(arrays) == 1 else "s"))
    return list(arrays) + [None] * (n - len(arrays))


# ----------------------------------------------------------------- host

_np = None


def _numpy():
    global _np
    if _np is None:
        try:
            import numpy
        except ImportError:
            raise FhjitError(ARG, "the host backend needs numpy (python3-numpy)") from None
        _np = numpy
    return _np


def _is_device(x):
    """True for CUDA arrays; looks at the class only, never evaluates the
    (possibly costly) __cuda_array_interface__ property."""
    t = type(x)
    if t.__module__ == "numpy":
        return False
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return x.is_cuda
    if hasattr(t, "__cuda_array_interface__") or "__cuda_array_interface__" in \
            getattr(x, "__dict__", ()):
        return True
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None:
        try:
            return dev()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged
        except Exception:
            return False
    return False


def _word_text(word):
    return "32-bit words (uint32 or int32) for r32" if word == 4 else \
        "64-bit words (uint64 or int64) for r62"


def _host_array(x, m, i, word, copy, what=None):
    """(numpy array, element strides) of host input i, checked."""
    np = _numpy()
    what = what or _label(m, i)
    if _is_device(x):
        raise FhjitError(ARG, "%s: a CUDA array given to the host backend (the package "
                         "never copies between host and device: pass numpy arrays, or run "
                         "on the GPU with every array there)" % what)
    a = np.asarray(x)
    dt = a.dtype
    if dt.kind not in "iu" or dt.itemsize != word:
        raise FhjitError(ARG, "%s: dtype %s, but graph @%s needs %s"
                         % (what, dt, m.gname, _word_text(word)))
    if not dt.isnative:
        if not copy:
            raise FhjitError(ARG, "%s: byte order %s is not the machine's (copy=True "
                             "converts it)" % (what, dt))
        a = a.astype(dt.newbyteorder("="))
    strides = a.strides
    bad = None
    if any(s < 0 for s, e in zip(strides, a.shape) if e > 1):
        bad = "negative strides %s" % (strides,)
    elif any(s % word for s in strides):
        bad = "byte strides %s are not multiples of the word size" % (strides,)
    elif not a.flags.aligned:
        bad = "data not aligned to its word size"
    if bad:
        if not copy:
            raise FhjitError(ARG, "%s: %s: fhjit layouts need non-negative element strides "
                             "(pass copy=True to copy it, or np.ascontiguousarray)"
                             % (what, bad))
        a = np.ascontiguousarray(a)
        strides = a.strides
    return a, _canon(a.shape, tuple(s // word for s in strides))


def _host_params(g, m, plan, params):
    if params is None:
        moduli = g.moduli
        if not moduli:
            raise FhjitError(ARG, "graph @%s has no moduli: pass params= (a parameter table, "
                             "fhjit.param_table(moduli, ...))" % m.gname)
        cache = g._host_params
        if cache is None or cache[0] != plan.max_n:
            from . import rns
            try:
                tab = rns.param_table(moduli, m.radix, n=plan.max_n)
            except FhjitError:  # row 7 only matters to NTTs
                tab = rns.param_table(moduli, m.radix, n=0)
            g._host_params = cache = (plan.max_n, tab)
        params = cache[1]
    p, st = _host_array(params, m, -1, m.word, False, what="the parameter table of graph @%s"
                        % m.gname)
    _check_params_shape(m, plan, p.shape, st, "the parameter table")
    return p, st[0]


def _check_params_shape(m, plan, shape, st, what):
    st = _canon(shape, st)
    if len(shape) != 2 or shape[0] != 8:
        raise FhjitError(SHAPE, "%s of graph @%s must be [8, rows], got shape %s"
                         % (what, m.gname, tuple(shape)))
    if shape[1] < plan.rows:
        raise FhjitError(SHAPE, "%s of graph @%s has %d columns, but the graph uses %d rows"
                         % (what, m.gname, shape[1], plan.rows))
    if shape[1] > 1 and st[1] != 1:
        raise FhjitError(SHAPE, "%s of graph @%s: columns must be adjacent words (column "
                         "stride 1, got %d)" % (what, m.gname, st[1]))
    if st[0] < shape[1]:
        raise FhjitError(SHAPE, "%s of graph @%s: row stride %d is smaller than its %d "
                         "columns" % (what, m.gname, st[0], shape[1]))


def _out_list(out, plan, m):
    """Preallocated result arrays by result index (None: to allocate)."""
    nres = len(plan.results)
    if out is None:
        return [None] * nres
    if isinstance(out, dict):
        lst = [None] * nres
        names = plan.names
        for k, v in out.items():
            if k not in names:
                raise FhjitError(ARG, "out: graph @%s has no output %r (outputs: %s)"
                                 % (m.gname, k, ", ".join(names)))
            alias, src, comp = plan.outputs[names.index(k)]
            if alias or comp >= 0:
                raise FhjitError(ARG, "out: output %r of graph @%s is a view (of an input, or "
                                 "one component of a result), not a whole result"
                                 % (k, m.gname))
            lst[src] = v
        return lst
    if isinstance(out, (list, tuple)):
        if len(out) != nres:
            raise FhjitError(ARG, "out: graph @%s writes %d result%s, got %d arrays"
                             % (m.gname, nres, "" if nres == 1 else "s", len(out)))
        return list(out)
    if nres != 1:
        raise FhjitError(ARG, "out: graph @%s writes %d results: pass a sequence or a dict"
                         % (m.gname, nres))
    return [out]


def _outputs(plan, inputs, results):
    outs = []
    for alias, src, comp in plan.outputs:
        base = inputs[src] if alias else results[src]
        outs.append(base if comp < 0 else base[comp])
    return outs[0] if len(outs) == 1 else tuple(outs)


def _run_host(g, m, arrays, params, out, interp, threads, rebind, copy):
    np = _numpy()
    word = m.word
    arrs, key = [], []
    for i, x in enumerate(arrays):
        a, st = _host_array(x, m, i, word, copy)
        arrs.append(a)
        key.append((a.shape, st, 0))
    key = tuple(key)
    plan = _plan_for(g, m, key, rebind)
    _ensure_bound(g, m, key)
    p, pstride = _host_params(g, m, plan, params)
    dtype = arrs[0].dtype if arrs else np.dtype(np.uint32 if word == 4 else np.uint64)
    results = []
    for k, (shape, o) in enumerate(zip(plan.results, _out_list(out, plan, m))):
        if o is None:
            results.append(np.empty(shape, dtype))
            continue
        what = "out: result #%d of graph @%s" % (k, m.gname)
        if not isinstance(o, np.ndarray):
            raise FhjitError(ARG, "%s: expected a numpy array, got %s" % (what,
                             type(o).__name__))
        if o.dtype.kind not in "iu" or o.dtype.itemsize != word or not o.dtype.isnative:
            raise FhjitError(ARG, "%s: dtype %s, but graph @%s needs %s"
                             % (what, o.dtype, m.gname, _word_text(word)))
        if o.shape != shape:
            raise FhjitError(SHAPE, "%s: shape %s, expected %s" % (what, o.shape, shape))
        if not (o.flags.c_contiguous and o.flags.writeable and o.flags.aligned):
            raise FhjitError(ARG, "%s: must be C-contiguous (dense), writeable and aligned"
                             % what)
        results.append(o)
    ins = (ctypes.c_void_p * max(1, len(arrs)))(*[a.ctypes.data for a in arrs])
    res = (ctypes.c_void_p * max(1, len(results)))(*[r.ctypes.data for r in results])
    h = g.handle()
    if interp:
        st = lib.fhjit_interpret(h, p.ctypes.data, pstride, ins, res)
    else:
        st = lib.fhjit_run_host(h, p.ctypes.data, pstride, ins, res, threads)
    g._check(st)
    return _outputs(plan, arrs, results)


# ------------------------------------------------------------------ GPU


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_ptr = None


def _dlpack_tensor(capsule):
    global _capsule_ptr
    if _capsule_ptr is None:
        f = ctypes.pythonapi.PyCapsule_GetPointer
        f.restype = ctypes.c_void_p
        f.argtypes = (ctypes.py_object, ctypes.c_char_p)
        _capsule_ptr = f
    p = _capsule_ptr(capsule, b"dltensor")
    return _DLTensor.from_address(p)  # DLManagedTensor starts with its DLTensor


_torch_dtypes = None
_strides_cache = {}  # (shape, byte strides or None, itemsize) -> element strides


def _torch_dtype_table(torch):
    global _torch_dtypes
    if _torch_dtypes is None:
        t = {torch.int32: (4, "i"), torch.int64: (8, "i")}
        for name, v in (("uint32", (4, "u")), ("uint64", (8, "u"))):
            if hasattr(torch, name):
                t[getattr(torch, name)] = v
        _torch_dtypes = t
    return _torch_dtypes


def _dev_desc(x, m, i, stream, what=None):
    """(ptr, shape, element strides, itemsize, kind, device, cai_stream,
    keep) of a CUDA array, from torch, __cuda_array_interface__ or
    __dlpack__; keep is "readonly" for read-only arrays, or what must live
    until the launch (a DLPack capsule)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if not x.is_cuda:
            raise FhjitError(ARG, "%s: a torch tensor on %s given to the cuda backend (the "
                             "package never copies between host and device)"
                             % (what or _label(m, i), x.device))
        dt = (_torch_dtypes or _torch_dtype_table(torch)).get(x.dtype)
        if dt is None:
            raise FhjitError(ARG, "%s: dtype %s, but graph @%s needs %s"
                             % (what or _label(m, i), x.dtype, m.gname, _word_text(m.word)))
        return (x.data_ptr(), tuple(x.shape), x.stride(), dt[0], dt[1], x.get_device(), None,
                None)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        raise FhjitError(ARG, "%s: a numpy array given to the cuda backend (the package never "
                         "copies between host and device)" % (what or _label(m, i)))
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        ptr, readonly = cai["data"]
        shape = tuple(cai["shape"])
        ts = cai["typestr"]
        if ts[0] not in "<|" or ts[1] not in "iu" or ts[2:] not in ("4", "8"):
            raise FhjitError(ARG, "%s: typestr %r, but graph @%s needs %s"
                             % (what or _label(m, i), ts, m.gname, _word_text(m.word)))
        size = 4 if ts[2] == "4" else 8
        if cai.get("mask") is not None:
            raise FhjitError(ARG, "%s: masked arrays are not supported" % (what or _label(m, i)))
        st = cai.get("strides")
        ck = (shape, st, size)
        est = _strides_cache.get(ck)
        if est is None:
            if st is None:
                est = _dense(shape)
            else:
                if any(x % size for x in st):
                    raise FhjitError(ARG, "%s: byte strides %s are not multiples of the word "
                                     "size" % (what or _label(m, i), tuple(st)))
                est = tuple([x // size for x in st])
            if len(_strides_cache) > 4096:
                _strides_cache.clear()
            _strides_cache[ck] = est
        st = est
        return (ptr, shape, tuple(st), size, ts[1], None, cai.get("stream"),
                "readonly" if readonly else None)
    dlfn = getattr(x, "__dlpack__", None)
    if dlfn is not None:
        dev = x.__dlpack_device__()
        if dev[0] not in (2, 13):
            raise FhjitError(ARG, "%s: a DLPack array on device type %d given to the cuda "
                             "backend" % (what or _label(m, i), dev[0]))
        cap = dlfn(stream=1 if not stream else stream)
        t = _dlpack_tensor(cap)
        if t.dtype.code not in (0, 1) or t.dtype.bits not in (32, 64) or t.dtype.lanes != 1:
            raise FhjitError(ARG, "%s: DLPack dtype (code %d, %d bits, %d lanes), but graph "
                             "@%s needs %s" % (what or _label(m, i), t.dtype.code,
                                               t.dtype.bits, t.dtype.lanes, m.gname,
                                               _word_text(m.word)))
        size = t.dtype.bits // 8
        shape = tuple(t.shape[k] for k in range(t.ndim))
        if t.strides:
            st = tuple(t.strides[k] for k in range(t.ndim))
        else:
            st, acc = [], 1
            for e in reversed(shape):
                st.insert(0, acc)
                acc *= e
            st = tuple(st)
        ptr = (t.data or 0) + t.byte_offset
        return (ptr, shape, st, size, "i" if t.dtype.code == 0 else "u", dev[1], None, cap)
    raise FhjitError(ARG, "%s: %s is neither a numpy array nor a CUDA array (torch, or an "
                     "object with __cuda_array_interface__ or __dlpack__)"
                     % (what or _label(m, i), type(x).__name__))


class _Driver:
    """The few driver calls the package makes itself, through
    fhjit_cuda_driver_proc (the libcuda fhjit opened)."""

    def __init__(self):
        from .graph import Context
        self.ctx = Context()
        self.lock = threading.Lock()
        P = ctypes.c_void_p
        PP = ctypes.POINTER(P)
        R = ctypes.c_int
        self.cuCtxGetCurrent = self._proc("cuCtxGetCurrent", R, PP)
        self.cuCtxPushCurrent = self._proc("cuCtxPushCurrent_v2", R, P)
        self.cuCtxPopCurrent = self._proc("cuCtxPopCurrent_v2", R, PP)
        self.cuDeviceGet = self._proc("cuDeviceGet", R, ctypes.POINTER(ctypes.c_int),
                                      ctypes.c_int)
        self.cuDevicePrimaryCtxRetain = self._proc("cuDevicePrimaryCtxRetain", R, PP,
                                                   ctypes.c_int)
        self.cuPointerGetAttribute = self._proc("cuPointerGetAttribute", R, P, ctypes.c_int,
                                                ctypes.c_uint64)
        self.primaries = {}
        self.events = {}

    def _proc(self, name, restype, *argtypes):
        with self.ctx.lock:
            addr = lib.fhjit_cuda_driver_proc(self.ctx.handle(), name.encode())
            if not addr:
                raise self.ctx.error()
        return ctypes.CFUNCTYPE(restype, *argtypes)(addr)

    def current(self):
        c = ctypes.c_void_p()
        self.cuCtxGetCurrent(ctypes.byref(c))
        return c.value

    def primary(self, dev):
        p = self.primaries.get(dev)
        if p is None:
            with self.lock:
                d = ctypes.c_int()
                c = ctypes.c_void_p()
                r = self.cuDeviceGet(ctypes.byref(d), dev)
                if r == 0:
                    r = self.cuDevicePrimaryCtxRetain(ctypes.byref(c), d.value)
                if r != 0:
                    raise FhjitError("FHJIT_ERR_CUDA", "cuDevicePrimaryCtxRetain(device %d) "
                                     "failed with CUDA error %d" % (dev, r))
                p = self.primaries[dev] = c.value
        return p

    def set_current(self, c):
        if not hasattr(self, "cuCtxSetCurrent"):
            self.cuCtxSetCurrent = self._proc("cuCtxSetCurrent", ctypes.c_int, ctypes.c_void_p)
        self.cuCtxSetCurrent(c)

    def pointer_context(self, ptr):
        c = ctypes.c_void_p()
        if self.cuPointerGetAttribute(ctypes.byref(c), 1, ptr) != 0:  # ..._CONTEXT
            return None
        return c.value

    def pointer_device(self, ptr):
        d = ctypes.c_int(-1)
        if self.cuPointerGetAttribute(ctypes.byref(d), 9, ptr) != 0:  # ..._DEVICE_ORDINAL
            return None
        return d.value

    def stream_wait(self, consumer, producer):
        """consumer waits for what producer has enqueued so far (an event;
        no host synchronisation)."""
        cur = self.current()
        ev = self.events.get(cur)
        P = ctypes.c_void_p
        if not hasattr(self, "cuEventRecord"):
            self.cuEventCreate = self._proc("cuEventCreate", ctypes.c_int,
                                            ctypes.POINTER(P), ctypes.c_uint)
            self.cuEventRecord = self._proc("cuEventRecord", ctypes.c_int, P, P)
            self.cuStreamWaitEvent = self._proc("cuStreamWaitEvent", ctypes.c_int, P, P,
                                                ctypes.c_uint)
        if ev is None:
            e = P()
            if self.cuEventCreate(ctypes.byref(e), 2) != 0:  # CU_EVENT_DISABLE_TIMING
                raise FhjitError("FHJIT_ERR_CUDA", "cuEventCreate failed")
            ev = self.events[cur] = e.value
        r = self.cuEventRecord(ev, producer)
        if r == 0:
            r = self.cuStreamWaitEvent(consumer, ev, 0)
        if r != 0:
            raise FhjitError("FHJIT_ERR_CUDA", "cannot order stream %#x after the array's "
                             "stream %#x (CUDA error %d)" % (consumer or 0, producer or 0, r))


_driver = None
_driver_lock = threading.Lock()


def driver():
    global _driver
    if _driver is None:
        with _driver_lock:
            if _driver is None:
                _driver = _Driver()
    return _driver


def stream_handle(stream):
    """A CUstream handle (int) from an int, a torch or CuPy stream, or any
    object with __cuda_stream__ / cuda_stream / ptr / __int__."""
    if stream is None or isinstance(stream, int):
        return stream or 0
    f = getattr(stream, "__cuda_stream__", None)
    if f is not None:
        return int(f()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    try:
        return int(stream)
    except Exception:
        raise FhjitError(ARG, "stream: cannot read a CUstream handle from %s"
                         % type(stream).__name__) from None


def _torch_stream(torch, dev):
    f = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if f is not None:
        return f(dev)
    return torch.cuda.current_stream(dev).cuda_stream


_NO_CHECKS = None


def _no_checks():
    """The launch options pointer that skips the driver's pointer checks."""
    global _NO_CHECKS
    if _NO_CHECKS is None:
        o = _lib.CudaOptions()
        o.flags = _lib.FHJIT_CUDA_NO_POINTER_CHECKS
        _NO_CHECKS = ctypes.pointer(o)
    return _NO_CHECKS


class _Kernel:
    __slots__ = ("handle", "nscratch", "scratch_sizes", "home", "scratch")

    def __init__(self, handle):
        self.handle = handle
        self.nscratch = lib.fhjit_cuda_scratch_count(handle)
        self.scratch_sizes = [lib.fhjit_cuda_scratch_size(handle, s)
                              for s in range(self.nscratch)]
        self.home = None
        self.scratch = {}


_launch_kernel = None


def _compile(g, m, plan, key, kctx, device, target, pointer_checks):
    global _launch_kernel
    _launch_kernel = _lib.load().fhjit_cuda_launch_kernel
    _ensure_bound(g, m, key)
    opts = _lib.CudaOptions()
    opts.device = device or 0
    opts.target = None if target is None else target.encode()
    info = _lib.CudaCompileInfo()
    k = lib.fhjit_cuda_compile(g.handle(), ctypes.byref(opts), ctypes.byref(info))
    if not k:
        raise g._ctx.error()
    g._ctx.has_gpu = True
    kern = _Kernel(k)
    plan.kernels[(kctx, target)] = kern
    return kern, info


def _gather_device(m, arrays, stream):
    """Descriptors of every device array, the launch stream, and the device
    when torch or DLPack names it."""
    torch = sys.modules.get("torch")
    if torch is not None and arrays:  # the common case first: torch tensors only
        T = torch.Tensor
        descs = []
        for i, x in enumerate(arrays):
            if not isinstance(x, T):
                break
            descs.append(_dev_desc(x, m, i, None))
        else:
            dev = descs[0][5]
            s = _torch_stream(torch, dev) if stream is None else stream_handle(stream)
            return descs, s, dev
    tdev = None
    if torch is not None:
        for x in arrays:
            if isinstance(x, torch.Tensor):
                if x.is_cuda:
                    tdev = x.get_device()
                break
    s = None if stream is None else stream_handle(stream)
    if s is None and tdev is not None:
        s = _torch_stream(torch, tdev)
    descs = [None] * len(arrays)
    late = None
    for i, x in enumerate(arrays):
        if s is None and not hasattr(type(x), "__cuda_array_interface__") and \
                hasattr(x, "__dlpack__") and \
                not (torch is not None and isinstance(x, torch.Tensor)):
            late = late or []
            late.append(i)  # DLPack needs the consumer's stream first
            continue
        descs[i] = _dev_desc(x, m, i, s)
    if s is None:
        for d in descs:
            if d is not None and d[6] is not None:
                s = 0 if d[6] == 1 else d[6]  # __cuda_array_interface__'s stream
                break
        else:
            cupy = sys.modules.get("cupy")
            if cupy is not None and any(isinstance(x, cupy.ndarray) for x in arrays):
                s = cupy.cuda.get_current_stream().ptr
            else:
                s = 0  # the legacy default stream
    if late:
        for i in late:
            descs[i] = _dev_desc(arrays[i], m, i, s)
    if tdev is None:
        for d in descs:
            if d[5] is not None:
                tdev = d[5]
                break
    return descs, s, tdev


def _dense(shape):
    st, acc = [], 1
    for e in reversed(shape):
        st.insert(0, acc)
        acc *= e
    return tuple(st)


def _device_plan(g, m, descs, raw, rebind):
    """Slow path of a launch whose arrays' (shape, strides, alignment, word,
    device) were not seen before: checks them, finds or makes the plan."""
    word = m.word
    key = []
    dev = None
    for i, d in enumerate(descs):
        ptr, shape, st, size, kind, ddev = d[:6]
        if size != word:
            raise FhjitError(ARG, "%s: %d-byte words, but graph @%s needs %s"
                             % (_label(m, i), size, m.gname, _word_text(word)))
        if ddev is not None:
            if dev is None:
                dev = ddev
            elif ddev != dev:
                raise FhjitError(ARG, "%s: on CUDA device %d, but other arrays are on device "
                                 "%d" % (_label(m, i), ddev, dev))
        if ptr % word:
            raise FhjitError(ARG, "%s: address %#x is not aligned to its %d-byte words"
                             % (_label(m, i), ptr, word))
        for e, x in zip(shape, st):
            if x < 0 and e > 1:
                raise FhjitError(ARG, "%s: negative strides %s (fhjit layouts need "
                                 "non-negative strides)" % (_label(m, i), tuple(st)))
        # an input need not be 16-byte aligned: its base is rounded down and
        # the difference becomes the layout's offset
        key.append((shape, _canon(shape, st), ptr % 16 // word))
    plan = _plan_for(g, m, tuple(key), rebind)
    if rebind:
        g._raw_plans[raw] = plan
    return plan


def _check_device_params(m, plan, pd, dev):
    what = "the parameter table of graph @%s" % m.gname
    if pd[3] != m.word:
        raise FhjitError(ARG, "%s: %d-byte words, but graph @%s needs %s"
                         % (what, pd[3], m.gname, _word_text(m.word)))
    _check_params_shape(m, plan, pd[1], pd[2], what)
    if pd[0] % 16:
        raise FhjitError(ARG, "%s: address %#x is not 16-byte aligned" % (what, pd[0]))
    _same_device(pd, dev, what)


def _check_device_result(m, plan, k, d, dev):
    what = "out: result #%d of graph @%s" % (k, m.gname)
    shape = plan.results[k]
    if d[3] != m.word:
        raise FhjitError(ARG, "%s: %d-byte words, but graph @%s needs %s"
                         % (what, d[3], m.gname, _word_text(m.word)))
    if d[1] != shape:
        raise FhjitError(SHAPE, "%s: shape %s, expected %s" % (what, d[1], shape))
    dense = _dense(shape)
    if _canon(shape, d[2]) != _canon(shape, dense):
        raise FhjitError(ARG, "%s: element strides %s, but results are dense (C-contiguous, "
                         "strides %s)" % (what, tuple(d[2]), dense))
    if d[0] % 16:
        raise FhjitError(ARG, "%s: address %#x is not 16-byte aligned" % (what, d[0]))
    if d[7] == "readonly":
        raise FhjitError(ARG, "%s: the array is read-only" % what)
    _same_device(d, dev, what)


def _run_cuda(g, m, arrays, params, out, stream, rebind, pointer_checks, target):
    descs, s, dev = _gather_device(m, arrays, stream)
    # what decides the binding and every input check: seen before, nothing
    # but the pointers changes
    raw = tuple([(d[1], d[2], d[0] & 15, d[3], d[5]) for d in descs])
    plan = g._raw_plans.get(raw) if rebind else None
    if plan is None:
        plan = _device_plan(g, m, descs, raw, rebind)

    # the CUDA context: the device's primary context for torch and DLPack
    # arrays (torch's), else the allocation's; pushed when not current
    drv = _driver or driver()
    cur = drv.current()
    if dev is not None and dev >= 0:
        want = drv.primaries.get(dev) or drv.primary(dev)
    elif descs:
        want = drv.pointer_context(descs[0][0])
    else:
        want = None
    kctx = want or cur
    if kctx is None:  # no current context: device 0's primary one, made current
        kctx = cur = drv.primary(0)  # (as fhjit and the CUDA runtime do)
        drv.set_current(kctx)
    push = kctx != cur
    if push:
        drv.cuCtxPushCurrent(kctx)
    try:
        kern = plan.kernels.get((kctx, target))
        if kern is None:
            kern, _ = _compile(g, m, plan, plan.key, kctx, dev, target, pointer_checks)

        if params is None:
            raise FhjitError(ARG, "graph @%s: the GPU needs params= (the parameter table on "
                             "the device: fhjit.param_table(...) uploaded, e.g. with "
                             "fhjit.to_torch)" % m.gname)
        pd = _dev_desc(params, m, -1, s, "the parameter table of graph @%s" % m.gname)
        praw = (pd[1], pd[2], pd[3], pd[0] & 15, pd[5])
        if praw not in plan.params_ok:
            _check_device_params(m, plan, pd, dev)
            plan.params_ok.add(praw)

        # results: the caller's (checked) or allocated
        nres = len(plan.results)
        if out is None:
            objs = [None] * nres
        elif nres == 1 and not isinstance(out, (list, tuple, dict)):
            objs = [out]
        else:
            objs = _out_list(out, plan, m)
        torch = None
        res = plan.res_arr
        for k in range(nres):
            o = objs[k]
            if o is None:
                if torch is None:
                    torch = _torch_for_alloc(m)
                o = objs[k] = _torch_alloc(torch, plan.results[k], arrays, descs, m.word, dev,
                                           s, stream)
                res[k] = o.data_ptr()
                continue
            d = _dev_desc(o, m, -1, s, "out: result #%d of graph @%s" % (k, m.gname))
            draw = (k, d[1], d[2], d[3], d[0] & 15, d[5], d[7] == "readonly")
            if draw not in plan.results_ok:
                _check_device_result(m, plan, k, d, dev)
                plan.results_ok.add(draw)
            res[k] = d[0]

        # producers' streams (__cuda_array_interface__ v3): ordered before
        # the launch by an event, never by synchronising
        for d in descs:
            ps = d[6]
            if ps is not None and (0 if ps == 1 else ps) != s:
                drv.stream_wait(s, 0 if ps == 1 else ps)

        ins = plan.in_arr
        for i, d in enumerate(descs):
            ins[i] = d[0] & ~15
        a = plan.args
        a.params = pd[0]
        a.pstride = pd[2][0]
        a.stream = s
        a.options = None if pointer_checks else _no_checks()
        a.scratch = _scratch(kern, s, dev) if kern.nscratch else None
        st = _launch_kernel(kern.handle, plan.args_addr)
        if st:
            raise g._ctx.error(st)
    finally:
        if push:
            drv.cuCtxPopCurrent(ctypes.byref(ctypes.c_void_p()))
    if rebind:
        _remember(g, plan, kern, kctx, push, arrays, descs, params, pd, out, stream, s, dev,
                  pointer_checks, target)
    if plan.simple:
        return objs[0] if nres == 1 else tuple(objs)
    return _outputs(plan, arrays, objs)


# ------------------------------------------------------------ fast path
#
# A graph remembers its last few full GPU launches (g._fast, most recently
# used first, FAST_PATHS at most) as functions made by _fast_torch or _fast_cai: every
# fact about the arrays that a check of the full path depends on (type,
# shape, strides, dtype, device, the address's low 4 bits, read-only, the
# interface's stream and mask), and what the launch derived from them (plan,
# kernel, CUDA context, stream source, its own fhjit_cuda_args), held in
# the function's closure (never the arrays themselves). A launch whose
# arrays show the same facts would pass the same checks: the fast path
# re-reads the data pointers and the facts, compares them, writes the
# pointers and calls fhjit_cuda_launch_kernel. On any difference it returns
# _MISS having changed nothing the full path uses, and the next one is
# tried, then the full path (it checks, raises, or launches and remembers
# the new facts). Graph.run calls them under the context's lock;
# g._forget() (the graph changed, or its context closed) drops them.

_MISS = object()


def _remember(g, plan, kern, kctx, push, arrays, descs, params, pd, out, stream, s, dev,
              pointer_checks, target):
    """Makes the launch just done one of g's fast paths, when it can be one."""
    nres = len(plan.results)
    if out is None:
        outs = None
    elif nres == 1 and not isinstance(out, (list, tuple, dict)):
        outs = [out]
    elif isinstance(out, (list, tuple)) and len(out) == nres and None not in out:
        outs = list(out)
    else:
        return  # a dict, or some results allocated: the full path
    objs = list(arrays) + [params] + (outs or [])
    torch = sys.modules.get("torch")
    T = torch.Tensor if torch is not None else None
    if T is not None and all(type(x) is T for x in objs):
        if outs is None and stream is not None:
            return  # allocating on another stream than torch's: the full path
        _keep(g, _fast_torch(torch, plan, kern, kctx, push, arrays, params, outs, pd, s, dev,
                             pointer_checks, target))
        return
    if not descs or dev is not None or outs is None:
        return
    for x in objs:
        if (T is not None and isinstance(x, T)) or type(x).__module__ == "numpy" or \
                getattr(x, "__cuda_array_interface__", None) is None:
            return  # DLPack, or a mix: the full path
    cupy = sys.modules.get("cupy")
    if stream is None and all(d[6] is None for d in descs) and cupy is not None and \
            any(isinstance(x, cupy.ndarray) for x in arrays):
        return  # CuPy's current stream: read each time by the full path
    if _driver.pointer_context(descs[0][0]) != kctx:
        return
    _keep(g, _fast_cai(plan, kern, kctx, push, arrays, params, outs, descs, pd, s,
                       s if stream is None else _MISS, pointer_checks, target))


FAST_PATHS = 4  # per graph


def _keep(g, f):
    """f first among g's fast paths; the least recently used beyond
    FAST_PATHS dropped."""
    fl = g._fast
    fl.insert(0, f)
    del fl[FAST_PATHS:]


def _c_args(nin, nres, pd, s, pointer_checks):
    """A fast path's own fhjit_cuda_args: (args, its address, inputs,
    results); only the pointers and the stream change afterwards."""
    ins = (ctypes.c_uint64 * max(1, nin))()
    res = (ctypes.c_uint64 * max(1, nres))()
    a = _lib.CudaArgs()
    a.inputs, a.ninputs = ctypes.addressof(ins), nin
    a.results, a.nresults = ctypes.addressof(res), nres
    a.pstride = pd[2][0]
    a.stream = s
    a.options = None if pointer_checks else _no_checks()
    return a, ctypes.addressof(a), ins, res


def _fast_torch(torch, plan, kern, kctx, push, arrays, params, outs, pd, s, dev,
                pointer_checks, target):
    """The fast path of launches on torch tensors like this one's (outs
    None: results allocated on torch's current stream)."""
    T = torch.Tensor

    def facts(x):
        return (tuple(x.shape), tuple(x.stride()), x.dtype, x.get_device(), x.data_ptr() & 15)
    in_facts = [facts(x) for x in arrays]
    p_facts = facts(params)
    out_facts = None if outs is None else [facts(o) for o in outs]
    nin, nres = len(arrays), len(plan.results)
    a, addr, ins, res = _c_args(nin, nres, pd, s, pointer_checks)
    handle, nscratch, simple, shapes = kern.handle, kern.nscratch, plan.simple, plan.results
    launch = _launch_kernel
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
        (lambda d: torch.cuda.current_stream(d).cuda_stream)
    if outs is None:  # as _torch_alloc allocates
        empty = torch.empty
        dtype = arrays[0].dtype if arrays else torch.int32 if pd[3] == 4 else torch.int64
        device = torch.device("cuda", dev)
    cur_s, pushed = s, push

    def run(g, arrays, params, out, stream, checks, tgt):
        nonlocal cur_s, pushed
        if checks != pointer_checks or tgt != target or len(arrays) != nin:
            return _MISS
        k = 0
        for x in arrays:
            if type(x) is not T:
                return _MISS
            p = x.data_ptr()
            if (x.shape, x.stride(), x.dtype, x.get_device(), p & 15) != in_facts[k]:
                return _MISS
            ins[k] = p & -16
            k += 1
        if type(params) is not T:
            return _MISS
        p = params.data_ptr()
        if (params.shape, params.stride(), params.dtype, params.get_device(), p & 15) != \
                p_facts:
            return _MISS
        a.params = p
        if out is not None:
            if out_facts is None:
                return _MISS
            t = type(out)
            if t is list or t is tuple:
                if len(out) != nres:
                    return _MISS
                objs = out
            elif nres == 1:
                objs = (out,)
            else:
                return _MISS
            k = 0
            for o in objs:
                if type(o) is not T:
                    return _MISS
                p = o.data_ptr()
                if (o.shape, o.stride(), o.dtype, o.get_device(), p & 15) != out_facts[k]:
                    return _MISS
                res[k] = p
                k += 1
            s = raw_stream(dev) if stream is None else \
                stream if type(stream) is int else stream_handle(stream)
        elif out_facts is not None or stream is not None:
            return _MISS
        else:  # allocated on torch's current stream, the launch's
            s = raw_stream(dev)
            objs = [empty(shape, dtype=dtype, device=device) for shape in shapes]
            k = 0
            for o in objs:
                res[k] = o.data_ptr()
                k += 1
        # from here on as _fast_cai's run
        if s != cur_s:
            a.stream = cur_s = s
        if nscratch:
            a.scratch = _scratch(kern, s, dev)
        if pushed:
            _launch_pushed(g, launch, handle, addr, kctx)
        else:
            st = launch(handle, addr)
            if st:
                pushed = _launch_failed(g, launch, handle, addr, kctx, st)
        if simple:
            return objs[0] if nres == 1 else tuple(objs)
        return _outputs(plan, arrays, objs)
    return run


def _fast_cai(plan, kern, kctx, push, arrays, params, outs, descs, pd, s, s0, pointer_checks,
              target):
    """The fast path of launches on __cuda_array_interface__ objects like
    this one's (results given). s0: the launch stream when stream= is
    None (from the arrays' interface), _MISS when stream= was given."""
    def facts(x, last):
        d = x.__cuda_array_interface__
        p, ro = d["data"]
        return (d["shape"], d.get("strides"), d["typestr"], d.get("mask"),
                d.get("stream") if last else ro, p & 15)
    types = [type(x) for x in arrays]
    ptype = type(params)
    otypes = [type(o) for o in outs]
    in_facts = [facts(x, True) for x in arrays]
    p_facts = facts(params, False)
    out_facts = [facts(o, False) for o in outs]
    off0 = in_facts[0][5]
    # producers' streams (__cuda_array_interface__ v3), ordered before the
    # launch as on the full path
    producers = tuple(sorted({0 if d[6] == 1 else d[6] for d in descs if d[6] is not None}))
    nin, nres = len(arrays), len(outs)
    a, addr, ins, res = _c_args(nin, nres, pd, s, pointer_checks)
    handle, nscratch, simple = kern.handle, kern.nscratch, plan.simple
    launch = _launch_kernel
    drv = _driver
    dev = None
    cur_s, pushed = s, push

    def run(g, arrays, params, out, stream, checks, tgt):
        nonlocal cur_s, pushed
        if checks != pointer_checks or tgt != target or len(arrays) != nin:
            return _MISS
        k = 0
        for x in arrays:
            if type(x) is not types[k]:
                return _MISS
            d = x.__cuda_array_interface__
            p = d["data"][0]
            if (d["shape"], d.get("strides"), d["typestr"], d.get("mask"), d.get("stream"),
                    p & 15) != in_facts[k]:
                return _MISS
            ins[k] = p & -16
            k += 1
        if type(params) is not ptype:
            return _MISS
        d = params.__cuda_array_interface__
        p, ro = d["data"]
        if (d["shape"], d.get("strides"), d["typestr"], d.get("mask"), ro, p & 15) != p_facts:
            return _MISS
        a.params = p
        t = type(out)
        if t is list or t is tuple:
            if len(out) != nres:
                return _MISS
            objs = out
        elif nres == 1 and out is not None:
            objs = (out,)
        else:
            return _MISS
        k = 0
        for o in objs:
            if type(o) is not otypes[k]:
                return _MISS
            d = o.__cuda_array_interface__
            p, ro = d["data"]
            if (d["shape"], d.get("strides"), d["typestr"], d.get("mask"), ro, p & 15) != \
                    out_facts[k]:
                return _MISS
            res[k] = p
            k += 1
        # the allocation's context is the launch's, as on the full path
        if drv.pointer_context(ins[0] | off0) != kctx:
            return _MISS
        if stream is None:
            s = s0
            if s is _MISS:
                return _MISS
        else:
            s = stream if type(stream) is int else stream_handle(stream)
        for ps in producers:
            if ps != s:
                drv.stream_wait(s, ps)
        # from here on as _fast_torch's run
        if s != cur_s:
            a.stream = cur_s = s
        if nscratch:
            a.scratch = _scratch(kern, s, dev)
        if pushed:
            _launch_pushed(g, launch, handle, addr, kctx)
        else:
            st = launch(handle, addr)
            if st:
                pushed = _launch_failed(g, launch, handle, addr, kctx, st)
        if simple:
            return objs[0] if nres == 1 else tuple(objs)
        return _outputs(plan, arrays, objs)
    return run


# The kernel's CUDA context is usually current (torch's primary context), so
# a fast path launches first. When that fails in another context (fhjit
# refuses before launching anything), the kernel's context is pushed for a
# second try, and for the fast path's launches after.

def _launch_failed(g, launch, handle, addr, kctx, st):
    """After a fast launch failed with st: True when it failed for its
    CUDA context, and the second try (pushed) succeeded; raises otherwise."""
    if _driver.current() == kctx:  # a failure of the launch itself
        raise g._ctx.error(st)
    _launch_pushed(g, launch, handle, addr, kctx)
    return True


def _launch_pushed(g, launch, handle, addr, kctx):
    drv = _driver
    if drv.current() == kctx:
        st = launch(handle, addr)
    else:
        drv.cuCtxPushCurrent(kctx)
        try:
            st = launch(handle, addr)
        finally:
            drv.cuCtxPopCurrent(ctypes.byref(ctypes.c_void_p()))
    if st:
        raise g._ctx.error(st)


def _same_device(d, dev, what):
    if d[5] is not None and dev is not None and d[5] != dev:
        raise FhjitError(ARG, "%s: on CUDA device %d, but the inputs are on device %d"
                         % (what, d[5], dev))


def _scratch(kern, s, dev):
    """The caller-side scratch of a launch on stream s: None (the kernel's
    own) on the kernel's first stream; on another stream, buffers of that
    stream (torch allocations kept with the kernel), so that launches on
    several streams never share scratch."""
    if kern.home is None:
        kern.home = s
    if s == kern.home:
        return None
    arr = kern.scratch.get(s)
    if arr is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return None  # documented: one stream at a time without torch
        device = torch.device("cuda", dev if dev is not None else torch.cuda.current_device())
        bufs = [torch.empty(max(16, n), dtype=torch.uint8, device=device)
                for n in kern.scratch_sizes]
        arr = (ctypes.c_uint64 * len(bufs))(*[b.data_ptr() for b in bufs])
        kern.scratch[s] = (arr, bufs)
    else:
        arr = arr[0]
    return ctypes.addressof(arr)


def _torch_for_alloc(m):
    torch = sys.modules.get("torch")
    if torch is None:
        raise FhjitError(ARG, "graph @%s: allocating results on the GPU needs torch; pass "
                         "out= (preallocated CUDA arrays) instead" % m.gname)
    return torch


def _torch_alloc(torch, shape, arrays, descs, word, dev, s, stream):
    dtype = None
    for x in arrays:
        if isinstance(x, torch.Tensor):
            dtype = x.dtype
            break
    if dtype is None:  # signed words: what every torch version handles
        dtype = torch.int32 if word == 4 else torch.int64
    if dev is None:
        dev = driver().pointer_device(descs[0][0]) if descs else None
        if dev is None:
            dev = torch.cuda.current_device()
    device = torch.device("cuda", dev)
    if s != _torch_stream(torch, dev):
        # allocate on the launch stream, so that torch's caching allocator
        # orders the memory's reuse after this launch
        if isinstance(stream, torch.cuda.Stream):
            st = stream
        elif s == 0:
            st = torch.cuda.default_stream(device)
        else:
            st = torch.cuda.ExternalStream(s, device=device)
        with torch.cuda.stream(st):
            return torch.empty(shape, dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


# ---------------------------------------------------------------- entry


def run(g, inputs, params, out, backend, stream, threads, rebind, copy, pointer_checks,
        target):
    with g._ctx.lock:
        m = g._meta_cache or _meta(g)
        if len(inputs) == len(m.names) and (not inputs or not isinstance(inputs[0], dict)):
            arrays = inputs
        else:
            arrays = _match_inputs(m, inputs, None)
        if backend is None:
            first = arrays[0] if arrays else params
            backend = "cuda" if first is not None and _is_device(first) else "host"
        if backend == "cuda":
            return _run_cuda(g, m, arrays, params, out, stream, rebind, pointer_checks, target)
        if backend in ("host", "interp"):
            if stream is not None:
                raise FhjitError(ARG, "stream= is for the cuda backend")
            return _run_host(g, m, arrays, params, out, backend == "interp", threads, rebind,
                             copy)
        raise FhjitError(ARG, "unknown backend %r (host, interp or cuda)" % (backend,))


def compile_only(g, inputs, backend, target, stream):
    with g._ctx.lock:
        m = _meta(g)
        arrays = _match_inputs(m, inputs, None)
        if backend not in ("cuda", "host"):
            raise FhjitError(ARG, "compile: unknown backend %r (host or cuda)" % (backend,))
        key = []
        dev = None
        for i, x in enumerate(arrays):
            if isinstance(x, View):
                key.append((x.shape, _canon(x.shape, x.strides), x.offset))
            elif backend == "cuda":
                d = _dev_desc(x, m, i, stream_handle(stream))
                key.append((d[1], _canon(d[1], d[2]), d[0] % 16 // d[3]))
                if d[5] is not None:
                    dev = d[5]
            else:
                a, st = _host_array(x, m, i, m.word, False)
                key.append((a.shape, st, 0))
        key = tuple(key)
        plan = _plan_for(g, m, key, True)
        _ensure_bound(g, m, key)
        if backend != "cuda":
            return {"backend": backend, "results": list(plan.results)}
        drv = driver()
        cur = drv.current()
        want = drv.primary(dev) if dev is not None else None
        kctx = want or cur or drv.primary(0)
        push = kctx != cur
        if push:
            drv.cuCtxPushCurrent(kctx)
        try:
            kern = plan.kernels.get((kctx, target))
            if kern is not None:
                info = lib.fhjit_cuda_kernel_info(kern.handle).contents
            else:
                kern, info = _compile(g, m, plan, key, kctx, dev, target, True)
        finally:
            if push:
                drv.cuCtxPopCurrent(ctypes.byref(ctypes.c_void_p()))
        src = {0: "memory", 1: "disk", 2: "compiled"}.get(info.source, str(info.source))
        return {"backend": "cuda", "results": list(plan.results), "source": src,
                "target": info.target.decode(), "kernels": info.nkernels,
                "scratch_bytes": info.scratch_bytes, "lower_ms": info.lower_ms,
                "link_ms": info.link_ms, "load_ms": info.load_ms, "disk_ms": info.disk_ms,
                "total_ms": info.total_ms}
