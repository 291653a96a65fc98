// ntt_cuda.cu: a hand-written CUDA baseline for fhjit's NTT (SPEC section 5),
// with exactly SPEC's representatives: negacyclic, radix-2, bit-reversed
// evaluation order, lazy butterflies, Montgomery REDC without final
// subtraction for r62 and canonical for r32, the four transforms with their
// pre/post steps.
//
// Schedule (the same as fhjit's lowering, lib/lower/ntt.h): N = N1 * N2;
// forward kernel 1 runs the first log N1 stages on the N2 columns (C
// consecutive columns per block, so each access is a 128-byte run), kernel 2
// the remaining stages on contiguous chunks of N2 in shared memory (C chunks
// per block); the inverse runs them in the other order; N <= 2^12 runs in one
// kernel. Each thread holds E words in registers and applies up to log E
// stages per pass; passes exchange data through padded shared memory.
// Twiddle products use the twiddle's Montgomery constant, computed once per
// twiddle per thread (see redc_const), with the same result bits as SPEC's
// REDC.
//
// main() checks every transform against a host reference (the SPEC loops)
// on sampled rows, then times forward (coef-mont -> ntt-mont) and inverse
// (ntt-mont -> coef-mont) for r62 and r32 at N = 2^12, 2^14, 2^16, 2^17 with
// 32 rows (and 64 rows for r32), rotating buffers so the working set exceeds
// the L2 where possible, alongside a product-rate kernel and a copy kernel
// measured in the same run, and prints the floors they imply.
//
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o ntt_cuda ntt_cuda.cu
// Run:   ./ntt_cuda [--quick] [--floors] [--json FILE]   (--floors: the copy
//         bandwidth and product rates alone)
// --json FILE: the same figures as JSON, {"device": name, "sms": count,
// "results": [...]}: one "floors" object (copy GB/s, product rates) and one
// "ntt" object per table line (times, floors); bench/plot.py reads it.
// Without a GPU, ntt_cuda_emu.cpp runs these kernels on the CPU (one thread
// per CUDA thread, a barrier for __syncthreads) against the same reference.
#ifndef NTT_EMULATE
#include <cuda_runtime.h>
#define NTT_LAUNCH(kernel, grid, block, stream, arg) kernel<<<(grid), (block), 0, (stream)>>>(arg)
#else
#include "ntt_cuda_emu.h" /* CPU emulation of the kernels (ntt_cuda_emu.cpp) */
#endif

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#define CK(call)                                                                    \
  do {                                                                              \
    cudaError_t e_ = (call);                                                        \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                 \
              cudaGetErrorString(e_));                                              \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

typedef unsigned __int128 u128;

// ------------------------------------------------------------------ radices

struct R62 {
  typedef uint64_t W;
  static constexpr int WBITS = 62;
  static constexpr int HALF = 31;
  static constexpr int LOG_E = 3;    // 8 words per thread (bound by 64-bit products)
  static constexpr int LOG_COLS = 4; // 16 columns = 128 bytes
  static constexpr int PAD = 4;      // one pad word every 16
  static const char *name() { return "r62"; }
};
struct R32 {
  typedef uint32_t W;
  static constexpr int WBITS = 32;
  static constexpr int HALF = 16;
  static constexpr int LOG_E = 4;    // 16 words per thread (bound by memory)
  static constexpr int LOG_COLS = 5; // 32 columns = 128 bytes
  static constexpr int PAD = 5;
  static const char *name() { return "r32"; }
};

__device__ __forceinline__ uint64_t mulhi(uint64_t a, uint64_t b) { return __umul64hi(a, b); }
__device__ __forceinline__ uint32_t mulhi(uint32_t a, uint32_t b) { return __umulhi(a, b); }

template <class R> struct RowC {
  typedef typename R::W W;
  W q, q2, k4; // k4: 4k mod 2^64 (r62) or k (r32)
  const W *tw;
};

template <class R> struct MC {
  typename R::W w4, wk4; // r62: 4w, w*4k mod 2^64; r32: w, w*k mod 2^32
};

template <class R>
__device__ __forceinline__ MC<R> make_const(const RowC<R> &r, typename R::W w) {
  MC<R> c;
  if (R::WBITS == 62) c.w4 = w << 2;
  else c.w4 = w;
  c.wk4 = w * r.k4;
  return c;
}

// REDC(w*x) for a constant w. r62: m = (lo64(w*x) * k) mod 2^62 equals
// (x * (w*k mod 2^62)) mod 2^62, so m4 = x * wk4 = 4m (mod 2^64) exactly;
// (w*x + m*q) >> 62 = hi64(4w * x) + hi64(4m * q) + carry, and the carry of
// the low 62-bit halves (which sum to 0 mod 2^62) is 1 exactly when m != 0.
// r32: the same with 32-bit halves, then the canonical subtraction.
template <class R>
__device__ __forceinline__ typename R::W redc_const(const RowC<R> &r, const MC<R> &c,
                                                    typename R::W x) {
  typedef typename R::W W;
  W m4 = x * c.wk4;
  W u = mulhi(c.w4, x) + mulhi(m4, r.q) + (W)(m4 != 0);
  if (R::WBITS == 32 && u >= r.q) u -= r.q;
  return u;
}

template <class R>
__device__ __forceinline__ typename R::W redc_one(const RowC<R> &r, typename R::W x) {
  typedef typename R::W W;
  W m4 = x * r.k4;
  W u = mulhi(m4, r.q) + (W)(m4 != 0);
  if (R::WBITS == 32 && u >= r.q) u -= r.q;
  return u;
}

