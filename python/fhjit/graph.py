"""graph.py: fhjit contexts, types, graphs and values, and the graph
operations as Python functions and operators.

Every operation is one row of OPS (its Python name, the C builder it calls
and its parameters); the module-level functions (fhjit.add_lazy, ...) and
the Value methods are generated from it, so a new C operation is one row
here.
"""
import inspect
import re
import threading
import weakref

from . import _lib
from ._lib import FhjitError, lib

__all__ = ["Context", "Type", "Value", "Graph", "View", "ct", "pt", "key", "twiddles",
           "table", "parse", "load", "OPS"]

RADICES = {"r32": 0, "r62": 1}
RADIX_NAMES = {0: "r32", 1: "r62"}
WORD_BYTES = {0: 4, 1: 8}
KINDS = {"poly": 0, "key": 1, "twiddles": 2, "table": 3}
KIND_NAMES = {0: "poly", 1: "key", 2: "twiddles", 3: "table"}
DOMAINS = {None: 0, "coef": 1, "ntt": 2}
DOMAIN_NAMES = {0: None, 1: "coef", 2: "ntt"}
FORMS = {None: 0, "std": 1, "mont": 2}
FORM_NAMES = {0: None, 1: "std", 2: "mont"}
COMPRESSIONS = {"cyclic": 0, "contiguous": 1, "strided_sparse": 2}

# fhjit contexts with GPU kernels whose Python objects were collected: kept
# for the process's life (see Context._close)
_RETIRED = []


def _radix(r):
    if isinstance(r, str) and r in RADICES:
        return RADICES[r]
    if r in (0, 1) and not isinstance(r, bool):
        return r
    raise FhjitError("FHJIT_ERR_ARGUMENT", "unknown radix %r (use 'r32' or 'r62')" % (r,))


def _int32(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        try:
            v = int(v.__index__())
        except Exception:
            raise FhjitError("FHJIT_ERR_ARGUMENT", "%s must be an integer, got %r"
                             % (what, v)) from None
    if not -(1 << 31) <= v < 1 << 31:
        raise FhjitError("FHJIT_ERR_ARGUMENT", "%s = %d does not fit 32 bits" % (what, v))
    return v


def _positions(seq, what):
    """(c_int32 array, count) of a list of chain positions."""
    import ctypes
    if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
        raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: expected a sequence of chain positions, "
                         "got %r" % (what, seq))
    p = [_int32(x, what) for x in seq]
    return (ctypes.c_int32 * max(1, len(p)))(*p), len(p)


def _choice(table, what, v):
    if v in table:
        return table[v]
    raise FhjitError("FHJIT_ERR_ARGUMENT", "unknown %s %r (one of %s)"
                     % (what, v, ", ".join(repr(k) for k in table if k is not None)))


# ----------------------------------------------------------------- context

