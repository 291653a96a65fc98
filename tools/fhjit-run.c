/* fhjit-run.c: runs one .fh graph on the host JIT, the reference interpreter
 * or a CUDA GPU, with inputs from .npy files or deterministic random lazy
 * residues, and writes every output as a .npy file. --check compares the
 * backend with the reference interpreter element by element; --bench times
 * the run. Uses the public API only (links libfhjit.so).
 * Exit status: 0 success, 1 an error (input, compiler, backend, or --check
 * found mismatches), 2 bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fhjit/fhjit.h"
#include "npy.h"

#if defined(__has_include)
#if __has_include("fhjit/fhjit_cuda.h")
#include "fhjit/fhjit_cuda.h"
#define FHJIT_RUN_HAVE_CUDA 1
#endif
#endif

static const char usage_text[] =
    "usage: fhjit-run GRAPH.fh [options]\n"
    "\n"
    "Parses and binds one graph in the fhjit text format (GRAPH '-' reads\n"
    "stdin), runs it, and reports (or writes) its outputs.\n"
    "\n"
    "options:\n"
    "  --backend=host|cuda|interp  where to run: the host JIT, a CUDA GPU, or\n"
    "                      the reference interpreter (default: cuda when a CUDA\n"
    "                      driver and device are present, otherwise host)\n"
    "  --in NAME=FILE.npy  the values of input %NAME (repeatable). The shape must\n"
    "                      be the input's bound shape: [C, *batch, rows, n] (no C\n"
    "                      axis for pt), key [digits, 2, rows, n], twiddles\n"
    "                      [rows, n]; dtype uint32, uint64, int32 or int64; every\n"
    "                      element lazy (below 2q of its row). Inputs not given\n"
    "                      are random lazy residues [0, 2q) drawn with --seed\n"
    "  --seed S            seed of the random inputs (default 1)\n"
    "  --moduli q1,q2,...  the RNS moduli, one per row (default: the graph's)\n"
    "  --out-dir DIR       write each output as DIR/NAME.npy (its full shape;\n"
    "                      uint32 for r32, uint64 for r62)\n"
    "  --check             also run the reference interpreter and count the\n"
    "                      mismatching elements of every output (exit status 1\n"
    "                      if there are any)\n"
    "  --bench             time the run: the first call (with compilation) and\n"
    "                      the median of repeated calls\n"
    "  --threads=T         host threads (default 0: automatic)\n"
    "  --help              this text\n"
    "\n"
    "exit status: 0 success, 1 error (or --check mismatches), 2 bad usage\n";

typedef enum backend { B_HOST, B_CUDA, B_INTERP, B_AUTO } backend;
static const char *const backend_names[] = {"host", "cuda", "interp", "auto"};

#define MAX_IN 256

typedef struct options {
  const char *graph_path;
  backend backend;
  int nin;
  const char *in_name[MAX_IN];
  const char *in_file[MAX_IN];
  int in_used[MAX_IN];
  uint64_t seed;
  const char *moduli;
  const char *out_dir;
  int check, bench, threads;
} options;

/* Everything one run needs: the bound graph, its moduli and parameter
 * table, and host buffers of the radix's word. */
typedef struct run_state {
  fhjit_context *ctx;
  fhjit_graph *g;
  fhjit_radix radix;
  size_t word;
  int32_t rows;
  int64_t n;
  uint64_t *moduli;
  void *params;
  int64_t pstride;
  int32_t ninputs, nresults;
  void **inputs;
  int64_t *input_words;
  int64_t *result_words;
  uint64_t seed_base;
} run_state;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fhjit-run: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nusage: fhjit-run GRAPH.fh [--backend=host|cuda|interp] [--in NAME=FILE.npy]... "
                  "[--seed S] [--moduli q1,q2,...] [--out-dir DIR] [--check] [--bench]\n"
                  "(see fhjit-run --help)\n");
  return 2;
}

static int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "fhjit-run: error: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  return 1;
}

/* A library failure: messages that carry a location ("FILE:L:C: error:")
 * are printed as they are, the others with the tool's prefix. */
static int lib_error(const fhjit_context *ctx, const char *what) {
  const char *msg = fhjit_last_error(ctx);
  const char *nl = strchr(msg, '\n');
  const char *err = strstr(msg, "error: ");
  if (err && (!nl || err < nl)) fprintf(stderr, "%s\n", msg);
  else
    fprintf(stderr, "fhjit-run: error: %s%s%s (%s)\n", what ? what : "", what ? ": " : "",
            *msg ? msg : "unknown failure", fhjit_status_name(fhjit_last_status(ctx)));
  return 1;
}

static int parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return 0;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return 0;
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 1;
}

