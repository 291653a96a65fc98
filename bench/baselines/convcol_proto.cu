// convcol_proto.cu: a measurement prototype (not fhjit code) for the
// fusion docs/ckks.md "What the r32 targets need" proposes first: a
// modup's basis conversion computed inside the forward NTT's column kernel,
// so that the converted rows are never written and read back.
//
// r32, N = 2^16 = N1 x N2 with N1 = 128 (the column length) and N2 = 512,
// SPEC 7's benchmark key switch: 4 digits of l = 12 source rows, each
// converted to m = 48 target rows (192 in all). Three kernels on the same
// data in one run, timed with CUDA events (median of 21 batches of 10):
//   conv:    the conversion alone, scalar form: V_i (canonical, < 2^30)
//            times c_ji (< t_j) summed in 64 bits (12 products < 2^64),
//            folded (hi (2^32 mod t) + lo) and reduced by one Montgomery
//            step, written dense [192][N];
//   col:     the column stages alone (7 radix-2 stages of Montgomery
//            butterflies on each of the 512 columns of a row) on those rows,
//            in place;
//   convcol: both in one kernel: a block loads the source words of C = 8
//            columns of one digit's 12 rows into shared memory (48 KB),
//            then for each target row of its group converts them into
//            shared memory and runs the column stages there, storing only
//            the transformed words.
// The butterflies are generic (twiddles from a table per row, not SPEC's
// order; the words need not be a transform of anything): what is measured
// is the work and the traffic. convcol's output is checked word for word
// against conv then col. The floors printed beside them: the bytes over
// this run's copy bandwidth (a device-to-device cudaMemcpy).
//
// Measured on the H200 (2026-12-04, docs/ckks.md "What the r32 targets
// need"): conv 48.0 us, col 65.0, convcol 142.1 with 12 target rows a
// block (146.5-171.2 with 4, 6, 24, 48), words identical (a first version,
// a twiddle from global memory per butterfly: 48.0, 75.4, 162.9). This
// column kernel is still 2.2x slower than fhjit's own (29.5 us for the
// same 192 rows under ncu: 8 words a thread, canonical words), so the
// figures bound the design, not fhjit: with 12 source rows in shared
// memory (60 KB a block) only 12 warps fit an SM, and latency-bound
// butterflies then lose more than the traffic saved.
//
// Build and run (on the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -o convcol_proto convcol_proto.cu && ./convcol_proto
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                    \
  do {                                                                           \
    cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                     \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

constexpr int LOGN = 16, N = 1 << LOGN, N1 = 128, N2 = N / N1;
constexpr int L = 12, M = 48, DIGITS = 4, ROWS = DIGITS * M;
constexpr int C = 8;            // columns per block
constexpr int POS = C * N1;     // positions per block (1024)
constexpr int T = 128;          // threads; a thread holds 8 words of a column
constexpr int GROUP = 12;       // target rows per convcol block (and others timed)
static_assert(T == N1, "a thread loads one twiddle of the row");
// shared layout of a block's words: column c's word k at c CS + k + k / 16
// (CS = 144: a column 16 banks from the next; the padding keeps the three
// exchange layouts below free of bank conflicts)
constexpr int CS = 144, SROW = C * CS;
__device__ __forceinline__ int at(int c, int k) { return c * CS + k + (k >> 4); }

struct Mod {
  uint32_t q, qinv, r32; // qinv = -q^-1 mod 2^32, r32 = 2^32 mod q
};

__device__ __forceinline__ uint32_t redc64(uint64_t t, const Mod &m) {
  uint32_t k = (uint32_t)t * m.qinv;
  uint64_t u = (t + (uint64_t)k * m.q) >> 32; // t < q 2^32: u < 2q
  return (uint32_t)u;
}
__device__ __forceinline__ uint32_t canon(uint32_t x, uint32_t q) { return x >= q ? x - q : x; }
__device__ __forceinline__ uint32_t mmul(uint32_t a, uint32_t b, const Mod &m) {
  return canon(redc64((uint64_t)a * b, m), m.q);
}

// sum_i v[i] c[i] (each < 2^60, 12 of them < 2^64), reduced mod t
__device__ __forceinline__ uint32_t convert(const uint32_t *v, int vstride, const uint32_t *c,
                                            const Mod &m) {
  uint64_t s = 0;
#pragma unroll
  for (int i = 0; i < L; i++) s += (uint64_t)v[i * vstride] * c[i];
  uint64_t x = (s >> 32) * m.r32 + (uint32_t)s; // < t 2^32
  return canon(redc64(x, m), m.q);
}

// One butterfly, Cooley-Tukey: (a + w b, a - w b) mod q, canonical.
__device__ __forceinline__ void bfly(uint32_t &a, uint32_t &b, uint32_t w, const Mod &m) {
  uint32_t t = mmul(b, w, m);
  uint32_t s = a + t;
  b = a >= t ? a - t : a + m.q - t;
  a = canon(s, m.q);
}

// The stages of k-bits kb[j] (j in `order`, strides 2^kb[j]) on a thread's
// 8 words, word e at k = kbase + sum_j e_j 2^kb[j]: Cooley-Tukey, the
// twiddle of a butterfly of stride 2^b at position k is w[2^(6-b) + (k >>
// (b + 1))] (127 per column transform, the same for every column: the
// first log N1 stages of the row's transform), read from shared memory.
__device__ __forceinline__ void reg_stages(uint32_t *x, const int *kb, const int *order, int nb,
                                           int kbase, const uint32_t *w, const Mod &m) {
#pragma unroll
  for (int s = 0; s < nb; s++) {
    int j = order[s], b = kb[j];
#pragma unroll
    for (int e = 0; e < 8; e++) {
      if (e & (1 << j)) continue;
      int k = kbase;
#pragma unroll
      for (int i = 0; i < 3; i++)
        if (e & (1 << i)) k += 1 << kb[i];
      bfly(x[e], x[e | (1 << j)], w[(1 << (6 - b)) + (k >> (b + 1))], m);
    }
  }
}

// Column stages of C columns held in shared memory y[at(c, k)] by T
// threads (16 a column, 8 words each) in three layouts: k = lane + 16 e
// (bits 6, 5, 4 in registers), k = (lane & 1) + 16 (lane >> 1) + 2 e
// (bits 3, 2, 1), k = 8 lane + e (bit 0); w: the row's 128 twiddles in
// shared memory.
__device__ void column_stages(uint32_t *y, const uint32_t *w, const Mod &m) {
  int tid = threadIdx.x, col = tid / 16, lane = tid % 16;
  uint32_t x[8];
  const int hi[3] = {2, 1, 0};
#pragma unroll
  for (int e = 0; e < 8; e++) x[e] = y[at(col, lane + 16 * e)];
  { const int kb[3] = {4, 5, 6}; reg_stages(x, kb, hi, 3, lane, w, m); }
#pragma unroll
  for (int e = 0; e < 8; e++) y[at(col, lane + 16 * e)] = x[e];
  __syncthreads();
  int kq = (lane & 1) + 16 * (lane >> 1);
#pragma unroll
  for (int e = 0; e < 8; e++) x[e] = y[at(col, kq + 2 * e)];
  { const int kb[3] = {1, 2, 3}; reg_stages(x, kb, hi, 3, kq, w, m); }
#pragma unroll
  for (int e = 0; e < 8; e++) y[at(col, kq + 2 * e)] = x[e];
  __syncthreads();
#pragma unroll
  for (int e = 0; e < 8; e++) x[e] = y[at(col, 8 * lane + e)];
  { const int kb[3] = {0, 1, 2}, lo[1] = {0}; reg_stages(x, kb, lo, 1, 8 * lane, w, m); }
#pragma unroll
  for (int e = 0; e < 8; e++) y[at(col, 8 * lane + e)] = x[e];
  __syncthreads();
}

struct Args {
  const uint32_t *src; // [DIGITS][L][N]
  const uint32_t *tab; // [DIGITS][M][L]
  const Mod *mods;     // [M] (target rows' moduli, the same for every digit)
  const uint32_t *tw;  // [M][N1]: the row's column twiddles (entry 0 unused)
  uint32_t *dst;       // [ROWS][N]
};

// conv: one thread per position of a row group; a block: 256 positions x
// 48 target rows of one digit (each source word read once).
__global__ void __launch_bounds__(256) k_conv(Args a) {
  int d = blockIdx.y, p = blockIdx.x * 256 + threadIdx.x;
  uint32_t v[L];
#pragma unroll
  for (int i = 0; i < L; i++) v[i] = a.src[((size_t)d * L + i) * N + p];
  for (int j = 0; j < M; j++) {
    Mod m = a.mods[j];
    a.dst[((size_t)d * M + j) * N + p] = convert(v, 1, a.tab + ((size_t)d * M + j) * L, m);
  }
}

// col: C columns of one row per block, in place.
__global__ void __launch_bounds__(T) k_col(Args a) {
  __shared__ uint32_t y[SROW], w[N1];
  int row = blockIdx.y, c0 = blockIdx.x * C, j = row % M;
  Mod m = a.mods[j];
  uint32_t *r = a.dst + (size_t)row * N;
  for (int i = threadIdx.x; i < POS; i += T) y[at(i % C, i / C)] = r[(i / C) * N2 + c0 + i % C];
  w[threadIdx.x] = a.tw[(size_t)j * N1 + threadIdx.x]; // T == N1
  __syncthreads();
  column_stages(y, w, m);
  for (int i = threadIdx.x; i < POS; i += T) r[(i / C) * N2 + c0 + i % C] = y[at(i % C, i / C)];
}

// convcol: C columns of one digit's L rows in shared memory, then per
// target row of the block's group: converted into y, column stages, store.
__global__ void __launch_bounds__(T) k_convcol(Args a, int group) {
  extern __shared__ uint32_t sm[];
  uint32_t *s = sm, *y = sm + L * SROW, *w = y + SROW; // s[i][at(c, k)]
  int c0 = blockIdx.x * C, d = blockIdx.y, g = blockIdx.z;
  for (int i = threadIdx.x; i < L * POS; i += T) {
    int row = i / POS, q = i % POS;
    s[row * SROW + at(q % C, q / C)] = a.src[((size_t)d * L + row) * N + (q / C) * N2 + c0 + q % C];
  }
  __syncthreads();
  for (int jj = 0; jj < group; jj++) {
    int j = g * group + jj;
    Mod m = a.mods[j];
    const uint32_t *c = a.tab + ((size_t)d * M + j) * L;
    for (int q = threadIdx.x; q < POS; q += T) {
      int o = at(q / N1, q % N1);
      y[o] = convert(s + o, SROW, c, m);
    }
    w[threadIdx.x] = a.tw[(size_t)j * N1 + threadIdx.x];
    __syncthreads();
    column_stages(y, w, m);
    uint32_t *r = a.dst + ((size_t)d * M + j) * N;
    for (int i = threadIdx.x; i < POS; i += T) r[(i / C) * N2 + c0 + i % C] = y[at(i % C, i / C)];
    __syncthreads();
  }
}

static uint32_t inv32(uint32_t q) { // q^-1 mod 2^32 (q odd), Newton
  uint32_t x = q;
  for (int i = 0; i < 5; i++) x *= 2 - q * x;
  return x;
}

static bool is_prime(uint32_t n) {
  if (n < 2) return false;
  for (uint32_t p = 2; (uint64_t)p * p <= n; p++)
    if (n % p == 0) return false;
  return true;
}

template <typename F> static float time_us(F launch) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int b = 0; b < 21; b++) {
    CK(cudaEventRecord(e0));
    for (int r = 0; r < 10; r++) launch();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 100.0f); // us per launch
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  std::vector<Mod> mods;
  for (uint32_t q = (1u << 30) - 1; mods.size() < M; q -= 2)
    if (q % (2 * N) == 1 && is_prime(q)) mods.push_back({q, (uint32_t)(0u - inv32(q)), (uint32_t)((1ull << 32) % q)});
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&] { rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; return rng; };
  std::vector<uint32_t> src((size_t)DIGITS * L * N), tab((size_t)DIGITS * M * L), tw((size_t)M * N1);
  for (auto &x : src) x = (uint32_t)(next() % ((1u << 30) - 35)); // canonical source words
  for (int d = 0; d < DIGITS; d++)
    for (int j = 0; j < M; j++)
      for (int i = 0; i < L; i++) tab[((size_t)d * M + j) * L + i] = (uint32_t)(next() % mods[j].q);
  for (int j = 0; j < M; j++)
    for (int k = 0; k < N1; k++) tw[(size_t)j * N1 + k] = (uint32_t)(next() % mods[j].q);
  uint32_t *dsrc, *dtab, *dtw, *dout, *dref;
  Mod *dmods;
  CK(cudaMalloc(&dsrc, src.size() * 4));
  CK(cudaMalloc(&dtab, tab.size() * 4));
  CK(cudaMalloc(&dtw, tw.size() * 4));
  CK(cudaMalloc(&dmods, M * sizeof(Mod)));
  CK(cudaMalloc(&dout, (size_t)ROWS * N * 4));
  CK(cudaMalloc(&dref, (size_t)ROWS * N * 4));
  CK(cudaMemcpy(dsrc, src.data(), src.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dtab, tab.data(), tab.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dtw, tw.data(), tw.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dmods, mods.data(), M * sizeof(Mod), cudaMemcpyHostToDevice));
  Args ref{dsrc, dtab, dmods, dtw, dref}, out{dsrc, dtab, dmods, dtw, dout};
  size_t smem = ((size_t)(L + 1) * SROW + N1) * 4;
  CK(cudaFuncSetAttribute(k_convcol, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  auto conv = [&] { k_conv<<<dim3(N / 256, DIGITS), 256>>>(ref); };
  auto col = [&] { k_col<<<dim3(N2 / C, ROWS), T>>>(ref); };
  int group = GROUP;
  auto fused = [&] { k_convcol<<<dim3(N2 / C, DIGITS, M / group), T, smem>>>(out, group); };
  conv(), col(), fused();
  CK(cudaDeviceSynchronize());
  std::vector<uint32_t> a((size_t)ROWS * N), b((size_t)ROWS * N);
  CK(cudaMemcpy(a.data(), dref, a.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), dout, b.size() * 4, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); i++) bad += a[i] != b[i];
  printf("convcol against conv then col: %zu mismatching words of %zu\n", bad, a.size());
  // copy bandwidth of this run: 256 MB device to device
  uint32_t *c0, *c1;
  size_t cb = (size_t)256 << 20;
  CK(cudaMalloc(&c0, cb));
  CK(cudaMalloc(&c1, cb));
  float copy_us = time_us([&] { CK(cudaMemcpyAsync(c1, c0, cb, cudaMemcpyDeviceToDevice)); });
  double gbps = 2.0 * cb / (copy_us * 1e3);
  float tc = time_us(conv), tl = time_us(col), tf = time_us(fused);
  double src_mb = DIGITS * L * (double)N * 4 / 1e6, rows_mb = ROWS * (double)N * 4 / 1e6;
  printf("copy %.0f GB/s\n", gbps);
  printf("conv     %7.2f us  (reads %.1f MB, writes %.1f MB: %.2f us at the copy rate)\n", tc, src_mb,
         rows_mb, (src_mb + rows_mb) * 1e3 / gbps);
  printf("col      %7.2f us  (reads and writes %.1f MB: %.2f us)\n", tl, rows_mb, 2 * rows_mb * 1e3 / gbps);
  printf("conv+col %7.2f us\n", tc + tl);
  printf("convcol  %7.2f us  (reads %.1f MB once per group of %d rows, writes %.1f MB: %.2f us)  %.2fx faster\n",
         tf, src_mb, group, rows_mb, (src_mb + rows_mb) * 1e3 / gbps, (tc + tl) / tf);
  for (int g2 : {4, 6, 24, 48}) {
    group = g2;
    printf("convcol  %7.2f us  (target rows per block %d)\n", time_us(fused), group);
  }
  return bad ? 1 : 0;
}
