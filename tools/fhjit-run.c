/* fhjit-run.c: runs one .fh graph on the host JIT, the reference interpreter
 * or a CUDA GPU, with inputs from .npy files or deterministic random lazy
 * residues (twiddle tables built from the moduli), and writes every output
 * as a .npy file. --check compares the
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
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fhjit/fhjit.h"
#include "npy.h"
#include "readfile.h"

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
    "                      are random lazy residues [0, 2q) drawn with --seed,\n"
    "                      except twiddle tables: built from the moduli (the\n"
    "                      forward or inverse table, as the NTTs reading them\n"
    "                      need). Graphs with NTTs get the NTT checks (prime\n"
    "                      q = 1 mod 2N) and N^-1 in the parameter table\n"
    "  --seed S            seed of the random inputs (default 1)\n"
    "  --moduli q1,q2,...  the RNS moduli, one per row (default: the graph's)\n"
    "  --out-dir DIR       write each output as DIR/NAME.npy (its full shape;\n"
    "                      uint32 for r32, uint64 for r62): all to temporaries\n"
    "                      first, renamed once every one was written; DIR and\n"
    "                      existing NAME.npy may not be symbolic links\n"
    "  --check             also run the reference interpreter and count the\n"
    "                      mismatching elements of every output (exit status 1\n"
    "                      if there are any)\n"
    "  --bench             time the run: the first call (with compilation) and\n"
    "                      the median of repeated calls\n"
    "  --threads=T         host threads (default 0: automatic)\n"
    "  --max-bytes=B       refuse graphs whose buffers and dense inputs and outputs\n"
    "                      would pass B bytes (suffix K, M, G, T: powers of 1024;\n"
    "                      default 4G); checked before anything is allocated\n"
    "  --help              this text\n"
    "\n"
    "exit status: 0 success, 1 error (or --check mismatches), 2 bad usage\n";

typedef enum backend { B_HOST, B_CUDA, B_INTERP, B_AUTO } backend;
static const char *const backend_names[] = {"host", "cuda", "interp", "auto"};

#define MAX_IN 256
/* What fhjit-run may hold by default (--max-bytes): 4 GiB. */
#define DEFAULT_MAX_BYTES (UINT64_C(4) << 30)

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
  uint64_t max_bytes;
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
  int64_t ntt_n; /* N of the graph's NTTs (its twiddle inputs); 0: none */
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
                  "[--seed S] [--moduli q1,q2,...] [--out-dir DIR] [--check] [--bench] [--max-bytes B]\n"
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
  /* a call's own messages start with its name ("fhjit_run_host: ..."):
   * not said twice */
  size_t wl = what ? strlen(what) : 0;
  if (what && !strncmp(msg, what, wl) && msg[wl] == ':') what = NULL;
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

