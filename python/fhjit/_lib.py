"""_lib.py: finds and loads libfhjit through ctypes, declares its C types and
function prototypes (include/fhjit/fhjit.h, fhjit_cuda.h), and defines the
package's one exception class, FhjitError.

The library is looked for, in this order: the path in $FHJIT_LIBRARY (when
set, the only candidate), then next to this package (fhjit/libfhjit.so*),
then the system's search path (libfhjit.so.0, libfhjit.so, then
ctypes.util.find_library). It is loaded at the first call that needs it, so
`import fhjit` works without it; a failure names every candidate tried and
why it failed.
"""
import ctypes
import ctypes.util
import os
import threading

__all__ = ["FhjitError", "lib", "STATUS_NAMES"]

# fhjit_status, in enum order (fhjit.h).
STATUS_NAMES = (
    "FHJIT_OK", "FHJIT_ERR_ARGUMENT", "FHJIT_ERR_PARSE", "FHJIT_ERR_TYPE",
    "FHJIT_ERR_SHAPE", "FHJIT_ERR_MODULUS", "FHJIT_ERR_UNSUPPORTED",
    "FHJIT_ERR_LLVM", "FHJIT_ERR_TARGET", "FHJIT_ERR_NO_DRIVER",
    "FHJIT_ERR_CUDA", "FHJIT_ERR_MEMORY", "FHJIT_ERR_IO")
# The one status of the package's own: the library could not be loaded.
ERR_LIBRARY = "FHJIT_ERR_LIBRARY"

# The library major.minor this package speaks to (fhjit.h FHJIT_VERSION_*).
ABI_VERSION = (0, 1)


class FhjitError(Exception):
    """Every error of the package.

    status: the fhjit_status name ("FHJIT_ERR_SHAPE", ...), or
        "FHJIT_ERR_LIBRARY" when libfhjit itself could not be loaded.
    message: fhjit's located message (fhjit_last_error), or the package's
        own for checks made in Python before anything reaches the library
        (those use the status the C library would have used).
    """

    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status = status
        self.message = message


# ------------------------------------------------------------------ C types

class CType(ctypes.Structure):
    """fhjit_type."""
    _fields_ = [("kind", ctypes.c_int), ("comps", ctypes.c_int32),
                ("nbatch", ctypes.c_int32), ("batch", ctypes.c_int64 * 4),
                ("digits", ctypes.c_int64), ("rows", ctypes.c_int64),
                ("n", ctypes.c_int64), ("domain", ctypes.c_int),
                ("form", ctypes.c_int)]


class CLayout(ctypes.Structure):
    """fhjit_layout (element offsets and strides)."""
    _fields_ = [("offset", ctypes.c_int64), ("comp_stride", ctypes.c_int64),
                ("batch_stride", ctypes.c_int64 * 4),
                ("digit_stride", ctypes.c_int64), ("row_stride", ctypes.c_int64),
                ("index_stride", ctypes.c_int64)]


class OutputInfo(ctypes.Structure):
    """fhjit_output_info."""
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_int32),
                ("is_input_alias", ctypes.c_int32), ("source", ctypes.c_int32),
                ("component", ctypes.c_int32), ("type", CType), ("layout", CLayout)]


class CudaOptions(ctypes.Structure):
    """fhjit_cuda_options."""
    _fields_ = [("target", ctypes.c_char_p), ("flags", ctypes.c_uint32),
                ("device", ctypes.c_int32)]


class CudaArgs(ctypes.Structure):
    """fhjit_cuda_args."""
    _fields_ = [("params", ctypes.c_uint64), ("pstride", ctypes.c_int64),
                ("inputs", ctypes.c_void_p), ("ninputs", ctypes.c_int32),
                ("results", ctypes.c_void_p), ("nresults", ctypes.c_int32),
                ("scratch", ctypes.c_void_p), ("stream", ctypes.c_void_p),
                ("options", ctypes.POINTER(CudaOptions))]


class CudaCompileInfo(ctypes.Structure):
    """fhjit_cuda_compile_info."""
    _fields_ = [("source", ctypes.c_int), ("disk_rejected", ctypes.c_int32),
                ("disk_written", ctypes.c_int32), ("target", ctypes.c_char * 16),
                ("nkernels", ctypes.c_int32), ("scratch_bytes", ctypes.c_int64),
                ("lower_ms", ctypes.c_double), ("link_ms", ctypes.c_double),
                ("load_ms", ctypes.c_double), ("disk_ms", ctypes.c_double),
                ("total_ms", ctypes.c_double), ("disk_note", ctypes.c_char * 384)]


