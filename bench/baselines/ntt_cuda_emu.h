/* ntt_cuda_emu.h: just enough of CUDA for ntt_cuda_emu.cpp to run the
 * kernels of ntt_cuda.cu on the CPU: one host thread per CUDA thread of a
 * block, a barrier for __syncthreads, blocks one after the other (so
 * __shared__ arrays become function-static ones). */
#ifndef NTT_CUDA_EMU_H
#define NTT_CUDA_EMU_H
#include <pthread.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define __host__
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

typedef int cudaStream_t;
struct emu_dim3 {
  unsigned x, y, z;
};
extern thread_local emu_dim3 threadIdx, blockIdx;
extern pthread_barrier_t emu_barrier;

inline void __syncthreads() { pthread_barrier_wait(&emu_barrier); }
template <class T> inline T __ldg(const T *p) { return *p; }
inline uint64_t __umul64hi(uint64_t a, uint64_t b) {
  return (uint64_t)(((unsigned __int128)a * b) >> 64);
}
inline uint32_t __umulhi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
struct ulonglong2 {
  unsigned long long x, y;
};
struct uint4 {
  unsigned x, y, z, w;
};
inline ulonglong2 make_ulonglong2(unsigned long long x, unsigned long long y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

template <class A> struct emu_job {
  void (*kernel)(A);
  const A *arg;
  unsigned block, thread;
};

template <class A> void *emu_thread(void *p) {
  emu_job<A> *j = (emu_job<A> *)p;
  threadIdx = {j->thread, 0, 0};
  blockIdx = {j->block, 0, 0};
  j->kernel(*j->arg);
  return nullptr;
}

template <class A> void emu_launch(void (*kernel)(A), unsigned grid, unsigned block, A arg) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1 << 18);
  emu_job<A> *jobs = new emu_job<A>[block];
  pthread_t *tids = new pthread_t[block];
  for (unsigned b = 0; b < grid; b++) {
    pthread_barrier_init(&emu_barrier, nullptr, block);
    for (unsigned t = 0; t < block; t++) {
      jobs[t] = {kernel, &arg, b, t};
      if (pthread_create(&tids[t], &attr, emu_thread<A>, &jobs[t])) {
        fprintf(stderr, "emu: pthread_create failed\n");
        exit(1);
      }
    }
    for (unsigned t = 0; t < block; t++) pthread_join(tids[t], nullptr);
    pthread_barrier_destroy(&emu_barrier);
  }
  delete[] jobs;
  delete[] tids;
  pthread_attr_destroy(&attr);
}

#define NTT_LAUNCH(kernel, grid, block, stream, arg) ((void)(stream), emu_launch(kernel, grid, block, arg))
#endif