/* A byte count: digits and an optional K, M, G or T (powers of 1024). */
static int parse_size(const char *s, uint64_t *out) {
  static const char units[] = "KMGT";
  size_t len = strlen(s);
  const char *unit = len ? strchr(units, s[len - 1]) : NULL;
  char digits[32];
  if (len == 0 || len >= sizeof digits || (unit && !*unit)) return 0;
  memcpy(digits, s, len + 1);
  if (unit) digits[len - 1] = '\0';
  uint64_t v;
  if (!parse_u64(digits, &v)) return 0;
  int shift = unit ? 10 * (int)(unit - units + 1) : 0;
  if (shift && v > (UINT64_MAX >> shift)) return 0;
  *out = v << shift;
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
  o->max_bytes = DEFAULT_MAX_BYTES;
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
    } else if ((v = option_value(argc, argv, &i, "--max-bytes", &missing))) {
      if (!parse_size(v, &o->max_bytes))
        return usage_error("--max-bytes takes a byte count with an optional K, M, G or T "
                           "suffix (powers of 1024), not '%s'",
                           v);
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

/* The axes of a concrete type in type order (the .npy shape) with their
 * extents (fhjit_layout_axes), and the type and layout to walk; count is
 * the number of logical elements, words the storage the layout spans from
 * its base (fhjit_layout_span). Both are -1 when the library refuses the
 * type or layout or they would overflow 64 bits: the size plan refuses
 * those before any work, so every shape walked is valid. */
typedef struct shape {
  int32_t ndim;
  int64_t ext[FHJIT_MAX_AXES];
  fhjit_type type;
  fhjit_layout layout;
  int64_t count, words;
} shape;

static void shape_of(const fhjit_type *t, const fhjit_layout *l, shape *sh) {
  int64_t stride[FHJIT_MAX_AXES];
  sh->type = *t;
  sh->layout = *l;
  sh->count = sh->words = -1;
  if (fhjit_layout_axes(t, l, sh->ext, stride, &sh->ndim) != FHJIT_OK) {
    sh->ndim = 0;
    return;
  }
  sh->words = fhjit_layout_span(t, l);
  sh->count = sh->words < 0 ? -1 : fhjit_type_elements(t);
}

/* A walk over a shape's logical elements in row-major (.npy) order: the
 * storage offset of the element at coords (all 0 at the start) and its
 * row (*row, when not NULL); then coords steps to the next element. */
static int64_t walk_next(const shape *sh, int64_t coords[FHJIT_MAX_AXES], int64_t *row) {
  int64_t off = fhjit_layout_offset(&sh->type, &sh->layout, coords);
  if (row) *row = coords[sh->ndim - 2];
  for (int32_t i = sh->ndim - 1; i >= 0 && ++coords[i] == sh->ext[i]; i--) coords[i] = 0;
  return off;
}

static void shape_text(const shape *sh, char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "(");
  for (int i = 0; i < sh->ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)sh->ext[i]);
  if (used < size) snprintf(buf + used, size - used, sh->ndim == 1 ? ",)" : ")");
}

/* ------------------------------------------------------------ set-up */

/* rows and n of the graph: those of its materialised results and
 * polynomial inputs (the largest n: compressed plaintexts are narrower).
 * Rows take one modulus each and the library counts them in int32. */
static int graph_extents(run_state *s) {
  int64_t rows = 0;
  for (int32_t i = 0; i < s->ninputs + s->nresults; i++) {
    fhjit_type t;
    if (i < s->ninputs) fhjit_input_binding(s->g, i, &t, NULL);
    else fhjit_result_type(s->g, i - s->ninputs, &t);
    if (t.kind == FHJIT_KIND_KEY || t.kind == FHJIT_KIND_TABLE) continue;
    if (t.rows > rows) rows = t.rows;
    if (t.n > s->n) s->n = t.n;
  }
  /* SPEC section 7: a graph's moduli are its chain, which values may use
   * only part of (bases, special primes): one parameter column per chain
   * position */
  if (fhjit_graph_num_moduli(s->g) > rows) rows = fhjit_graph_num_moduli(s->g);
  if (rows > INT32_MAX)
    return error("graph @%s has %lld rows, more than the limit of %d rows (one modulus each)",
                 fhjit_graph_name(s->g), (long long)rows, INT32_MAX);
  s->rows = (int32_t)rows;
  return 0;
}

/* N of the graph's NTTs: the extent n of its twiddle inputs, which must
 * agree (the parameter table holds one N^-1 per modulus). */
static int graph_ntt_size(run_state *s) {
  for (int32_t i = 0; i < s->ninputs; i++) {
    fhjit_type t;
    fhjit_input_binding(s->g, i, &t, NULL);
    if (t.kind != FHJIT_KIND_TWIDDLE) continue;
    if (s->ntt_n && t.n != s->ntt_n)
      return error("graph @%s has twiddle tables of N = %lld and N = %lld; one parameter "
                   "table holds one N^-1 per modulus, so fhjit-run runs one N per graph",
                   fhjit_graph_name(s->g), (long long)s->ntt_n, (long long)t.n);
    s->ntt_n = t.n;
  }
  return 0;
}

