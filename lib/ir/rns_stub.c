/* rns_stub.c: placeholder until lib/ir/rns.c lands. */
#include "ir/ir.h"
fhjit_status fhjit_check_modulus(fhjit_context *ctx, fhjit_radix radix, uint64_t q, int64_t ntt_n) {
  (void)radix; (void)q; (void)ntt_n; (void)ctx; return FHJIT_OK;
}