class Context:
    """An fhjit context (fhjit_context): owns graphs, their compiled code and
    the last error. A context is used by one thread at a time: every call
    the package makes on it holds `lock` (a threading.RLock), so sharing one
    between threads is safe (serialised); separate contexts run at once.

    Graphs made without `context=` get a private context each, closed with
    the graph. close() destroys the context and every graph in it (their
    CUDA kernels are unloaded: do not close while launches may still run)."""

    def __init__(self):
        h = lib.fhjit_context_create()
        if not h:
            raise FhjitError("FHJIT_ERR_MEMORY", "fhjit_context_create: out of memory")
        self._h = h
        self.lock = threading.RLock()
        self._graphs = weakref.WeakSet()
        self.has_gpu = False  # set when a GPU kernel was loaded in it

    def handle(self):
        """The fhjit_context pointer (an int); raises when closed."""
        h = self._h
        if h is None:
            raise FhjitError("FHJIT_ERR_ARGUMENT", "the fhjit context is closed")
        return h

    @property
    def closed(self):
        return self._h is None

    def close(self):
        """Destroys the context and every graph made in it."""
        self._close(False)

    def _close(self, collected):
        """collected: the garbage collector's close. A context that loaded GPU
        kernels is then kept (never destroyed) instead: destroying it unloads
        modules and frees scratch buffers, which must not happen behind the
        caller's back while its launches may still run."""
        with self.lock:
            if self._h is None:
                return
            for g in list(self._graphs):
                g._h = None
                g._forget()
            h, self._h = self._h, None
            if collected and self.has_gpu:
                _RETIRED.append(h)
            else:
                lib.fhjit_context_destroy(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self._close(True)
        except Exception:
            pass

    def set_option(self, name, value=None):
        """Sets a tuning option of the context (fhjit_context_set_option):
        "ntt_plan", "pw_plan", "max_values", "cache", "cache_dir",
        "bconv_plan", "ntt_schedule" or "host_pipeline", a string
        ("" the default);
        None unsets it (its FHJIT_* environment variable applies again).
        Raises FhjitError("FHJIT_ERR_ARGUMENT") for an unknown name or a
        malformed value."""
        with self.lock:
            v = None if value is None else str(value).encode()
            self.check(lib.fhjit_context_set_option(self.handle(), name.encode(), v))

    def error(self, code=None):
        """The FhjitError of the last failure on this context."""
        return _lib.error_from(self._h, code)

    def check(self, code):
        if code:
            raise self.error(code)

    def __repr__(self):
        return "<fhjit.Context %s>" % ("closed" if self._h is None else hex(self._h))


# -------------------------------------------------------------------- types

class Type:
    """A value's type (fhjit_type): kind "poly" (ct/pt), "key", "twiddles"
    or "table" (SPEC section 7's constants: one row of n words, text
    table<n>, a 1-D array of n words), the component count (0: a pt, no
    component axis), batch extents, rows, n (digits for keys) and the domain
    facts. Unknown extents are None (`?` in text). Build with ct(), pt(),
    key(), twiddles(), table() or Type.parse("ct<2, [], 2, 4096> ntt mont").
    A polynomial's basis (its rows' chain positions) is not part of the
    type: Graph.input(..., basis=) states it, Value.basis reads it."""

    __slots__ = ("kind", "comps", "batch", "digits", "rows", "n", "domain", "form")

    def __init__(self, kind, comps, batch, rows, n, digits=None, domain=None, form=None):
        if kind not in KINDS:
            raise FhjitError("FHJIT_ERR_ARGUMENT", "unknown kind %r" % (kind,))
        _choice(DOMAINS, "domain", domain)
        _choice(FORMS, "form", form)
        self.kind, self.comps, self.batch = kind, int(comps), tuple(batch)
        self.digits, self.rows, self.n = digits, rows, n
        self.domain, self.form = domain, form

    @property
    def shape(self):
        """The array shape of the type (None for unknown extents)."""
        if self.kind == "key":
            return (self.digits, 2, self.rows, self.n)
        if self.kind == "twiddles":
            return (self.rows, self.n)
        if self.kind == "table":
            return (self.n,)
        lead = (self.comps,) if self.comps else ()
        return lead + self.batch + (self.rows, self.n)

    @property
    def axes(self):
        """Names of the shape's axes."""
        if self.kind == "key":
            return ("digit", "component", "row", "index")
        if self.kind == "twiddles":
            return ("row", "index")
        if self.kind == "table":
            return ("index",)
        lead = ("component",) if self.comps else ()
        return lead + tuple("batch%d" % i for i in range(len(self.batch))) + ("row", "index")

    def to_c(self):
        t = _lib.CType()
        t.kind = KINDS[self.kind]
        t.comps = 2 if self.kind == "key" else self.comps
        t.nbatch = len(self.batch)
        if t.nbatch > 4:
            raise FhjitError("FHJIT_ERR_TYPE", "at most 4 batch axes (got %d)" % t.nbatch)
        unk = _lib.FHJIT_UNKNOWN
        for i, b in enumerate(self.batch):
            t.batch[i] = unk if b is None else b
        t.digits = 0 if self.kind != "key" else (unk if self.digits is None else self.digits)
        t.rows = unk if self.rows is None else self.rows
        t.n = unk if self.n is None else self.n
        t.domain = DOMAINS[self.domain]
        t.form = FORMS[self.form]
        return t

    @classmethod
    def from_c(cls, t):
        def ext(x):
            return None if x == _lib.FHJIT_UNKNOWN else int(x)
        kind = KIND_NAMES.get(t.kind)
        if kind is None:
            raise FhjitError("FHJIT_ERR_TYPE", "unknown fhjit_kind %d (a newer libfhjit?)"
                             % t.kind)
        return cls(kind, t.comps if kind == "poly" else (2 if kind == "key" else 0),
                   [ext(t.batch[i]) for i in range(t.nbatch)], ext(t.rows), ext(t.n),
                   ext(t.digits) if kind == "key" else None,
                   DOMAIN_NAMES[t.domain], FORM_NAMES[t.form])

    _TYPE_RE = re.compile(r"\s*(ct|pt|key|twiddles|table)\s*<([^>]*)>\s*(.*)$", re.S)

    @classmethod
    def parse(cls, text):
        """Parses a type as the .fh format writes it (docs/format.md)."""
        m = cls._TYPE_RE.match(text)
        bad = FhjitError("FHJIT_ERR_PARSE", "cannot read type %r (docs/format.md: "
                         "ct<C, [b...], rows, n>, pt<[b...], rows, n>, key<digits, 2, rows, "
                         "n>, twiddles<rows, n>, then coef|ntt and std|mont; or table<len>)"
                         % (text,))
        if not m:
            raise bad
        word, body, tail = m.groups()
        batch = []
        bm = re.search(r"\[([^\]]*)\]", body)
        if bm:
            batch = [x.strip() for x in bm.group(1).split(",") if x.strip()]
            body = body[:bm.start()] + "B" + body[bm.end():]
        parts = [x.strip() for x in body.split(",")]

        def ext(x):
            if x == "?":
                return None
            if not x.isdigit():
                raise bad
            return int(x)
        domain = form = None
        if word == "table":  # table<len>: no batch, no domain facts
            if bm or tail.strip() or len(parts) != 1:
                raise bad
            return cls("table", 0, [], 1, ext(parts[0]))
        for w in tail.split():
            if w in ("coef", "ntt") and domain is None:
                domain = w
            elif w in ("std", "mont") and form is None:
                form = w
            else:
                raise bad
        try:
            if word == "ct":
                c, b, r, n = parts
                if b != "B":
                    raise bad
                return cls("poly", int(c), [ext(x) for x in batch], ext(r), ext(n),
                           domain=domain, form=form)
            if word == "pt":
                b, r, n = parts
                if b != "B":
                    raise bad
                return cls("poly", 0, [ext(x) for x in batch], ext(r), ext(n),
                           domain=domain, form=form)
            if bm:
                raise bad
            if word == "key":
                d, two, r, n = parts
                if two != "2":
                    raise bad
                return cls("key", 2, [], ext(r), ext(n), digits=ext(d), domain=domain,
                           form=form)
            r, n = parts
            return cls("twiddles", 0, [], ext(r), ext(n), domain=domain, form=form)
        except ValueError:
            raise bad from None

    def __str__(self):
        def e(x):
            return "?" if x is None else str(x)
        b = "[" + ", ".join(e(x) for x in self.batch) + "]"
        if self.kind == "key":
            s = "key<%s, 2, %s, %s>" % (e(self.digits), e(self.rows), e(self.n))
        elif self.kind == "twiddles":
            s = "twiddles<%s, %s>" % (e(self.rows), e(self.n))
        elif self.kind == "table":
            return "table<%s>" % e(self.n)
        elif self.comps:
            s = "ct<%d, %s, %s, %s>" % (self.comps, b, e(self.rows), e(self.n))
        else:
            s = "pt<%s, %s, %s>" % (b, e(self.rows), e(self.n))
        return " ".join(x for x in (s, self.domain, self.form) if x)

    def __repr__(self):
        return "fhjit.Type(%r)" % str(self)

    def __eq__(self, other):
        return isinstance(other, Type) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


def ct(comps, batch, rows, n, domain=None, form=None):
    """A ciphertext type ct<comps, [batch...], rows, n> (None: unknown)."""
    return Type("poly", comps, batch, rows, n, domain=domain, form=form)


def pt(batch, rows, n, domain=None, form=None):
    """A plaintext type pt<[batch...], rows, n> (no component axis)."""
    return Type("poly", 0, batch, rows, n, domain=domain, form=form)


def key(digits, rows, n, domain=None, form=None):
    """A key-switching table type key<digits, 2, rows, n>."""
    return Type("key", 2, [], rows, n, digits=digits, domain=domain, form=form)


def twiddles(rows, n):
    """An NTT twiddle table type twiddles<rows, n> (rows by chain position)."""
    return Type("twiddles", 0, [], rows, n)


def table(n):
    """A constant table type table<n> (SPEC section 7: the constants of a
    bconv, rescale, modup or moddown; fhjit.input_table builds them)."""
    return Type("table", 0, [], 1, n)


class View:
    """A layout to bind an input to without data: a shape and element
    strides (None: dense) from an element offset. Graph.bind() takes these
    where it takes arrays."""

    __slots__ = ("shape", "strides", "offset")

    def __init__(self, shape, strides=None, offset=0):
        self.shape = tuple(int(x) for x in shape)
        if strides is None:
            strides, acc = [], 1
            for x in reversed(self.shape):
                strides.insert(0, acc)
                acc *= x
        self.strides = tuple(int(x) for x in strides)
        self.offset = int(offset)


# ------------------------------------------------------------------- values

class Value:
    """An SSA value of a graph. Operators: a + b (add), a - b (sub), a * b
    (mul, the Montgomery product), -a (neg), v[j] (extract). Every operation
    of OPS is also a method (v.add_lazy(w), v.to_mont(), ...)."""

    __slots__ = ("graph", "id")

    def __init__(self, graph, vid):
        self.graph = graph
        self.id = vid

    @property
    def name(self):
        with self.graph._ctx.lock:
            return lib.fhjit_value_name(self.graph.handle(), self.id).decode()

    @property
    def type(self):
        """The value's type (bound extents once the graph is bound)."""
        t = _lib.CType()
        with self.graph._ctx.lock:
            self.graph._check(lib.fhjit_value_type(self.graph.handle(), self.id, t))
        return Type.from_c(t)

    @property
    def basis(self):
        """The chain positions of the value's rows (fhjit_value_basis), a list
        of ints: the bound basis, so the graph must be bound (bind() or
        run()); [0, rows) unless stated on an input or made by a section 7
        operation. Raises for tables and twiddles."""
        import ctypes
        g = self.graph
        with g._ctx.lock:
            h = g.handle()
            cnt = ctypes.c_int32()
            g._check(lib.fhjit_value_basis(h, self.id, None, 0, ctypes.byref(cnt)))
            out = (ctypes.c_int32 * max(1, cnt.value))()
            g._check(lib.fhjit_value_basis(h, self.id, out, cnt.value, ctypes.byref(cnt)))
        return [int(out[r]) for r in range(cnt.value)]

    def output(self, name=None):
        """Marks the value as a graph output (see Graph.output)."""
        self.graph.output(self, name)
        return self

    def rename(self, name):
        with self.graph._ctx.lock:
            self.graph._check(lib.fhjit_set_name(self.graph.handle(), self.id, name.encode()))
            self.graph._changed()
        return self

    def __add__(self, other):
        return add(self, other)

    def __sub__(self, other):
        return sub(self, other)

    def __mul__(self, other):
        return mul(self, other)

    def __neg__(self):
        return neg(self)

    def __getitem__(self, j):
        return extract(self, j)

    def __iter__(self):
        raise TypeError("fhjit values are not iterable (use v[j] to extract a component)")

    def __repr__(self):
        try:
            return "<fhjit.Value %%%s: %s>" % (self.name, self.type)
        except FhjitError:
            return "<fhjit.Value #%d of a closed graph>" % self.id


# -------------------------------------------------------------------- graph

class Graph:
    """An fhjit expression graph (fhjit_graph).

        g = fhjit.Graph("tp", "r62", moduli=[...])
        a = g.input("a", "ct<2, [], 2, 4096> ntt mont")
        g.output(a[0] * a[1], "p")
        out = g.run(data, params=table)     # numpy: host; torch/CUDA: GPU

    Each graph has a private context unless `context=` names a shared one.
    Running binds the graph's inputs to the arrays given (shape and
    strides), compiles once per binding (and per CUDA context) and
    launches; see run()."""

    def __init__(self, name="graph", radix="r62", moduli=None, context=None, special=None,
                 digits=None):
        own = context is None
        ctx = Context() if own else context
        with ctx.lock:
            h = lib.fhjit_graph_create(ctx.handle(), str(name).encode(), _radix(radix))
            if not h:
                err = ctx.error()
                if own:
                    ctx.close()
                raise err
        self._init(ctx, h, own)
        if moduli is not None:
            self.set_moduli(moduli)
        if special is not None:
            self.set_special(special)
        if digits is not None:
            self.set_digits(digits)

    @classmethod
    def _wrap(cls, ctx, h, own):
        g = cls.__new__(cls)
        g._init(ctx, h, own)
        return g

    def _init(self, ctx, h, own):
        self._ctx = ctx
        self._h = h
        self._own = own
        ctx._graphs.add(self)
        self._forget()

    def _forget(self):
        """Drops everything derived from the graph's current state."""
        self._plans = {}      # binding key -> runtime plan (see _run.py)
        self._raw_plans = {}  # arrays' raw views -> plan (GPU launches)
        self._bound_key = None
        self._host_params = None
        self._meta_cache = None
        self._fast = []       # recent GPU launches' fast paths (see _run.py)

    def _changed(self):
        self._forget()

    # -- plumbing
    @property
    def context(self):
        return self._ctx

    def handle(self):
        """The fhjit_graph pointer (an int); raises when the graph or its
        context is closed."""
        h = self._h
        if h is None:
            raise FhjitError("FHJIT_ERR_ARGUMENT", "the graph is closed (its fhjit context "
                             "was closed)")
        return h

    def _check(self, code):
        if code:
            raise self._ctx.error(code)

    def _value_or_raise(self, v):
        if v < 0:
            raise self._ctx.error()
        return Value(self, v)

    def close(self):
        """Destroys the graph (and its private context)."""
        self._close(False)

    def _close(self, collected):
        with self._ctx.lock:
            if self._h is None:
                return
            if self._own:
                self._ctx._close(collected)
            else:
                h, self._h = self._h, None
                self._ctx._graphs.discard(self)
                self._forget()
                lib.fhjit_graph_destroy(h)

    def __del__(self):
        try:
            self._close(True)
        except Exception:
            pass

    # -- facts
    @property
    def name(self):
        with self._ctx.lock:
            return lib.fhjit_graph_name(self.handle()).decode("utf-8", "replace")

    @property
    def radix(self):
        """"r32" or "r62"."""
        with self._ctx.lock:
            return RADIX_NAMES[lib.fhjit_graph_radix(self.handle())]

    @property
    def word_bytes(self):
        return WORD_BYTES[RADICES[self.radix]]

    @property
    def moduli(self):
        with self._ctx.lock:
            h = self.handle()
            n = lib.fhjit_graph_num_moduli(h)
            p = lib.fhjit_graph_moduli(h)
            return [int(p[i]) for i in range(n)]

    def set_moduli(self, moduli):
        import ctypes
        m = [int(q) for q in moduli]
        arr = (ctypes.c_uint64 * max(1, len(m)))(*m)
        with self._ctx.lock:
            self._check(lib.fhjit_graph_set_moduli(self.handle(), arr, len(m)))
            self._changed()

    @property
    def special(self):
        """K, the number of special primes (SPEC section 7): the chain's last
        K positions are P; 0 when not stated. Text: special(K)."""
        with self._ctx.lock:
            return int(lib.fhjit_graph_num_special(self.handle()))

    def set_special(self, count):
        """States the special primes: the chain's last `count` positions
        (fhjit_graph_set_special; the moduli first, 1 <= count < M)."""
        with self._ctx.lock:
            self._check(lib.fhjit_graph_set_special(self.handle(), _int32(count, "special")))
            self._changed()

    @property
    def digits(self):
        """alpha, the positions per key digit (SPEC section 7): digit j is
        [j*alpha, min((j+1)*alpha, M-K)); 0 when not stated. Text: digits(alpha)."""
        with self._ctx.lock:
            return int(lib.fhjit_graph_digit_size(self.handle()))

    def set_digits(self, alpha):
        """States the key's digit size (fhjit_graph_set_digits; the moduli
        first, 1 <= alpha <= M - K)."""
        with self._ctx.lock:
            self._check(lib.fhjit_graph_set_digits(self.handle(), _int32(alpha, "digits")))
            self._changed()

    @property
    def inputs(self):
        """The inputs, in declaration order (the order of run()'s arrays)."""
        with self._ctx.lock:
            h = self.handle()
            return [Value(self, lib.fhjit_input_value(h, i))
                    for i in range(lib.fhjit_num_inputs(h))]

    @property
    def input_names(self):
        return [v.name for v in self.inputs]

    @property
    def output_names(self):
        """Output names in order (read from the canonical text)."""
        return [m.group(2) or m.group(1)
                for m in re.finditer(r"^  output %(\S+)(?: as (\S+))?$", str(self), re.M)]

    def __getitem__(self, name):
        """The value or input called `name` (with or without the %)."""
        name = name[1:] if name.startswith("%") else name
        with self._ctx.lock:
            v = lib.fhjit_find_value(self.handle(), name.encode())
        if v < 0:
            raise KeyError(name)
        return Value(self, v)

    def __len__(self):
        with self._ctx.lock:
            return lib.fhjit_num_values(self.handle())

    # -- building
    def input(self, name, type, basis=None):
        """Declares an input (a Type, or its text: "pt<[], 2, 4096> ntt mont").
        basis: the chain positions of a polynomial input's rows (SPEC section
        7; distinct, one per row, below the chain's length), e.g. [2, 0];
        None: [0, rows) (fhjit_input_basis)."""
        t = Type.parse(type) if isinstance(type, str) else type
        with self._ctx.lock:
            h = self.handle()
            if basis is not None:
                arr, cnt = _positions(basis, "basis of input %" + str(name))
                self._try_basis(str(name), t, arr, cnt)
            v = lib.fhjit_input(h, str(name).encode(), t.to_c())
            self._changed()
            val = self._value_or_raise(v)
            if basis is not None:
                self._check(lib.fhjit_input_basis(h, val.id, arr, cnt))
            return val

    def _try_basis(self, name, t, arr, cnt):
        """Raises fhjit's error for a basis the input would refuse, before the
        input is declared (fhjit_input_basis comes after fhjit_input, and a
        declared input cannot be taken back): the same calls on a scratch
        graph of the same name, chain and special primes."""
        import ctypes
        ctx = self._ctx.handle()
        s = lib.fhjit_graph_create(ctx, self.name.encode(), RADICES[self.radix])
        if not s:
            raise self._ctx.error()
        try:
            m = self.moduli
            if m:
                marr = (ctypes.c_uint64 * len(m))(*m)
                self._check(lib.fhjit_graph_set_moduli(s, marr, len(m)))
            v = lib.fhjit_input(s, name.encode(), t.to_c())
            if v < 0:
                raise self._ctx.error()
            self._check(lib.fhjit_input_basis(s, v, arr, cnt))
        finally:
            lib.fhjit_graph_destroy(s)

    def output(self, value, name=None):
        """Marks `value` as an output under `name` (None: the value's name).
        Returns the value."""
        self._own_value(value, "output")
        with self._ctx.lock:
            self._check(lib.fhjit_output(self.handle(), value.id,
                                         None if name is None else str(name).encode()))
            self._changed()
        return value

    def _own_value(self, v, what):
        if not isinstance(v, Value):
            raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: expected an fhjit.Value, got %s"
                             % (what, type(v).__name__))
        if v.graph is not self:
            raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: value %%%s belongs to graph @%s, "
                             "not @%s" % (what, v.name, v.graph.name, self.name))

    # -- text
    def text(self):
        """The canonical .fh text (fhjit_print)."""
        with self._ctx.lock:
            s = lib.fhjit_print(self.handle())
            if s is None:
                raise self._ctx.error()
            return s.decode("utf-8", "replace")

    __str__ = text

    def dot(self):
        """Graphviz text (fhjit_print_dot)."""
        with self._ctx.lock:
            s = lib.fhjit_print_dot(self.handle())
            if s is None:
                raise self._ctx.error()
            return s.decode("utf-8", "replace")

    def __repr__(self):
        if self._h is None:
            return "<fhjit.Graph (closed)>"
        return "<fhjit.Graph @%s %s, %d values%s>" % (self.name, self.radix, len(self),
                                                      ", bound" if self.is_bound else "")

    # -- binding
    @property
    def is_bound(self):
        with self._ctx.lock:
            return bool(lib.fhjit_is_bound(self.handle()))

    def bind(self, *arrays, **named):
        """Binds the inputs, each to the shape and strides of an array (numpy,
        torch, anything with __cuda_array_interface__ or __dlpack__) or of a
        View, given in declaration order or by name; inputs not given keep
        their declared extents (or a layout from the text). With nothing
        given, binds the declared extents densely. Returns self."""
        _run.bind_explicit(self, arrays, named)
        return self

    def hash(self):
        """The 128-bit canonical hash of the bound graph (fhjit_graph_hash)."""
        import ctypes
        out = (ctypes.c_uint64 * 2)()
        with self._ctx.lock:
            self._check(lib.fhjit_graph_hash(self.handle(), out))
        return (int(out[0]) << 64) | int(out[1])

    @property
    def results(self):
        """Types of the materialised results of the bound graph (the dense
        buffers a run writes, in order)."""
        out = []
        with self._ctx.lock:
            h = self.handle()
            if not lib.fhjit_is_bound(h):
                raise FhjitError("FHJIT_ERR_ARGUMENT", "graph @%s is not bound (call bind() "
                                 "or run())" % self.name)
            for k in range(lib.fhjit_num_results(h)):
                t = _lib.CType()
                self._check(lib.fhjit_result_type(h, k, t))
                out.append(Type.from_c(t))
        return out

    def emit(self, kind="ptx", arch=None):
        """Text of the GPU kernels of the bound graph: kind "llvm", "llvm-opt",
        "ptx" or "plan" (the kernel plan); arch "sm_90" (None: sm_90)."""
        kinds = {"llvm": 0, "llvm-opt": 1, "ptx": 2, "plan": 3}
        with self._ctx.lock:
            s = lib.fhjit_emit(self.handle(), _choice(kinds, "emit kind", kind),
                               None if arch is None else arch.encode())
            if s is None:
                raise self._ctx.error()
            return s.decode()

    # -- SPEC section 7's constants (fhjit/rns.py)
    def input_table(self, index):
        """The table input `index` (number, name or Value) of the bound graph
        needs, from its chain (fhjit.input_table)."""
        from . import rns
        return rns.input_table(self, index)

    def twiddle_use(self, index):
        """"forward", "inverse", "both" or None: how the bound graph reads
        input `index` as twiddles (fhjit.twiddle_use)."""
        from . import rns
        return rns.twiddle_use(self, index)

    def constants(self):
        """{input name: array} for every table and twiddle input of the bound
        graph, built from its chain (fhjit.graph_constants)."""
        from . import rns
        return rns.graph_constants(self)

    # -- running (fhjit/_run.py)
    def run(self, *inputs, params=None, out=None, backend=None, stream=None, threads=0,
            rebind=True, copy=False, pointer_checks=True, target=None):
        """Runs the graph and returns its outputs: the one output, or a tuple
        in output order (self.output_names).

        inputs: one array per input in declaration order, or one dict
            {name: array}. numpy arrays (uint32/int32 for r32, uint64/int64
            for r62, any non-negative strides, broadcast views) run on the
            host; objects with __cuda_array_interface__ or __dlpack__ (torch,
            CuPy) run on the GPU, zero-copy.
        params: the [8, rows] parameter table (fhjit.param_table), on the
            same side as the inputs (column stride 1; its row stride is the
            pstride). Host runs may leave it out when the graph has moduli.
        out: preallocated results: an array (one result), a sequence in
            result order (None entries are allocated), or a dict by output
            name; each dense [C, *batch, rows, n]. Others are allocated
            (numpy on the host, torch tensors on the GPU).
        backend: None (from the arrays), "host", "interp" (the reference
            interpreter), or "cuda".
        stream: GPU only: a CUstream handle (int), a torch/CuPy stream, or
            None for torch's current stream of the inputs' device (CuPy's
            current stream, or the legacy default stream, for other arrays).
        threads: host threads (0: automatic).
        rebind: False: refuse arrays whose shapes or strides differ from the
            current binding instead of rebinding.
        copy: host only: copy arrays numpy cannot hand over as they are
            (negative strides, misaligned) instead of raising.
        pointer_checks: False skips the driver's per-pointer checks
            (FHJIT_CUDA_NO_POINTER_CHECKS).
        target: GPU target ("sm_90"; None: the device's).
        """
        if self._fast and rebind and (backend is None or backend == "cuda"):
            # a GPU launch like a recent one: _run.py's fast paths
            with self._ctx.lock:
                fl = self._fast
                for f in fl:
                    r = f(self, inputs, params, out, stream, pointer_checks, target)
                    if r is not _run._MISS:
                        if f is not fl[0]:  # most recently used first
                            fl.remove(f)
                            fl.insert(0, f)
                        return r
        return _run.run(self, inputs, params, out, backend, stream, threads, rebind, copy,
                        pointer_checks, target)

    __call__ = run

    def compile(self, *inputs, backend="cuda", target=None, stream=None):
        """Binds to the arrays (or Views) given and compiles for that binding
        without running: for the GPU, loads the kernels in the current (or
        the arrays' device's) CUDA context, e.g. before a CUDA graph capture.
        Returns a dict of the compile's facts (source, timings)."""
        return _run.compile_only(self, inputs, backend, target, stream)


