/* fhjit.h: the public C API of libfhjit, a JIT compiler for bound RNS
 * expression graphs (the modular arithmetic of lattice FHE) to NVIDIA GPUs.
 *
 * Objects belong to a context (libgccjit's model): a graph and everything it
 * hands out (names, printed text, compiled code) live until the graph or its
 * context is destroyed. Every call reports a status; on failure the context
 * records a message that says what, where and why (fhjit_last_error). No call
 * exits or aborts on user error, and a failed call leaves the caller's data
 * untouched. A context and its graphs are used by one thread at a time
 * (but for fhjit_cuda_compile, fhjit_cuda.h); separate contexts may be
 * used from separate threads at once.
 *
 * Semantics of every operation: docs/semantics.md (SPEC.md restated). */
#ifndef FHJIT_FHJIT_H
#define FHJIT_FHJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FHJIT_API __attribute__((visibility("default")))
#else
#define FHJIT_API
#endif

#define FHJIT_VERSION_MAJOR 0
#define FHJIT_VERSION_MINOR 1
#define FHJIT_VERSION_PATCH 0
#define FHJIT_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- status */

typedef enum fhjit_status {
  FHJIT_OK = 0,
  FHJIT_ERR_ARGUMENT,    /* null pointer, out-of-range argument, API misuse */
  FHJIT_ERR_PARSE,       /* lexical or syntax error in .fh text */
  FHJIT_ERR_TYPE,        /* operand kinds, component counts, domain facts */
  FHJIT_ERR_SHAPE,       /* binding: the shape and stride rules */
  FHJIT_ERR_MODULUS,     /* a modulus unfit for the radix or the NTT */
  FHJIT_ERR_UNSUPPORTED, /* valid, but not compilable: refused with a reason */
  FHJIT_ERR_LLVM,        /* LLVM rejected the module (reported, never a crash) */
  FHJIT_ERR_TARGET,      /* unknown or unsupported GPU target */
  FHJIT_ERR_NO_DRIVER,   /* no libcuda.so.1, no device, or a driver too old */
  FHJIT_ERR_CUDA,        /* a CUDA driver call failed */
  FHJIT_ERR_MEMORY,      /* host or device out of memory */
  FHJIT_ERR_IO           /* file or cache I/O */
} fhjit_status;

typedef struct fhjit_context fhjit_context;
typedef struct fhjit_graph fhjit_graph;

/* Returns NULL only when the host is out of memory. */
FHJIT_API fhjit_context *fhjit_context_create(void);
/* Destroys every graph the context still owns. NULL is accepted. */
FHJIT_API void fhjit_context_destroy(fhjit_context *ctx);
/* The status and message of the last failed call ("" and FHJIT_OK when none). */
FHJIT_API fhjit_status fhjit_last_status(const fhjit_context *ctx);
FHJIT_API const char *fhjit_last_error(const fhjit_context *ctx);
FHJIT_API void fhjit_clear_error(fhjit_context *ctx);
FHJIT_API const char *fhjit_status_name(fhjit_status status);
FHJIT_API const char *fhjit_version(void);

/* Tuning options of a context, read by every compile of its graphs (and
 * part of their cache keys). Each one not set here is read from its
 * environment variable at every compile, as before this call existed:
 *   "ntt_plan"    FHJIT_NTT_PLAN    NTT schedule keys, "key=value,..." (docs/ntt.md)
 *   "pw_plan"     FHJIT_PW_PLAN     pointwise kernels' "V=..,U=..,T=.." (docs/runtime.md)
 *   "max_values"  FHJIT_MAX_VALUES  the compile-time bound, 1 to 10^8 (docs/limits.md)
 *   "cache"       FHJIT_CACHE       "off" (or 0, no, false): no disk cache (docs/runtime.md)
 *   "cache_dir"   FHJIT_CACHE_DIR   the disk cache's directory, an absolute path
 *   "bconv_plan"  FHJIT_BCONV_PLAN  conversion kernels' "V=..,T=..,S=..,U=.." (docs/section7.md)
 *   "ntt_schedule" FHJIT_NTT_SCHEDULE  NTTs on sm_90: "auto" (the default: two
 *                 kernels), "two_kernel", or "cluster" (one kernel per transform on
 *                 thread-block clusters, N = 2^14 .. 2^17; docs/ntt-cluster.md)
 *   "host_pipeline" FHJIT_HOST_PIPELINE  fhjit_run_host's NTT and conversion
 *                 modules: "lean" (the default: the pointwise kernel's passes,
 *                 fast to compile) or "gpu" (default<O3>, as on the GPU)
 * value "" is the default (the variable then ignored); value NULL unsets
 * the option (back to the variable). FHJIT_ERR_ARGUMENT, the option
 * unchanged, for an unknown name or a malformed value. */
