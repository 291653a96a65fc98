/* autmap.c: the automorphism's index maps as LLVM IR (autmap.h). SPEC
 * section 7: coefficient domain out[o] = canon(x[j]) for j = o k^-1 mod 2N
 * below N, else neg(x[j - N]); NTT domain out[o] = x[br((k (2 br(o) + 1)
 * mod 2N - 1) / 2)]. N is a power of two, so every mod 2N or mod N is a
 * mask, and the products' low bits are exact in 32 bits for N up to 2^30
 * (every NTT's). */
#include <stdio.h>
#include <string.h>

#include "lower/autmap.h"
#include "lower/lw_llvm.h"

int64_t lw_aut_inverse_mod(int64_t k, int64_t m) {
  int64_t t = 0, nt = 1, r = m, nr = k % m;
  while (nr) {
    int64_t q = r / nr, x = t - q * nt;
    t = nt, nt = x;
    x = r - q * nr;
    r = nr, nr = x;
  }
  return t < 0 ? t + m : t;
}

static int log2_ceil(int64_t n) {
  int bits = 0;
  while ((INT64_C(1) << bits) < n) bits++;
  return bits;
}

/* The low `bits` bits of x (an integer of type t, 1 <= bits < its width),
 * reversed. */
static LLVMValueRef bitrev(LLVMModuleRef m, LLVMBuilderRef b, LLVMTypeRef t, LLVMValueRef x,
                           int bits) {
  unsigned w = LLVMGetIntTypeWidth(t);
  char name[32];
  snprintf(name, sizeof name, "llvm.bitreverse.i%u", w);
  LLVMTypeRef fty = LLVMFunctionType(t, &t, 1, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(m, name);
  if (!fn) fn = LLVMAddFunction(m, name, fty);
  LLVMValueRef r = LLVMBuildCall2(b, fty, fn, &x, 1, "");
  return LLVMBuildLShr(b, r, LLVMConstInt(t, w - (unsigned)bits, 0), "");
}

/* br((k (2 br(o) + 1) mod 2N - 1) / 2) = br((k m + (k - 1) / 2) mod N) with
 * m = br(o) (k = 2h + 1: k (2m + 1) = 2 (k m + h) + 1): in 32 bits two
 * brev.b32, a mad.lo, a mask and two shifts a word, where the formula in
 * 64 bits took about twenty instructions (brev.b64, a 64-bit multiply,
 * 64-bit shifts), which cost an r32 inverse NTT 8% when it read the
 * automorphism in its loads. */
LLVMValueRef lw_aut_ntt_source(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef o, int64_t N,
                               int64_t k, LLVMValueRef *unreversed) {
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c), i64 = LLVMInt64TypeInContext(c);
  int bits = log2_ceil(N);
  if (bits == 0) {
    if (unreversed) *unreversed = LLVMConstInt(i32, 0, 0);
    return LLVMConstInt(i64, 0, 0);
  }
  LLVMTypeRef t = bits <= 30 ? i32 : i64;
  LLVMValueRef br = bitrev(m, b, t, t == i32 ? LLVMBuildTrunc(b, o, t, "") : o, bits);
  LLVMValueRef s = LLVMBuildAdd(b, LLVMBuildMul(b, br, LLVMConstInt(t, (uint64_t)k, 0), ""),
                                LLVMConstInt(t, (uint64_t)((k - 1) / 2), 0), "");
  s = LLVMBuildAnd(b, s, LLVMConstInt(t, (uint64_t)(N - 1), 0), "");
  if (unreversed) *unreversed = s;
  s = bitrev(m, b, t, s, bits);
  return t == i32 ? LLVMBuildZExt(b, s, i64, "src") : s;
}

LLVMValueRef lw_aut_coef_source(LLVMBuilderRef b, LLVMValueRef o, int64_t N, int64_t k,
                                LLVMValueRef *negate) {
  LLVMTypeRef i64 = LLVMTypeOf(o);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(i64));
  int64_t kinv = lw_aut_inverse_mod(k, 2 * N);
  if ((N & (N - 1)) == 0 && N <= (INT64_C(1) << 30)) {
    LLVMValueRef j = LLVMBuildMul(b, LLVMBuildTrunc(b, o, i32, ""),
                                  LLVMConstInt(i32, (uint64_t)kinv, 0), "");
    j = LLVMBuildAnd(b, j, LLVMConstInt(i32, (uint64_t)(2 * N - 1), 0), "");
    *negate = LLVMBuildICmp(b, LLVMIntUGE, j, LLVMConstInt(i32, (uint64_t)N, 0), "negate");
    j = LLVMBuildAnd(b, j, LLVMConstInt(i32, (uint64_t)(N - 1), 0), "");
    return LLVMBuildZExt(b, j, i64, "src");
  }
  LLVMValueRef n = LLVMConstInt(i64, (uint64_t)N, 0);
  LLVMValueRef j = LLVMBuildURem(b, LLVMBuildMul(b, o, LLVMConstInt(i64, (uint64_t)kinv, 0), ""),
                                 LLVMConstInt(i64, (uint64_t)(2 * N), 0), "");
  *negate = LLVMBuildICmp(b, LLVMIntUGE, j, n, "negate");
  return LLVMBuildSelect(b, *negate, LLVMBuildSub(b, j, n, ""), j, "src");
}

/* The low v bits of j reversed (0 <= j < 2^v). */
static int brv_small(int j, int v) {
  int r = 0;
  for (int i = 0; i < v; i++) r |= ((j >> i) & 1) << (v - 1 - i);
  return r;
}

/* Why one aligned group: br(o0 + l) = br(o0) + br_v(l) N / V for o0 a
 * multiple of V, so the unreversed sources s_l = s_0 + k br_v(l) N / V mod N
 * differ in their top v bits only, by (t + k br_v(l)) mod V, and their
 * reversals in their low v bits only. With u[j] = w[br_v(j)]: a rotation
 * of u by t (v stages of V selects, stage st rotating by 2^st when bit st
 * of t is set), then out[l] = u'[k br_v(l) mod V]. */
void lw_aut_ntt_permute(LLVMBuilderRef b, int V, const LLVMValueRef *w, LLVMValueRef t,
                        int64_t k, LLVMValueRef *out) {
  int v = log2_ceil(V);
  LLVMValueRef u[LW_VMAX], r[LW_VMAX];
  for (int j = 0; j < V; j++) u[j] = w[brv_small(j, v)];
  LLVMTypeRef tt = LLVMTypeOf(t);
  for (int st = 0; st < v; st++) {
    LLVMValueRef bit = LLVMBuildICmp(
        b, LLVMIntNE, LLVMBuildAnd(b, t, LLVMConstInt(tt, (uint64_t)1 << st, 0), ""),
        LLVMConstInt(tt, 0, 0), "");
    for (int j = 0; j < V; j++) r[j] = LLVMBuildSelect(b, bit, u[(j + (1 << st)) % V], u[j], "");
    memcpy(u, r, sizeof *u * (size_t)V);
  }
  int64_t kv = k % V;
  for (int l = 0; l < V; l++) out[l] = u[(kv * brv_small(l, v)) % V];
}