/* The value of "--opt=value" or "--opt value"; NULL when neither matches. */
static const char *option_value(int argc, char **argv, int *i, const char *opt, int *missing) {
  size_t len = strlen(opt);
  if (strncmp(argv[*i], opt, len) != 0) return NULL;
  if (argv[*i][len] == '=') return argv[*i] + len + 1;
  if (argv[*i][len] != '\0') return NULL;
  if (*i + 1 >= argc) {
    *missing = 1;
    return NULL;
  }
  return argv[++*i];
}

static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  o->backend = B_AUTO;
  o->seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int missing = 0;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return -1;
    } else if (strcmp(a, "--check") == 0) {
      o->check = 1;
    } else if (strcmp(a, "--bench") == 0) {
      o->bench = 1;
    } else if ((v = option_value(argc, argv, &i, "--backend", &missing))) {
      if (strcmp(v, "host") == 0) o->backend = B_HOST;
      else if (strcmp(v, "cuda") == 0) o->backend = B_CUDA;
      else if (strcmp(v, "interp") == 0) o->backend = B_INTERP;
      else return usage_error("unknown backend '%s' (host, cuda or interp)", v);
    } else if ((v = option_value(argc, argv, &i, "--in", &missing))) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1])
        return usage_error("--in takes NAME=FILE.npy, not '%s'", v);
      if (o->nin == MAX_IN) return usage_error("more than %d --in options", MAX_IN);
      char *name = strndup(v[0] == '%' ? v + 1 : v, (size_t)(eq - v) - (v[0] == '%'));
      if (!name) return error("out of memory");
      for (int k = 0; k < o->nin; k++)
        if (strcmp(o->in_name[k], name) == 0) {
          usage_error("--in gives input '%s' twice", name);
          free(name);
          return 2;
        }
      o->in_name[o->nin] = name;
      o->in_file[o->nin++] = eq + 1;
    } else if ((v = option_value(argc, argv, &i, "--seed", &missing))) {
      if (!parse_u64(v, &o->seed)) return usage_error("--seed takes a non-negative integer, not '%s'", v);
    } else if ((v = option_value(argc, argv, &i, "--moduli", &missing))) {
      o->moduli = v;
    } else if ((v = option_value(argc, argv, &i, "--out-dir", &missing))) {
      if (!*v) return usage_error("--out-dir needs a directory");
      o->out_dir = v;
    } else if ((v = option_value(argc, argv, &i, "--threads", &missing))) {
      uint64_t t;
      if (!parse_u64(v, &t) || t > 1024) return usage_error("--threads takes 0..1024, not '%s'", v);
      o->threads = (int)t;
    } else if (missing) {
      return usage_error("option %s needs a value", a);
    } else if (a[0] == '-' && a[1] != '\0') {
      return usage_error("unknown option '%s'", a);
    } else if (o->graph_path) {
      return usage_error("more than one graph file ('%s' and '%s')", o->graph_path, a);
    } else {
      o->graph_path = a;
    }
  }
  if (!o->graph_path) return usage_error("no graph file given");
  return 0;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 14, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    char *bigger = realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  int bad = ferror(f);
  if (f != stdin) fclose(f);
  if (!buf || bad) {
    free(buf);
    errno = bad ? EIO : ENOMEM;
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* splitmix64, seeded per input, so an input's values depend only on the
 * seed and its position, not on which other inputs come from files. */
static uint64_t next_rand(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static uint64_t rand_below(uint64_t *state, uint64_t bound) {
  return (uint64_t)(((unsigned __int128)next_rand(state) * bound) >> 64);
}

static void put_word(const run_state *s, void *buf, int64_t i, uint64_t x) {
  if (s->radix == FHJIT_R32) ((uint32_t *)buf)[i] = (uint32_t)x;
  else ((uint64_t *)buf)[i] = x;
}

static uint64_t get_word(const run_state *s, const void *buf, int64_t i) {
  return s->radix == FHJIT_R32 ? ((const uint32_t *)buf)[i] : ((const uint64_t *)buf)[i];
}

/* ------------------------------------------------------------ shapes */

/* The axes of a concrete type in type order (the .npy shape), with the
 * layout's stride of each and which one is the row axis. */
typedef struct shape {
  int ndim;
  int64_t ext[8], stride[8];
  int row_axis;
  int64_t count;
} shape;

static void shape_of(const fhjit_type *t, const fhjit_layout *l, shape *sh) {
  int k = 0;
  if (t->kind == FHJIT_KIND_KEY) {
    sh->ext[k] = t->digits, sh->stride[k++] = l->digit_stride;
    sh->ext[k] = 2, sh->stride[k++] = l->comp_stride;
  } else if (t->kind == FHJIT_KIND_POLY) {
    if (t->comps > 0) sh->ext[k] = t->comps, sh->stride[k++] = l->comp_stride;
    for (int a = 0; a < t->nbatch; a++) sh->ext[k] = t->batch[a], sh->stride[k++] = l->batch_stride[a];
  }
  sh->row_axis = k;
  sh->ext[k] = t->rows, sh->stride[k++] = l->row_stride;
  sh->ext[k] = t->n, sh->stride[k++] = l->index_stride;
  sh->ndim = k;
  sh->count = 1;
  for (int i = 0; i < k; i++) sh->count *= sh->ext[i];
}

static int64_t shape_words(const shape *sh, int64_t offset) {
  int64_t w = offset + 1;
  for (int i = 0; i < sh->ndim; i++) w += (sh->ext[i] - 1) * sh->stride[i];
  return w;
}

/* Storage offset and row of logical element e (row-major over the shape). */
static int64_t element_offset(const shape *sh, int64_t offset, int64_t e, int64_t *row) {
  int64_t off = offset;
  for (int i = sh->ndim - 1; i >= 0; i--) {
    int64_t idx = e % sh->ext[i];
    e /= sh->ext[i];
    off += idx * sh->stride[i];
    if (i == sh->row_axis && row) *row = idx;
  }
  return off;
}

static void shape_text(const shape *sh, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int i = 0; i < sh->ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)sh->ext[i]);
  if (used < size) snprintf(buf + used, size - used, sh->ndim == 1 ? ",)" : ")");
}

