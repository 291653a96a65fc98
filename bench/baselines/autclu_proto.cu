// autclu_proto.cu: a measurement prototype (not fhjit code) for issue 16's
// last pointwise target: the coefficient-domain automorphism fused into a
// product, y = aut(x, k) * z, costs +14% over y = x * z on the H200
// (bench/RESULTS.md), because for a general k no tile of a block has both
// its outputs and their sources in long runs (docs/section7.md), so the
// remapped load gathers one word per 32-byte sector from the L2.
//
// The idea measured here: a thread-block cluster holds a whole row in its
// blocks' shared memory (r32 2^16: 256 KB, r62: 512 KB, over C blocks),
// each block loading its slice of x coalesced; after a cluster barrier
// every block gathers its outputs' source words from the cluster's
// distributed shared memory (one remote 4- or 8-byte load each), multiplies
// them by z (coalesced) and stores y (coalesced). HBM then sees each word
// once, as the plain product does; the gather moves to DSMEM.
//
// Kernels, N = 2^16, R rows, both radices, CUDA events (median of 15
// batches of 10 launches, buffers rotated over 3 sets so the working set
// is larger than the L2):
//   plain:   y = x * z (Montgomery product, canonical words);
//   gather:  y = aut(x, k) * z, each output reading its source from global
//            memory (the form fhjit emits today);
//   cluster: the same through DSMEM, C blocks a row (C = 2, 4, 8).
// gather and cluster are checked word for word against a host reference
// of aut(x, k) * z on every row; plain against x * z.
//
// Measured on an H100 (2026-12-07, bench/results/2026-12-07-d894915/,
// every word checked): the cluster form is slower everywhere, +28% at
// best (r32 C = 8, 512 threads, k = 5 or 2N - 1, whose remote loads are
// nearly sequential) and +126% to +325% for the other k; r62 +28% at best.
// The gather from global memory (this prototype's plain kernel is scalar,
// 1.24x the r32 copy floor, so its percentages are not fhjit's) costs
// +0.4% to +11% for most k and +29% (r62) / +89% (r32) at k = 3125. So
// DSMEM (one scalar remote load a word, after a cluster barrier that
// keeps every block in the same phase) is no way around the gather, as
// the cluster NTT found for its exchange (docs/ntt-cluster.md).
//
// Build and run (on the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -o autclu_proto autclu_proto.cu && ./autclu_proto
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;

#define CK(x)                                                                    \
  do {                                                                           \
    cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                 \
              cudaGetErrorString(e_));                                           \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

static const int LOGN = 16, N = 1 << LOGN;

// Montgomery products with R = 2^32 (r32, q < 2^30) and R = 2^64 (r62,
// q < 2^62); canonical inputs give canonical outputs.
struct R32 {
  typedef uint32_t word;
  static constexpr uint32_t q = 1073707009u;  // < 2^30, odd
  __host__ __device__ static uint32_t qinv_neg() {
    uint32_t inv = 1;
    for (int i = 0; i < 5; i++) inv *= 2 - q * inv;
    return 0u - inv;
  }
  __host__ __device__ static uint32_t mul(uint32_t a, uint32_t b, uint32_t qn) {
    uint64_t t = (uint64_t)a * b;
    uint32_t m = (uint32_t)t * qn;
    uint64_t u = (t + (uint64_t)m * q) >> 32;
    return (uint32_t)(u >= q ? u - q : u);
  }
  __host__ __device__ static uint32_t neg(uint32_t a) { return a ? q - a : 0; }
};
struct R62 {
  typedef uint64_t word;
  static constexpr uint64_t q = 1152921504606584833ull;  // < 2^62, odd
  __host__ __device__ static uint64_t qinv_neg() {
    uint64_t inv = 1;
    for (int i = 0; i < 6; i++) inv *= 2 - q * inv;
    return 0ull - inv;
  }
  __host__ __device__ static uint64_t mul(uint64_t a, uint64_t b, uint64_t qn) {
    unsigned __int128 t = (unsigned __int128)a * b;
    uint64_t m = (uint64_t)t * qn;
    unsigned __int128 u = (t + (unsigned __int128)m * q) >> 64;
    return (uint64_t)(u >= q ? u - q : u);
  }
  __host__ __device__ static uint64_t neg(uint64_t a) { return a ? q - a : 0; }
};

// Output j of aut(x, k) reads source j k' mod 2N (k' = k^-1 mod 2N),
// negated past N.
__host__ __device__ static inline uint32_t src_index(uint32_t j, uint32_t kinv, bool *negate) {
  uint32_t s = (j * kinv) & (2 * N - 1);
  *negate = s >= (uint32_t)N;
  return s & (N - 1);
}