/* ------------------------------------------------------------ sizes */

/* Everything fhjit-run will hold or walk, added up before anything is
 * allocated or filled: every product and sum is overflow-checked and the
 * total may not pass --max-bytes. */
typedef struct budget {
  uint64_t used, limit;
} budget;

/* count units ("rows", "words", "elements") of size bytes each. */
static int budget_add(budget *b, const char *what, int64_t count, const char *unit,
                      uint64_t size) {
  uint64_t bytes, total;
  if (count < 0 || __builtin_mul_overflow((uint64_t)count, size, &bytes))
    return error("%s: its size overflows 64 bits; fhjit-run holds at most --max-bytes=%llu "
                 "bytes",
                 what, (unsigned long long)b->limit);
  if (__builtin_add_overflow(b->used, bytes, &total) || total > b->limit)
    return error("%s: %lld %s of %llu bytes (%llu bytes) would bring what fhjit-run holds "
                 "to %llu bytes, over the limit --max-bytes=%llu",
                 what, (long long)count, unit, (unsigned long long)size,
                 (unsigned long long)bytes,
                 (unsigned long long)(total < b->used ? UINT64_MAX : total),
                 (unsigned long long)b->limit);
  b->used = total;
  return 0;
}

/* An input's buffer (with a word of scratch per stored word: the random
 * bounds or the written marks) and its logical elements (the .npy data,
 * up to 8 bytes each, or the walk that fills it). */
static int plan_input(run_state *s, budget *b, int32_t i) {
  fhjit_type t;
  fhjit_layout l;
  shape sh;
  fhjit_input_binding(s->g, i, &t, &l);
  shape_of(&t, &l, &sh);
  char what[160];
  snprintf(what, sizeof what, "input %%%s", fhjit_value_name(s->g, fhjit_input_value(s->g, i)));
  s->input_words[i] = sh.words;
  return budget_add(b, what, sh.words, "stored words", s->word + 8) ||
         budget_add(b, what, sh.count, "elements", 8);
}

/* Result buffers (twice with --check) and the dense copy of each output. */
static int plan_outputs(run_state *s, budget *b, uint64_t copies) {
  char what[160];
  for (int32_t k = 0; k < s->nresults; k++) {
    fhjit_type t;
    fhjit_result_type(s->g, k, &t);
    s->result_words[k] = fhjit_type_elements(&t);
    snprintf(what, sizeof what, "result #%d", (int)k);
    if (budget_add(b, what, s->result_words[k], "elements", s->word * copies)) return 1;
  }
  for (int32_t k = 0; k < fhjit_num_outputs(s->g); k++) {
    fhjit_output_info info;
    shape sh;
    fhjit_output_info_get(s->g, k, &info);
    shape_of(&info.type, &info.layout, &sh);
    snprintf(what, sizeof what, "output %s", info.name);
    if (budget_add(b, what, sh.count, "elements", s->word * copies)) return 1;
  }
  return 0;
}

/* The size plan: the moduli and parameter table, every input, result and
 * output; fills input_words and result_words. */
static int plan_sizes(run_state *s, const options *o) {
  budget b = {0, o->max_bytes};
  s->input_words = calloc((size_t)s->ninputs + 1, sizeof *s->input_words);
  s->result_words = calloc((size_t)s->nresults + 1, sizeof *s->result_words);
  if (!s->input_words || !s->result_words) return error("out of memory");
  if (budget_add(&b, "the moduli and the parameter table", s->rows, "rows", 8 + 8 * s->word))
    return 1;
  for (int32_t i = 0; i < s->ninputs; i++)
    if (plan_input(s, &b, i)) return 1;
  return plan_outputs(s, &b, o->check ? 2 : 1);
}