static void type_text(const fhjit_type *t, char *buf, size_t size) {
  char batch[96] = "";
  size_t used = 0;
  for (int a = 0; a < t->nbatch && used < sizeof batch; a++)
    used += (size_t)snprintf(batch + used, sizeof batch - used, "%s%lld", a ? ", " : "",
                             (long long)t->batch[a]);
  if (t->kind == FHJIT_KIND_KEY)
    snprintf(buf, size, "key<%lld, 2, %lld, %lld>", (long long)t->digits, (long long)t->rows,
             (long long)t->n);
  else if (t->kind == FHJIT_KIND_TWIDDLE)
    snprintf(buf, size, "twiddles<%lld, %lld>", (long long)t->rows, (long long)t->n);
  else if (t->comps)
    snprintf(buf, size, "ct<%d, [%s], %lld, %lld>", t->comps, batch, (long long)t->rows,
             (long long)t->n);
  else
    snprintf(buf, size, "pt<[%s], %lld, %lld>", batch, (long long)t->rows, (long long)t->n);
}

/* ------------------------------------------------------------ set-up */

/* rows and n of the graph: those of its materialised results and
 * polynomial inputs (the largest n: compressed plaintexts are narrower). */
static void graph_extents(run_state *s) {
  for (int32_t i = 0; i < s->ninputs; i++) {
    fhjit_type t;
    fhjit_input_binding(s->g, i, &t, NULL);
    if (t.kind == FHJIT_KIND_KEY) continue;
    if (t.rows > s->rows) s->rows = (int32_t)t.rows;
    if (t.n > s->n) s->n = t.n;
  }
  for (int32_t k = 0; k < s->nresults; k++) {
    fhjit_type t;
    fhjit_result_type(s->g, k, &t);
    if (t.rows > s->rows) s->rows = (int32_t)t.rows;
    if (t.n > s->n) s->n = t.n;
  }
}

static int setup_moduli(run_state *s, const options *o) {
  const char *gname = fhjit_graph_name(s->g);
  s->moduli = calloc((size_t)s->rows + 1, sizeof *s->moduli);
  if (!s->moduli) return error("out of memory");
  if (o->moduli) {
    int32_t count = 0;
    const char *p = o->moduli;
    for (;;) {
      const char *comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      char item[32];
      uint64_t q;
      if (len == 0 || len >= sizeof item)
        return error("--moduli '%s': expected a comma-separated list of integers", o->moduli);
      memcpy(item, p, len);
      item[len] = '\0';
      if (!parse_u64(item, &q))
        return error("--moduli '%s': '%s' is not a non-negative integer", o->moduli, item);
      if (count < s->rows) s->moduli[count] = q;
      count++;
      if (!comma) break;
      p = comma + 1;
    }
    if (count != s->rows)
      return error("--moduli gives %d moduli but graph @%s has %d rows; give exactly one "
                   "modulus per row",
                   (int)count, gname, (int)s->rows);
  } else {
    int32_t count = fhjit_graph_num_moduli(s->g);
    if (count == 0)
      return error("graph @%s states no moduli; give them with --moduli q1,...,q%d", gname,
                   (int)s->rows);
    if (count != s->rows)
      return error("graph @%s states %d moduli but has %d rows; give --moduli with one "
                   "modulus per row",
                   gname, (int)count, (int)s->rows);
    memcpy(s->moduli, fhjit_graph_moduli(s->g), sizeof *s->moduli * (size_t)count);
  }
  for (int32_t r = 0; r < s->rows; r++)
    if (fhjit_check_modulus(s->ctx, s->radix, s->moduli[r], 0) != FHJIT_OK) {
      char what[64];
      snprintf(what, sizeof what, "modulus #%d", (int)r);
      return lib_error(s->ctx, what);
    }
  s->pstride = s->rows;
  s->params = calloc((size_t)(8 * s->pstride), s->word);
  if (!s->params) return error("out of memory");
  if (fhjit_param_table(s->ctx, s->radix, s->moduli, s->rows, s->n, 0, 0, s->params,
                        s->pstride) != FHJIT_OK) {
    /* Row 7 (N^-1) only matters to NTTs: an n without an inverse modulo some
     * q is fine for pointwise graphs. */
    fhjit_clear_error(s->ctx);
    if (fhjit_param_table(s->ctx, s->radix, s->moduli, s->rows, 0, 0, 0, s->params,
                          s->pstride) != FHJIT_OK)
      return lib_error(s->ctx, "building the parameter table");
  }
  return 0;
}