FHJIT_API fhjit_status fhjit_context_set_option(fhjit_context *ctx, const char *name,
                                                const char *value);

/* ------------------------------------------------------------------ types */

typedef int32_t fhjit_value; /* an SSA value of a graph: an id >= 0 */
#define FHJIT_NO_VALUE ((fhjit_value)-1)
#define FHJIT_UNKNOWN ((int64_t)-1) /* an extent left open until binding */
#define FHJIT_MAX_BATCH 4

typedef enum fhjit_radix {
  FHJIT_R32 = 0, /* 32-bit words, R = 2^32, odd q < 2^30 */
  FHJIT_R62 = 1  /* 64-bit words, R = 2^62, odd q < 2^60 */
} fhjit_radix;

typedef enum fhjit_domain {
  FHJIT_DOMAIN_ANY = 0, /* not stated */
  FHJIT_DOMAIN_COEF,    /* coefficient representation */
  FHJIT_DOMAIN_NTT      /* evaluation (NTT) representation */
} fhjit_domain;

typedef enum fhjit_form {
  FHJIT_FORM_ANY = 0, /* not stated */
  FHJIT_FORM_STD,     /* standard residues */
  FHJIT_FORM_MONT     /* Montgomery residues (x * R mod q) */
} fhjit_form;

typedef enum fhjit_kind {
  FHJIT_KIND_POLY = 0, /* [C?, *batch, rows, n] residue polynomials */
  FHJIT_KIND_KEY,      /* key-switch table [digits, 2, key_rows, n] */
  FHJIT_KIND_TWIDDLE,  /* NTT twiddle table [rows, n] */
  FHJIT_KIND_TABLE     /* constants of a limb-mixing op [1, n] (docs/section7.md) */
} fhjit_kind;

typedef enum fhjit_compression {
  FHJIT_CYCLIC = 0,     /* p[i mod u] */
  FHJIT_CONTIGUOUS,     /* p[i / repeat] */
  FHJIT_STRIDED_SPARSE  /* p[i / repeat] if i mod repeat == 0, else implicit */
} fhjit_compression;

/* A value's type: kind, shape and domain facts. Extents may be FHJIT_UNKNOWN
 * in a graph until it is bound. */
typedef struct fhjit_type {
  fhjit_kind kind;
  int32_t comps;  /* POLY: 0 = no component axis, else 1..3. KEY: 2. */
  int32_t nbatch; /* POLY: number of batch axes, 0..FHJIT_MAX_BATCH */
  int64_t batch[FHJIT_MAX_BATCH];
  int64_t digits; /* KEY: number of digits */
  int64_t rows;   /* limbs (KEY: key_rows) */
  int64_t n;      /* last extent: N, or u for a compressed plaintext */
  fhjit_domain domain;
  fhjit_form form;
} fhjit_type;

/* Where the elements of an input live, in elements (not bytes) from the base
 * pointer passed at run time. Element (c, b..., r, i) is at
 *   offset + c*comp_stride + sum_a b_a*batch_stride[a] + r*row_stride
 *          + i*index_stride            (+ d*digit_stride for KEY tables).
 * Strides are non-negative; 0 broadcasts an axis. */
typedef struct fhjit_layout {
  int64_t offset;
  int64_t comp_stride;
  int64_t batch_stride[FHJIT_MAX_BATCH];
  int64_t digit_stride;
  int64_t row_stride;
  int64_t index_stride;
} fhjit_layout;

/* The dense row-major layout of a concrete type ([C, *batch, rows, n]; KEY:
 * [digits, 2, rows, n]). Returns FHJIT_ERR_ARGUMENT for unknown extents. */
FHJIT_API fhjit_status fhjit_dense_layout(const fhjit_type *type,
                                          fhjit_layout *out);