/* Every modulus for the radix and, in a graph with NTTs, for an NTT of its
 * N (a prime = 1 mod 2N): the library's own checks. */
static int check_moduli(run_state *s) {
  for (int32_t r = 0; r < s->rows; r++)
    if (fhjit_check_modulus(s->ctx, s->radix, s->moduli[r], s->ntt_n) != FHJIT_OK) {
      char what[64];
      snprintf(what, sizeof what, "modulus #%d", (int)r);
      return lib_error(s->ctx, what);
    }
  return 0;
}

/* The parameter table: with the NTT checks and N^-1 of the graph's N in
 * row 7 when it has NTTs; otherwise with N = n when n has an inverse
 * modulo every q (row 7 matters to NTTs only), else 0. */
static int param_table(run_state *s) {
  s->pstride = s->rows;
  s->params = calloc((size_t)(8 * s->pstride), s->word);
  if (!s->params) return error("out of memory");
  int ntt = s->ntt_n > 0;
  if (fhjit_param_table(s->ctx, s->radix, s->moduli, s->rows, ntt ? s->ntt_n : s->n, ntt, 0,
                        s->params, s->pstride) == FHJIT_OK)
    return 0;
  if (ntt) return lib_error(s->ctx, "building the parameter table for the graph's NTTs");
  fhjit_clear_error(s->ctx);
  if (fhjit_param_table(s->ctx, s->radix, s->moduli, s->rows, 0, 0, 0, s->params, s->pstride) !=
      FHJIT_OK)
    return lib_error(s->ctx, "building the parameter table");
  return 0;
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
  return check_moduli(s) || param_table(s);
}

/* The largest .npy file that can hold an array of shape sh: a header (numpy
 * writes under 1 KiB; 64 KiB are allowed) and at most 8 bytes an element.
 * Larger files are refused before they are read. */
static size_t npy_file_limit(const shape *sh) {
  size_t data;
  if (__builtin_mul_overflow((size_t)sh->count, (size_t)8, &data) ||
      data > SIZE_MAX - ((size_t)64 << 10))
    return SIZE_MAX;
  return data + ((size_t)64 << 10);
}

/* Where an input's elements come from, dense in the input's shape: a .npy
 * array or a table of the radix's words; `what` names it in messages. */
typedef struct source {
  const char *what;
  const npy_array *npy; /* NULL: words */
  const void *words;
} source;

static uint64_t source_get(const run_state *s, const source *src, int64_t e, int *negative) {
  if (src->npy) return npy_get(src->npy, e, negative);
  *negative = 0;
  return get_word(s, src->words, e);
}

/* Scatters a source through input i's bound layout: every element a lazy
 * residue of its row (key tables: of the largest modulus, max_key = its
 * 2q), and a stride-0 (broadcast) slot receives one value only. */
