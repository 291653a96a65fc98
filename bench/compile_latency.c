/* compile_latency.c: how long fhjit takes from graph text to PTX. For each
 * example graph (the .fh files of examples/) and for random 40-op graphs (randgraph.h,
 * printed to text first) and realistic 40-op graphs (a chain, a key switch
 * with 3 outputs), times fhjit_parse, fhjit_bind and
 * fhjit_emit(FHJIT_EMIT_PTX) on a fresh context each run, and prints the
 * median of each phase and of the total in a table. Not run by the tests.
 *
 * usage: compile_latency [--runs=N] [--arch=sm_XX] [DIR_OR_FILE.fh ...]
 * (default: the source tree's examples directory). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "fhjit/fhjit.h"
#include "randgraph.h"

#ifndef FHJIT_EXAMPLES_DIR
#define FHJIT_EXAMPLES_DIR "examples"
#endif

#define MAX_GRAPHS 128
#define MAX_RUNS 1000

typedef struct item {
  char name[128];
  char *text;
  size_t len;
} item;

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = size >= 0 ? malloc((size_t)size + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (!buf) return NULL;
  buf[size] = '\0';
  *len = (size_t)size;
  return buf;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const item *)a)->name, ((const item *)b)->name);
}

static void add_file(item *items, int *n, const char *path) {
  if (*n == MAX_GRAPHS) return;
  item *it = &items[*n];
  it->text = read_file(path, &it->len);
  if (!it->text) {
    fprintf(stderr, "compile_latency: cannot read %s\n", path);
    return;
  }
  const char *base = strrchr(path, '/');
  snprintf(it->name, sizeof it->name, "%s", base ? base + 1 : path);
  (*n)++;
}

static void add_path(item *items, int *n, const char *path) {
  DIR *d = opendir(path);
  if (!d) {
    add_file(items, n, path);
    return;
  }
  int first = *n;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l > 3 && strcmp(e->d_name + l - 3, ".fh") == 0) {
      char full[4096];
      snprintf(full, sizeof full, "%s/%s", path, e->d_name);
      add_file(items, n, full);
    }
  }
  closedir(d);
  qsort(items + first, (size_t)(*n - first), sizeof *items, by_name);
}

/* A random 40-op bound graph as .fh text. */
static void add_random(item *items, int *n, fhjit_radix radix, uint64_t seed) {
  if (*n == MAX_GRAPHS) return;
  fhjit_context *ctx = fhjit_context_create();
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.min_ops = cfg.max_ops = 40;
  cfg.radix = (int)radix;
  cfg.odd_n = 0;
  char err[4096];
  fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
  const char *text = g ? fhjit_print(g) : NULL;
  if (!text) {
    fprintf(stderr, "compile_latency: random graph: %s%s\n", g ? "" : err,
            g ? fhjit_last_error(ctx) : "");
  } else {
    item *it = &items[*n];
    it->text = strdup(text);
    it->len = strlen(text);
    snprintf(it->name, sizeof it->name, "random 40 ops (%s, seed %llu)",
             radix == FHJIT_R32 ? "r32" : "r62", (unsigned long long)seed);
    (*n)++;
  }
  fhjit_context_destroy(ctx);
}

/* Realistic 40-op pointwise graphs, as .fh text: "chain", one value through
 * 40 ops (products, lazy and exact sums, differences) with four inputs and
 * one output; "key switch", the inner product of key switching over 13
 * digits (13 digit products, 12 lazy sums), then the two halves taken apart,
 * multiplied by a plaintext and added to a ciphertext (3 outputs). */
static fhjit_type poly_type(int comps, int64_t rows, int64_t n) {
  fhjit_type t;
  memset(&t, 0, sizeof t);
  t.kind = FHJIT_KIND_POLY;
  t.comps = comps;
  t.rows = rows;
  t.n = n;
  t.domain = FHJIT_DOMAIN_NTT;
  t.form = FHJIT_FORM_MONT;
  return t;
}