/* Number of elements of a concrete type, or -1. */
FHJIT_API int64_t fhjit_type_elements(const fhjit_type *type);

/* Walking a layout from the host (docs/abi.md, "Walking a layout"). The
 * axes of a concrete type, outermost first, are those of its dense layout
 * and of its numpy shape:
 *   POLY    [comp (when comps > 0), batch[0..nbatch), row, index]
 *   KEY     [digit, comp (2), row, index]
 *   TWIDDLE [row, index]
 * so the row axis is always naxes - 2 and the index axis naxes - 1. Strides
 * of axes the type lacks (comp_stride of a pt, digit_stride of all but KEY,
 * batch strides past nbatch) are ignored; a stride of 0 broadcasts its axis
 * (several elements in one place). At most FHJIT_MAX_AXES axes. */
#define FHJIT_MAX_AXES (3 + FHJIT_MAX_BATCH)

/* The type's axes in that order: extents[a] and the layout's strides[a]
 * (in elements) for a < *naxes. FHJIT_ERR_ARGUMENT for a null pointer, a
 * type that is not concrete (fhjit_type_elements < 0), or a negative offset
 * or stride of one of its axes. */
FHJIT_API fhjit_status fhjit_layout_axes(const fhjit_type *type,
                                         const fhjit_layout *layout,
                                         int64_t extents[FHJIT_MAX_AXES],
                                         int64_t strides[FHJIT_MAX_AXES],
                                         int32_t *naxes);
/* The element offset (from the base pointer) of the element at coords, one
 * coordinate per axis in the order above:
 *   offset + sum_a coords[a] * strides[a].
 * -1 when an argument is refused as by fhjit_layout_axes, a coordinate is
 * outside [0, extent), or the offset would pass INT64_MAX. */
FHJIT_API int64_t fhjit_layout_offset(const fhjit_type *type,
                                      const fhjit_layout *layout,
                                      const int64_t *coords);
/* Elements a buffer must hold from its base pointer for every element of
 * the layout: 1 + the largest offset, offset + 1 + sum_a (extents[a] - 1) *
 * strides[a]. -1 when refused as by fhjit_layout_axes or past INT64_MAX. */
FHJIT_API int64_t fhjit_layout_span(const fhjit_type *type,
                                    const fhjit_layout *layout);

/* ------------------------------------------------------------------ graphs */

FHJIT_API fhjit_graph *fhjit_graph_create(fhjit_context *ctx, const char *name,
                                          fhjit_radix radix);
FHJIT_API void fhjit_graph_destroy(fhjit_graph *g);
FHJIT_API fhjit_context *fhjit_graph_context(const fhjit_graph *g);
FHJIT_API const char *fhjit_graph_name(const fhjit_graph *g);
FHJIT_API fhjit_radix fhjit_graph_radix(const fhjit_graph *g);

/* Optional moduli for tools such as test runners (kernels read moduli from
 * the parameter table at run time). Checked against the radix. */
FHJIT_API fhjit_status fhjit_graph_set_moduli(fhjit_graph *g,
                                              const uint64_t *moduli,
                                              int32_t count);
FHJIT_API int32_t fhjit_graph_num_moduli(const fhjit_graph *g);
FHJIT_API const uint64_t *fhjit_graph_moduli(const fhjit_graph *g);

/* Builder. Each returns the new value, or FHJIT_NO_VALUE with the error
 * recorded on the context. Operand checks that need no extents happen here;
 * shape checks happen at fhjit_bind. */
FHJIT_API fhjit_value fhjit_input(fhjit_graph *g, const char *name,
                                  const fhjit_type *type);
FHJIT_API fhjit_value fhjit_add(fhjit_graph *g, fhjit_value a, fhjit_value b);
FHJIT_API fhjit_value fhjit_sub(fhjit_graph *g, fhjit_value a, fhjit_value b);
FHJIT_API fhjit_value fhjit_add_lazy(fhjit_graph *g, fhjit_value a,
                                     fhjit_value b);