/* Fills input i from a .npy file: shape and range checks, then a scatter
 * through the bound layout; a stride-0 (broadcast) slot must receive one
 * value only. */
static int load_input(run_state *s, int32_t i, const char *name, const char *path,
                      const fhjit_type *t, const fhjit_layout *l, const shape *sh,
                      uint64_t max_key) {
  char err[1024], want[128], got[128], ty[128];
  npy_array a;
  if (npy_read(path, &a, err, sizeof err)) return error("input %%%s: %s", name, err);
  shape_text(sh, want, sizeof want);
  type_text(t, ty, sizeof ty);
  int same = a.ndim == sh->ndim;
  for (int d = 0; same && d < a.ndim; d++) same = a.shape[d] == sh->ext[d];
  if (!same) {
    shape fs = {.ndim = a.ndim};
    for (int d = 0; d < a.ndim && d < 8; d++) fs.ext[d] = a.shape[d];
    if (a.ndim <= 8) shape_text(&fs, got, sizeof got);
    else snprintf(got, sizeof got, "(%d axes)", a.ndim);
    npy_free(&a);
    return error("input %%%s: %s has shape %s, but the input is %s, which needs shape %s",
                 name, path, got, ty, want);
  }
  unsigned char *written = calloc((size_t)s->input_words[i], 1);
  if (!written) {
    npy_free(&a);
    return error("out of memory");
  }
  int rc = 0;
  for (int64_t e = 0; e < sh->count && rc == 0; e++) {
    int negative;
    uint64_t x = npy_get(&a, e, &negative), row = 0;
    int64_t r = 0;
    int64_t off = element_offset(sh, l->offset, e, &r);
    row = (uint64_t)r;
    uint64_t bound = t->kind == FHJIT_KIND_KEY ? max_key : 2 * s->moduli[row];
    if (negative || x >= bound) {
      rc = error("input %%%s: element %lld of %s is %s%llu, not a lazy residue: elements must "
                 "be in [0, %llu) (2q of %s %llu)",
                 name, (long long)e, path, negative ? "-" : "",
                 (unsigned long long)(negative ? 0 - x : x), (unsigned long long)bound,
                 t->kind == FHJIT_KIND_KEY ? "the largest modulus" : "row",
                 (unsigned long long)(t->kind == FHJIT_KIND_KEY ? bound / 2 : row));
      break;
    }
    if (written[off] && get_word(s, s->inputs[i], off) != x) {
      rc = error("input %%%s: its layout stores elements of %s in one place (a stride-0, "
                 "broadcast axis), but they differ (element %lld is %llu, another %llu)",
                 name, path, (long long)e, (unsigned long long)x,
                 (unsigned long long)get_word(s, s->inputs[i], off));
      break;
    }
    written[off] = 1;
    put_word(s, s->inputs[i], off, x);
  }
  free(written);
  npy_free(&a);
  return rc;
}

/* Random lazy residues: each stored word is below 2q of every row that
 * reads it (a broadcast row axis shares words between moduli). Key tables
 * take the smallest modulus: which limb reads a key row depends on the
 * digit products' row_start. */