template <class K>
__global__ void k_plain(const typename K::word *x, const typename K::word *z,
                        typename K::word *y, int rows) {
  size_t total = (size_t)rows * N;
  typename K::word qn = K::qinv_neg();
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] = K::mul(x[i], z[i], qn);
}

template <class K>
__global__ void k_gather(const typename K::word *x, const typename K::word *z,
                         typename K::word *y, int rows, uint32_t kinv) {
  size_t total = (size_t)rows * N;
  typename K::word qn = K::qinv_neg();
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x) {
    bool negate;
    uint32_t s = src_index((uint32_t)(i & (N - 1)), kinv, &negate);
    typename K::word v = x[(i & ~(size_t)(N - 1)) + s];
    y[i] = K::mul(negate ? K::neg(v) : v, z[i], qn);
  }
}

// One row per cluster of C blocks; block `rank` holds words
// [rank N/C, (rank + 1) N/C) of the row and computes the same outputs.
template <class K, int C>
__global__ void k_cluster(const typename K::word *x, const typename K::word *z,
                          typename K::word *y, uint32_t kinv) {
  typedef typename K::word W;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  W *slice = reinterpret_cast<W *>(smem_raw);
  cg::cluster_group cluster = cg::this_cluster();
  const int S = N / C;
  unsigned rank = cluster.block_rank();
  size_t row = blockIdx.x / C;
  const W *xr = x + row * N + rank * S;
  // coalesced 16-byte loads of the slice
  const uint4 *xv = reinterpret_cast<const uint4 *>(xr);
  uint4 *sv = reinterpret_cast<uint4 *>(slice);
  const int V = S * (int)sizeof(W) / 16;
  for (int i = threadIdx.x; i < V; i += blockDim.x) sv[i] = xv[i];
  cluster.sync();
  W qn = K::qinv_neg();
  size_t base = row * N + rank * S;
  for (int i = threadIdx.x; i < S; i += blockDim.x) {
    bool negate;
    uint32_t s = src_index(rank * S + i, kinv, &negate);
    const W *remote = cluster.map_shared_rank(slice, s / S);
    W v = remote[s % S];
    y[base + i] = K::mul(negate ? K::neg(v) : v, z[base + i], qn);
  }
  cluster.sync();  // keep this block's slice alive for the other blocks
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t next_random() {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint32_t inverse_mod_2n(uint32_t k) {
  for (uint32_t c = 1; c < 2 * N; c += 2)
    if (((uint64_t)c * k) % (2 * N) == 1) return c;
  return 0;
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
static float time_us(F launch, int sets) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; i++) launch(i % sets);
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int rep = 0; rep < 15; rep++) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < 10; i++) launch(i % sets);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.0f / 10);
  }
  CK(cudaGetLastError());
  return median(t);
}

template <class K, int C>
static cudaError_t launch_cluster(const typename K::word *x, const typename K::word *z,
                                  typename K::word *y, int rows, uint32_t kinv, int threads) {
  size_t smem = (size_t)N / C * sizeof(typename K::word);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(rows * C);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, k_cluster<K, C>, x, z, y, kinv);
}

// Whether the row's slice fits a block's shared memory (r62 C = 2 does
// not), after raising the kernel's dynamic shared memory limit to it.
template <class K, int C>
static bool cluster_fits() {
  size_t smem = (size_t)N / C * sizeof(typename K::word);
  return smem <= 227 * 1024 &&
         cudaFuncSetAttribute(k_cluster<K, C>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              (int)smem) == cudaSuccess;
}

template <class K, int C, class Check>
static void time_cluster(int threads, typename K::word *const *dx, typename K::word *const *dz,
                         typename K::word *const *dy, int rows, uint32_t kinv, float plain,
                         Check check) {
  if (!cluster_fits<K, C>()) return;
  size_t words = (size_t)rows * N;
  CK(cudaMemset(dy[0], 0, words * sizeof(typename K::word)));
  float c = time_us(
      [&](int s) { CK((launch_cluster<K, C>(dx[s], dz[s], dy[s], rows, kinv, threads))); }, 3);
  check("cluster");
  printf("  C=%d/%d %.2f us (%+.1f%%)", C, threads, c, 100.0 * (c / plain - 1));
}