FHJIT_API fhjit_value fhjit_mul(fhjit_graph *g, fhjit_value a, fhjit_value b);
FHJIT_API fhjit_value fhjit_neg(fhjit_graph *g, fhjit_value a);
FHJIT_API fhjit_value fhjit_to_mont(fhjit_graph *g, fhjit_value a);
FHJIT_API fhjit_value fhjit_from_mont(fhjit_graph *g, fhjit_value a);
FHJIT_API fhjit_value fhjit_mul_plain(fhjit_graph *g, fhjit_value ct,
                                      fhjit_value pt);
FHJIT_API fhjit_value fhjit_add_plain(fhjit_graph *g, fhjit_value ct,
                                      fhjit_value pt);
/* `implicit` is FHJIT_NO_VALUE except for FHJIT_STRIDED_SPARSE, where it is
 * the per-row value [..., rows, 1]. */
FHJIT_API fhjit_value fhjit_mul_compressed(fhjit_graph *g, fhjit_value ct,
                                           fhjit_value pt,
                                           fhjit_compression layout,
                                           fhjit_value implicit);
/* domain: FHJIT_DOMAIN_COEF or FHJIT_DOMAIN_NTT (SPEC section 3). */
FHJIT_API fhjit_value fhjit_add_compressed(fhjit_graph *g, fhjit_value ct,
                                           fhjit_value pt,
                                           fhjit_compression layout,
                                           fhjit_value implicit,
                                           fhjit_domain domain);
FHJIT_API fhjit_value fhjit_keyswitch_digit_product(fhjit_graph *g,
                                                    fhjit_value d,
                                                    fhjit_value key,
                                                    int64_t digit,
                                                    int64_t row_start);
FHJIT_API fhjit_value fhjit_extract(fhjit_graph *g, fhjit_value v,
                                    int32_t component);
FHJIT_API fhjit_value fhjit_pack(fhjit_graph *g, int32_t count,
                                 const fhjit_value *parts);
/* The negacyclic NTT of SPEC section 5 over the last axis (N a power of two,
 * 2^4 .. 2^17, each modulus q = 1 mod 2N), applied to every component, batch
 * entry and row of x. `twiddles` is a FHJIT_KIND_TWIDDLE input [rows, N]
 * holding the Montgomery-form table of fhjit_twiddle_tables: the forward
 * table for the two forward kinds, the inverse table for the inverse kinds.
 * r32 kernels may read an entry as the product of two others (docs/ntt.md),
 * exact for those tables (canonical powers of a root); fhjit_interpret
 * refuses any other r32 table. Forward kinds need x in the coefficient
 * domain and give NTT-domain Montgomery values (lazy); inverse kinds the
 * other way round. */
typedef enum fhjit_ntt_kind {
  FHJIT_NTT_COEF_STD_TO_NTT = 0,  /* to_mont, then the forward butterflies */
  FHJIT_NTT_COEF_MONT_TO_NTT = 1, /* the forward butterflies */
  FHJIT_NTT_TO_COEF_MONT = 2,     /* inverse butterflies, times N^-1 R */
  FHJIT_NTT_TO_COEF_STD = 3       /* as above, then REDC(v*1), canonical */
} fhjit_ntt_kind;
FHJIT_API fhjit_value fhjit_ntt(fhjit_graph *g, fhjit_value x, fhjit_value twiddles,
                                fhjit_ntt_kind kind);
/* Marks v as a graph output under `name` (NULL: the value's own name). A
 * value may be output under several names. */
FHJIT_API fhjit_status fhjit_output(fhjit_graph *g, fhjit_value v,
                                    const char *name);
/* Renames a value (names appear in text, diagnostics and .npy files). */
FHJIT_API fhjit_status fhjit_set_name(fhjit_graph *g, fhjit_value v,
                                      const char *name);

/* Queries. */
FHJIT_API int32_t fhjit_num_values(const fhjit_graph *g);
FHJIT_API int32_t fhjit_num_inputs(const fhjit_graph *g);
FHJIT_API fhjit_value fhjit_input_value(const fhjit_graph *g, int32_t index);
FHJIT_API const char *fhjit_value_name(const fhjit_graph *g, fhjit_value v);
FHJIT_API fhjit_status fhjit_value_type(const fhjit_graph *g, fhjit_value v,
                                        fhjit_type *out);
/* Finds an input or value by name; FHJIT_NO_VALUE when absent (no error). */
FHJIT_API fhjit_value fhjit_find_value(const fhjit_graph *g, const char *name);

/* ----------------------------------------------------------------- binding */