template <class W> __device__ __forceinline__ W lazyadd(W a, W b, W q2) {
  W s = a + b;
  return s >= q2 ? s - q2 : s;
}

// ------------------------------------------------------------ the schedule

__host__ __device__ constexpr int npass(int m, int le) { return (m + le - 1) / le; }
__host__ __device__ constexpr int pass_e(int m, int le, int j) {
  return j < npass(m, le) - 1 ? le : m - le * (npass(m, le) - 1);
}
__host__ __device__ constexpr int pass_b(int m, int le, bool fwd, int j) {
  int s = 0;
  for (int i = 0; i < j; i++) s += pass_e(m, le, i);
  return fwd ? m - s - pass_e(m, le, j) : s;
}
// Local bit of register bit j: the pass bits, then (short passes) extra bits
// nearest the pass, below first.
__host__ __device__ constexpr int rpos(int m, int b, int e, int le, int j) {
  if (j < e) return b + j;
  unsigned used = ((1u << e) - 1) << b;
  int n = e;
  for (int d = 1; d < 32; d++) {
    if (b - d >= 0 && !((used >> (b - d)) & 1)) {
      if (n == j) return b - d;
      used |= 1u << (b - d);
      n++;
    }
    if (n < le && b + e - 1 + d < m && !((used >> (b + e - 1 + d)) & 1)) {
      if (n == j) return b + e - 1 + d;
      used |= 1u << (b + e - 1 + d);
      n++;
    }
  }
  return -1;
}
__host__ __device__ constexpr unsigned kconst(int m, int b, int e, int le, unsigned r) {
  unsigned k = 0;
  for (int j = 0; j < le; j++) k |= ((r >> j) & 1u) << rpos(m, b, e, le, j);
  return k;
}
__host__ __device__ constexpr unsigned used_mask(int m, int b, int e, int le) {
  return kconst(m, b, e, le, (1u << le) - 1);
}

struct Args {
  const void *params;
  int64_t pstride;
  const void *tw;
  const void *src;
  void *dst;
  int64_t rows;
  int kind; // 0 std->ntt, 1 mont->ntt, 2 ntt->mont, 3 ntt->std
  int64_t batch_rows; // whole rows per block may leave the last block short
};

// One kernel: COLS (columns of stride N/M) or chunks (contiguous M words).
template <class R, bool FWD, bool COLS, int LOGN, int M, int LOGC, bool PRE, bool POST>
struct NttKernel {
  typedef typename R::W W;
  static constexpr int LOGE = R::LOG_E < M ? R::LOG_E : M;
  static constexpr int E = 1 << LOGE;
  static constexpr int LOG_SUBS = LOGN - M;
  static constexpr int LOG_C = LOGC;
  static constexpr int LOG_U = M - LOGE;
  static constexpr int T = 1 << (LOGC + LOG_U);
  static constexpr int NP = npass(M, LOGE);
  static constexpr bool STAGED_LOAD = !COLS && !FWD;
  static constexpr bool STAGED_STORE = !COLS && FWD;
  static constexpr int MP = COLS ? (1 << M) : (1 << M) + ((1 << M) >> R::PAD);
  static constexpr int SMEM = COLS ? (1 << (LOGC + M)) : (MP << LOGC);

  struct Place {
    unsigned c, u;
    int64_t batch_row, gbase, tw_base;
    unsigned sbase;
  };

  static __device__ __forceinline__ Place place(unsigned tid, int64_t blk) {
    Place p;
    if (COLS) {
      p.c = tid & ((1u << LOGC) - 1);
      p.u = tid >> LOGC;
      constexpr int LOG_BPR = LOG_SUBS - LOGC;
      p.batch_row = blk >> LOG_BPR;
      int64_t col = ((blk & ((1ll << LOG_BPR) - 1)) << LOGC) + p.c;
      p.gbase = (p.batch_row << LOGN) + col;
      p.tw_base = 1;
      p.sbase = p.c;
    } else {
      p.u = tid & ((1u << LOG_U) - 1);
      p.c = tid >> LOG_U;
      int64_t gs = (blk << LOGC) + p.c;
      p.batch_row = gs >> LOG_SUBS;
      p.gbase = gs << M;
      p.tw_base = (1ll << LOG_SUBS) + (gs & ((1ll << LOG_SUBS) - 1));
      p.sbase = p.c * MP;
    }
    return p;
  }
  static __device__ __forceinline__ int64_t goff(const Place &p, unsigned k) {
    return p.gbase + (COLS ? ((int64_t)k << LOG_SUBS) : (int64_t)k);
  }
  static __device__ __forceinline__ unsigned sidx(const Place &p, unsigned k) {
    return COLS ? (k << LOGC) + p.sbase : p.sbase + k + (k >> R::PAD);
  }
  static __device__ __forceinline__ RowC<R> row_consts(const Args &a, int64_t batch_row,
                                                      int64_t *row_out) {
    const W *P = (const W *)a.params;
    int64_t row = batch_row % a.rows;
    RowC<R> r;
    r.q2 = __ldg(&P[row]);
    r.q = r.q2 >> 1;
    W k = __ldg(&P[3 * a.pstride + row]) | (__ldg(&P[4 * a.pstride + row]) << R::HALF);
    r.k4 = R::WBITS == 62 ? (W)(k << 2) : k;
    r.tw = (const W *)a.tw + (row << LOGN);
    *row_out = row;
    return r;
  }

