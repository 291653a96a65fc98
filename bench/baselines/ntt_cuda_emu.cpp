// ntt_cuda_emu.cpp: runs the CUDA baseline's NTT kernels (ntt_cuda.cu) on the
// CPU, one host thread per CUDA thread, and compares every transform with
// the SPEC loops of the same file: a check of the baseline's logic on
// machines without a GPU (it says nothing about its speed).
// Build: g++ -O1 -std=c++17 -DNTT_EMULATE -pthread -o ntt_cuda_emu ntt_cuda_emu.cpp
#define NTT_EMULATE 1
#include "ntt_cuda.cu"

thread_local emu_dim3 threadIdx, blockIdx;
pthread_barrier_t emu_barrier;

template <class R, int LOGN> static int check(int64_t rows) {
  typedef typename R::W W;
  const int64_t n = 1ll << LOGN;
  Setup<R> S(LOGN, rows);
  std::vector<W> in(rows * n), out(rows * n);
  uint64_t seed = 99 + LOGN;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < n; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t qq = S.q[r];
      uint64_t v = (seed >> 11) % (2 * qq);
      if ((i & 15) == 0) v = 2 * qq - 1;
      if ((i & 15) == 1) v = qq;
      if ((i & 15) == 2) v = qq - 1;
      if ((i & 15) == 3) v = 0;
      in[r * n + i] = (W)v;
    }
  int bad = 0;
  for (int kind = 0; kind < 4; kind++) {
    Args a{S.params.data(), rows, kind <= 1 ? (const void *)S.fwd.data() : (const void *)S.inv.data(),
           in.data(), out.data(), rows, kind};
    if (kind <= 1) Ntt<R, LOGN, true>::launch(a, rows, 0);
    else Ntt<R, LOGN, false>::launch(a, rows, 0);
    for (int64_t r = 0; r < rows; r++) {
      HostMod m(R::WBITS == 62 ? 62 : 32, S.q[r]);
      std::vector<uint64_t> x(n), tab(n);
      for (int64_t i = 0; i < n; i++) {
        x[i] = in[r * n + i];
        tab[i] = kind <= 1 ? S.fwd[r * n + i] : S.inv[r * n + i];
      }
      ref_ntt(m, kind, LOGN, tab.data(), x.data(), S.ninv_r[r]);
      for (int64_t i = 0; i < n; i++)
        if ((uint64_t)out[r * n + i] != x[i]) {
          printf("MISMATCH %s N=2^%d kind %d row %lld index %lld: %llu, reference %llu\n", R::name(),
                 LOGN, kind, (long long)r, (long long)i, (unsigned long long)out[r * n + i],
                 (unsigned long long)x[i]);
          bad++;
          break;
        }
    }
  }
  printf("%s N=2^%-2d rows %lld: %s\n", R::name(), LOGN, (long long)rows, bad ? "FAILED" : "ok");
  fflush(stdout);
  return bad;
}

int main() {
  int bad = 0;
  bad += check<R62, 4>(4);
  bad += check<R32, 4>(4);
  bad += check<R62, 7>(2);
  bad += check<R32, 7>(2);
  bad += check<R62, 12>(2);
  bad += check<R32, 12>(2);
  bad += check<R62, 13>(2);
  bad += check<R32, 13>(2);
  bad += check<R62, 14>(1);
  bad += check<R32, 14>(1);
  bad += check<R62, 16>(1);
  bad += check<R32, 16>(1);
  bad += check<R62, 17>(1);
  bad += check<R32, 17>(1);
  printf(bad ? "FAILED\n" : "all kernels match the reference\n");
  return bad ? 1 : 0;
}
