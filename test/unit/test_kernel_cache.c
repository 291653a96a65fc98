/* test_kernel_cache.c: the runtime's memory and disk kernel caches through
 * the fake libcuda: a cold compile, memory hits, a warm disk hit in a new
 * fhjit context (launched with the stored description), entry keys naming
 * this build's code, corrupt, truncated, foreign and unloadable entries
 * rebuilt, the cache off (environment and option) or unwritable, the
 * default directories, the description and entry format, and compiles
 * from several threads and contexts racing for one entry. Programs come
 * from the hook of rt_fixture.c. test_cache covers hostile entries. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fhjit_codegen_id.h" /* generated: cmake/source_id.cmake */

#include "rt_fixture.h"

/* ------------------------------------------------------------ the caches */

START_TEST(cache_cold_memory_disk) {
  use_fake();
  fhjit_context *c1 = fhjit_context_create();
  fhjit_graph *g = add_graph(c1, "g1", FHJIT_R62, 4, 64);
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k = compile_ok(g, NULL, &info);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(info.disk_written, 1);
  ck_assert_int_eq(info.disk_rejected, 0);
  ck_assert_int_eq(info.nkernels, 1);
  ck_assert_str_eq(info.target, "sm_90");
  ck_assert_str_eq(hook.arch, "sm_90");
  ck_assert(info.total_ms >= info.link_ms && info.link_ms >= 0);
  ck_assert_int_eq(hook.calls, 1);
  ck_assert_int_eq(fake_calls("cuLinkComplete"), 1);
  char entry[512];
  ck_assert_int_eq(count_files(cache_dir, entry, sizeof entry), 1);
  ck_assert_int_eq(fake_live_modules(), 1);
  ck_assert_ptr_eq(fhjit_cuda_kernel_context(k), current_context());
  /* the entry's key names this build's code (another build's kernels are
   * other entries, even under the same version) */
  {
    static char bytes[1 << 16];
    FILE *f = fopen(entry, "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(bytes, 1, sizeof bytes - 1, f);
    fclose(f);
    bytes[n] = 0;
    const char *want = "|fhjit " FHJIT_VERSION_STRING " code " FHJIT_CODEGEN_ID "|";
    size_t wn = strlen(want), at = 0;
    while (at + wn <= n && memcmp(bytes + at, want, wn)) at++;
    ck_assert_msg(at + wn <= n, "no '%s' in %s", want, entry);
  }

  /* the same fhjit context: the in-memory cache, also for an equal graph of
   * that name; under another name, whose symbols its module holds (a fused
   * kernel is named after its graph), another kernel and disk entry */
  ck_assert_ptr_eq(compile_ok(g, NULL, &info), k);
  ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_MEMORY);
  ck_assert_ptr_eq(compile_ok(add_graph(c1, "g1", FHJIT_R62, 4, 64), NULL, &info), k);
  ck_assert_int_eq(hook.calls, 1);
  ck_assert_int_eq(fake_calls("cuLinkComplete"), 1);
  fhjit_graph *renamed = add_graph(c1, "other_name", FHJIT_R62, 4, 64);
  ck_assert_ptr_ne(compile_ok(renamed, NULL, &info), k);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(hook.calls, 2);
  /* a different graph is a different kernel */
  fhjit_graph *bigger = add_graph(c1, "g1", FHJIT_R62, 4, 128);
  ck_assert_ptr_ne(compile_ok(bigger, NULL, &info), k);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(hook.calls, 3);

  /* a new fhjit context: a warm hit from disk, no lowering, no linking */
  fhjit_context *c2 = fhjit_context_create();
  fhjit_graph *g2 = add_graph(c2, "g1", FHJIT_R62, 4, 64);
  int loads = fake_calls("cuModuleLoadData");
  fhjit_cuda_kernel *k2 = compile_ok(g2, NULL, &info);
  ck_assert_ptr_ne(k2, k);
  ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_DISK);
  ck_assert_int_eq(info.disk_written, 0);
  ck_assert_int_eq(info.nkernels, 1);
  ck_assert_int_eq(hook.calls, 3);
  ck_assert_int_eq(fake_calls("cuLinkComplete"), 3);
  ck_assert_int_eq(fake_calls("cuModuleLoadData"), loads + 1);
  ck_assert_int_eq(fhjit_cuda_kernel_info(k2)->source, FHJIT_CUDA_FROM_DISK);

  /* the disk's kernel launches with the same description */
  add_bufs b;
  add_bufs_init(&b, c2, FHJIT_R62, 4, 64);
  ck_assert_msg(fhjit_cuda_launch_kernel(k2, &b.args) == FHJIT_OK, "%s", fhjit_last_error(c2));
  fake_launch l;
  ck_assert(fake_launch_get(fake_launches() - 1, &l));
  ck_assert_str_eq(l.name, "fake_g1_0");
  ck_assert_int_eq(l.grid[0], 7);
  ck_assert_int_eq(l.grid[1], 2);
  ck_assert_int_eq(l.block[0], 128);
  ck_assert_int_eq(l.shared, 256);
  ck_assert_int_eq(l.nparams, 5);
  ck_assert(l.params[0] == b.params && l.params[1] == 4 && l.params[2] == b.in[0] &&
            l.params[3] == b.in[1] && l.params[4] == b.out[0]);

  fhjit_context_destroy(c1);
  ck_assert_int_eq(fake_live_modules(), 1);
  fhjit_context_destroy(c2);
  ck_assert_int_eq(fake_live_modules(), 0);
}
END_TEST