static int scatter_input(run_state *s, int32_t i, const char *name, const source *src,
                         const fhjit_type *t, const shape *sh, uint64_t max_key) {
  unsigned char *written = calloc((size_t)s->input_words[i], 1);
  if (!written) return error("out of memory");
  int rc = 0;
  int32_t pos[64], npos = 0; /* SPEC section 7: row r is reduced mod its chain position's */
  if (t->kind != FHJIT_KIND_POLY ||
      fhjit_value_basis(s->g, fhjit_input_value(s->g, i), pos, 64, &npos) != FHJIT_OK)
    npos = 0;
  int64_t coords[FHJIT_MAX_AXES] = {0};
  for (int64_t e = 0; e < sh->count; e++) {
    int negative;
    int64_t row = 0;
    uint64_t x = source_get(s, src, e, &negative);
    int64_t off = walk_next(sh, coords, &row);
    int64_t chain_pos = row < npos && row < 64 ? pos[row] : row; /* its modulus's */
    /* a constant table's words are constants of several moduli, which
     * the library checks against the chain when it runs (SPEC 7) */
    uint64_t bound = t->kind == FHJIT_KIND_TABLE ? UINT64_MAX
                     : t->kind == FHJIT_KIND_KEY ? max_key
                                                 : 2 * s->moduli[chain_pos];
    if (negative || x >= bound) {
      char at[64] = "";
      if (chain_pos != row) snprintf(at, sizeof at, ", chain position %lld", (long long)chain_pos);
      rc = error("input %%%s: element %lld of %s is %s%llu, not a lazy residue: elements must "
                 "be in [0, %llu) (2q of %s %llu%s)",
                 name, (long long)e, src->what, negative ? "-" : "",
                 (unsigned long long)(negative ? 0 - x : x), (unsigned long long)bound,
                 t->kind == FHJIT_KIND_KEY ? "the largest modulus" : "row",
                 (unsigned long long)(t->kind == FHJIT_KIND_KEY ? bound / 2 : (uint64_t)row), at);
    } else if (written[off] && get_word(s, s->inputs[i], off) != x) {
      rc = error("input %%%s: its layout stores elements of %s in one place (a stride-0, "
                 "broadcast axis), but they differ (element %lld is %llu, another %llu)",
                 name, src->what, (long long)e, (unsigned long long)x,
                 (unsigned long long)get_word(s, s->inputs[i], off));
    }
    if (rc) break;
    written[off] = 1;
    put_word(s, s->inputs[i], off, x);
  }
  free(written);
  return rc;
}

/* Fills input i from a .npy file: its shape must be the input's, then the
 * scatter's checks. */
static int load_input(run_state *s, int32_t i, const char *name, const char *path,
                      const fhjit_type *t, const shape *sh, uint64_t max_key) {
  char err[1024], want[128], got[128], ty[FHJIT_TYPE_TEXT_MAX];
  npy_array a;
  if (npy_read(path, npy_file_limit(sh), &a, err, sizeof err))
    return error("input %%%s: %s", name, err);
  shape_text(sh, want, sizeof want);
  fhjit_type_text(t, ty, sizeof ty);
  int same = a.ndim == sh->ndim;
  for (int d = 0; same && d < a.ndim; d++) same = a.shape[d] == sh->ext[d];
  if (!same) {
    shape fs = {.ndim = a.ndim};
    for (int d = 0; d < a.ndim && d < FHJIT_MAX_AXES; d++) fs.ext[d] = a.shape[d];
    if (a.ndim <= FHJIT_MAX_AXES) shape_text(&fs, got, sizeof got);
    else snprintf(got, sizeof got, "(%d axes)", a.ndim);
    npy_free(&a);
    return error("input %%%s: %s has shape %s, but the input is %s, which needs shape %s",
                 name, path, got, ty, want);
  }
  source src = {.what = path, .npy = &a};
  int rc = scatter_input(s, i, name, &src, t, sh, max_key);
  npy_free(&a);
  return rc;
}

/* Twiddle input i: the table of fhjit_twiddle_tables that the NTTs reading
 * it need (fhjit_input_twiddle_use; forward when none reads it), built from
 * the moduli with the library's NTT checks, then scattered through its
 * layout. *which names the table for the report. */
static int twiddle_input(run_state *s, int32_t i, const char *name, const fhjit_type *t,
                         const shape *sh, const char **which) {
  int use = 0;
  if (fhjit_input_twiddle_use(s->g, i, &use) != FHJIT_OK) return lib_error(s->ctx, name);
  if (use == (FHJIT_TWIDDLE_FORWARD | FHJIT_TWIDDLE_INVERSE))
    return error("input %%%s: both forward and inverse NTTs read it, and no one table serves "
                 "both; give its values with --in %s=FILE.npy",
                 name, name);
  int inverse = use == FHJIT_TWIDDLE_INVERSE;
  *which = inverse ? "inverse" : "forward";
  void *table = calloc((size_t)sh->count, s->word);
  if (!table) return error("out of memory");
  int rc;
  if (fhjit_twiddle_tables(s->ctx, s->radix, s->moduli, (int32_t)t->rows, t->n,
                           inverse ? NULL : table, inverse ? table : NULL) != FHJIT_OK) {
    rc = lib_error(s->ctx, "building the twiddle tables");
  } else {
    source src = {.what = inverse ? "the inverse twiddle table" : "the forward twiddle table",
                  .words = table};
    rc = scatter_input(s, i, name, &src, t, sh, 0);
  }
  free(table);
  return rc;
}