static int random_input(run_state *s, int32_t i, const fhjit_type *t, const fhjit_layout *l,
                        const shape *sh) {
  uint64_t *bound = calloc((size_t)s->input_words[i], sizeof *bound);
  if (!bound) return error("out of memory");
  uint64_t min2q = UINT64_MAX;
  for (int32_t r = 0; r < s->rows; r++)
    if (2 * s->moduli[r] < min2q) min2q = 2 * s->moduli[r];
  for (int64_t e = 0; e < sh->count; e++) {
    int64_t row = 0;
    int64_t off = element_offset(sh, l->offset, e, &row);
    uint64_t b = t->kind == FHJIT_KIND_KEY || row >= s->rows ? min2q : 2 * s->moduli[row];
    if (bound[off] == 0 || b < bound[off]) bound[off] = b;
  }
  uint64_t state = s->seed_base ^ (UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(i + 1));
  for (int64_t w = 0; w < s->input_words[i]; w++)
    put_word(s, s->inputs[i], w, bound[w] ? rand_below(&state, bound[w]) : 0);
  free(bound);
  return 0;
}

static int setup_inputs(run_state *s, options *o) {
  s->inputs = calloc((size_t)s->ninputs + 1, sizeof *s->inputs);
  s->input_words = calloc((size_t)s->ninputs + 1, sizeof *s->input_words);
  if (!s->inputs || !s->input_words) return error("out of memory");
  uint64_t max2q = 0;
  for (int32_t r = 0; r < s->rows; r++)
    if (2 * s->moduli[r] > max2q) max2q = 2 * s->moduli[r];
  for (int32_t i = 0; i < s->ninputs; i++) {
    fhjit_type t;
    fhjit_layout l;
    fhjit_input_binding(s->g, i, &t, &l);
    const char *name = fhjit_value_name(s->g, fhjit_input_value(s->g, i));
    shape sh;
    shape_of(&t, &l, &sh);
    s->input_words[i] = shape_words(&sh, l.offset);
    s->inputs[i] = calloc((size_t)s->input_words[i], s->word);
    if (!s->inputs[i]) return error("out of memory for input %%%s", name);
    int given = -1;
    for (int k = 0; k < o->nin; k++)
      if (strcmp(o->in_name[k], name) == 0) given = k;
    char ty[128], sht[128];
    type_text(&t, ty, sizeof ty);
    shape_text(&sh, sht, sizeof sht);
    int rc;
    if (given >= 0) {
      o->in_used[given] = 1;
      rc = load_input(s, i, name, o->in_file[given], &t, &l, &sh, max2q);
      if (!rc) printf("input %%%s: %s, shape %s, from %s\n", name, ty, sht, o->in_file[given]);
    } else {
      rc = random_input(s, i, &t, &l, &sh);
      if (!rc)
        printf("input %%%s: %s, shape %s, random (seed %llu)\n", name, ty, sht,
               (unsigned long long)o->seed);
    }
    if (rc) return rc;
  }
  for (int k = 0; k < o->nin; k++)
    if (!o->in_used[k]) {
      fprintf(stderr, "fhjit-run: error: --in %s: graph @%s has no input %%%s; its inputs are",
              o->in_name[k], fhjit_graph_name(s->g), o->in_name[k]);
      for (int32_t i = 0; i < s->ninputs; i++)
        fprintf(stderr, "%s %%%s", i ? "," : "", fhjit_value_name(s->g, fhjit_input_value(s->g, i)));
      fprintf(stderr, "%s\n", s->ninputs ? "" : " none");
      return 1;
    }
  return 0;
}

static void **alloc_results(const run_state *s) {
  void **r = calloc((size_t)s->nresults + 1, sizeof *r);
  if (!r) return NULL;
  for (int32_t k = 0; k < s->nresults; k++) {
    r[k] = calloc((size_t)s->result_words[k], s->word);
    if (!r[k]) {
      for (int32_t j = 0; j < k; j++) free(r[j]);
      free(r);
      return NULL;
    }
  }
  return r;
}

static void free_results(const run_state *s, void **r) {
  if (!r) return;
  for (int32_t k = 0; k < s->nresults; k++) free(r[k]);
  free(r);
}

/* ------------------------------------------------------------ backends */

/* The default backend: the GPU when this build has the CUDA runtime and a
 * driver with a device answers; otherwise the host JIT. */
static int cuda_present(fhjit_context *ctx) {
#ifdef FHJIT_RUN_HAVE_CUDA
  int present = fhjit_cuda_available(ctx);
  fhjit_clear_error(ctx); /* "no driver" is an answer here, not an error */
  return present;
#else
  (void)ctx;
  return 0;
#endif
}

/* One execution of the graph on host buffers; *ms is the wall time of the
 * call. repeat > 1 (--bench) runs it repeat times and reports each. */
typedef struct timing {
  int runs;
  double ms[64];
} timing;

static int run_host(run_state *s, void **results, int threads, timing *tm) {
  for (int k = 0; k < tm->runs; k++) {
    double t0 = now_ms();
    if (fhjit_run_host(s->g, s->params, s->pstride, (const void *const *)s->inputs, results,
                       threads) != FHJIT_OK)
      return lib_error(s->ctx, "fhjit_run_host");
    tm->ms[k] = now_ms() - t0;
  }
  return 0;
}