FHJIT_NO_VALUE = -1
FHJIT_UNKNOWN = -1
FHJIT_CUDA_NO_DISK_CACHE = 1
FHJIT_CUDA_NO_POINTER_CHECKS = 2

_P = ctypes.c_void_p
_I32 = ctypes.c_int32
_I64 = ctypes.c_int64
_INT = ctypes.c_int
_STR = ctypes.c_char_p
_U64P = ctypes.POINTER(ctypes.c_uint64)
_TYPEP = ctypes.POINTER(CType)
_LAYOUTP = ctypes.POINTER(CLayout)
_SIZEP = ctypes.POINTER(ctypes.c_size_t)
_I32P = ctypes.POINTER(_I32)

# name: (restype, argtypes). Pointers to graphs, contexts and kernels are
# plain c_void_p: the package keeps them as ints.
PROTOTYPES = {
    "fhjit_context_create": (_P, ()),
    "fhjit_context_destroy": (None, (_P,)),
    "fhjit_last_status": (_INT, (_P,)),
    "fhjit_last_error": (_STR, (_P,)),
    "fhjit_clear_error": (None, (_P,)),
    "fhjit_context_set_option": (_INT, (_P, _STR, _STR)),
    "fhjit_status_name": (_STR, (_INT,)),
    "fhjit_version": (_STR, ()),
    "fhjit_dense_layout": (_INT, (_TYPEP, _LAYOUTP)),
    "fhjit_type_elements": (_I64, (_TYPEP,)),
    "fhjit_graph_create": (_P, (_P, _STR, _INT)),
    "fhjit_graph_destroy": (None, (_P,)),
    "fhjit_graph_name": (_STR, (_P,)),
    "fhjit_graph_radix": (_INT, (_P,)),
    "fhjit_graph_set_moduli": (_INT, (_P, _U64P, _I32)),
    "fhjit_graph_num_moduli": (_I32, (_P,)),
    "fhjit_graph_moduli": (_U64P, (_P,)),
    "fhjit_input": (_I32, (_P, _STR, _TYPEP)),
    "fhjit_add": (_I32, (_P, _I32, _I32)),
    "fhjit_sub": (_I32, (_P, _I32, _I32)),
    "fhjit_add_lazy": (_I32, (_P, _I32, _I32)),
    "fhjit_mul": (_I32, (_P, _I32, _I32)),
    "fhjit_neg": (_I32, (_P, _I32)),
    "fhjit_to_mont": (_I32, (_P, _I32)),
    "fhjit_from_mont": (_I32, (_P, _I32)),
    "fhjit_mul_plain": (_I32, (_P, _I32, _I32)),
    "fhjit_add_plain": (_I32, (_P, _I32, _I32)),
    "fhjit_mul_compressed": (_I32, (_P, _I32, _I32, _INT, _I32)),
    "fhjit_add_compressed": (_I32, (_P, _I32, _I32, _INT, _I32, _INT)),
    "fhjit_keyswitch_digit_product": (_I32, (_P, _I32, _I32, _I64, _I64)),
    "fhjit_extract": (_I32, (_P, _I32, _I32)),
    "fhjit_pack": (_I32, (_P, _I32, ctypes.POINTER(_I32))),
    "fhjit_ntt": (_I32, (_P, _I32, _I32, _INT)),
    # SPEC section 7 (docs/section7.md)
    "fhjit_graph_set_special": (_INT, (_P, _I32)),
    "fhjit_graph_num_special": (_I32, (_P,)),
    "fhjit_graph_set_digits": (_INT, (_P, _I32)),
    "fhjit_graph_digit_size": (_I32, (_P,)),
    "fhjit_input_basis": (_INT, (_P, _I32, _I32P, _I32)),
    "fhjit_value_basis": (_INT, (_P, _I32, _I32P, _I32, _I32P)),
    "fhjit_rows": (_I32, (_P, _I32, _I64, _I64)),
    "fhjit_concat": (_I32, (_P, _I32, _I32)),
    "fhjit_bconv": (_I32, (_P, _I32, _I32, _I32P, _I32)),
    "fhjit_automorphism": (_I32, (_P, _I32, _I64)),
    "fhjit_rescale": (_I32, (_P, _I32, _I32, _I32, _I32)),
    "fhjit_modup": (_I32, (_P, _I32, _I64, _I32, _I32, _I32)),
    "fhjit_moddown": (_I32, (_P, _I32, _I32, _I32, _I32)),
    # SPEC section 7's whole operations (docs/ckks.md)
    "fhjit_keyswitch": (_I32, (_P, _I32, _I32, _I32, _I32)),
    "fhjit_ckks_relinearize": (_I32, (_P, _I32, _I32, _I32, _I32)),
    "fhjit_ckks_rescale": (_I32, (_P, _I32, _I32, _I32)),
    "fhjit_ckks_mul_relin_rescale": (_I32, (_P, _I32, _I32, _I32, _I32, _I32)),
    "fhjit_ckks_rotate": (_I32, (_P, _I32, _I64, _I32, _I32, _I32)),
    "fhjit_ckks_rotate_hoisted": (_INT, (_P, _I32, _I32, ctypes.POINTER(_I64), _I32P, _I32,
                                         _I32, _I32P)),
    "fhjit_bconv_table_size": (_I64, (_I32, _I32)),
    "fhjit_bconv_table": (_INT, (_P, _INT, _U64P, _I32, _I32P, _I32, _I32P, _I32, _P)),
    "fhjit_rescale_table": (_INT, (_P, _INT, _U64P, _I32, _I32P, _I32, _P)),
    "fhjit_moddown_table": (_INT, (_P, _INT, _U64P, _I32, _I32P, _I32, _I32P, _I32, _P)),
    "fhjit_input_table": (_INT, (_P, _I32, _P, ctypes.POINTER(_I64))),
    "fhjit_input_twiddle_use": (_INT, (_P, _I32, ctypes.POINTER(_INT))),
    "fhjit_output": (_INT, (_P, _I32, _STR)),
    "fhjit_set_name": (_INT, (_P, _I32, _STR)),
    "fhjit_num_values": (_I32, (_P,)),
    "fhjit_num_inputs": (_I32, (_P,)),
    "fhjit_input_value": (_I32, (_P, _I32)),
    "fhjit_value_name": (_STR, (_P, _I32)),
    "fhjit_value_type": (_INT, (_P, _I32, _TYPEP)),
    "fhjit_find_value": (_I32, (_P, _STR)),
    "fhjit_bind_input": (_INT, (_P, _I32, _TYPEP, _LAYOUTP)),
    "fhjit_bind": (_INT, (_P,)),
    "fhjit_is_bound": (_INT, (_P,)),
    "fhjit_num_results": (_I32, (_P,)),
    "fhjit_result_type": (_INT, (_P, _I32, _TYPEP)),
    "fhjit_num_outputs": (_I32, (_P,)),
    "fhjit_output_info_get": (_INT, (_P, _I32, ctypes.POINTER(OutputInfo))),
    "fhjit_input_binding": (_INT, (_P, _I32, _TYPEP, _LAYOUTP)),
    "fhjit_graph_hash": (_INT, (_P, _U64P)),
    "fhjit_parse": (_P, (_P, _STR, ctypes.c_size_t, _STR)),
    "fhjit_print": (_STR, (_P,)),
    "fhjit_print_dot": (_STR, (_P,)),
    "fhjit_check_modulus": (_INT, (_P, _INT, ctypes.c_uint64, _I64)),
    "fhjit_param_table": (_INT, (_P, _INT, _U64P, _I32, _I64, _INT, ctypes.c_uint64,
                                 _P, _I64)),
    "fhjit_ntt_psi": (_INT, (_P, ctypes.c_uint64, _I64, _U64P)),
    "fhjit_twiddle_tables": (_INT, (_P, _INT, _U64P, _I32, _I64, _P, _P)),
    "fhjit_find_primes": (_INT, (_P, _INT, ctypes.c_uint64, _I32, _U64P)),
    "fhjit_is_prime": (_INT, (ctypes.c_uint64,)),
    "fhjit_interpret": (_INT, (_P, _P, _I64, _P, _P)),
    "fhjit_emit": (_STR, (_P, _INT, _STR)),
    "fhjit_targets": (ctypes.POINTER(_STR), ()),
    "fhjit_run_host": (_INT, (_P, _P, _I64, _P, _P, _INT)),
    # fhjit_cuda.h
    "fhjit_cuda_available": (_INT, (_P,)),
    "fhjit_cuda_compile": (_P, (_P, ctypes.POINTER(CudaOptions),
                                ctypes.POINTER(CudaCompileInfo))),
    "fhjit_cuda_launch_kernel": (_INT, (_P, _P)),
    "fhjit_cuda_launch": (_INT, (_P, _P)),
    "fhjit_cuda_kernel_info": (ctypes.POINTER(CudaCompileInfo), (_P,)),
    "fhjit_cuda_kernel_context": (_P, (_P,)),
    "fhjit_cuda_scratch_count": (_I32, (_P,)),
    "fhjit_cuda_scratch_size": (_I64, (_P, _I32)),
    "fhjit_cuda_input_bytes": (_INT, (_P, _I32, _SIZEP)),
    "fhjit_cuda_result_bytes": (_INT, (_P, _I32, _SIZEP)),
    "fhjit_cuda_current_context": (_INT, (_P, _I32, ctypes.POINTER(_P))),
    "fhjit_cuda_release_context": (_INT, (_P, _P)),
    "fhjit_cuda_alloc": (_INT, (_P, ctypes.c_size_t, _U64P)),
    "fhjit_cuda_free": (_INT, (_P, ctypes.c_uint64)),
    "fhjit_cuda_upload": (_INT, (_P, ctypes.c_uint64, _P, ctypes.c_size_t)),
    "fhjit_cuda_download": (_INT, (_P, _P, ctypes.c_uint64, ctypes.c_size_t)),
    "fhjit_cuda_driver_proc": (_P, (_P, _STR)),
}