# ------------------------------------------------------------------ parsing

def parse(text, filename="<string>", context=None):
    """Parses .fh text into a Graph (errors carry file:line:col and a caret)."""
    own = context is None
    ctx = Context() if own else context
    data = text.encode() if isinstance(text, str) else bytes(text)
    with ctx.lock:
        h = lib.fhjit_parse(ctx.handle(), data, len(data), str(filename).encode())
        if not h:
            err = ctx.error()
            if own:
                ctx.close()
            raise err
        return Graph._wrap(ctx, h, own)


def load(path, context=None):
    """Parses the .fh file at `path`."""
    with open(path, "rb") as f:
        return parse(f.read(), str(path), context)


# --------------------------------------------------------------- operations

class _Param:
    __slots__ = ("name", "kind", "default", "choices", "kwonly")
    REQUIRED = inspect.Parameter.empty

    def __init__(self, name, kind, default=inspect.Parameter.empty, choices=None,
                 kwonly=False):
        self.name, self.kind, self.default = name, kind, default
        self.choices, self.kwonly = choices, kwonly


def V(name):  # a value operand
    return _Param(name, "value")


def OPTV(name):  # a value operand that may be None (FHJIT_NO_VALUE)
    return _Param(name, "optvalue", None, kwonly=True)


def VALUES(name):  # variadic values: (count, array)
    return _Param(name, "values")