static int run_interp(run_state *s, void **results, timing *tm) {
  for (int k = 0; k < tm->runs; k++) {
    double t0 = now_ms();
    if (fhjit_interpret(s->g, s->params, s->pstride, (const void *const *)s->inputs, results) !=
        FHJIT_OK)
      return lib_error(s->ctx, "fhjit_interpret");
    tm->ms[k] = now_ms() - t0;
  }
  return 0;
}

/* ==== CUDA backend ====================================================
 * Uploads the parameter table and the inputs (their whole layout extent),
 * compiles the graph for the device, launches it on the default stream and
 * downloads the dense results. With --bench each launch is timed up to a
 * context synchronisation (cuCtxSynchronize, through
 * fhjit_cuda_driver_proc). Built only when fhjit_cuda.h is present. */
#ifdef FHJIT_RUN_HAVE_CUDA
static int run_cuda(run_state *s, void **results, timing *tm) {
  fhjit_context *ctx = s->ctx;
  if (!fhjit_cuda_available(ctx)) return lib_error(ctx, "the CUDA backend");
  int rc = 0;
  fhjit_cuda_ptr params = 0;
  fhjit_cuda_ptr *ins = calloc((size_t)s->ninputs + 1, sizeof *ins);
  fhjit_cuda_ptr *outs = calloc((size_t)s->nresults + 1, sizeof *outs);
  if (!ins || !outs) {
    rc = error("out of memory");
    goto done;
  }
  size_t pbytes = (size_t)(8 * s->pstride) * s->word;
  if (fhjit_cuda_alloc(ctx, pbytes, &params) || fhjit_cuda_upload(ctx, params, s->params, pbytes)) {
    rc = lib_error(ctx, "uploading the parameter table");
    goto done;
  }
  for (int32_t i = 0; i < s->ninputs; i++) {
    size_t bytes = (size_t)s->input_words[i] * s->word, need = 0;
    if (fhjit_cuda_input_bytes(s->g, i, &need) == FHJIT_OK && need > bytes) {
      rc = error("input #%d: the device wants %zu bytes, the host buffer has %zu", (int)i, need, bytes);
      goto done;
    }
    if (fhjit_cuda_alloc(ctx, bytes, &ins[i]) || fhjit_cuda_upload(ctx, ins[i], s->inputs[i], bytes)) {
      rc = lib_error(ctx, "uploading an input");
      goto done;
    }
  }
  for (int32_t k = 0; k < s->nresults; k++)
    if (fhjit_cuda_alloc(ctx, (size_t)s->result_words[k] * s->word, &outs[k])) {
      rc = lib_error(ctx, "allocating a result");
      goto done;
    }
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *kernel = fhjit_cuda_compile(s->g, NULL, &info);
  if (!kernel) {
    rc = lib_error(ctx, "fhjit_cuda_compile");
    goto done;
  }
  if (info.disk_note[0]) fprintf(stderr, "fhjit-run: note: %s\n", info.disk_note);
  fhjit_cuda_args args = {.params = params, .pstride = s->pstride, .inputs = ins,
                          .ninputs = s->ninputs, .results = outs, .nresults = s->nresults};
  typedef int (*sync_fn)(void);
  sync_fn sync = (sync_fn)fhjit_cuda_driver_proc(ctx, "cuCtxSynchronize");
  fhjit_clear_error(ctx);
  for (int r = 0; r < tm->runs; r++) {
    double t0 = now_ms();
    if (fhjit_cuda_launch_kernel(kernel, &args) != FHJIT_OK) {
      rc = lib_error(ctx, "fhjit_cuda_launch_kernel");
      goto done;
    }
    if (sync && sync() != 0) {
      rc = error("cuCtxSynchronize failed after the launch");
      goto done;
    }
    tm->ms[r] = now_ms() - t0 + (r == 0 ? info.total_ms : 0);
  }
  for (int32_t k = 0; k < s->nresults; k++)
    if (fhjit_cuda_download(ctx, results[k], outs[k], (size_t)s->result_words[k] * s->word)) {
      rc = lib_error(ctx, "downloading a result");
      goto done;
    }
  if (tm->runs > 1)
    printf("cuda: %s kernel for %s, compile %.3f ms (lower %.3f, link %.3f, load %.3f)\n",
           info.source == FHJIT_CUDA_COMPILED ? "compiled" : info.source == FHJIT_CUDA_FROM_DISK
                                                                ? "disk-cached"
                                                                : "memory-cached",
           info.target, info.total_ms, info.lower_ms, info.link_ms, info.load_ms);
done:
  if (params) fhjit_cuda_free(ctx, params);
  for (int32_t i = 0; ins && i < s->ninputs; i++)
    if (ins[i]) fhjit_cuda_free(ctx, ins[i]);
  for (int32_t k = 0; outs && k < s->nresults; k++)
    if (outs[k]) fhjit_cuda_free(ctx, outs[k]);
  free(ins);
  free(outs);
  return rc;
}
#else
static int run_cuda(run_state *s, void **results, timing *tm) {
  (void)s, (void)results, (void)tm;
  return error("the CUDA backend is not available in this build");
}
#endif
/* ==== end of the CUDA backend ========================================= */

