/* fuzz_diff.c: differential fuzzing of the whole host compile path. Random
 * valid graphs from randgraph (graph names of 1..300 arbitrary bytes, long
 * value names, NTT anchors with multi-output epilogues, compressed layouts,
 * batch broadcasts and strided views, rows, concat and automorphisms, and
 * on one seed in twenty the limb-mixing ops bconv, rescale, modup, moddown and
 * the keyswitch composite on a chain Q ++ P) are bound, compiled by the
 * host JIT, run, and compared word for word with the interpreter.
 *
 * Built two ways from this one file:
 * - with FHJIT_LIBFUZZER, a libFuzzer target: the input's bytes choose the
 *   seed and the configuration; a mismatch aborts with the graph's text;
 * - otherwise the standalone driver fuzz_diff_run, for CI's short run and
 *   the long runs reported in closing notes:
 *     fuzz_diff_run [--seed S] [--count N] [--seconds T] [--ntt P] [--quiet]
 *   It prints the executions, the graphs that reached the JIT, the ones the
 *   lowering refused (FHJIT_ERR_UNSUPPORTED, with their reasons) and the
 *   mismatches, and exits 1 on a mismatch, on any other error, or when no
 *   graph reached the JIT. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fhjit/fhjit.h"
#include "randgraph.h"

#define POISON_HOST UINT64_C(0x5555555555555555)
#define POISON_ITP UINT64_C(0x2AAAAAAAAAAAAAAA)

typedef struct fd_stats {
  long executions, reached_jit, refused, mismatches, errors;
  char first_refusal[4][200];
  long refusal_count[4];
  int nrefusal_kinds;
} fd_stats;

static uint64_t poison(fhjit_radix radix, uint64_t p) {
  return radix == FHJIT_R32 ? (p & 0xFFFFFFFFu) : p;
}

/* Groups refusals by their message's text after the graph name (the part
 * that says why), keeping four kinds for the report. */
static void note_refusal(fd_stats *st, const char *msg) {
  st->refused++;
  const char *why = strstr(msg, ": ");
  why = why ? why + 2 : msg;
  for (int i = 0; i < st->nrefusal_kinds; i++)
    if (strncmp(st->first_refusal[i], why, 40) == 0) {
      st->refusal_count[i]++;
      return;
    }
  if (st->nrefusal_kinds == 4) return;
  snprintf(st->first_refusal[st->nrefusal_kinds], sizeof st->first_refusal[0], "%s", why);
  st->refusal_count[st->nrefusal_kinds++] = 1;
}

static void report(const rg_case *c, uint64_t seed, const char *what, const char *detail) {
  char *desc = rg_describe(c);
  /* LLVM's verifier can write megabytes: its first lines say enough */
  fprintf(stderr, "fuzz_diff: seed %llu: %s\n%.3000s\n%s\n", (unsigned long long)seed, what,
          detail ? detail : "", desc ? desc : "");
  free(desc);
}

/* One graph: 0 when it matched or was refused with a reason, -1 on a
 * mismatch or an unexpected error (reported on stderr). */