template <class K>
static int run(const char *name, int rows, double copy_gbs) {
  typedef typename K::word W;
  const int sets = 3;
  size_t words = (size_t)rows * N;
  std::vector<W> hx(words), hz(words), ref(words), got(words);
  W qn = K::qinv_neg();
  int bad = 0;
  W *dx[sets], *dz[sets], *dy[sets];
  for (int s = 0; s < sets; s++) {
    CK(cudaMalloc(&dx[s], words * sizeof(W)));
    CK(cudaMalloc(&dz[s], words * sizeof(W)));
    CK(cudaMalloc(&dy[s], words * sizeof(W)));
  }
  for (auto &v : hx) v = (W)(next_random() % K::q);
  for (auto &v : hz) v = (W)(next_random() % K::q);
  hx[0] = 0;
  hx[1] = (W)(K::q - 1);
  for (int s = 0; s < sets; s++) {
    CK(cudaMemcpy(dx[s], hx.data(), words * sizeof(W), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dz[s], hz.data(), words * sizeof(W), cudaMemcpyHostToDevice));
  }
  double bytes = 3.0 * words * sizeof(W);
  int threads = 512, blocks = 132 * 8;
  float plain = time_us([&](int s) { k_plain<K><<<blocks, threads>>>(dx[s], dz[s], dy[s], rows); }, sets);
  CK(cudaMemcpy(got.data(), dy[0], words * sizeof(W), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < words; i++)
    if (got[i] != K::mul(hx[i], hz[i], qn)) bad++;
  printf("%s rows %d: copy floor %.2f us, plain %.2f us (%.2fx floor)%s\n", name, rows,
         bytes / copy_gbs / 1e3, plain, plain / (bytes / copy_gbs / 1e3), bad ? " MISMATCH" : "");
  const uint32_t ks[] = {5, 25, 3125, 2 * N - 1, 40961};
  for (uint32_t k : ks) {
    uint32_t kinv = inverse_mod_2n(k);
    for (size_t r = 0; r < (size_t)rows; r++)
      for (uint32_t j = 0; j < (uint32_t)N; j++) {
        bool negate;
        uint32_t s = src_index(j, kinv, &negate);
        W v = hx[r * N + s];
        ref[r * N + j] = K::mul(negate ? K::neg(v) : v, hz[r * N + j], qn);
      }
    auto check = [&](const char *what) {
      CK(cudaMemcpy(got.data(), dy[0], words * sizeof(W), cudaMemcpyDeviceToHost));
      size_t wrong = 0;
      for (size_t i = 0; i < words; i++) wrong += got[i] != ref[i];
      if (wrong) printf("  MISMATCH %s k=%u: %zu words\n", what, k, wrong);
      bad += wrong != 0;
    };
    CK(cudaMemset(dy[0], 0, words * sizeof(W)));
    float g = time_us([&](int s) { k_gather<K><<<blocks, threads>>>(dx[s], dz[s], dy[s], rows, kinv); }, sets);
    check("gather");
    printf("  k=%-6u gather %.2f us (%+.1f%%)", k, g, 100.0 * (g / plain - 1));
    time_cluster<K, 2>(1024, dx, dz, dy, rows, kinv, plain, check);
    time_cluster<K, 4>(512, dx, dz, dy, rows, kinv, plain, check);
    time_cluster<K, 4>(1024, dx, dz, dy, rows, kinv, plain, check);
    time_cluster<K, 8>(256, dx, dz, dy, rows, kinv, plain, check);
    time_cluster<K, 8>(512, dx, dz, dy, rows, kinv, plain, check);
    printf("\n");
  }
  for (int s = 0; s < sets; s++) {
    CK(cudaFree(dx[s]));
    CK(cudaFree(dz[s]));
    CK(cudaFree(dy[s]));
  }
  return bad;
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  // copy bandwidth: a device-to-device copy of 1 GB, bytes read + written
  size_t cb = (size_t)1 << 30;
  void *a, *b;
  CK(cudaMalloc(&a, cb));
  CK(cudaMalloc(&b, cb));
  float cus = time_us([&](int) { CK(cudaMemcpyAsync(b, a, cb, cudaMemcpyDeviceToDevice)); }, 1);
  double copy_gbs = 2.0 * cb / (cus * 1e3);
  CK(cudaFree(a));
  CK(cudaFree(b));
  printf("%s: copy %.0f GB/s\n", p.name, copy_gbs);
  int bad = run<R32>("r32", 96, copy_gbs);
  bad += run<R62>("r62", 70, copy_gbs);
  printf(bad ? "MISMATCHES\n" : "all words match the host reference\n");
  return bad ? 1 : 0;
}