  template <int J>
  static __device__ __forceinline__ void pass(const Args &a, W *smem, unsigned tid, int64_t blk) {
    constexpr int B = pass_b(M, LOGE, FWD, J), EP = pass_e(M, LOGE, J);
    constexpr unsigned USED = used_mask(M, B, EP, LOGE);
    constexpr bool DIRECT_LOAD = J == 0 && !STAGED_LOAD;
    constexpr bool DIRECT_STORE = J == NP - 1 && !STAGED_STORE;
    if (J > 0 || STAGED_LOAD) __syncthreads();
    Place p = place(tid, blk);
    int64_t row;
    RowC<R> r = row_consts(a, p.batch_row, &row);
    // deposit u into the bits the registers do not cover
    unsigned ku = 0;
    {
      int i = 0;
#pragma unroll
      for (int bit = 0; bit < M; bit++)
        if (!((USED >> bit) & 1)) {
          ku |= ((p.u >> i) & 1u) << bit;
          i++;
        }
    }
    W x[E];
    const bool valid = p.batch_row < a.batch_rows;
    if (DIRECT_LOAD) {
      const W *src = (const W *)a.src;
#pragma unroll
      for (int i = 0; i < E; i++) x[i] = valid ? src[goff(p, ku | kconst(M, B, EP, LOGE, i))] : 0;
      if (PRE && a.kind == 0) {
        MC<R> r2 = make_const(r, __ldg(&((const W *)a.params)[5 * a.pstride + row]));
#pragma unroll
        for (int i = 0; i < E; i++) x[i] = redc_const(r, r2, x[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < E; i++) x[i] = smem[sidx(p, ku | kconst(M, B, EP, LOGE, i))];
    }
#pragma unroll
    for (int s = 0; s < EP; s++) {
      const int rb = FWD ? EP - 1 - s : s;
      const int beta = B + rb;
      int64_t base = (p.tw_base << (M - 1 - beta)) + (ku >> (beta + 1));
#pragma unroll
      for (int lo = 0; lo < E; lo++) {
        if (lo & (1 << rb)) continue;
        // registers whose positions agree above beta share a twiddle: the
        // identical loads and constant products are merged by the compiler
        const unsigned key = kconst(M, B, EP, LOGE, lo) >> (beta + 1);
        const MC<R> mc = make_const(r, __ldg(&r.tw[base + key]));
        const int hi = lo | (1 << rb);
        if (FWD) {
          W pr = redc_const(r, mc, x[hi]);
          W a0 = x[lo];
          x[lo] = lazyadd(a0, pr, r.q2);
          x[hi] = lazyadd(a0, (W)(r.q2 - pr), r.q2);
        } else {
          W a0 = x[lo], b0 = x[hi];
          x[lo] = lazyadd(a0, b0, r.q2);
          x[hi] = redc_const(r, mc, lazyadd(a0, (W)(r.q2 - b0), r.q2));
        }
      }
    }
    if (DIRECT_STORE) {
      W *dst = (W *)a.dst;
      if (POST && a.kind >= 2) {
        MC<R> ninv = make_const(r, __ldg(&((const W *)a.params)[7 * a.pstride + row]));
#pragma unroll
        for (int i = 0; i < E; i++) {
          W v = redc_const(r, ninv, x[i]);
          if (a.kind == 3) {
            v = redc_one(r, v);
            if (v >= r.q) v -= r.q;
          }
          x[i] = v;
        }
      }
      if (valid)
#pragma unroll
        for (int i = 0; i < E; i++) dst[goff(p, ku | kconst(M, B, EP, LOGE, i))] = x[i];
    } else {
#pragma unroll
      for (int i = 0; i < E; i++) smem[sidx(p, ku | kconst(M, B, EP, LOGE, i))] = x[i];
    }
  }

  // Chunk kernels: the block's C chunks are C*M consecutive words, copied in
  // 16-byte vectors by consecutive threads.
  template <bool LOAD>
  static __device__ __forceinline__ void staged(const Args &a, W *smem, unsigned tid, int64_t blk) {
    constexpr int V = 16 / sizeof(W);
    constexpr int G = (1 << (LOGC + M)) / (T * V);
    int64_t gblock = blk << (LOGC + M);
    if (!LOAD) __syncthreads();
#pragma unroll
    for (int g = 0; g < G; g++) {
      unsigned e = (tid + g * T) * V;
      unsigned c = e >> M, k = e & ((1u << M) - 1);
      unsigned s0 = c * MP;
      if (((gblock + e) >> LOGN) >= a.batch_rows) continue; // past the last row
      if (LOAD) {
        const W *src = (const W *)a.src + gblock + e;
        W v[V];
        if constexpr (V == 2) {
          ulonglong2 t = *(const ulonglong2 *)src;
          v[0] = (W)t.x, v[1] = (W)t.y;
        } else {
          uint4 t = *(const uint4 *)src;
          v[0] = (W)t.x, v[1] = (W)t.y, v[2] = (W)t.z, v[3] = (W)t.w;
        }
#pragma unroll
        for (int i = 0; i < V; i++) smem[s0 + (k + i) + ((k + i) >> R::PAD)] = v[i];
      } else {
        W v[V];
#pragma unroll
        for (int i = 0; i < V; i++) v[i] = smem[s0 + (k + i) + ((k + i) >> R::PAD)];
        W *dst = (W *)a.dst + gblock + e;
        if constexpr (V == 2) {
          *(ulonglong2 *)dst = make_ulonglong2(v[0], v[1]);
        } else {
          *(uint4 *)dst = make_uint4((uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2], (uint32_t)v[3]);
        }
      }
    }
  }

  template <int... J>
  static __device__ __forceinline__ void passes(const Args &a, W *smem, unsigned tid, int64_t blk,
                                                std::integer_sequence<int, J...>) {
    (pass<J>(a, smem, tid, blk), ...);
  }

  static __device__ __forceinline__ void run(const Args &a, W *smem) {
    unsigned tid = threadIdx.x;
    int64_t blk = blockIdx.x;
    if (STAGED_LOAD) staged<true>(a, smem, tid, blk);
    passes(a, smem, tid, blk, std::make_integer_sequence<int, NP>{});
    if (STAGED_STORE) staged<false>(a, smem, tid, blk);
  }
};

template <class K> __global__ void __launch_bounds__(K::T) ntt_kernel(Args a) {
  __shared__ __align__(16) typename K::W smem[K::SMEM];
  K::run(a, smem);
}

template <class K> static void launch_one(const Args &a, int64_t batch_rows, cudaStream_t s) {
  int64_t blocks = ((batch_rows << K::LOG_SUBS) + (1 << K::LOG_C) - 1) >> K::LOG_C;
  NTT_LAUNCH(ntt_kernel<K>, (unsigned)blocks, K::T, s, a);
}

template <class R, int LOGN, bool FWD> struct Ntt {
  static constexpr int LOGE = R::LOG_E;
  static constexpr bool ONE = LOGN <= 12;
  static constexpr int M_CHUNK = ONE ? LOGN : (LOGN + 1) / 2;
  static constexpr int M_COL = LOGN - M_CHUNK;
  static constexpr int LOGC_ONE = 8 - (LOGN - LOGE) > 0 ? 8 - (LOGN - LOGE) : 0;
  static constexpr int LOGC_CH0 = 8 - (M_CHUNK - LOGE) > 0 ? 8 - (M_CHUNK - LOGE) : 0;
  static constexpr int LOGC_CH = LOGC_CH0 < M_COL ? LOGC_CH0 : M_COL;
  typedef NttKernel<R, FWD, false, LOGN, LOGN, LOGC_ONE, true, true> One;
  typedef NttKernel<R, FWD, true, LOGN, (M_COL > 0 ? M_COL : 1), R::LOG_COLS, FWD, !FWD> Col;
  typedef NttKernel<R, FWD, false, LOGN, M_CHUNK, LOGC_CH, !FWD, FWD> Chunk;
  // kernel 0: in -> out; kernel 1: out -> out (in place)
  static void launch(Args a, int64_t batch_rows, cudaStream_t s) {
    a.batch_rows = batch_rows;
    if constexpr (ONE) {
      launch_one<One>(a, batch_rows, s);
    } else if constexpr (FWD) {
      launch_one<Col>(a, batch_rows, s);
      a.src = a.dst;
      launch_one<Chunk>(a, batch_rows, s);
    } else {
      launch_one<Chunk>(a, batch_rows, s);
      a.src = a.dst;
      launch_one<Col>(a, batch_rows, s);
    }
  }
};

#ifndef NTT_EMULATE
// --------------------------------------------------- rate and copy kernels

// Each thread: 8 independent chains of products by a fixed twiddle with its
// precomputed constant (what an NTT butterfly does).
// r62's REDC(w*x) as fhjit emits it on the GPU: the very PTX text of
// lib/lower/ntt_redc62_ptx.h, one carry chain over 32-bit halves for
// hi128(4w*x + m4*q), without the low halves' product of m4*q (the sum is a
// multiple of 2^64, so adding 2^64 - 1 instead rounds it up exactly). Only
// the product-rate kernel uses it, for the rate of that form.
#include "../../lib/lower/ntt_redc62_ptx.h"
__device__ __forceinline__ uint64_t redc62_chain(uint64_t x, uint64_t w4, uint64_t wk4, uint64_t q) {
  uint64_t u;
  asm(LW_NTT_REDC62_PTX("%0", "%1", "%2", "%3", "%4")
      : "=l"(u)
      : "l"(x), "l"(w4), "l"(wk4), "l"(q));
  return u;
}
// The same REDC(w*x) in Shoup's form, as fhjit emits it where a block
// shares its twiddle constants (lw_ntt_shoup62_ptx): x * REDC(w) - Q * q
// with Q = hi64(x * wk4), exactly.
__device__ __forceinline__ uint64_t redc62_shoup(uint64_t x, uint64_t wr, uint64_t wk4, uint64_t nq) {
  uint64_t u;
  asm(LW_NTT_SHOUP62_PTX("%0", "%1", "%2", "%3", "%4")
      : "=l"(u)
      : "l"(x), "l"(wr), "l"(wk4), "l"(nq));
  return u;
}

// FORM: 0 the C form of the floor; r62 only: 1 fhjit's carry chain, 2 its Shoup form
template <class R, int FORM = 0>
__global__ void product_kernel(typename R::W *out, typename R::W q, typename R::W k4, typename R::W w,
                               int iters) {
  typedef typename R::W W;
  RowC<R> r;
  r.q = q, r.q2 = 2 * q, r.k4 = k4, r.tw = nullptr;
  MC<R> c = make_const(r, w);
  W wr = 0, nq = 0;
  if constexpr (FORM == 2 && R::WBITS == 62) wr = __umul64hi(c.wk4, q) + (c.wk4 != 0), nq = 0 - q;
  W x[8];
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int i = 0; i < 8; i++) x[i] = (W)(t * 8 + i) % q;
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
      if constexpr (FORM == 1 && R::WBITS == 62) x[i] = redc62_chain(x[i], c.w4, c.wk4, q);
      else if constexpr (FORM == 2 && R::WBITS == 62) x[i] = redc62_shoup(x[i], wr, c.wk4, nq);
      else x[i] = redc_const(r, c, x[i]);
    }
  }
  W s = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) s ^= x[i];
  out[t] = s;
}