/* Gives input `v` concrete extents (type: NULL keeps the declared ones; kind,
 * component count, batch rank and domain facts must match the declaration,
 * known extents must be equal) and a physical layout (NULL: dense). */
FHJIT_API fhjit_status fhjit_bind_input(fhjit_graph *g, fhjit_value v,
                                        const fhjit_type *type,
                                        const fhjit_layout *layout);
/* Checks every shape rule and fixes every extent, the set of materialised
 * results and the outputs' views. Inputs not given to fhjit_bind_input keep
 * their declared extents (which must then be concrete) and a dense layout.
 * Changing a graph after binding unbinds it. */
FHJIT_API fhjit_status fhjit_bind(fhjit_graph *g);
FHJIT_API int fhjit_is_bound(const fhjit_graph *g);

/* Materialised results of a bound graph: the buffers a run writes, each dense
 * [C, *batch, rows, n] with the value's full component count. */
FHJIT_API int32_t fhjit_num_results(const fhjit_graph *g);
FHJIT_API fhjit_status fhjit_result_type(const fhjit_graph *g, int32_t index,
                                         fhjit_type *out);

typedef struct fhjit_output_info {
  const char *name;
  fhjit_value value;
  int32_t is_input_alias; /* 1: a view of input #source (no work, no copy) */
  int32_t source;         /* input index, or result index */
  int32_t component;      /* -1: the whole value; else the component viewed */
  fhjit_type type;        /* the output's own type */
  fhjit_layout layout;    /* its elements, relative to the source's base */
} fhjit_output_info;

FHJIT_API int32_t fhjit_num_outputs(const fhjit_graph *g);
FHJIT_API fhjit_status fhjit_output_info_get(const fhjit_graph *g,
                                             int32_t index,
                                             fhjit_output_info *out);
/* The input's bound type and layout. */
FHJIT_API fhjit_status fhjit_input_binding(const fhjit_graph *g, int32_t index,
                                           fhjit_type *type,
                                           fhjit_layout *layout);
/* How the NTTs of a bound graph read input `index`, so that a caller can
 * give it the right table of fhjit_twiddle_tables: *use is a mask of
 * FHJIT_TWIDDLE_FORWARD (some forward kind reads it, or a rescale, modup or
 * moddown takes it as its forward table) and FHJIT_TWIDDLE_INVERSE (some
 * inverse kind does, or one of those as its inverse table); 0 when nothing
 * reads it as twiddles. */
#define FHJIT_TWIDDLE_FORWARD 1
#define FHJIT_TWIDDLE_INVERSE 2
FHJIT_API fhjit_status fhjit_input_twiddle_use(const fhjit_graph *g,
                                               int32_t index, int *use);

/* A 128-bit canonical hash of a bound graph, for compile caches: equal for
 * the same graph however it was built or formatted; different for any
 * difference of semantics, layout or radix. Names and moduli do not count. */
FHJIT_API fhjit_status fhjit_graph_hash(const fhjit_graph *g, uint64_t out[2]);

/* --------------------------------------------------------------------- text */

/* Parses one graph from .fh text. filename is used in diagnostics
 * (file:line:col, the source line and a caret). NULL on error. */
FHJIT_API fhjit_graph *fhjit_parse(fhjit_context *ctx, const char *text,
                                   size_t length, const char *filename);
/* Canonical text; owned by the graph, valid until the next print or destroy.
 * print(parse(print(g))) == print(g) byte for byte. */
FHJIT_API const char *fhjit_print(fhjit_graph *g);
/* Graphviz text, same ownership. */
FHJIT_API const char *fhjit_print_dot(fhjit_graph *g);
/* A type as the text format spells it (docs/format.md, "Types"), the same
 * text fhjit_print writes for an input: `ct<2, [4, ?], 2, 4096> ntt mont`,
 * unknown extents as `?`, the domain word then the form word when stated
 * (a table<n> has none). Like snprintf: writes at most size bytes into buf,
 * always NUL-terminated when size > 0 (buf may be NULL when size is 0), and
 * returns the length of the whole text, not counting the NUL; a result >=
 * size means it was cut short. A NULL type gives the empty text (returns 0,
 * and no type's text is empty). A buffer of FHJIT_TYPE_TEXT_MAX bytes holds
 * the text of any type, even a malformed one (which prints without being
 * checked: an unknown kind as a polynomial, at most FHJIT_MAX_BATCH batch
 * extents, facts outside the enums left out). */
