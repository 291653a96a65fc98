/* embed.c: how a program embeds libfhjit. Builds the ciphertext tensor
 * product with the C builder API, binds it, runs it (on the GPU when a CUDA
 * driver and device are present, otherwise on the host path), and checks
 * every result against the reference interpreter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fhjit/fhjit.h>

#define CHECK(call)                                                           \
  do {                                                                        \
    if ((call) != FHJIT_OK) {                                                 \
      fprintf(stderr, "embed: %s\n", fhjit_last_error(ctx));                \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main(void) {
  enum { ROWS = 2, N = 4096 };
  const uint64_t moduli[ROWS] = {1152921504606748673ull, 576460752303423649ull};
  fhjit_context *ctx = fhjit_context_create();
  if (!ctx) return 1;

  /* (a0, a1) x (b0, b1) -> (a0 b0, a0 b1 + a1 b0, a1 b1) */
  fhjit_graph *g = fhjit_graph_create(ctx, "tensor_product", FHJIT_R62);
  fhjit_type ct = {.kind = FHJIT_KIND_POLY, .comps = 2, .rows = ROWS, .n = N,
                   .domain = FHJIT_DOMAIN_NTT, .form = FHJIT_FORM_MONT};
  fhjit_value a = fhjit_input(g, "a", &ct), b = fhjit_input(g, "b", &ct);
  fhjit_value a0 = fhjit_extract(g, a, 0), a1 = fhjit_extract(g, a, 1);
  fhjit_value b0 = fhjit_extract(g, b, 0), b1 = fhjit_extract(g, b, 1);
  fhjit_value d[3] = {fhjit_mul(g, a0, b0),
                      fhjit_add_lazy(g, fhjit_mul(g, a0, b1), fhjit_mul(g, a1, b0)),
                      fhjit_mul(g, a1, b1)};
  CHECK(fhjit_output(g, fhjit_pack(g, 3, d), "r"));
  CHECK(fhjit_bind(g));

  /* Host buffers: random lazy residues in [0, 2q). */
  size_t in_elems = 2 * ROWS * N, out_elems = 3 * ROWS * N;
  uint64_t *in_a = malloc(in_elems * 8), *in_b = malloc(in_elems * 8);
  uint64_t *out = malloc(out_elems * 8), *ref = malloc(out_elems * 8);
  uint64_t params[8 * ROWS];
  if (!in_a || !in_b || !out || !ref) return 1;
  uint64_t s = 42;
  for (size_t i = 0; i < in_elems; i++) {
    uint64_t q = moduli[(i / N) % ROWS];
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    in_a[i] = (s >> 2) % (2 * q);
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    in_b[i] = (s >> 2) % (2 * q);
  }
  CHECK(fhjit_param_table(ctx, FHJIT_R62, moduli, ROWS, N, 0, 1, params, ROWS));

  const void *inputs[2] = {in_a, in_b};
  void *results[1] = {out}, *refs[1] = {ref};
  const char *where = "host (ORC JIT)";
  CHECK(fhjit_run_host(g, params, ROWS, inputs, results, 0));
  CHECK(fhjit_interpret(g, params, ROWS, inputs, refs));
  size_t bad = 0;
  for (size_t i = 0; i < out_elems; i++) bad += out[i] != ref[i];
  printf("embed: tensor product on the %s: %zu of %zu elements differ from the interpreter\n",
         where, bad, out_elems);
  free(in_a), free(in_b), free(out), free(ref);
  fhjit_context_destroy(ctx);
  return bad != 0;
}