# ------------------------------------------------------------------ loading

_lock = threading.Lock()
_lib = None
_tried = None  # the failure report of the last attempt


def _candidates():
    """(label, path) pairs in search order."""
    env = os.environ.get("FHJIT_LIBRARY")
    if env:
        return [("$FHJIT_LIBRARY", env)]
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    for name in ("libfhjit.so", "libfhjit.so.0", "libfhjit.dylib"):
        out.append(("next to the package", os.path.join(here, name)))
    for name in ("libfhjit.so.0", "libfhjit.so"):
        out.append(("the system's library path", name))
    return out


def _declare(cdll):
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(cdll, name)
        fn.restype = restype
        fn.argtypes = argtypes


def load():
    """The loaded library (a ctypes.CDLL with its prototypes declared).
    Raises FhjitError("FHJIT_ERR_LIBRARY", ...) naming every path tried."""
    global _lib, _tried
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        cands = _candidates()
        if len(cands) > 1:
            found = None
            try:
                found = ctypes.util.find_library("fhjit")
            except Exception:  # find_library runs tools; never fatal
                pass
            if found:
                cands.append(("ctypes.util.find_library", found))
        for label, path in cands:
            if os.sep in path and not os.path.exists(path):
                tried.append("%s (%s): no such file" % (path, label))
                continue
            try:
                cdll = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s): %s" % (path, label, e))
                continue
            try:
                _declare(cdll)
            except AttributeError as e:
                tried.append("%s (%s): not libfhjit, or too old: %s" % (path, label, e))
                continue
            ver = cdll.fhjit_version().decode()
            major_minor = tuple(int(x) for x in ver.split(".")[:2])
            if major_minor != ABI_VERSION:
                tried.append("%s (%s): libfhjit %s, but this package needs %d.%d.x"
                             % (path, label, ver, ABI_VERSION[0], ABI_VERSION[1]))
                continue
            _lib = cdll
            _lib.fhjit_loaded_from = os.path.abspath(path) if os.sep in path else path
            return _lib
        _tried = tried
        raise FhjitError(ERR_LIBRARY,
                         "cannot load libfhjit; tried:\n  " + "\n  ".join(tried) +
                         "\nbuild it (cmake, see README.md) and set FHJIT_LIBRARY to the "
                         "path of libfhjit.so, or install it on the system's library path")


class _LazyLib:
    """Attribute access loads the library at first use."""

    def __getattr__(self, name):
        return getattr(load(), name)


lib = _LazyLib()


def status_name(code):
    if 0 <= code < len(STATUS_NAMES):
        return STATUS_NAMES[code]
    return "FHJIT_STATUS_%d" % code


def error_from(ctx_handle, code=None):
    """The FhjitError for the last failure recorded on context ctx_handle."""
    L = load()
    if code is None:
        code = L.fhjit_last_status(ctx_handle)
    msg = L.fhjit_last_error(ctx_handle)
    msg = msg.decode("utf-8", "replace") if msg else ""
    return FhjitError(status_name(code), msg or "(no message)")