// Each thread: 8 independent sums of wide products of words by constants,
// what a basis conversion's inner loop does (r62: 64 x 64 -> 128-bit
// products into a 128-bit sum; r32: 32 x 32 -> 64 into a 64-bit sum); the
// words change each step so nothing is hoisted.
template <class R>
__global__ void mac_kernel(uint64_t *out, typename R::W c0, int iters) {
  typedef typename R::W W;
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  W x[8];
  uint64_t lo[8] = {0}, hi[8] = {0};
#pragma unroll
  for (int i = 0; i < 8; i++) x[i] = (W)(t * 8 + i);
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
      W c = c0 + (W)i;
      if constexpr (R::WBITS == 62) {
        uint64_t p = (uint64_t)x[i] * c, ph = __umul64hi((uint64_t)x[i], c);
        lo[i] += p;
        hi[i] += ph + (lo[i] < p);
      } else {
        lo[i] += (uint64_t)x[i] * c;
      }
      x[i] += (W)1;
    }
  }
  uint64_t acc = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) acc ^= lo[i] ^ hi[i];
  out[t] = acc;
}

__global__ void copy_kernel(const ulonglong2 *__restrict__ in, ulonglong2 *__restrict__ out, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = in[i];
}

#endif // NTT_EMULATE

// ----------------------------------------------------------- host helpers