#define FHJIT_TYPE_TEXT_MAX 160
FHJIT_API size_t fhjit_type_text(const fhjit_type *type, char *buf, size_t size);

/* -------------------------------------------------------- RNS host helpers */

/* Checks one modulus for the radix (odd, non-zero, below the radix limit)
 * and, when ntt_n > 0, q = 1 mod 2*ntt_n. */
FHJIT_API fhjit_status fhjit_check_modulus(fhjit_context *ctx,
                                           fhjit_radix radix, uint64_t q,
                                           int64_t ntt_n);
/* Builds the [8, rows] parameter table of SPEC section 2 into `table`
 * (uint32_t words for r32, uint64_t for r62), row r at table + r*pstride,
 * pstride >= rows and small enough that row 7 is addressable. n: the
 * polynomial degree N (for row 7; 0 leaves it 0).
 * ntt: non-zero to require q = 1 mod 2N. scale: D for row 6. */
FHJIT_API fhjit_status fhjit_param_table(fhjit_context *ctx, fhjit_radix radix,
                                         const uint64_t *moduli, int32_t rows,
                                         int64_t n, int ntt, uint64_t scale,
                                         void *table, int64_t pstride);
/* psi of SPEC section 5 for q and N. */
FHJIT_API fhjit_status fhjit_ntt_psi(fhjit_context *ctx, uint64_t q,
                                     int64_t n, uint64_t *psi);
/* Forward and inverse twiddle tables [rows, n] in Montgomery form (words of
 * the radix). Either output may be NULL. */
FHJIT_API fhjit_status fhjit_twiddle_tables(fhjit_context *ctx,
                                            fhjit_radix radix,
                                            const uint64_t *moduli,
                                            int32_t rows, int64_t n,
                                            void *fwd, void *inv);
/* The `count` largest primes q < 2^bits with q = 1 mod m (m a power of two,
 * m >= 2), in descending order; deterministic Miller-Rabin. */
FHJIT_API fhjit_status fhjit_find_primes(fhjit_context *ctx, int bits,
                                         uint64_t m, int32_t count,
                                         uint64_t *out);
FHJIT_API int fhjit_is_prime(uint64_t q);

/* ------------------------------------------ bases and limb mixing (SPEC 7) */

/* docs/section7.md. The graph's moduli are its chain m_0 .. m_{M-1}; every
 * polynomial value lives on a basis: one distinct chain position per row
 * (default [0, rows)). The last `count` chain positions are the special
 * primes P (set the moduli first); the key's digits group Q_L = [0, M-K)
 * into runs of `alpha` positions. */
FHJIT_API fhjit_status fhjit_graph_set_special(fhjit_graph *g, int32_t count);
FHJIT_API int32_t fhjit_graph_num_special(const fhjit_graph *g);
FHJIT_API fhjit_status fhjit_graph_set_digits(fhjit_graph *g, int32_t alpha);
FHJIT_API int32_t fhjit_graph_digit_size(const fhjit_graph *g);
/* States the basis of polynomial input v: `count` distinct positions
 * (count = its rows; below the chain's length when the graph has moduli). */
FHJIT_API fhjit_status fhjit_input_basis(fhjit_graph *g, fhjit_value v,
                                         const int32_t *positions, int32_t count);
/* The bound basis of value v: *count = its rows, the first min(rows, cap)
 * positions written to out (out may be NULL with cap 0). */
FHJIT_API fhjit_status fhjit_value_basis(const fhjit_graph *g, fhjit_value v,
                                         int32_t *out, int32_t cap, int32_t *count);

/* Row views: rows start .. start+count-1 of v; a and b joined (disjoint bases). */
FHJIT_API fhjit_value fhjit_rows(fhjit_graph *g, fhjit_value v, int64_t start,
                                 int64_t count);
FHJIT_API fhjit_value fhjit_concat(fhjit_graph *g, fhjit_value a, fhjit_value b);
/* Fast basis conversion of coefficient-domain x (stated form) to `target`
 * (disjoint from x's basis); `table` a FHJIT_KIND_TABLE input holding
 * fhjit_bconv_table(x's basis -> target). Canonical, in x's form. */
