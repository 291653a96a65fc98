/* fuzz_options.c: libFuzzer target for the context's tuning options
 * (fhjit_context_set_option: ntt_plan, pw_plan, bconv_plan, ntt_schedule,
 * max_values, host_pipeline) and what the compiler does with a value it accepted.
 *
 * Input: byte 0 picks the option, bytes 1..2 a random graph (randgraph,
 * small, NTT anchors in most, rows/concat/automorphisms), the rest is the
 * value. A refused value must leave a message and the option as it was. An
 * accepted one is then used to compile and run that graph on the host JIT:
 * the result must match the interpreter word for word, and a refusal must
 * say why and must not be an internal error ("internal:" in the message)
 * or an assertion: a value the setter accepted is the user's choice, and no
 * choice of keys may give wrong code or trip fhjit's own checks.
 * Aborts only on a violation; libFuzzer, ASan and UBSan report the rest.
 * Seeds: test/fuzz/option-seeds; dictionary: test/fuzz/options.dict. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "randgraph.h"

static const char *const option_names[] = {"ntt_plan",   "pw_plan",      "bconv_plan",
                                           "ntt_schedule", "max_values", "host_pipeline"};

static void violation(const char *what, const char *option, const char *value,
                      uint64_t seed, const char *detail) {
  fprintf(stderr, "fuzz_options: property violated: %s\n  option %s = '%s', graph seed %llu\n%s\n",
          what, option, value, (unsigned long long)seed, detail ? detail : "");
  abort();
}

static uint64_t poison(fhjit_radix radix, uint64_t p) {
  return radix == FHJIT_R32 ? (p & 0xFFFFFFFFu) : p;
}

/* The graph of `seed` under the context's options: host JIT against the
 * interpreter. */
static void run_graph(fhjit_context *ctx, uint64_t seed, const char *option, const char *value) {
  static char err[1 << 14];
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.max_ops = 12;
  cfg.ntt_percent = 70;
  cfg.reindex_percent = 15;
  fhjit_graph *g = rg_random_graph(ctx, seed, &cfg, err, sizeof err);
  if (!g) {
    /* max_values may refuse the generator's graph: that is the option's job */
    if (!strcmp(option, "max_values")) return;
    violation("the generator failed under the option", option, value, seed, err);
  }
  rg_case c;
  if (rg_case_init(&c, g, NULL, seed, 10, err, sizeof err))
    violation("rg_case_init failed", option, value, seed, err);
  void **host = rg_alloc_results(&c, poison(c.radix, UINT64_C(0x5555555555555555)));
  void **itp = rg_alloc_results(&c, poison(c.radix, UINT64_C(0x2AAAAAAAAAAAAAAA)));
  if (!host || !itp) abort();
  if (fhjit_interpret(g, c.params, c.pstride, (const void *const *)c.inputs, itp) != FHJIT_OK)
    violation("the interpreter refused a valid graph", option, value, seed, fhjit_last_error(ctx));
  fhjit_status s = fhjit_run_host(g, c.params, c.pstride, (const void *const *)c.inputs, host, 1);
  if (s != FHJIT_OK) {
    const char *msg = fhjit_last_error(ctx);
    if (!*msg) violation("a refusal without a message", option, value, seed, NULL);
    if (strstr(msg, "internal")) violation("an internal error", option, value, seed, msg);
  } else if (rg_compare(&c, host, "host JIT", itp, "interpreter", err, sizeof err)) {
    violation("the host JIT's result differs from the interpreter's", option, value, seed, err);
  }
  rg_free_results(&c, host);
  rg_free_results(&c, itp);
  rg_case_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3 || size > 300) return 0;
  const char *option = option_names[data[0] % (sizeof option_names / sizeof *option_names)];
  uint64_t seed = 1 + (uint64_t)(data[1] | data[2] << 8);
  char value[300];
  memcpy(value, data + 3, size - 3);
  value[size - 3] = 0;
  /* the cache stays off: an accepted cache_dir is not this target's subject,
   * and compiles must not touch the disk */
  fhjit_context *ctx = fhjit_context_create();
  if (!ctx || fhjit_context_set_option(ctx, "cache", "off") != FHJIT_OK) abort();
  fhjit_status st = fhjit_context_set_option(ctx, option, value);
  if (st != FHJIT_OK) {
    if (!*fhjit_last_error(ctx)) violation("a refused value left no message", option, value, 0, NULL);
  } else {
    run_graph(ctx, seed, option, value);
  }
  fhjit_context_destroy(ctx);
  return 0;
}
