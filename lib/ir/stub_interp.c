/* stub_interp.c: placeholder for rns.c and interp.c; deleted when they land. */
#include "ir/ir.h"
fhjit_status fhjit_check_modulus(fhjit_context *ctx, fhjit_radix radix, uint64_t q, int64_t ntt_n) {
  (void)radix; (void)q; (void)ntt_n; (void)ctx; return FHJIT_OK;
}
fhjit_status fhjit_param_table(fhjit_context *ctx, fhjit_radix radix, const uint64_t *moduli, int32_t rows,
                               int64_t n, int ntt, uint64_t scale, void *table, int64_t pstride) {
  (void)radix; (void)moduli; (void)rows; (void)n; (void)ntt; (void)scale; (void)table; (void)pstride;
  return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "not implemented yet");
}
fhjit_status fhjit_ntt_psi(fhjit_context *ctx, uint64_t q, int64_t n, uint64_t *psi) {
  (void)q; (void)n; (void)psi; return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "not implemented yet");
}
fhjit_status fhjit_twiddle_tables(fhjit_context *ctx, fhjit_radix radix, const uint64_t *moduli, int32_t rows,
                                  int64_t n, void *fwd, void *inv) {
  (void)radix; (void)moduli; (void)rows; (void)n; (void)fwd; (void)inv;
  return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "not implemented yet");
}
fhjit_status fhjit_find_primes(fhjit_context *ctx, int bits, uint64_t m, int32_t count, uint64_t *out) {
  (void)bits; (void)m; (void)count; (void)out; return ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "not implemented yet");
}
int fhjit_is_prime(uint64_t q) { (void)q; return 0; }
fhjit_status fhjit_interpret(fhjit_graph *g, const void *params, int64_t pstride, const void *const *inputs,
                             void *const *results) {
  (void)params; (void)pstride; (void)inputs; (void)results;
  return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED, "not implemented yet");
}