FHJIT_API fhjit_value fhjit_bconv(fhjit_graph *g, fhjit_value x, fhjit_value table,
                                  const int32_t *target, int32_t count);
/* X(Y) -> X(Y^k), k odd, 1 <= k < 2N; x's domain (coef or ntt) is stated. */
FHJIT_API fhjit_value fhjit_automorphism(fhjit_graph *g, fhjit_value x, int64_t k);
/* Divide and round by the last modulus (NTT-domain Montgomery x, rows >= 2).
 * fwd, inv: twiddle tables by chain position; table: fhjit_rescale_table. */
FHJIT_API fhjit_value fhjit_rescale(fhjit_graph *g, fhjit_value x, fhjit_value fwd,
                                    fhjit_value inv, fhjit_value table);
/* Digit `digit` of d raised to d's basis ++ P (table: the bconv table from
 * the digit's rows to the other output rows, in output order). */
FHJIT_API fhjit_value fhjit_modup(fhjit_graph *g, fhjit_value d, int64_t digit,
                                  fhjit_value fwd, fhjit_value inv, fhjit_value table);
/* a on Q ++ P -> Q, divided by P* (table: fhjit_moddown_table). */
FHJIT_API fhjit_value fhjit_moddown(fhjit_graph *g, fhjit_value a, fhjit_value fwd,
                                    fhjit_value inv, fhjit_value table);

/* Constant tables (docs/section7.md gives their layouts), words of the radix,
 * built from the chain (moduli by position; pairwise coprime where mixed). */
FHJIT_API int64_t fhjit_bconv_table_size(int32_t nsrc, int32_t ndst);
FHJIT_API fhjit_status fhjit_bconv_table(fhjit_context *ctx, fhjit_radix radix,
                                         const uint64_t *chain, int32_t nchain,
                                         const int32_t *src, int32_t nsrc,
                                         const int32_t *dst, int32_t ndst, void *out);
/* basis: the input's (nbasis >= 2, the last one divided out); nbasis-1 words. */
FHJIT_API fhjit_status fhjit_rescale_table(fhjit_context *ctx, fhjit_radix radix,
                                           const uint64_t *chain, int32_t nchain,
                                           const int32_t *basis, int32_t nbasis, void *out);
/* np + np*nq + nq words. */
FHJIT_API fhjit_status fhjit_moddown_table(fhjit_context *ctx, fhjit_radix radix,
                                           const uint64_t *chain, int32_t nchain,
                                           const int32_t *q, int32_t nq, const int32_t *p,
                                           int32_t np, void *out);
/* The table input #index of a bound graph needs, built from the graph's
 * chain: *len words (out NULL: only *len). */
FHJIT_API fhjit_status fhjit_input_table(fhjit_graph *g, int32_t index, void *out,
                                         int64_t *len);

/* ------------------------------------------- whole operations (SPEC 7) */

/* Composite builders (docs/ckks.md): each appends the ops SPEC section 7
 * writes the operation as, and the constant-table inputs those ops read,
 * named after the composite ("ks12.modup0.table": its prefix, "ks", "relin",
 * "rs", "hmul", "rot" or "hrot" and the first value id it adds). Fill the
 * tables with fhjit_input_table once the graph is bound. Tables are added
 * in this order: the key switch's modup tables (non-empty digits,
 * ascending), then its moddown table, then (ckks_rescale,
 * ckks_mul_relin_rescale) the rescale table. The graph needs moduli,
 * special(K) and digits(alpha); operand bases and row counts must be known
 * when the call is made (the digits of the operand's level decide the
 * expansion). On failure nothing is added: FHJIT_NO_VALUE (or the status)
 * with the error recorded on the context. */

/* Hybrid key switch of d: one polynomial (1 component, or take extract first), NTT domain, Montgomery form, on a basis Q
 * disjoint from P. keyswitch(d,key) = pack(moddown(acc_0), moddown(acc_1)): a 2-component value on Q.
 * key: FHJIT_KIND_KEY input [digits, 2, M, N], rows by chain position (M = chain length); fwd, inv: twiddle tables [M, N].
 * Adds the table inputs it needs (one per non-empty digit's modup, one for moddown; fill them with fhjit_input_table). */