def POSITIONS(name):  # a list of chain positions: (array, count)
    return _Param(name, "positions")


def GALOIS_LIST(name):  # a list of Galois elements: (count, int64 array)
    return _Param(name, "i64s")


def VALUE_LIST(name, like):  # a list of values, as long as list parameter `like`: array
    p = _Param(name, "valuelist")
    p.choices = like
    return p


def I32(name, kwonly=False):
    return _Param(name, "i32", kwonly=kwonly)


def I64(name, kwonly=True):
    return _Param(name, "i64", kwonly=kwonly)


def CHOICE(name, choices, default=inspect.Parameter.empty):
    return _Param(name, "choice", default, choices, kwonly=True)


class Op:
    """One graph operation: its Python name, the C builder it calls
    (fhjit.h) and its parameters in the C call's order (after the graph);
    corder, when the Python order differs (keyword-only parameters come
    last in Python), names the parameters in the C call's order. out_like:
    the builder makes several values (fhjit_ckks_rotate_hoisted): it
    returns a status and writes one value per element of list parameter
    `out_like` to a trailing array; the Python call returns them as a list."""

    def __init__(self, name, cfunc, params, doc, corder=None, out_like=None):
        self.name, self.cfunc, self.params, self.doc = name, cfunc, params, doc
        self.out_like = out_like
        by_name = {p.name: p for p in params}
        self.cparams = [by_name[n] for n in corder] if corder else list(params)
        assert sorted(p.name for p in self.cparams) == sorted(by_name)
        ps = []
        for p in params:
            if p.kind == "values":
                kind = inspect.Parameter.VAR_POSITIONAL
            elif p.kwonly:
                kind = inspect.Parameter.KEYWORD_ONLY
            else:
                kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
            ps.append(inspect.Parameter(p.name, kind, default=p.default
                                        if kind != inspect.Parameter.VAR_POSITIONAL
                                        else inspect.Parameter.empty))
        self.signature = inspect.Signature(ps)

    def __call__(self, *args, **kwargs):
        return self.call(None, args, kwargs)

    def call(self, graph, args, kwargs):
        """The builder on `graph` (None: the graph of the first Value
        operand); every Value operand must belong to it."""
        import ctypes
        try:
            b = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: %s" % (self.name, e)) from None
        b.apply_defaults()
        for p in self.params:  # lists once (any iterable, numpy arrays too)
            if p.kind in ("i64s", "valuelist"):
                b.arguments[p.name] = self._list(b.arguments[p.name], p.name)
        for p in self.params:
            if graph is not None:
                break
            vals = b.arguments[p.name]
            for v in (vals if p.kind in ("values", "valuelist") else (vals,)):
                if isinstance(v, Value):
                    graph = v.graph
                    break
        if graph is None:
            raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: no fhjit.Value operand" % self.name)
        cargs = []
        keep = []
        for p in self.cparams:
            v = b.arguments[p.name]
            if p.kind == "value":
                graph._own_value(v, self.name)
                cargs.append(v.id)
            elif p.kind == "optvalue":
                if v is None:
                    cargs.append(_lib.FHJIT_NO_VALUE)
                else:
                    graph._own_value(v, self.name)
                    cargs.append(v.id)
            elif p.kind == "values":
                for x in v:
                    graph._own_value(x, self.name)
                arr = (ctypes.c_int32 * max(1, len(v)))(*[x.id for x in v])
                keep.append(arr)
                cargs += [len(v), arr]
            elif p.kind == "positions":
                arr, cnt = _positions(v, "%s: %s" % (self.name, p.name))
                keep.append(arr)
                cargs += [arr, cnt]
            elif p.kind == "i64s":
                arr = (ctypes.c_int64 * max(1, len(v)))(*[self._int(x, p.name, 64) for x in v])
                keep.append(arr)
                cargs += [len(v), arr]
            elif p.kind == "valuelist":
                like = b.arguments[p.choices]
                if len(v) != len(like):
                    # the C builder reads one per element of `like`
                    raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: %d %s for %d %s"
                                     % (self.name, len(v), p.name, len(like), p.choices))
                for x in v:
                    graph._own_value(x, self.name)
                arr = (ctypes.c_int32 * max(1, len(v)))(*[x.id for x in v])
                keep.append(arr)
                cargs.append(arr)
            elif p.kind == "choice":
                cargs.append(_choice(p.choices, "%s of %s" % (p.name, self.name), v))
            else:
                cargs.append(self._int(v, p.name, 64 if p.kind == "i64" else 32))
        if self.out_like is not None:
            count = len(b.arguments[self.out_like])
            res = (ctypes.c_int32 * max(1, count))()
            cargs.append(res)
        with graph._ctx.lock:
            r = getattr(lib, self.cfunc)(graph.handle(), *cargs)
            graph._changed()
            if self.out_like is None:
                return graph._value_or_raise(r)
            graph._check(r)
            return [Value(graph, res[i]) for i in range(count)]

    def _int(self, v, what, bits):
        if isinstance(v, bool) or not isinstance(v, int):
            try:
                v = int(v.__index__())
            except Exception:
                raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: %s must be an integer, "
                                 "got %r" % (self.name, what, v)) from None
        if not -(1 << (bits - 1)) <= v < 1 << (bits - 1):
            raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: %s = %d does not fit %d bits"
                             % (self.name, what, v, bits))
        return v

    def _list(self, v, what):
        if isinstance(v, (str, bytes, Value)) or not hasattr(v, "__iter__"):
            raise FhjitError("FHJIT_ERR_ARGUMENT", "%s: %s must be a sequence, got %r"
                             % (self.name, what, v))
        return list(v)

    def function(self):
        op = self

        def f(*args, **kwargs):
            return op(*args, **kwargs)
        f.__name__ = f.__qualname__ = self.name
        f.__signature__ = self.signature
        f.__doc__ = self.doc
        return f

    def method(self):
        """The Graph method: g.op(...) builds in g (operands of g only)."""
        op = self

        def m(graph, *args, **kwargs):
            return op.call(graph, args, kwargs)
        m.__name__ = self.name
        m.__qualname__ = "Graph." + self.name
        m.__signature__ = inspect.Signature(
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)] +
            list(self.signature.parameters.values()))
        m.__doc__ = self.doc
        return m