static int run_backend(run_state *s, backend b, int threads, void **results, timing *tm) {
  switch (b) {
  case B_HOST: return run_host(s, results, threads, tm);
  case B_INTERP: return run_interp(s, results, tm);
  case B_CUDA: return run_cuda(s, results, tm);
  case B_AUTO: break; /* resolved in main before any run */
  }
  return error("internal: no backend chosen");
}

/* ------------------------------------------------------------ outputs */

/* Output o as a dense array of its full shape, read through its view of
 * the input or result buffer it lives in. malloc'd words of the radix. */
static void *gather_output(const run_state *s, void *const *results, int32_t o,
                           fhjit_output_info *info, shape *sh) {
  fhjit_output_info_get(s->g, o, info);
  shape_of(&info->type, &info->layout, sh);
  const void *base = info->is_input_alias ? s->inputs[info->source] : results[info->source];
  void *dense = malloc((size_t)sh->count * s->word + 1);
  if (!dense) return NULL;
  for (int64_t e = 0; e < sh->count; e++)
    put_word(s, dense, e, get_word(s, base, element_offset(sh, info->layout.offset, e, NULL)));
  return dense;
}

static uint64_t fnv1a(const run_state *s, const void *dense, int64_t count) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (int64_t e = 0; e < count; e++) {
    uint64_t x = get_word(s, dense, e);
    for (int b = 0; b < 8; b++) h = (h ^ ((x >> (8 * b)) & 0xFF)) * UINT64_C(0x100000001b3);
  }
  return h;
}

static int write_outputs(run_state *s, void *const *results, const options *o) {
  if (o->out_dir && mkdir(o->out_dir, 0777) != 0 && errno != EEXIST)
    return error("--out-dir %s: cannot create the directory: %s", o->out_dir, strerror(errno));
  for (int32_t k = 0; k < fhjit_num_outputs(s->g); k++) {
    fhjit_output_info info;
    shape sh;
    void *dense = gather_output(s, results, k, &info, &sh);
    if (!dense) return error("out of memory");
    char st[128], src[96];
    shape_text(&sh, st, sizeof st);
    if (info.is_input_alias)
      snprintf(src, sizeof src, "view of input %%%s",
               fhjit_value_name(s->g, fhjit_input_value(s->g, info.source)));
    else snprintf(src, sizeof src, "result #%d", (int)info.source);
    if (info.component >= 0)
      snprintf(src + strlen(src), sizeof src - strlen(src), ", component %d", (int)info.component);
    printf("output %s: shape %s, %s, fnv1a %016llx\n", info.name, st, src,
           (unsigned long long)fnv1a(s, dense, sh.count));
    if (o->out_dir) {
      char path[4096], err[1024];
      snprintf(path, sizeof path, "%s/%s.npy", o->out_dir, info.name);
      if (npy_write(path, s->radix == FHJIT_R32 ? NPY_U32 : NPY_U64, sh.ndim, sh.ext, dense, err,
                    sizeof err)) {
        free(dense);
        return error("%s", err);
      }
    }
    free(dense);
  }
  return 0;
}