FHJIT_API fhjit_value fhjit_keyswitch(fhjit_graph *g, fhjit_value d, fhjit_value key, fhjit_value fwd, fhjit_value inv);
/* ct3 = (d0, d1, d2) -> (d0, d1) + keyswitch(d2, rlk). */
FHJIT_API fhjit_value fhjit_ckks_relinearize(fhjit_graph *g, fhjit_value ct3, fhjit_value rlk, fhjit_value fwd, fhjit_value inv);
/* Both components rescaled (adds its rescale table input). */
FHJIT_API fhjit_value fhjit_ckks_rescale(fhjit_graph *g, fhjit_value ct, fhjit_value fwd, fhjit_value inv);
/* SPEC: tensor (d0,d1,d2) of 2-component a, b; (k0,k1) = keyswitch(d2, rlk); rescale(add(d0,k0)), rescale(add(d1,k1)). */
FHJIT_API fhjit_value fhjit_ckks_mul_relin_rescale(fhjit_graph *g, fhjit_value a, fhjit_value b, fhjit_value rlk, fhjit_value fwd, fhjit_value inv);
/* SPEC rotation by Galois element k: (k0,k1) = keyswitch(automorphism(c1,k), gk); (add(automorphism(c0,k),k0), k1). Conjugation: k = 2N-1. */
FHJIT_API fhjit_value fhjit_ckks_rotate(fhjit_graph *g, fhjit_value ct, int64_t k, fhjit_value gk, fhjit_value fwd, fhjit_value inv);
/* SPEC hoisted rotations: one modup of c1 per digit shared; rotation i applies automorphism(., ks[i]) to the modup outputs
 * (all rows of Q ++ P, NTT domain) before its inner product with keys[i], then moddown, plus automorphism(c0, ks[i]). out[i]: 2-component results. */
FHJIT_API fhjit_status fhjit_ckks_rotate_hoisted(fhjit_graph *g, fhjit_value ct, int32_t count, const int64_t *ks, const fhjit_value *keys, fhjit_value fwd, fhjit_value inv, fhjit_value *out);

/* --------------------------------------------------------------- execution */

/* The reference interpreter: SPEC semantics, plainly. Host buffers of the
 * radix's word; inputs[i] is the base of input i (declaration order),
 * results[k] the dense buffer of result k. pstride: the parameter table's
 * row stride in words, at least the columns the graph reads and small
 * enough that row 7 is addressable (else FHJIT_ERR_ARGUMENT). */
FHJIT_API fhjit_status fhjit_interpret(fhjit_graph *g, const void *params,
                                       int64_t pstride,
                                       const void *const *inputs,
                                       void *const *results);

typedef enum fhjit_emit_kind {
  FHJIT_EMIT_LLVM = 0, /* LLVM IR before optimisation */
  FHJIT_EMIT_LLVM_OPT, /* LLVM IR after optimisation for the target */
  FHJIT_EMIT_PTX,      /* PTX from the NVPTX backend */
  FHJIT_EMIT_PLAN      /* the kernel plan: steps (NTTs with what fused into them,
                          conversions, pointwise kernels), kernels, scratch; no code */
} fhjit_emit_kind;

/* Text of the GPU kernels of a bound graph for `arch` ("sm_90"; NULL: sm_90).
 * Owned by the graph, valid until the next emit or destroy. Every compile
 * (here, fhjit_run_host, the CUDA runtime) is bounded: a kernel past
 * FHJIT_MAX_VALUES values is refused with FHJIT_ERR_UNSUPPORTED before
 * LLVM runs (docs/limits.md). */
FHJIT_API const char *fhjit_emit(fhjit_graph *g, fhjit_emit_kind kind,
                                 const char *arch);
/* Supported GPU targets, NULL-terminated ("sm_70", ...). */
FHJIT_API const char *const *fhjit_targets(void);

/* Runs a bound graph on the host through LLVM's ORC JIT (the same lowering as
 * the GPU path). Buffers as for fhjit_interpret. threads: 0 = automatic. */
FHJIT_API fhjit_status fhjit_run_host(fhjit_graph *g, const void *params,
                                      int64_t pstride,
                                      const void *const *inputs,
                                      void *const *results, int threads);

#ifdef __cplusplus
}
#endif
#endif