static void add_realistic(item *items, int *n, fhjit_radix radix, int keyswitch) {
  if (*n == MAX_GRAPHS) return;
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(ctx, keyswitch ? "keyswitch13" : "chain40", radix);
  fhjit_type t = poly_type(0, 8, 1 << 16);
  if (!keyswitch) {
    fhjit_value in[4];
    for (int i = 0; i < 4; i++) {
      char name[16];
      snprintf(name, sizeof name, "x%d", i);
      in[i] = fhjit_input(g, name, &t);
    }
    fhjit_value x = in[0];
    for (int i = 0; i < 40; i++) {
      fhjit_value y = in[1 + i % 3];
      switch (i % 4) {
      case 0: x = fhjit_mul(g, x, y); break;
      case 1: x = fhjit_add_lazy(g, x, y); break;
      case 2: x = fhjit_sub(g, x, y); break;
      default: x = fhjit_add(g, x, y); break;
      }
    }
    fhjit_output(g, x, "y");
  } else {
    enum { D = 13 };
    fhjit_value dg[D];
    for (int j = 0; j < D; j++) {
      char name[16];
      snprintf(name, sizeof name, "d%d", j);
      dg[j] = fhjit_input(g, name, &t);
    }
    fhjit_type key = poly_type(2, 8, 1 << 16), ct = poly_type(2, 8, 1 << 16);
    key.kind = FHJIT_KIND_KEY;
    key.digits = D;
    fhjit_value k = fhjit_input(g, "key", &key), c = fhjit_input(g, "ct", &ct);
    fhjit_value p = fhjit_input(g, "p", &t), acc = FHJIT_NO_VALUE;
    for (int j = 0; j < D; j++) {
      fhjit_value prod = fhjit_keyswitch_digit_product(g, dg[j], k, j, 0);
      acc = j ? fhjit_add_lazy(g, acc, prod) : prod;
    }
    fhjit_value a0 = fhjit_extract(g, acc, 0), a1 = fhjit_extract(g, acc, 1);
    fhjit_value c0 = fhjit_extract(g, c, 0), c1 = fhjit_extract(g, c, 1);
    fhjit_output(g, fhjit_add(g, fhjit_mul(g, a0, p), c0), "r0");
    fhjit_output(g, fhjit_add(g, fhjit_mul(g, a1, p), c1), "r1");
    fhjit_output(g, acc, "acc");
  }
  const char *text = fhjit_bind(g) == FHJIT_OK ? fhjit_print(g) : NULL;
  if (!text) {
    fprintf(stderr, "compile_latency: %s graph: %s\n", keyswitch ? "key switch" : "chain",
            fhjit_last_error(ctx));
  } else {
    item *it = &items[*n];
    it->text = strdup(text);
    it->len = strlen(text);
    snprintf(it->name, sizeof it->name, "%s (%s)", keyswitch ? "key switch 13 digits, 3 out"
                                                             : "chain of 40 ops, 1 out",
             radix == FHJIT_R32 ? "r32" : "r62");
    (*n)++;
  }
  fhjit_context_destroy(ctx);
}

int main(int argc, char **argv) {
  int runs = 15;
  const char *arch = "sm_90";
  static item items[MAX_GRAPHS];
  int n = 0, paths = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--runs=", 7) == 0) {
      runs = atoi(argv[i] + 7);
      if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "compile_latency: --runs must be 1..%d\n", MAX_RUNS);
        return 2;
      }
    } else if (strncmp(argv[i], "--arch=", 7) == 0) {
      arch = argv[i] + 7;
    } else if (strcmp(argv[i], "--help") == 0) {
      printf("usage: compile_latency [--runs=N] [--arch=sm_XX] [DIR_OR_FILE.fh ...]\n");
      return 0;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "compile_latency: unknown option %s\n", argv[i]);
      return 2;
    } else {
      add_path(items, &n, argv[i]);
      paths++;
    }
  }
  if (!paths) add_path(items, &n, FHJIT_EXAMPLES_DIR);
  add_random(items, &n, FHJIT_R62, 1);
  add_random(items, &n, FHJIT_R32, 2);
  for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
    add_realistic(items, &n, (fhjit_radix)radix, 0);
    add_realistic(items, &n, (fhjit_radix)radix, 1);
  }

  printf("graph -> PTX (%s), median of %d runs, fresh context each run; times in ms\n\n", arch,
         runs);
  printf("%-40s %5s %9s %9s %9s %9s %9s\n", "graph", "ops", "parse", "bind", "emit", "total",
         "ptx KiB");
  int failures = 0;
  static double t_parse[MAX_RUNS], t_bind[MAX_RUNS], t_emit[MAX_RUNS], t_total[MAX_RUNS];
  for (int k = 0; k < n; k++) {
    int ops = 0;
    size_t ptx_len = 0;
    const char *failed = NULL;
    char why[512] = "";
    for (int r = 0; r < runs && !failed; r++) {
      fhjit_context *ctx = fhjit_context_create();
      double t0 = bu_now_ms();
      fhjit_graph *g = fhjit_parse(ctx, items[k].text, items[k].len, items[k].name);
      double t1 = bu_now_ms();
      fhjit_status st = g ? fhjit_bind(g) : fhjit_last_status(ctx);
      double t2 = bu_now_ms();
      const char *ptx = st == FHJIT_OK ? fhjit_emit(g, FHJIT_EMIT_PTX, arch) : NULL;
      double t3 = bu_now_ms();
      if (!g) failed = "parse";
      else if (st != FHJIT_OK) failed = "bind";
      else if (!ptx) failed = "emit";
      if (failed) {
        snprintf(why, sizeof why, "%s", fhjit_last_error(ctx));
      } else {
        ops = fhjit_num_values(g) - fhjit_num_inputs(g);
        ptx_len = strlen(ptx);
        t_parse[r] = t1 - t0;
        t_bind[r] = t2 - t1;
        t_emit[r] = t3 - t2;
        t_total[r] = t3 - t0;
      }
      fhjit_context_destroy(ctx);
    }
    if (failed) {
      printf("%-40s   %s failed: %.200s\n", items[k].name, failed, why);
      failures++;
      continue;
    }
    printf("%-40s %5d %9.3f %9.3f %9.3f %9.3f %9.1f\n", items[k].name, ops, bu_median(t_parse, runs),
           bu_median(t_bind, runs), bu_median(t_emit, runs), bu_median(t_total, runs),
           (double)ptx_len / 1024.0);
    fflush(stdout);
  }
  for (int k = 0; k < n; k++) free(items[k].text);
  return failures ? 1 : 0;
}
