/* ntt_redc62_ptx.h: r62's twiddle products on the GPU, REDC(w * x), as PTX
 * text in two forms: one carry chain over 32-bit halves (arith.c's
 * comment above lw_ntt_redc62_ptx says why it is exact), and Shoup's form
 * (below). One macro each for their two users: lib/lower/arith.c (LLVM
 * inline assembly, operands "$0".."$4") and bench/baselines/ntt_cuda.cu
 * (CUDA asm, "%0".."%4"), whose product-rate kernel times these very
 * texts. The chain: OUT = REDC(w * X) with W4 = 4w and WK4 = w * 4k mod
 * 2^64, Q = q; all 64-bit. */
#ifndef LW_NTT_REDC62_PTX_H
#define LW_NTT_REDC62_PTX_H

#define LW_NTT_REDC62_PTX(OUT, X, W4, WK4, Q) \
    "{\n\t" \
    ".reg .u32 fx0, fx1, fw0, fw1, fk0, fk1, fq0, fq1, fm0, fm1, ft, fr0, fr1, fr2, fr3;\n\t" \
    "mov.b64 {fx0, fx1}, " X ";\n\t" \
    "mov.b64 {fw0, fw1}, " W4 ";\n\t" \
    "mov.b64 {fk0, fk1}, " WK4 ";\n\t" \
    "mov.b64 {fq0, fq1}, " Q ";\n\t" \
    /* m4 = x * wk4 mod 2^64 */ \
    "mul.lo.u32 fm0, fx0, fk0;\n\t" \
    "mul.hi.u32 ft, fx0, fk0;\n\t" \
    "mad.lo.u32 ft, fx0, fk1, ft;\n\t" \
    "mad.lo.u32 fm1, fx1, fk0, ft;\n\t" \
    /* x1 w1 at weight 2^64; x0 w0 plus 2^64 - 1 at weight 2^0 (the low \
     * word only for its carry); m0 q0 is not computed (below) */ \
    "mul.lo.u32 fr2, fx1, fw1;\n\t" \
    "mul.hi.u32 fr3, fx1, fw1;\n\t" \
    "mad.lo.cc.u32 fr0, fx0, fw0, 0xffffffff;\n\t" \
    "madc.hi.cc.u32 fr1, fx0, fw0, 0xffffffff;\n\t" \
    "addc.cc.u32 fr2, fr2, 0;\n\t" \
    "addc.u32 fr3, fr3, 0;\n\t" \
    /* weight 2^32 */ \
    "mad.lo.cc.u32 fr1, fx0, fw1, fr1;\n\t" \
    "madc.hi.cc.u32 fr2, fx0, fw1, fr2;\n\t" \
    "addc.u32 fr3, fr3, 0;\n\t" \
    "mad.lo.cc.u32 fr1, fx1, fw0, fr1;\n\t" \
    "madc.hi.cc.u32 fr2, fx1, fw0, fr2;\n\t" \
    "addc.u32 fr3, fr3, 0;\n\t" \
    "mad.lo.cc.u32 fr1, fm0, fq1, fr1;\n\t" \
    "madc.hi.cc.u32 fr2, fm0, fq1, fr2;\n\t" \
    "addc.u32 fr3, fr3, 0;\n\t" \
    "mad.lo.cc.u32 fr1, fm1, fq0, fr1;\n\t" \
    "madc.hi.cc.u32 fr2, fm1, fq0, fr2;\n\t" \
    "addc.u32 fr3, fr3, 0;\n\t" \
    /* m1 q1 at weight 2^64 (the result is below 2^64: no carry out) */ \
    "mad.lo.cc.u32 fr2, fm1, fq1, fr2;\n\t" \
    "madc.hi.u32 fr3, fm1, fq1, fr3;\n\t" \
    "mov.b64 " OUT ", {fr2, fr3};\n\t" \
    "}"

/* The same REDC(w * x) in Shoup's form (arith.c's comment above
 * lw_ntt_shoup62_ptx says why it is exact): OUT = lo64(X * WR - Q * q) with
 * Q = hi64(X * WK4), WR = REDC(w), WK4 = w * 4k mod 2^64, NQ = 2^64 - q;
 * all 64-bit. Five 32 x 32 products with their high halves, one high half
 * alone and four low halves, where the chain above takes eight and two. */
#define LW_NTT_SHOUP62_PTX(OUT, X, WR, WK4, NQ) \
    "{\n\t" \
    ".reg .u32 sx0, sx1, sw0, sw1, sk0, sk1, sn0, sn1, st0, st1, st2, sq0, sq1, su0, su1;\n\t" \
    "mov.b64 {sx0, sx1}, " X ";\n\t" \
    "mov.b64 {sw0, sw1}, " WR ";\n\t" \
    "mov.b64 {sk0, sk1}, " WK4 ";\n\t" \
    "mov.b64 {sn0, sn1}, " NQ ";\n\t" \
    /* Q = hi64(x * wk4): every partial product, for the exact carry */ \
    "mul.hi.u32 st0, sx0, sk0;\n\t" \
    "mad.lo.cc.u32 st0, sx0, sk1, st0;\n\t" \
    "madc.hi.u32 st1, sx0, sk1, 0;\n\t" \
    "mad.lo.cc.u32 st0, sx1, sk0, st0;\n\t" \
    "madc.hi.cc.u32 st1, sx1, sk0, st1;\n\t" \
    "addc.u32 st2, 0, 0;\n\t" \
    "mad.lo.cc.u32 sq0, sx1, sk1, st1;\n\t" \
    "madc.hi.u32 sq1, sx1, sk1, st2;\n\t" \
    /* u = x * wr + Q * (2^64 - q) mod 2^64 */ \
    "mul.lo.u32 su0, sx0, sw0;\n\t" \
    "mul.hi.u32 su1, sx0, sw0;\n\t" \
    "mad.lo.u32 su1, sx0, sw1, su1;\n\t" \
    "mad.lo.u32 su1, sx1, sw0, su1;\n\t" \
    "mad.lo.cc.u32 su0, sq0, sn0, su0;\n\t" \
    "madc.hi.u32 su1, sq0, sn0, su1;\n\t" \
    "mad.lo.u32 su1, sq0, sn1, su1;\n\t" \
    "mad.lo.u32 su1, sq1, sn0, su1;\n\t" \
    "mov.b64 " OUT ", {su0, su1};\n\t" \
    "}"

#endif