_LAYOUTS = COMPRESSIONS
_COMP_DOMAINS = {"coef": 1, "ntt": 2}

# The operations, in the order of docs/format.md, then SPEC section 7's
# (docs/section7.md).
OPS = [
    Op("add", "fhjit_add", [V("a"), V("b")], "a + b mod q, canonical (also a + b)."),
    Op("sub", "fhjit_sub", [V("a"), V("b")], "a - b mod q, canonical (also a - b)."),
    Op("neg", "fhjit_neg", [V("a")], "-a mod q, canonical (also -a)."),
    Op("add_lazy", "fhjit_add_lazy", [V("a"), V("b")], "a + b, minus 2q if >= 2q: lazy."),
    Op("mul", "fhjit_mul", [V("a"), V("b")],
       "The Montgomery product REDC(a*b) (also a * b)."),
    Op("to_mont", "fhjit_to_mont", [V("a")], "REDC(a * (R^2 mod q)): into Montgomery form."),
    Op("from_mont", "fhjit_from_mont", [V("a")], "REDC(a * 1): out of Montgomery form."),
    Op("mul_plain", "fhjit_mul_plain", [V("ct"), V("pt")],
       "Every component of ct times component 0 of pt (mul)."),
    Op("add_plain", "fhjit_add_plain", [V("ct"), V("pt")],
       "NTT domain: c0 = add_lazy(c0, pt), other components unchanged."),
    Op("mul_compressed", "fhjit_mul_compressed",
       [V("ct"), V("pt"), CHOICE("layout", _LAYOUTS), OPTV("implicit")],
       "Every cj = mul(cj, e), e the expanded compressed plaintext (layout "
       "'cyclic', 'contiguous' or 'strided_sparse' with implicit=)."),
    Op("add_compressed", "fhjit_add_compressed",
       [V("ct"), V("pt"), CHOICE("layout", _LAYOUTS), OPTV("implicit"),
        CHOICE("domain", _COMP_DOMAINS)],
       "domain='coef': c0 = add(c0, from_mont(e)); 'ntt': c0 = add(c0, e)."),
    Op("keyswitch_digit_product", "fhjit_keyswitch_digit_product",
       [V("d"), V("key"), I64("digit"), I64("row_start")],
       "(mul(d, k0), mul(d, k1)) with k = key[digit, :, row_start : row_start + rows, :]."),
    Op("extract", "fhjit_extract", [V("v"), I32("component")],
       "Component j of v, a view (also v[j])."),
    Op("pack", "fhjit_pack", [VALUES("parts")],
       "A 2- or 3-component value from component-less operands of equal shape."),
    Op("ntt_fwd", "fhjit_ntt", [V("x"), V("twiddles"),
                                CHOICE("mode", {"std": 0, "mont": 1}, "std")],
       "Forward negacyclic NTT (SPEC 5) with the forward twiddle table: mode 'std' "
       "takes coefficient-standard x (to_mont first), 'mont' coefficient-Montgomery."),
    Op("ntt_inv", "fhjit_ntt", [V("x"), V("twiddles"),
                                CHOICE("mode", {"mont": 2, "std": 3}, "std")],
       "Inverse NTT with the inverse table: mode 'std' gives canonical standard "
       "coefficients, 'mont' Montgomery ones."),
    # SPEC section 7: bases, limb mixing, automorphisms
    Op("rows", "fhjit_rows", [V("v"), I64("start", kwonly=False), I64("count", kwonly=False)],
       "Rows start .. start+count-1 of v, a view on that slice of v's basis."),
    Op("concat", "fhjit_concat", [V("a"), V("b")],
       "a's rows then b's, on a's basis ++ b's (disjoint; equal components, batch, n)."),
    Op("bconv", "fhjit_bconv", [V("x"), V("table"), POSITIONS("basis")],
       "Fast basis conversion of coefficient-domain x (form stated) to the chain "
       "positions `basis` (disjoint from x's): canonical, in x's form; table: a "
       "table<l + l*m> input holding fhjit.bconv_table(moduli, x's basis, basis)."),
    Op("automorphism", "fhjit_automorphism", [V("x"), I64("galois", kwonly=False)],
       "X -> X^k for k = galois, odd, 1 <= k < 2N (rotation by r slots: 5^r mod 2N; "
       "conjugation: 2N - 1); x's domain (coef or ntt) stated."),
    Op("rescale", "fhjit_rescale", [V("x"), V("fwd"), V("inv"), V("table")],
       "Divide and round by the last row's modulus: NTT-domain Montgomery x (rows >= "
       "2) onto all its basis but the last; fwd, inv the twiddle tables by chain "
       "position, table fhjit.rescale_table(moduli, x's basis)."),
    Op("modup", "fhjit_modup", [V("d"), V("fwd"), V("inv"), V("table"), I64("digit")],
       "Digit `digit` of NTT-domain Montgomery d raised to d's basis ++ P (the "
       "graph's special primes): the digit's rows kept, the others converted; "
       "table fhjit.modup_table(...) (or g.input_table).",
       corder=["d", "digit", "fwd", "inv", "table"]),  # digit is keyword-only in Python
    Op("moddown", "fhjit_moddown", [V("a"), V("fwd"), V("inv"), V("table")],
       "a on Q ++ P (P the special primes, last, in order) to Q, divided by P* "
       "(floor, minus at most K - 1); table fhjit.moddown_table(moduli, Q, P)."),
    # SPEC section 7's whole operations (docs/ckks.md): each appends the
    # primitive ops above and the table inputs they read (fill them with
    # g.constants() once bound); the graph states moduli, special and digits
    Op("keyswitch", "fhjit_keyswitch", [V("d"), V("key"), V("fwd"), V("inv")],
       "Hybrid key switch of d (one polynomial on Q, NTT domain, Montgomery form): "
       "modup per non-empty digit, digit products with key, their add_lazy sum, "
       "moddown: a 2-component value on Q. key: key<digits, 2, M, N>, rows by chain "
       "position; fwd, inv: twiddle tables [M, N]."),
    Op("ckks_relinearize", "fhjit_ckks_relinearize", [V("ct3"), V("rlk"), V("fwd"), V("inv")],
       "(d0, d1, d2) -> pack(d0, d1) + keyswitch(d2, rlk)."),
    Op("ckks_rescale", "fhjit_ckks_rescale", [V("ct"), V("fwd"), V("inv")],
       "rescale of every component of ct (one rescale table input added)."),
    Op("ckks_mul_relin_rescale", "fhjit_ckks_mul_relin_rescale",
       [V("a"), V("b"), V("rlk"), V("fwd"), V("inv")],
       "HMult: the tensor product (d0, d1, d2) of 2-component a, b, then "
       "rescale(pack(d0, d1) + keyswitch(d2, rlk))."),
    Op("ckks_rotate", "fhjit_ckks_rotate", [V("ct"), I64("k", kwonly=False), V("gk"),
                                            V("fwd"), V("inv")],
       "Rotation by Galois element k (odd, 1 <= k < 2N; conjugation 2N - 1): "
       "(k0, k1) = keyswitch(automorphism(c1, k), gk); pack(automorphism(c0, k) + k0, k1)."),
    Op("ckks_rotate_hoisted", "fhjit_ckks_rotate_hoisted",
       [V("ct"), GALOIS_LIST("ks"), VALUE_LIST("keys", "ks"), V("fwd"), V("inv")],
       "Hoisted rotations: one modup of c1 per digit shared by all; rotation i by "
       "Galois element ks[i] with key keys[i] (as ckks_rotate). Returns the list "
       "of the 2-component results, one per element of ks.", out_like="ks"),
]

_globals = globals()
for _op in OPS:
    _fn = _op.function()
    _globals[_op.name] = _fn
    __all__.append(_op.name)
    if _op.params[0].kind == "value":
        setattr(Value, _op.name, _fn)
    # g.keyswitch(d, ...): the same builder, on operands of g
    assert not hasattr(Graph, _op.name), _op.name
    setattr(Graph, _op.name, _op.method())
del _globals, _op, _fn

from . import _run  # noqa: E402 (it imports this module's names)