static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t q) { return (uint64_t)((u128)a * b % q); }
static uint64_t powmod(uint64_t a, uint64_t e, uint64_t q) {
  uint64_t r = 1 % q;
  a %= q;
  for (; e; e >>= 1, a = mulmod(a, a, q))
    if (e & 1) r = mulmod(r, a, q);
  return r;
}
static bool is_prime(uint64_t n) {
  static const uint64_t bases[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  if (n < 2) return false;
  for (uint64_t b : bases)
    if (n % b == 0) return n == b;
  uint64_t d = n - 1;
  int s = 0;
  while (!(d & 1)) d >>= 1, s++;
  for (uint64_t a : bases) {
    uint64_t x = powmod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool comp = true;
    for (int i = 1; i < s && comp; i++) {
      x = mulmod(x, x, n);
      if (x == n - 1) comp = false;
    }
    if (comp) return false;
  }
  return true;
}
// the `count` largest primes q < 2^bits with q = 1 mod 2^18
static std::vector<uint64_t> find_primes(int bits, int count) {
  std::vector<uint64_t> out;
  const uint64_t m = 1ull << 18;
  for (uint64_t q = (1ull << bits) - m + 1; (int)out.size() < count; q -= m)
    if (is_prime(q)) out.push_back(q);
  return out;
}

struct HostMod {
  int w;
  uint64_t q, k, r1, r2;
  HostMod(int radix_bits, uint64_t q_) : w(radix_bits), q(q_) {
    uint64_t inv = q;
    for (int i = 0; i < 6; i++) inv *= 2 - q * inv;
    uint64_t mask = w == 64 ? ~0ull : (1ull << w) - 1;
    k = (0 - inv) & mask;
    r1 = (uint64_t)(((u128)1 << w) % q);
    r2 = mulmod(r1, r1, q);
  }
  // SPEC REDC: r32 canonical, r62 lazy
  uint64_t redc(u128 t) const {
    if (w == 32) {
      uint64_t t64 = (uint64_t)t;
      uint64_t m = (uint32_t)((uint32_t)t64 * (uint32_t)k);
      uint64_t u = (t64 + m * q) >> 32;
      return u >= q ? u - q : u;
    }
    uint64_t m = ((uint64_t)t * k) & ((1ull << 62) - 1);
    return (uint64_t)((t + (u128)m * q) >> 62);
  }
  uint64_t mul(uint64_t a, uint64_t b) const { return redc((u128)a * b); }
  uint64_t lazyadd(uint64_t a, uint64_t b) const {
    uint64_t s = a + b;
    return s >= 2 * q ? s - 2 * q : s;
  }
};

static uint64_t bitrev(uint64_t x, int bits) {
  uint64_t r = 0;
  for (int i = 0; i < bits; i++) r |= ((x >> i) & 1) << (bits - 1 - i);
  return r;
}

static uint64_t find_psi(uint64_t q, uint64_t n) {
  for (uint64_t c = 2;; c++) {
    uint64_t r = powmod(c, (q - 1) / (2 * n), q);
    if (powmod(r, n, q) != 1) return r;
  }
}

// The SPEC loops: the reference every kernel result is compared with.
static void ref_ntt(const HostMod &m, int kind, int logn, const uint64_t *tab, uint64_t *x,
                    uint64_t ninv_r) {
  uint64_t n = 1ull << logn;
  if (kind <= 1) {
    if (kind == 0)
      for (uint64_t i = 0; i < n; i++) x[i] = m.mul(x[i], m.r2);
    for (int s = 0; s < logn; s++) {
      uint64_t t = n >> (s + 1);
      for (uint64_t j = 0; j < n / 2; j++) {
        uint64_t g = j / t, lo = 2 * g * t + j % t, hi = lo + t;
        uint64_t p = m.mul(tab[(1ull << s) + g], x[hi]), a = x[lo];
        x[lo] = m.lazyadd(a, p);
        x[hi] = m.lazyadd(a, 2 * m.q - p);
      }
    }
  } else {
    for (int s = 0; s < logn; s++) {
      uint64_t t = 1ull << s;
      for (uint64_t j = 0; j < n / 2; j++) {
        uint64_t g = j / t, lo = 2 * g * t + j % t, hi = lo + t;
        uint64_t a = x[lo], b = x[hi];
        x[lo] = m.lazyadd(a, b);
        x[hi] = m.mul(tab[(n >> (s + 1)) + g], m.lazyadd(a, 2 * m.q - b));
      }
    }
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = m.mul(x[i], ninv_r);
      if (kind == 3) {
        v = m.redc(v);
        if (v >= m.q) v -= m.q;
      }
      x[i] = v;
    }
  }
}