/* Compiles g1 in a fresh context: the entry is rejected and rewritten; a
 * further fresh context then hits it. */
static void expect_rebuilt(const char *what) {
  int calls = hook.calls;
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "g1", FHJIT_R62, 4, 64);
  fhjit_cuda_compile_info info;
  compile_ok(g, NULL, &info);
  ck_assert_msg(info.source == FHJIT_CUDA_COMPILED && info.disk_rejected == 1 &&
                    info.disk_written == 1,
                "%s: source %d rejected %d written %d", what, info.source, info.disk_rejected,
                info.disk_written);
  ck_assert_int_eq(hook.calls, calls + 1);
  fhjit_context_destroy(c);
  c = fhjit_context_create();
  g = add_graph(c, "g1", FHJIT_R62, 4, 64);
  compile_ok(g, NULL, &info);
  ck_assert_msg(info.source == FHJIT_CUDA_FROM_DISK && !info.disk_rejected, "%s: not rebuilt",
                what);
  fhjit_context_destroy(c);
}

static void rewrite(const char *path, const unsigned char *data, size_t size) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fwrite(data, 1, size, f), size);
  fclose(f);
}

/* Kernels compiled under another bconv_plan are other entries: every key of
 * the tuning (the tensor-core form's M included) is part of the key, and
 * the same plan again is a memory hit. */