static int run_one(uint64_t seed, const rg_config *cfg, fd_stats *st) {
  static char err[1 << 16];
  st->executions++;
  fhjit_context *ctx = fhjit_context_create();
  if (!ctx) return -1;
  int rc = -1;
  void **host = NULL, **itp = NULL;
  rg_case c = {0};
  fhjit_graph *g = rg_random_graph(ctx, seed, cfg, err, sizeof err);
  if (!g) {
    fprintf(stderr, "fuzz_diff: seed %llu: the generator failed: %s\n",
            (unsigned long long)seed, err);
    goto done;
  }
  if (rg_case_init(&c, g, NULL, seed, (int)(seed % 4) == 0 ? 60 : 8, err, sizeof err)) {
    fprintf(stderr, "fuzz_diff: seed %llu: rg_case_init: %s\n", (unsigned long long)seed, err);
    goto done;
  }
  host = rg_alloc_results(&c, poison(c.radix, POISON_HOST));
  itp = rg_alloc_results(&c, poison(c.radix, POISON_ITP));
  if (!host || !itp) goto done;
  fhjit_status s = fhjit_interpret(g, c.params, c.pstride, (const void *const *)c.inputs, itp);
  if (s != FHJIT_OK) {
    report(&c, seed, "the interpreter refused a valid graph", fhjit_last_error(ctx));
    goto done;
  }
  s = fhjit_run_host(g, c.params, c.pstride, (const void *const *)c.inputs, host,
                     1 + (int)(seed % 2));
  if (s == FHJIT_ERR_UNSUPPORTED) {
    note_refusal(st, fhjit_last_error(ctx));
    rc = 0;
    goto done;
  }
  if (s != FHJIT_OK) {
    report(&c, seed, "the host JIT failed on a valid graph", fhjit_last_error(ctx));
    goto done;
  }
  st->reached_jit++;
  if (rg_compare(&c, host, "host JIT", itp, "interpreter", err, sizeof err)) {
    st->mismatches++;
    report(&c, seed, "MISMATCH", err);
    goto done;
  }
  if (rg_check_inputs(&c, "fhjit_run_host", err, sizeof err)) {
    report(&c, seed, "inputs changed", err);
    goto done;
  }
  rc = 0;
done:
  if (rc && !st->mismatches) st->errors++;
  rg_free_results(&c, host);
  rg_free_results(&c, itp);
  if (c.g) rg_case_free(&c);
  fhjit_context_destroy(ctx);
  return rc;
}

/* The configuration every run uses: small graphs, NTT anchors in `ntt` % of
 * them, random names in half, SPEC section 7's re-indexing ops (rows,
 * concat, automorphism) as one op in ten; with `mix`, its limb-mixing ops
 * as one op in five (a chain with special primes: other draws, so only
 * some seeds get it and the others keep their graphs). */
static void fuzz_config(rg_config *cfg, int ntt, int names, int mix) {
  rg_default_config(cfg);
  cfg->max_ops = 24;
  cfg->reindex_percent = 10;
  cfg->ntt_percent = ntt;
  cfg->random_names = names;
  cfg->mix_percent = mix ? 20 : 0;
}

#ifdef FHJIT_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t seed = 0;
  for (size_t i = 0; i < size && i < 8; i++) seed |= (uint64_t)data[i] << (8 * i);
  rg_config cfg;
  fuzz_config(&cfg, size > 8 ? data[8] % 101 : 50, size > 9 ? data[9] & 1 : 1,
              size > 10 && data[10] % 20 == 0);
  fd_stats st = {0};
  if (run_one(seed, &cfg, &st) != 0) abort();
  return 0;
}
#else
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  uint64_t seed = 1;
  long count = 200;
  double seconds = 0;
  int ntt = 50, quiet = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = strtol(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--ntt") && i + 1 < argc) ntt = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quiet")) quiet = 1;
    else {
      fprintf(stderr, "usage: %s [--seed S] [--count N] [--seconds T] [--ntt PERCENT] "
                      "[--quiet]\n", argv[0]);
      return 2;
    }
  }
  fd_stats st = {0};
  double t0 = now_s();
  uint64_t k = 0;
  for (; seconds > 0 ? now_s() - t0 < seconds : (long)k < count; k++) {
    rg_config cfg;
    fuzz_config(&cfg, ntt, (int)((seed + k) % 2), (seed + k) % 20 == 0);
    run_one(seed + k, &cfg, &st);
    if (st.mismatches + st.errors >= 5) break;
  }
  double dt = now_s() - t0;
  printf("fuzz_diff: seeds %llu..%llu: %ld executions, %ld reached the JIT, %ld refused, "
         "%ld mismatches, %ld errors, %.1f s (%.0f graphs/s)\n",
         (unsigned long long)seed, (unsigned long long)(seed + k - (k > 0)), st.executions,
         st.reached_jit, st.refused, st.mismatches, st.errors, dt, (double)st.executions / dt);
  if (!quiet)
    for (int i = 0; i < st.nrefusal_kinds; i++)
      printf("  refused %ld x: %.160s\n", st.refusal_count[i], st.first_refusal[i]);
  if (st.mismatches || st.errors || st.reached_jit == 0) return 1;
  return 0;
}
#endif