/* Element-wise comparison of every output between two result sets. */
static int64_t check_outputs(run_state *s, void *const *got, void *const *want, const char *name) {
  int64_t total = 0;
  for (int32_t k = 0; k < fhjit_num_outputs(s->g); k++) {
    fhjit_output_info info;
    shape sh;
    void *a = gather_output(s, got, k, &info, &sh);
    void *b = gather_output(s, want, k, &info, &sh);
    if (!a || !b) {
      free(a);
      free(b);
      error("out of memory");
      return -1;
    }
    int64_t bad = 0, first = -1;
    for (int64_t e = 0; e < sh.count; e++)
      if (get_word(s, a, e) != get_word(s, b, e)) {
        if (first < 0) first = e;
        bad++;
      }
    printf("check: output %s: %lld mismatching elements of %lld", info.name, (long long)bad,
           (long long)sh.count);
    if (bad)
      printf(" (first: element %lld, %s %llu, interp %llu)", (long long)first, name,
             (unsigned long long)get_word(s, a, first), (unsigned long long)get_word(s, b, first));
    printf("\n");
    total += bad;
    free(a);
    free(b);
  }
  printf("check: %lld mismatching elements in total (%s vs interp)\n", (long long)total, name);
  return total;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report_bench(const run_state *s, const char *name, timing *tm) {
  int64_t elems = 0;
  for (int32_t k = 0; k < s->nresults; k++) elems += s->result_words[k];
  double first = tm->ms[0];
  qsort(tm->ms + 1, (size_t)(tm->runs - 1), sizeof *tm->ms, cmp_double);
  int rest = tm->runs - 1;
  double median = rest % 2 ? tm->ms[1 + rest / 2] : (tm->ms[rest / 2] + tm->ms[rest / 2 + 1]) / 2;
  printf("bench: %s: first call %.3f ms (with compilation); median of %d calls %.3f ms "
         "(min %.3f, max %.3f), %.1f M result elements/s\n",
         name, first, rest, median, tm->ms[1], tm->ms[tm->runs - 1],
         median > 0 ? (double)elems / median / 1e3 : 0.0);
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv) {
  options o;
  int rc = parse_args(argc, argv, &o);
  if (rc) {
    for (int k = 0; k < o.nin; k++) free((char *)o.in_name[k]);
    return rc < 0 ? 0 : rc; /* -1: --help */
  }
  size_t len = 0;
  char *text = read_file(o.graph_path, &len);
  if (!text) {
    rc = error("%s: cannot read: %s", o.graph_path, strerror(errno));
    for (int k = 0; k < o.nin; k++) free((char *)o.in_name[k]);
    return rc;
  }
  run_state s;
  memset(&s, 0, sizeof s);
  s.seed_base = o.seed * UINT64_C(0xD1B54A32D192ED03) + 1;
  s.ctx = fhjit_context_create();
  if (!s.ctx) return error("out of memory");
  void **results = NULL, **reference = NULL;
  s.g = fhjit_parse(s.ctx, text, len, strcmp(o.graph_path, "-") == 0 ? "<stdin>" : o.graph_path);
  free(text);
  if (!s.g) {
    rc = lib_error(s.ctx, NULL);
    goto out;
  }
  if (fhjit_bind(s.g) != FHJIT_OK) {
    rc = lib_error(s.ctx, NULL);
    goto out;
  }
  s.radix = fhjit_graph_radix(s.g);
  s.word = s.radix == FHJIT_R32 ? 4 : 8;
  s.ninputs = fhjit_num_inputs(s.g);
  s.nresults = fhjit_num_results(s.g);
  graph_extents(&s);
  s.result_words = calloc((size_t)s.nresults + 1, sizeof *s.result_words);
  if (!s.result_words) {
    rc = error("out of memory");
    goto out;
  }
  for (int32_t k = 0; k < s.nresults; k++) {
    fhjit_type t;
    fhjit_result_type(s.g, k, &t);
    s.result_words[k] = fhjit_type_elements(&t);
  }
  if ((rc = setup_moduli(&s, &o))) goto out;
  printf("graph @%s: radix %s, rows %d, n %lld, moduli", fhjit_graph_name(s.g),
         s.radix == FHJIT_R32 ? "r32" : "r62", (int)s.rows, (long long)s.n);
  for (int32_t r = 0; r < s.rows; r++) printf("%s%llu", r ? "," : " ", (unsigned long long)s.moduli[r]);
  printf("\n");
  if ((rc = setup_inputs(&s, &o))) goto out;

  results = alloc_results(&s);
  if (!results) {
    rc = error("out of memory");
    goto out;
  }
  timing tm = {.runs = o.bench ? 21 : 1};
  if (o.backend == B_AUTO) o.backend = cuda_present(s.ctx) ? B_CUDA : B_HOST;
  const char *bname = backend_names[o.backend];
  if ((rc = run_backend(&s, o.backend, o.threads, results, &tm))) goto out;
  printf("ran on %s\n", bname);
  if (o.bench) report_bench(&s, bname, &tm);
  if ((rc = write_outputs(&s, results, &o))) goto out;
  if (o.check) {
    reference = alloc_results(&s);
    if (!reference) {
      rc = error("out of memory");
      goto out;
    }
    timing once = {.runs = 1};
    if ((rc = run_interp(&s, reference, &once))) goto out;
    int64_t bad = check_outputs(&s, results, reference, bname);
    if (bad != 0) rc = 1;
  }
out:
  free_results(&s, results);
  free_results(&s, reference);
  for (int32_t i = 0; s.inputs && i < s.ninputs; i++) free(s.inputs[i]);
  free(s.inputs);
  free(s.input_words);
  free(s.result_words);
  free(s.moduli);
  free(s.params);
  for (int k = 0; k < o.nin; k++) free((char *)o.in_name[k]);
  fhjit_context_destroy(s.ctx);
  return rc;
}