// ------------------------------------------------------------------ bench

template <class R> struct Setup {
  typedef typename R::W W;
  int logn;
  int64_t rows;
  std::vector<uint64_t> q;
  std::vector<W> params, fwd, inv; // params [8][rows], tables [rows][N]
  std::vector<uint64_t> ninv_r;
  Setup(int logn_, int64_t rows_) : logn(logn_), rows(rows_) {
    int w = R::WBITS == 62 ? 62 : 32;
    q = find_primes(R::WBITS == 62 ? 60 : 30, (int)rows);
    uint64_t n = 1ull << logn;
    params.assign(8 * rows, 0);
    fwd.resize(rows * n);
    inv.resize(rows * n);
    ninv_r.resize(rows);
    for (int64_t r = 0; r < rows; r++) {
      HostMod m(w, q[r]);
      uint64_t half_mask = (1ull << (w / 2)) - 1;
      params[0 * rows + r] = (W)(2 * q[r]);
      params[1 * rows + r] = (W)(q[r] & half_mask);
      params[2 * rows + r] = (W)(q[r] >> (w / 2));
      params[3 * rows + r] = (W)(m.k & half_mask);
      params[4 * rows + r] = (W)(m.k >> (w / 2));
      params[5 * rows + r] = (W)m.r2;
      params[6 * rows + r] = (W)m.r2;
      ninv_r[r] = mulmod(powmod(n % q[r], q[r] - 2, q[r]), m.r1, q[r]);
      params[7 * rows + r] = (W)ninv_r[r];
      uint64_t psi = find_psi(q[r], n), psi_inv = powmod(psi, q[r] - 2, q[r]);
      for (uint64_t k = 0; k < n; k++) {
        uint64_t e = bitrev(k, logn);
        fwd[r * n + k] = (W)m.mul(powmod(psi, e, q[r]), m.r2);
        inv[r * n + k] = (W)m.mul(powmod(psi_inv, e, q[r]), m.r2);
      }
    }
  }
};