START_TEST(cache_bconv_plan_keys) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "bp", FHJIT_R62, 4, 64);
  static const char *const plans[] = {"", "M=0", "M=2", "M=4", "M=4,T=128", "V=2", "U=3"};
  fhjit_cuda_options o = {.flags = FHJIT_CUDA_NO_DISK_CACHE};
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *ks[8];
  for (size_t i = 0; i < sizeof plans / sizeof *plans; i++) {
    ck_assert_int_eq(fhjit_context_set_option(c, "bconv_plan", plans[i]), FHJIT_OK);
    ks[i] = fhjit_cuda_compile(g, &o, &info);
    ck_assert_ptr_nonnull(ks[i]);
    ck_assert_msg(info.source == FHJIT_CUDA_COMPILED, "bconv_plan \"%s\": a cache hit", plans[i]);
  }
  ck_assert_int_eq(fhjit_context_set_option(c, "bconv_plan", "M=2"), FHJIT_OK);
  ck_assert_ptr_eq(fhjit_cuda_compile(g, &o, &info), ks[2]);
  ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_MEMORY);
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(cache_corrupt_entries) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  compile_ok(add_graph(c, "g1", FHJIT_R62, 4, 64), NULL, NULL);
  fhjit_context_destroy(c);
  char path[512];
  ck_assert_int_eq(count_files(cache_dir, path, sizeof path), 1);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  unsigned char good[65536];
  size_t size = fread(good, 1, sizeof good, f);
  fclose(f);
  ck_assert(size > 200 && size < sizeof good);
  unsigned char bad[65536 + 1];

  /* one flipped byte anywhere: in the sizes, the key, the PTX, the end */
  size_t spots[] = {9, 20, 44, 60, size / 2, size - 1};
  for (size_t i = 0; i < sizeof spots / sizeof *spots; i++) {
    memcpy(bad, good, size);
    bad[spots[i]] ^= 0x10;
    rewrite(path, bad, size);
    expect_rebuilt("flipped byte");
  }
  rewrite(path, good, size / 2);
  expect_rebuilt("truncated to half");
  rewrite(path, good, 10);
  expect_rebuilt("shorter than a header");
  rewrite(path, good, 0);
  expect_rebuilt("empty");
  memcpy(bad, good, size);
  bad[size] = 0;
  rewrite(path, bad, size + 1);
  expect_rebuilt("one byte too long");
  ck_assert_int_eq(count_files(cache_dir, NULL, 0), 1);

  /* a consistent entry under another key's name */
  c = fhjit_context_create();
  compile_ok(add_graph(c, "g2", FHJIT_R62, 4, 32), NULL, NULL);
  fhjit_context_destroy(c);
  ck_assert_int_eq(count_files(cache_dir, NULL, 0), 2);
  f = fopen(path, "rb");
  size = fread(good, 1, sizeof good, f);
  fclose(f);
  DIR *d = opendir(cache_dir);
  struct dirent *e;
  char other[512] = "";
  while ((e = readdir(d)))
    if (e->d_name[0] != '.' && !strstr(path, e->d_name))
      snprintf(other, sizeof other, "%s/%s", cache_dir, e->d_name);
  closedir(d);
  ck_assert(other[0]);
  rewrite(other, good, size); /* g2's file now holds g1's entry */
  c = fhjit_context_create();
  fhjit_cuda_compile_info info;
  compile_ok(add_graph(c, "g2", FHJIT_R62, 4, 32), NULL, &info);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(info.disk_rejected, 1);
  fhjit_context_destroy(c);

  /* a cubin the driver refuses (checksum fine): rebuilt too */
  int before = fake_calls("cuModuleLoadData");
  char spec[64];
  snprintf(spec, sizeof spec, "cuModuleLoadData#%d", before + 1);
  setenv("FAKE_CUDA_FAIL", spec, 1);
  expect_rebuilt("unloadable cubin");
  ck_assert_int_eq(fake_live_modules(), 0);
}
END_TEST

