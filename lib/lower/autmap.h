/* autmap.h: the automorphism's index maps as LLVM IR (SPEC section 7;
 * prefix lw_aut_): the source index of an output coefficient in either
 * domain, and the lane permutation of an NTT-domain group read as one
 * vector. lower_remap.c's remapped loads build them; they know nothing
 * of the kernel they are built into. */
#ifndef FHJIT_LOWER_AUTMAP_H
#define FHJIT_LOWER_AUTMAP_H

#include <stdint.h>

#include <llvm-c/Core.h>

/* k^-1 mod m (gcd(k, m) = 1, m <= 2^31). */
int64_t lw_aut_inverse_mod(int64_t k, int64_t m);

/* The source index (i64) of output o (i64, o < N, N a power of two) of
 * the NTT-domain automorphism by k; *unreversed (may be NULL): the index
 * before its final bit reversal, (k br(o) + (k - 1) / 2) mod N, in i32
 * for N up to 2^30, else i64. Emitted at b's position in module m. */
LLVMValueRef lw_aut_ntt_source(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef o, int64_t N,
                               int64_t k, LLVMValueRef *unreversed);

/* The source index (i64) of output o (i64, o < N) of the
 * coefficient-domain automorphism by k, *negate (i1) set when the word is
 * to be negated. */
LLVMValueRef lw_aut_coef_source(LLVMBuilderRef b, LLVMValueRef o, int64_t N, int64_t k,
                                LLVMValueRef *negate);

/* The words of V = 2^v consecutive NTT-domain outputs from the aligned
 * group w[0 .. V) of their sources: out[l] = w[br_v((t + k br_v(l)) mod
 * V)], t = the top v bits of lane 0's unreversed source index. */
void lw_aut_ntt_permute(LLVMBuilderRef b, int V, const LLVMValueRef *w, LLVMValueRef t,
                        int64_t k, LLVMValueRef *out);

#endif