#ifndef NTT_EMULATE
template <class R, int LOGN> static void launch_kind(Args a, int64_t rows, int kind, cudaStream_t s) {
  a.kind = kind;
  if (kind <= 1) Ntt<R, LOGN, true>::launch(a, rows, s);
  else Ntt<R, LOGN, false>::launch(a, rows, s);
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Floors {
  double prod_rate[2]; // G products/s: r32, r62
  double copy_bw;      // bytes/s
};

static FILE *g_json; // --json: one object per result
static int g_json_items;

static void json_item(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void json_item(const char *fmt, ...) {
  if (!g_json) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(g_json, "%s\n  {", g_json_items++ ? "," : "");
  vfprintf(g_json, fmt, ap);
  fprintf(g_json, "}");
  va_end(ap);
  fflush(g_json);
}

template <class R, int LOGN>
static void bench_one(int64_t rows, const Floors &fl, bool quick, int &failures) {
  typedef typename R::W W;
  const int64_t n = 1ll << LOGN;
  Setup<R> S(LOGN, rows);
  size_t words = (size_t)(rows * n), bytes = words * sizeof(W);
  // rotate buffer pairs so the working set is at least ~3x the L2
  int nsets = (int)std::min<size_t>(32, std::max<size_t>(2, (size_t)(200u << 20) / (2 * bytes) + 1));
  if (quick) nsets = 2;
  W *d_params, *d_fwd, *d_inv;
  CK(cudaMalloc(&d_params, S.params.size() * sizeof(W)));
  CK(cudaMalloc(&d_fwd, bytes));
  CK(cudaMalloc(&d_inv, bytes));
  CK(cudaMemcpy(d_params, S.params.data(), S.params.size() * sizeof(W), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_fwd, S.fwd.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d_inv, S.inv.data(), bytes, cudaMemcpyHostToDevice));
  std::vector<W *> ins(nsets), outs(nsets);
  std::vector<W> h_in(words), h_out(words);
  uint64_t seed = 12345 + LOGN;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < n; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t qq = S.q[r];
      uint64_t v = (seed >> 11) % (2 * qq);
      if ((i & 63) == 0) v = 2 * qq - 1;
      if ((i & 63) == 1) v = qq;
      h_in[r * n + i] = (W)v;
    }
  for (int s = 0; s < nsets; s++) {
    CK(cudaMalloc(&ins[s], bytes));
    CK(cudaMalloc(&outs[s], bytes));
    CK(cudaMemcpy(ins[s], h_in.data(), bytes, cudaMemcpyHostToDevice));
  }
  cudaStream_t st;
  CK(cudaStreamCreate(&st));

  // correctness: every kind, sampled rows against the SPEC loops
  for (int kind = 0; kind < 4; kind++) {
    Args a{d_params, rows, kind <= 1 ? (const void *)d_fwd : (const void *)d_inv, ins[0], outs[0], rows, kind};
    launch_kind<R, LOGN>(a, rows, kind, st);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    CK(cudaMemcpy(h_out.data(), outs[0], bytes, cudaMemcpyDeviceToHost));
    int64_t sample[3] = {0, rows / 2 + 1 < rows ? rows / 2 + 1 : 0, rows - 1};
    for (int si = 0; si < 3; si++) {
      int64_t r = sample[si];
      HostMod m(R::WBITS == 62 ? 62 : 32, S.q[r]);
      std::vector<uint64_t> x(n), tab(n);
      for (int64_t i = 0; i < n; i++) {
        x[i] = h_in[r * n + i];
        tab[i] = kind <= 1 ? S.fwd[r * n + i] : S.inv[r * n + i];
      }
      ref_ntt(m, kind, LOGN, tab.data(), x.data(), S.ninv_r[r]);
      for (int64_t i = 0; i < n; i++)
        if ((uint64_t)h_out[r * n + i] != x[i]) {
          printf("MISMATCH %s N=2^%d rows=%lld kind %d row %lld index %lld: got %llu want %llu\n",
                 R::name(), LOGN, (long long)rows, kind, (long long)r, (long long)i,
                 (unsigned long long)h_out[r * n + i], (unsigned long long)x[i]);
          failures++;
          break;
        }
    }
  }

  // timing: forward coef-mont -> ntt-mont (kind 1), inverse ntt-mont -> coef-mont (kind 2)
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double us[2];
  for (int dir = 0; dir < 2; dir++) {
    int kind = dir == 0 ? 1 : 2;
    const void *tab = dir == 0 ? (const void *)d_fwd : (const void *)d_inv;
    const int reps = quick ? 3 : 21, per = 20;
    for (int w = 0; w < 10; w++) {
      Args a{d_params, rows, tab, ins[w % nsets], outs[w % nsets], rows, kind};
      launch_kind<R, LOGN>(a, rows, kind, st);
    }
    std::vector<double> samples;
    for (int rep = 0; rep < reps; rep++) {
      CK(cudaEventRecord(e0, st));
      for (int it = 0; it < per; it++) {
        int s = (rep * per + it) % nsets;
        Args a{d_params, rows, tab, ins[s], outs[s], rows, kind};
        launch_kind<R, LOGN>(a, rows, kind, st);
      }
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      samples.push_back(ms * 1000.0 / per);
    }
    CK(cudaGetLastError());
    us[dir] = median(samples);
  }
  // floors: products (butterflies + post step) at the measured product rate;
  // memory: each kernel reads and writes the data once, plus the twiddles
  double rate = fl.prod_rate[R::WBITS == 62 ? 1 : 0] * 1e9;
  double prods = (double)rows * ((double)(n / 2) * LOGN);
  double kernels = LOGN <= 12 ? 1 : 2;
  double mem = (kernels * 2 * bytes + bytes) / fl.copy_bw;
  double floor_fwd = std::max(prods / rate, mem), floor_inv = std::max((prods + rows * n) / rate, mem);
  printf("%-4s N=2^%-2d rows=%-3lld  fwd %8.2f us  inv %8.2f us | products %7.2f us  memory %7.2f us"
         "  | fwd/floor %.2f  inv/floor %.2f  (working set %.0f MB)\n",
         R::name(), LOGN, (long long)rows, us[0], us[1], prods / rate * 1e6, mem * 1e6,
         us[0] / (floor_fwd * 1e6), us[1] / (floor_inv * 1e6), nsets * 2.0 * bytes / 1048576.0);
  fflush(stdout);
  json_item("\"kind\": \"ntt\", \"radix\": \"%s\", \"log2\": %d, \"rows\": %lld, "
            "\"fwd_us\": %.3f, \"inv_us\": %.3f, \"products_us\": %.3f, \"memory_us\": %.3f, "
            "\"floor_fwd_us\": %.3f, \"floor_inv_us\": %.3f",
            R::name(), LOGN, (long long)rows, us[0], us[1], prods / rate * 1e6, mem * 1e6,
            floor_fwd * 1e6, floor_inv * 1e6);
  for (int s = 0; s < nsets; s++) {
    CK(cudaFree(ins[s]));
    CK(cudaFree(outs[s]));
  }
  CK(cudaFree(d_params));
  CK(cudaFree(d_fwd));
  CK(cudaFree(d_inv));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(st));
}