START_TEST(cache_off) {
  use_fake();
  setenv("FHJIT_CACHE", "0", 1);
  for (int round = 0; round < 2; round++) {
    fhjit_context *c = fhjit_context_create();
    fhjit_cuda_compile_info info;
    compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), NULL, &info);
    ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
    ck_assert_int_eq(info.disk_written, 0);
    fhjit_context_destroy(c);
  }
  ck_assert_int_eq(hook.calls, 2);
  ck_assert_int_eq(count_files(cache_dir, NULL, 0), 0);

  /* the option turns it off too, for reading and for writing */
  unsetenv("FHJIT_CACHE");
  fhjit_cuda_options off = {.flags = FHJIT_CUDA_NO_DISK_CACHE};
  fhjit_context *c = fhjit_context_create();
  compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), &off, NULL);
  ck_assert_int_eq(count_files(cache_dir, NULL, 0), 0);
  fhjit_context_destroy(c);
  c = fhjit_context_create();
  compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), NULL, NULL); /* writes */
  fhjit_context_destroy(c);
  ck_assert_int_eq(count_files(cache_dir, NULL, 0), 1);
  c = fhjit_context_create();
  fhjit_cuda_compile_info info;
  compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), &off, &info);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  fhjit_context_destroy(c);
  ck_assert_int_eq(hook.calls, 5);

  /* values the options would refuse, from the environment: no disk
   * cache, a note saying why (not "maybe" taken for on, nor a directory
   * under the working directory) */
  setenv("FHJIT_CACHE", "maybe", 1);
  c = fhjit_context_create();
  compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), NULL, &info);
  ck_assert_int_eq(info.disk_written, 0);
  ck_assert_msg(strstr(info.disk_note, "FHJIT_CACHE=\"maybe\": expected on or off"), "%s", info.disk_note);
  fhjit_context_destroy(c);
  unsetenv("FHJIT_CACHE");
  setenv("FHJIT_CACHE_DIR", "fhjit-relative-cache", 1);
  c = fhjit_context_create();
  compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), NULL, &info);
  ck_assert_int_eq(info.disk_written, 0);
  ck_assert_msg(strstr(info.disk_note, "FHJIT_CACHE_DIR=\"fhjit-relative-cache\": expected an absolute path"),
                "%s", info.disk_note);
  struct stat rst;
  ck_assert_int_ne(stat("fhjit-relative-cache", &rst), 0);
  fhjit_context_destroy(c);
  ck_assert_int_eq(hook.calls, 7);

  /* an unwritable directory costs the cache, not the compile */
  setenv("FHJIT_CACHE_DIR", "/proc/fhjit-no-such-dir/cache", 1);
  c = fhjit_context_create();
  compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), NULL, &info);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(info.disk_written, 0);
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(cache_default_dirs) {
  use_fake();
  char xdg[600], home[600];
  snprintf(xdg, sizeof xdg, "%s/xdg", cache_dir);
  snprintf(home, sizeof home, "%s/home", cache_dir);
  unsetenv("FHJIT_CACHE_DIR");
  setenv("XDG_CACHE_HOME", xdg, 1);
  fhjit_context *c = fhjit_context_create();
  compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), NULL, NULL);
  fhjit_context_destroy(c);
  char sub[700];
  snprintf(sub, sizeof sub, "%s/fhjit", xdg);
  ck_assert_int_eq(count_files(sub, NULL, 0), 1);
  struct stat st;
  ck_assert_int_eq(stat(sub, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0700);
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", home, 1);
  c = fhjit_context_create();
  compile_ok(add_graph(c, "g1", FHJIT_R32, 2, 32), NULL, NULL);
  fhjit_context_destroy(c);
  snprintf(sub, sizeof sub, "%s/.cache/fhjit", home);
  ck_assert_int_eq(count_files(sub, NULL, 0), 1);
}
END_TEST

/* ------------------------------------------------------------- threads */

typedef struct thread_job {
  fhjit_graph *g;
  fhjit_cuda_kernel *k;
  fhjit_cuda_source source;
  int failed; /* compile_failing: its calls that returned NULL */
} thread_job;

static void *compile_job(void *arg) {
  thread_job *j = arg;
  fhjit_cuda_options o = {.flags = FHJIT_CUDA_NO_DISK_CACHE};
  fhjit_cuda_compile_info info;
  j->k = fhjit_cuda_compile(j->g, &o, &info);
  j->source = info.source;
  return NULL;
}

static void *compile_own_context(void *arg) {
  thread_job *j = arg;
  fhjit_context *c = fhjit_context_create();
  fhjit_cuda_compile_info info;
  j->k = fhjit_cuda_compile(add_graph(c, "mt", FHJIT_R62, 3, 64), NULL, &info);
  j->source = j->k ? info.source : (fhjit_cuda_source)-1;
  fhjit_context_destroy(c);
  return NULL;
}

