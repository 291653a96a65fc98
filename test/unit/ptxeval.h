/* ptxeval.h: PTX in the unit tests, without a GPU. A small PTX interpreter
 * for the r62 GPU paths' inline assembly (lw_ntt_redc62_ptx,
 * lw_ntt_shoup62_ptx, lw_ntt_csub62_ptx, lw_bconv_mac62_ptx,
 * lw_bconv_reduce62_ptx): those strings only run on a GPU; interpreting
 * the very text the GPU gets lets test_ntt_emit and test_bconv check it
 * bit for bit on any machine. And ptxas over a generated module where the
 * CUDA toolkit is installed (test_pwplan, test_s7_lower). One copy of
 * each, so a fix or a new instruction reaches every test. */
#ifndef FHJIT_TEST_PTXEVAL_H
#define FHJIT_TEST_PTXEVAL_H

#include <stdint.h>

/* Runs PTX text over 32-bit registers, predicates (0 or 1 in a register)
 * and the carry flag. The operands $0 .. $9 are 64-bit: `mov.b64 {lo, hi},
 * $k` reads in[k], `mov.b64 $k, {lo, hi}` writes out[k] (k < nout). Only
 * the instructions those strings use are known (exact names: mul.lo/hi,
 * mad.lo, madc.lo/hi, add.cc, addc, sub.cc, subc, setp.lt.s32, selp.b32);
 * any other fails the test, as does a malformed line. Returns the number
 * of instructions run (declarations and braces not counted). */
int ptxeval_run(const char *ptx, const uint64_t *in, uint64_t *out, int nout);

/* Does /usr/local/cuda/bin/ptxas accept the module text ptx for sm_90?
 * 1 when it is not installed: the callers' other checks remain. */
int ptxeval_ptxas_ok(const char *ptx);

#endif
