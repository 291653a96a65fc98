/* fuzz_parse.c: libFuzzer target for the .fh text format. Every input is
 * parsed; a parse failure must leave a status and a message. A graph that
 * parses must print, and its text must parse back to a graph that prints the
 * same bytes (print(parse(print(g))) == print(g)), binds the same way, and has
 * the same hash. Aborts only on a violation of these properties; libFuzzer,
 * ASan and UBSan report everything else (crashes, leaks, undefined behaviour). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"

static void violation(const char *what, const fhjit_context *ctx, const char *text) {
  fprintf(stderr, "fuzz_parse: property violated: %s\n", what);
  if (ctx) fprintf(stderr, "last error: %s\n", fhjit_last_error(ctx));
  if (text) fprintf(stderr, "--- printed text ---\n%s--- end ---\n", text);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fhjit_context *ctx = fhjit_context_create();
  if (!ctx) return 0;
  fhjit_graph *g = fhjit_parse(ctx, (const char *)data, size, "fuzz.fh");
  if (!g) {
    if (fhjit_last_status(ctx) == FHJIT_OK || !*fhjit_last_error(ctx))
      violation("a failed parse left no status or message", ctx, NULL);
    fhjit_context_destroy(ctx);
    return 0;
  }
  const char *printed = fhjit_print(g);
  if (!printed) violation("fhjit_print failed on a parsed graph", ctx, NULL);
  char *text = strdup(printed);
  if (!text) abort();

  fhjit_graph *g2 = fhjit_parse(ctx, text, strlen(text), "printed.fh");
  if (!g2) violation("the printed text does not parse", ctx, text);
  const char *printed2 = fhjit_print(g2);
  if (!printed2 || strcmp(text, printed2) != 0)
    violation("print(parse(print(g))) differs from print(g)", ctx, text);
  if (fhjit_num_values(g) != fhjit_num_values(g2) || fhjit_num_inputs(g) != fhjit_num_inputs(g2) ||
      fhjit_num_outputs(g) != fhjit_num_outputs(g2))
    violation("the re-parsed graph has other counts of values, inputs or outputs", ctx, text);
  if (!fhjit_print_dot(g) || !fhjit_print_dot(g2))
    violation("fhjit_print_dot failed", ctx, text);

  fhjit_status st = fhjit_bind(g), st2 = fhjit_bind(g2);
  if (st != st2) violation("the graph and its re-parsed text bind differently", ctx, text);
  if (st == FHJIT_OK) {
    uint64_t h[2], h2[2];
    if (fhjit_graph_hash(g, h) != FHJIT_OK || fhjit_graph_hash(g2, h2) != FHJIT_OK)
      violation("fhjit_graph_hash failed on a bound graph", ctx, text);
    if (h[0] != h2[0] || h[1] != h2[1])
      violation("the graph and its re-parsed text hash differently", ctx, text);
    if (fhjit_num_results(g) != fhjit_num_results(g2))
      violation("the graph and its re-parsed text have other results", ctx, text);
    /* Binding changes nothing the text says. */
    const char *bound = fhjit_print(g);
    if (!bound || strcmp(bound, text) != 0)
      violation("binding changed the printed text", ctx, text);
    if (!fhjit_print_dot(g)) violation("fhjit_print_dot failed on a bound graph", ctx, text);
  } else if (!*fhjit_last_error(ctx)) {
    violation("a failed bind left no message", ctx, text);
  }
  free(text);
  fhjit_context_destroy(ctx);
  return 0;
}