START_TEST(threads) {
  use_fake();
  enum { N = 6 };
  fhjit_context *c = fhjit_context_create();
  thread_job jobs[N];
  pthread_t t[N];
  for (int i = 0; i < N; i++) jobs[i] = (thread_job){add_graph(c, "mt", FHJIT_R62, 3, 64), NULL, 0, 0};
  for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, compile_job, &jobs[i]);
  for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
  int compiled = 0;
  for (int i = 0; i < N; i++) {
    ck_assert_ptr_nonnull(jobs[i].k);
    ck_assert_ptr_eq(jobs[i].k, jobs[0].k);
    compiled += jobs[i].source == FHJIT_CUDA_COMPILED;
  }
  ck_assert_int_eq(compiled, 1);
  ck_assert_int_eq(hook.calls, 1);
  ck_assert_int_eq(fake_calls("cuLinkComplete"), 1);
  ck_assert_int_eq(fake_calls("cuDevicePrimaryCtxRetain"), 1);
  fhjit_context_destroy(c);

  /* separate fhjit contexts racing for one disk entry */
  for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, compile_own_context, &jobs[i]);
  for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < N; i++)
    ck_assert(jobs[i].source == FHJIT_CUDA_COMPILED || jobs[i].source == FHJIT_CUDA_FROM_DISK);
  ck_assert_int_eq(count_files(cache_dir, NULL, 0), 1);
  c = fhjit_context_create();
  fhjit_cuda_compile_info info;
  compile_ok(add_graph(c, "mt", FHJIT_R62, 3, 64), NULL, &info);
  ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_DISK);
  fhjit_context_destroy(c);
  ck_assert_int_eq(fake_live_modules(), 0);
}
END_TEST

/* Threads failing at once in one context: each failure replaces the
 * context's error record, which the checks before the compile's lock
 * (the graph not bound) once wrote unlocked, so two threads freed the
 * same old message (a double free under ASan, found by ThreadSanitizer).
 * Now under the lock: every call fails cleanly and the record is whole. */
enum { FAIL_ROUNDS = 300 };

static void *compile_failing(void *arg) {
  thread_job *j = arg;
  for (int r = 0; r < FAIL_ROUNDS; r++)
    if (fhjit_cuda_compile(j->g, NULL, NULL) == NULL) j->failed++;
  return NULL;
}

START_TEST(threads_failing) {
  use_fake();
  enum { N = 8 };
  fhjit_context *c = fhjit_context_create();
  thread_job jobs[N];
  pthread_t t[N];
  for (int i = 0; i < N; i++) {
    fhjit_graph *g = fhjit_graph_create(c, "unbound", FHJIT_R62);
    fhjit_type ty = tu_poly(0, 0, NULL, 3, 64);
    fhjit_value a = fhjit_input(g, "a", &ty);
    ck_assert_int_eq(fhjit_output(g, fhjit_neg(g, a), "o"), FHJIT_OK);
    jobs[i] = (thread_job){g, NULL, 0, 0};
  }
  for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, compile_failing, &jobs[i]);
  for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < N; i++) ck_assert_int_eq(jobs[i].failed, FAIL_ROUNDS);
  expect(c, fhjit_last_status(c), FHJIT_ERR_ARGUMENT, "fhjit_cuda_compile: graph @unbound",
         "is not bound", NULL);
  ck_assert_int_eq(hook.calls, 0);
  fhjit_context_destroy(c);
}
END_TEST

/* ------------------------------------------------- description and disk */