/* Constant-table input i (SPEC section 7): fhjit_input_table's words,
 * scattered through the input's layout (an offset, an index stride). */
static int table_input(run_state *s, int32_t i, const char *name, const fhjit_type *t,
                       const shape *sh) {
  int64_t len = 0;
  if (fhjit_input_table(s->g, i, NULL, &len) != FHJIT_OK)
    return error("input %%%s: %s", name, fhjit_last_error(s->ctx));
  if (len != sh->count)
    return error("input %%%s: the chain's table has %lld words, the input %lld", name,
                 (long long)len, (long long)sh->count);
  void *table = calloc((size_t)(len ? len : 1), s->word);
  if (!table) return error("out of memory");
  int rc;
  if (fhjit_input_table(s->g, i, table, &len) != FHJIT_OK) {
    rc = error("input %%%s: %s", name, fhjit_last_error(s->ctx));
  } else {
    source src = {.what = "the chain's constant table", .words = table};
    rc = scatter_input(s, i, name, &src, t, sh, 0);
  }
  free(table);
  return rc;
}

/* Random lazy residues: each stored word is below 2q of every row that
 * reads it (a broadcast row axis shares words between moduli). Key tables
 * take the smallest modulus: which limb reads a key row depends on the
 * digit products' row_start. */
static int random_input(run_state *s, int32_t i, const fhjit_type *t, const shape *sh) {
  uint64_t *bound = calloc((size_t)s->input_words[i], sizeof *bound);
  if (!bound) return error("out of memory");
  uint64_t min2q = UINT64_MAX;
  for (int32_t r = 0; r < s->rows; r++)
    if (2 * s->moduli[r] < min2q) min2q = 2 * s->moduli[r];
  int32_t pos[64], npos = 0; /* SPEC section 7: row r is reduced mod its chain position's */
  if (t->kind != FHJIT_KIND_POLY ||
      fhjit_value_basis(s->g, fhjit_input_value(s->g, i), pos, 64, &npos) != FHJIT_OK)
    npos = 0;
  int64_t coords[FHJIT_MAX_AXES] = {0};
  for (int64_t e = 0; e < sh->count; e++) {
    int64_t row = 0;
    int64_t off = walk_next(sh, coords, &row);
    if (row < npos && row < 64) row = pos[row];
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
  if (!s->inputs) return error("out of memory");
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
    s->inputs[i] = calloc((size_t)s->input_words[i], s->word);
    if (!s->inputs[i]) return error("out of memory for input %%%s", name);
    int given = -1;
    for (int k = 0; k < o->nin; k++)
      if (strcmp(o->in_name[k], name) == 0) given = k;
    char ty[FHJIT_TYPE_TEXT_MAX], sht[128];
    fhjit_type_text(&t, ty, sizeof ty);
    shape_text(&sh, sht, sizeof sht);
    int rc;
    if (given >= 0) {
      o->in_used[given] = 1;
      rc = load_input(s, i, name, o->in_file[given], &t, &sh, max2q);
      if (!rc) printf("input %%%s: %s, shape %s, from %s\n", name, ty, sht, o->in_file[given]);
    } else if (t.kind == FHJIT_KIND_TABLE) { /* SPEC section 7: built from the chain */
      rc = table_input(s, i, name, &t, &sh);
      if (!rc) printf("input %%%s: %s, the constants of the chain\n", name, ty);
    } else if (t.kind == FHJIT_KIND_TWIDDLE) {
      const char *which = "";
      rc = twiddle_input(s, i, name, &t, &sh, &which);
      if (!rc)
        printf("input %%%s: %s, shape %s, the %s table of the moduli\n", name, ty, sht, which);
    } else {
      rc = random_input(s, i, &t, &sh);
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
  int64_t coords[FHJIT_MAX_AXES] = {0};
  for (int64_t e = 0; e < sh->count; e++)
    put_word(s, dense, e, get_word(s, base, walk_next(sh, coords, NULL)));
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

/* ------------------------------------------------------------ --out-dir */

/* The files of --out-dir: every output is written to a temporary in the
 * directory and renamed over NAME.npy only once all were written, so a
 * failure leaves existing files as they were. The directory is opened
 * without following a symbolic link (its last component), and every file is
 * created and renamed relative to it; NAME.npy may be absent or a regular
 * file, nothing else (a symbolic link is not followed, but refused). */
#define OUT_NAME_MAX 4096

typedef struct out_files {
  const char *dir;
  int dirfd, count;
  char (*tmp)[64]; /* temporary of output k; "" when none */
} out_files;

static int out_error(const out_files *of, const char *file, const char *what, int err) {
  return error("--out-dir %s: %s%s%s: %s", of->dir, file ? file : "", file ? ": " : "", what,
               strerror(err));
}

/* NAME.npy of output k (a word: no '/'); 1 when it does not fit. */
static int out_name(const run_state *s, const out_files *of, int32_t k, char *buf, size_t size) {
  fhjit_output_info info;
  fhjit_output_info_get(s->g, k, &info);
  if ((size_t)snprintf(buf, size, "%s.npy", info.name) < size) return 0;
  return error("--out-dir %s: output %.40s...: the name is too long for a file name", of->dir,
               info.name);
}

/* NAME.npy must be absent or a regular file. */
static int check_destination(const out_files *of, const char *file) {
  struct stat st;
  if (fstatat(of->dirfd, file, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? 0 : out_error(of, file, "cannot check", errno);
  if (S_ISREG(st.st_mode)) return 0;
  return error("--out-dir %s: %s is %s, not a regular file; fhjit-run replaces only regular "
               "files (remove it first)",
               of->dir, file, S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode)
                                                                        ? "a directory"
                                                                        : "special");
}

/* Creates the directory if needed and opens it; its last component may
 * not be a symbolic link (trailing slashes are dropped, so "link/" is not
 * followed either). -1 with the error. */
static int open_out_dir(const out_files *of) {
  char path[OUT_NAME_MAX];
  size_t len = strlen(of->dir);
  while (len > 1 && of->dir[len - 1] == '/') len--;
  if (len >= sizeof path) {
    error("--out-dir %.60s...: the path is too long", of->dir);
    return -1;
  }
  memcpy(path, of->dir, len);
  path[len] = '\0';
  if (mkdir(path, 0777) != 0 && errno != EEXIST) {
    out_error(of, NULL, "cannot create the directory", errno);
    return -1;
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), err = errno;
  struct stat st;
  if (fd < 0 && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
    error("--out-dir %s is a symbolic link; fhjit-run does not follow it (give the directory "
          "it points to)",
          of->dir);
  else if (fd < 0)
    out_error(of, NULL, "cannot open the directory", err);
  return fd;
}

/* Creates (if needed) and opens the directory, and checks every
 * destination before anything is written. */
static int out_begin(const run_state *s, const char *dir, out_files *of) {
  of->dir = dir;
  of->count = fhjit_num_outputs(s->g);
  of->tmp = calloc((size_t)of->count + 1, sizeof *of->tmp);
  if (!of->tmp) return error("out of memory");
  if ((of->dirfd = open_out_dir(of)) < 0) return 1;
  char file[OUT_NAME_MAX];
  for (int32_t k = 0; k < of->count; k++)
    if (out_name(s, of, k, file, sizeof file) || check_destination(of, file)) return 1;
  return 0;
}

/* A new temporary file in the directory for output k (O_EXCL: never an
 * existing file or link); its name in of->tmp[k]. -1 with the error. */
static int out_create_temp(out_files *of, int32_t k) {
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
    snprintf(of->tmp[k], sizeof of->tmp[k], ".fhjit-run.%ld.%d.%d.tmp", (long)getpid(), (int)k,
             attempt);
    fd = openat(of->dirfd, of->tmp[k], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int err = errno;
    of->tmp[k][0] = '\0';
    out_error(of, NULL, "cannot create a temporary file", err);
  }
  return fd;
}

/* Writes output k's dense words to its new temporary file. */
static int out_write_temp(const run_state *s, out_files *of, int32_t k, const shape *sh,
                          const void *dense) {
  char what[OUT_NAME_MAX + 200], err[OUT_NAME_MAX + 400];
  if (out_name(s, of, k, what, sizeof what)) return 1;
  int fd = out_create_temp(of, k);
  if (fd < 0) return 1;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    int e = errno;
    close(fd);
    return out_error(of, of->tmp[k], "cannot write", e);
  }
  snprintf(what + strlen(what), sizeof what - strlen(what), " (its temporary %s)", of->tmp[k]);
  int rc = npy_write_stream(f, what, s->radix == FHJIT_R32 ? NPY_U32 : NPY_U64, sh->ndim,
                            sh->ext, dense, err, sizeof err);
  if (fclose(f) != 0 && rc == 0) return out_error(of, of->tmp[k], "write error", errno);
  return rc ? error("--out-dir %s: %s", of->dir, err) : 0;
}

/* Renames every temporary over its NAME.npy; done only when all exist. */
static int out_commit(const run_state *s, out_files *of) {
  char file[OUT_NAME_MAX];
  for (int32_t k = 0; k < of->count; k++) {
    if (out_name(s, of, k, file, sizeof file)) return 1;
    if (renameat(of->dirfd, of->tmp[k], of->dirfd, file) != 0)
      return out_error(of, file, "cannot rename the temporary file over it", errno);
    of->tmp[k][0] = '\0';
  }
  return 0;
}

/* Removes the temporaries left (after a failure) and closes the directory. */
static void out_end(out_files *of) {
  for (int32_t k = 0; of->tmp && k < of->count; k++)
    if (of->tmp[k][0]) unlinkat(of->dirfd, of->tmp[k], 0);
  if (of->dirfd >= 0) close(of->dirfd);
  free(of->tmp);
}

/* Output k: its report line, and its temporary file with --out-dir. */
static int report_output(run_state *s, void *const *results, int32_t k, out_files *of) {
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
  int rc = of ? out_write_temp(s, of, k, &sh, dense) : 0;
  free(dense);
  return rc;
}

static int write_outputs(run_state *s, void *const *results, const options *o) {
  out_files of = {.dirfd = -1};
  out_files *files = o->out_dir ? &of : NULL;
  int rc = files ? out_begin(s, o->out_dir, files) : 0;
  for (int32_t k = 0; k < fhjit_num_outputs(s->g) && !rc; k++)
    rc = report_output(s, results, k, files);
  if (files && !rc) rc = out_commit(s, files);
  if (files) out_end(files);
  return rc;
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
  char *text, err[1024];
  if (tool_read_file(o.graph_path, TOOL_GRAPH_FILE_LIMIT, "the graph file limit", &text, &len,
                     err, sizeof err)) {
    rc = error("%s", err);
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
  if ((rc = graph_extents(&s)) || (rc = graph_ntt_size(&s)) || (rc = plan_sizes(&s, &o)) ||
      (rc = setup_moduli(&s, &o)))
    goto out;
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