template <class R, int FORM = 0> static double product_rate(int sms) {
  typedef typename R::W W;
  uint64_t q = find_primes(R::WBITS == 62 ? 60 : 30, 1)[0];
  HostMod m(R::WBITS == 62 ? 62 : 32, q);
  W k4 = R::WBITS == 62 ? (W)(m.k << 2) : (W)m.k;
  int blocks = sms * 8, threads = 256, iters = 2048;
  W *out;
  CK(cudaMalloc(&out, (size_t)blocks * threads * sizeof(W)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  product_kernel<R, FORM><<<blocks, threads>>>(out, (W)q, k4, (W)m.r2, 16);
  std::vector<double> s;
  for (int rep = 0; rep < 7; rep++) {
    CK(cudaEventRecord(e0));
    product_kernel<R, FORM><<<blocks, threads>>>(out, (W)q, k4, (W)m.r2, iters);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    s.push_back(ms);
  }
  // check a few chains against the host REDC
  std::vector<W> h((size_t)blocks * threads);
  CK(cudaMemcpy(h.data(), out, h.size() * sizeof(W), cudaMemcpyDeviceToHost));
  for (unsigned t = 0; t < 4; t++) {
    uint64_t x[8], acc = 0;
    for (int i = 0; i < 8; i++) {
      x[i] = (uint64_t)(W)(t * 8 + i) % q;
      for (int it = 0; it < iters; it++) x[i] = m.mul(m.r2, x[i]);
      acc ^= x[i];
    }
    if ((W)acc != h[t]) {
      printf("MISMATCH product kernel %s thread %u\n", R::name(), t);
      exit(1);
    }
  }
  CK(cudaFree(out));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  double products = (double)blocks * threads * 8 * iters;
  return products / (median(s) * 1e-3) / 1e9;
}

// G wide multiply-accumulates per second (mac_kernel).
template <class R> static double mac_rate(int sms) {
  int blocks = sms * 8, threads = 256, iters = 2048;
  uint64_t *out;
  CK(cudaMalloc(&out, (size_t)blocks * threads * sizeof(uint64_t)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  typename R::W c0 = (typename R::W)(R::WBITS == 62 ? 0x0fedcba987654321ull : 0x3ade68b1u);
  mac_kernel<R><<<blocks, threads>>>(out, c0, 16);
  std::vector<double> s;
  for (int rep = 0; rep < 7; rep++) {
    CK(cudaEventRecord(e0));
    mac_kernel<R><<<blocks, threads>>>(out, c0, iters);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    s.push_back(ms);
  }
  CK(cudaFree(out));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return (double)blocks * threads * 8 * iters / (median(s) * 1e-3) / 1e9;
}

static double copy_bandwidth() {
  size_t bytes = 512ull << 20, n = bytes / 16;
  ulonglong2 *a, *b;
  CK(cudaMalloc(&a, bytes));
  CK(cudaMalloc(&b, bytes));
  CK(cudaMemset(a, 1, bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  int dev, sms;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  copy_kernel<<<sms * 8, 512>>>(a, b, n);
  std::vector<double> s;
  for (int rep = 0; rep < 11; rep++) {
    CK(cudaEventRecord(e0));
    copy_kernel<<<sms * 8, 512>>>(a, b, n);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    s.push_back(ms);
  }
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return 2.0 * bytes / (median(s) * 1e-3);
}

int main(int argc, char **argv) {
  bool quick = false, floors_only = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (strcmp(argv[i], "--floors") == 0) {
      floors_only = true; // the floors alone (bench/s7-run.sh)
    } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      if (!(g_json = fopen(argv[++i], "w"))) {
        fprintf(stderr, "ntt_cuda: cannot write %s\n", argv[i]);
        return 1;
      }
    } else {
      fprintf(stderr, "usage: %s [--quick] [--floors] [--json FILE]\n", argv[0]);
      return 2;
    }
  }
  int dev;
  cudaDeviceProp prop;
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  Floors fl;
  fl.copy_bw = copy_bandwidth();
  fl.prod_rate[0] = product_rate<R32>(prop.multiProcessorCount);
  fl.prod_rate[1] = product_rate<R62>(prop.multiProcessorCount);
  printf("floors: copy %.0f GB/s; exact products with the constant precomputed: r32 %.0f G/s, "
         "r62 %.0f G/s\n",
         fl.copy_bw / 1e9, fl.prod_rate[0], fl.prod_rate[1]);
  // not a floor of the table: the rate of fhjit's r62 carry chain, which
  // drops one 32 x 32 product (its time over this rate, for comparison)
  double chain_rate = product_rate<R62, 1>(prop.multiProcessorCount);
  printf("r62 products in fhjit's carry chain (one partial product fewer): %.0f G/s\n", chain_rate);
  double shoup_rate = product_rate<R62, 2>(prop.multiProcessorCount);
  printf("r62 products in fhjit's Shoup form (x * REDC(w) - hi64(x * w4k) * q): %.0f G/s\n",
         shoup_rate);
  double mac32 = mac_rate<R32>(prop.multiProcessorCount), mac62 = mac_rate<R62>(prop.multiProcessorCount);
  printf("wide multiply-accumulates (a basis conversion's inner loop): r32 %.0f G/s, r62 %.0f G/s\n",
         mac32, mac62);
  printf("(times: median per transform of CUDA-event-timed batches of 20 launches, buffers rotated; "
         "fwd = coef-mont -> ntt-mont, inv = ntt-mont -> coef-mont)\n");
  if (g_json) {
    fprintf(g_json, "{\"device\": \"%s\", \"sms\": %d, \"results\": [", prop.name,
            prop.multiProcessorCount);
    json_item("\"kind\": \"floors\", \"copy_GBps\": %.2f, \"r32_products_Gps\": %.2f, "
              "\"r62_products_Gps\": %.2f, \"r62_chain_products_Gps\": %.2f, "
              "\"r62_shoup_products_Gps\": %.2f, \"r32_macs_Gps\": %.2f, \"r62_macs_Gps\": %.2f",
              fl.copy_bw / 1e9, fl.prod_rate[0], fl.prod_rate[1], chain_rate, shoup_rate,
              mac32, mac62);
  }
  int failures = 0;
  if (floors_only) {
    if (g_json) fprintf(g_json, "\n], \"failures\": 0}\n"), fclose(g_json);
    return 0;
  }
  bench_one<R62, 12>(32, fl, quick, failures);
  bench_one<R62, 14>(32, fl, quick, failures);
  bench_one<R62, 16>(32, fl, quick, failures);
  bench_one<R62, 17>(32, fl, quick, failures);
  bench_one<R32, 12>(32, fl, quick, failures);
  bench_one<R32, 14>(32, fl, quick, failures);
  bench_one<R32, 16>(32, fl, quick, failures);
  bench_one<R32, 17>(32, fl, quick, failures);
  bench_one<R32, 12>(64, fl, quick, failures);
  bench_one<R32, 14>(64, fl, quick, failures);
  bench_one<R32, 16>(64, fl, quick, failures);
  bench_one<R32, 17>(64, fl, quick, failures);
  printf(failures ? "FAILED: %d mismatches\n" : "all results match the SPEC reference\n", failures);
  if (g_json) {
    fprintf(g_json, "\n], \"failures\": %d}\n", failures);
    fclose(g_json);
  }
  return failures ? 1 : 0;
}
#endif // NTT_EMULATE