START_TEST(description_roundtrip) {
  lw_program p;
  memset(&p, 0, sizeof p);
  p.nkernels = 3;
  for (int k = 0; k < 3; k++) {
    snprintf(p.kernels[k].name, sizeof p.kernels[k].name, "kernel_%d_with_a_long_name", k);
    for (int d = 0; d < 3; d++) p.kernels[k].grid[d] = (uint32_t)(k + d + 1), p.kernels[k].block[d] = (uint32_t)(32 >> d);
    p.kernels[k].shared_bytes = 1000u * (uint32_t)k;
    p.kernels[k].flags = k == 1 ? LW_KERNEL_PDL : 0;
    p.kernels[k].nargs = 4 + k;
    for (int a = 0; a < p.kernels[k].nargs; a++)
      p.kernels[k].args[a] = (lw_arg){(lw_arg_kind)(a % 5), a / 5};
  }
  p.nscratch = 2;
  p.scratch_bytes[0] = 123456789012;
  p.scratch_bytes[1] = 16;
  p.scratch_offset[1] = 123456789248; /* the arena: both, the second after the first */
  p.scratch_arena = 123456789504;
  sp_buf b = {0};
  rt_desc_write(&b, &p);
  ck_assert(!b.failed);
  lw_program q;
  ck_assert(rt_desc_read(b.data, b.len, &q));
  ck_assert_int_eq(q.nkernels, 3);
  ck_assert_int_eq(q.nscratch, 2);
  ck_assert_mem_eq(q.kernels, p.kernels, sizeof p.kernels);
  ck_assert_mem_eq(q.scratch_bytes, p.scratch_bytes, sizeof p.scratch_bytes);
  ck_assert_mem_eq(q.scratch_offset, p.scratch_offset, sizeof p.scratch_offset);
  ck_assert_int_eq(q.scratch_arena, p.scratch_arena);
  ck_assert_ptr_null(q.ptx);
  for (size_t len = 0; len < b.len; len++) ck_assert(!rt_desc_read(b.data, len, &q));
  char *longer = malloc(b.len + 4);
  memcpy(longer, b.data, b.len);
  ck_assert(!rt_desc_read(longer, b.len + 4, &q));
  uint32_t bad_kind = 9, bad_flags = 2;
  memcpy(longer + 12 + 64 + 4 * 8 + 4, &bad_kind, 4); /* kernel 0, argument 0's kind */
  ck_assert(!rt_desc_read(longer, b.len, &q));
  memcpy(longer, b.data, b.len);
  ck_assert(rt_desc_read(longer, b.len, &q));
  memcpy(longer + 12 + 64 + 4 * 7, &bad_flags, 4); /* kernel 0's flags: unknown bit */
  ck_assert(!rt_desc_read(longer, b.len, &q));
  free(longer);
  /* every single-bit change of a buffer changes the checksum */
  uint64_t sum = rt_checksum(3, b.data, b.len);
  for (size_t i = 0; i < b.len; i++)
    for (int bit = 0; bit < 8; bit++) {
      b.data[i] ^= (char)(1 << bit);
      ck_assert(rt_checksum(3, b.data, b.len) != sum);
      b.data[i] ^= (char)(1 << bit);
    }
  ck_assert(rt_checksum(3, b.data, b.len - 1) != sum);
  ck_assert(rt_checksum(4, b.data, b.len) != sum);
  sp_buf_free(&b);

  /* a stored entry loads back whole, and only under its key */
  char why[256];
  const char ptx[] = ".version 7.8\n// text";
  const unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 3};
  ck_assert(rt_disk_store(cache_dir, "key one", ptx, strlen(ptx), cubin, sizeof cubin, &p, why,
                          sizeof why));
  rt_disk_entry e;
  ck_assert_int_eq(rt_disk_load(cache_dir, "key one", &e), RT_DISK_HIT);
  ck_assert_str_eq(e.ptx, ptx);
  ck_assert_uint_eq(e.cubin_size, sizeof cubin);
  ck_assert_mem_eq(e.cubin, cubin, sizeof cubin);
  ck_assert_int_eq(e.desc.nkernels, 3);
  rt_disk_entry_free(&e);
  ck_assert_int_eq(rt_disk_load(cache_dir, "key two", &e), RT_DISK_MISS);
  ck_assert(!rt_disk_store("/proc/no/such", "k", ptx, 1, cubin, 1, &p, why, sizeof why));
  ck_assert(tu_contains(why, "cannot create the cache directory"));
}
END_TEST

int main(void) {
  TCase *tc;
  Suite *s = rt_suite("kernel_cache", &tc);
  tcase_add_test(tc, cache_cold_memory_disk);
  tcase_add_test(tc, cache_bconv_plan_keys);
  tcase_add_test(tc, cache_corrupt_entries);
  tcase_add_test(tc, cache_off);
  tcase_add_test(tc, cache_default_dirs);
  tcase_add_test(tc, threads);
  tcase_add_test(tc, threads_failing);
  tcase_add_test(tc, description_roundtrip);
  return rt_run(s);
}
