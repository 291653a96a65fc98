/* test_runtime.c: the CUDA runtime without a GPU. With no driver every call
 * fails cleanly with FHJIT_ERR_NO_DRIVER; with the fake libcuda
 * (fake_cuda/fake_cuda.c) the driver's failures (cuInit, no device, an old
 * driver, link errors with their log, out of memory), the pointer checks,
 * in-place rules, CUDA contexts, the memory and disk caches (warm hits in a
 * new context, corrupt and truncated entries rebuilt, cache off), launch
 * arguments as the driver receives them, and compiles from several threads.
 * Every test runs in its own process (the driver is opened once per
 * process). Programs come from a hook that writes PTX by hand, except where
 * the real lowering is named. */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fhjit_codegen_id.h" /* generated: cmake/source_id.cmake */

#include "fake_cuda.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "runtime/runtime.h"
#include "testutil.h"

/* ------------------------------------------------------------- the fake */

static fake_cuda_calls_fn fake_calls;
static fake_cuda_launches_fn fake_launches;
static fake_cuda_launch_get_fn fake_launch_get;
static fake_cuda_live_fn fake_live_modules, fake_live_allocs;

typedef CUresult (*ctx_create_fn)(CUcontext *, unsigned int, CUdevice);
typedef CUresult (*ctx_set_fn)(CUcontext);
typedef CUresult (*ctx_get_fn)(CUcontext *);
typedef CUresult (*stream_create_fn)(CUstream *, unsigned int);
static ctx_create_fn fake_ctx_create;
static ctx_set_fn fake_ctx_set, fake_ctx_destroy;
static ctx_get_fn fake_ctx_get;
static stream_create_fn fake_stream_create;
typedef CUresult (*capture_fn)(CUstream, int);
typedef CUresult (*capture_end_fn)(CUstream, void **);
static capture_fn fake_begin_capture;
static capture_end_fn fake_end_capture;

static void use_fake(void) {
  setenv("FHJIT_LIBCUDA", FAKE_CUDA_PATH, 1);
  void *h = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h, "%s", dlerror());
  *(void **)&fake_calls = dlsym(h, "fake_cuda_calls");
  *(void **)&fake_launches = dlsym(h, "fake_cuda_launches");
  *(void **)&fake_launch_get = dlsym(h, "fake_cuda_launch_get");
  *(void **)&fake_live_modules = dlsym(h, "fake_cuda_live_modules");
  *(void **)&fake_live_allocs = dlsym(h, "fake_cuda_live_allocs");
  *(void **)&fake_ctx_create = dlsym(h, "cuCtxCreate_v2");
  *(void **)&fake_ctx_set = dlsym(h, "cuCtxSetCurrent");
  *(void **)&fake_ctx_destroy = dlsym(h, "cuCtxDestroy_v2");
  *(void **)&fake_ctx_get = dlsym(h, "cuCtxGetCurrent");
  *(void **)&fake_stream_create = dlsym(h, "cuStreamCreate");
  *(void **)&fake_begin_capture = dlsym(h, "cuStreamBeginCapture_v2");
  *(void **)&fake_end_capture = dlsym(h, "cuStreamEndCapture");
  ck_assert(fake_calls && fake_launches && fake_launch_get && fake_live_modules &&
            fake_live_allocs && fake_ctx_create && fake_ctx_set && fake_ctx_get &&
            fake_stream_create && fake_ctx_destroy && fake_begin_capture && fake_end_capture);
}

static CUcontext current_context(void) {
  CUcontext c = NULL;
  ck_assert_int_eq(fake_ctx_get(&c), CUDA_SUCCESS);
  return c;
}

/* ------------------------------------------------- hand-written programs */

/* What the hook makes: one kernel per graph unless told otherwise, with the
 * arguments (params, pstride, inputs..., results..., scratch...). */
static struct {
  int calls;
  char arch[16];
  int kernels;        /* 1 or 2 */
  int scratch;        /* add one scratch buffer of 4096 bytes */
  int syntax_error;   /* PTX the fake linker rejects */
  int misnamed;       /* the description names a kernel the PTX lacks */
  int bad_index;      /* an input index out of range */
  int refuse;         /* fail like the lowering would */
} hook;

static char *hand_ptx(const lw_program *p) {
  sp_buf b = {0};
  sp_buf_printf(&b, "//\n// hand-written for test_runtime\n.version 7.8\n.target sm_90\n"
                    ".address_size 64\n");
  for (int32_t k = 0; k < p->nkernels; k++) {
    sp_buf_printf(&b, "\n.visible .entry %s%s(\n", p->kernels[k].name, hook.misnamed ? "_x" : "");
    for (int32_t a = 0; a < p->kernels[k].nargs; a++)
      sp_buf_printf(&b, "\t.param .u64 .ptr .global .align 16 %s_param_%d%s\n",
                    p->kernels[k].name, (int)a, a + 1 < p->kernels[k].nargs ? "," : "");
    sp_buf_printf(&b, ")\n{\n%s\tret;\n}\n", hook.syntax_error ? "\tFAKE_SYNTAX_ERROR;\n" : "");
  }
  return b.data;
}

static fhjit_status hook_lower(fhjit_graph *g, const char *arch, lw_program *out) {
  hook.calls++;
  snprintf(hook.arch, sizeof hook.arch, "%s", arch ? arch : "(null)");
  memset(out, 0, sizeof *out);
  if (hook.refuse) return ir_error(g->ctx, FHJIT_ERR_UNSUPPORTED, "fake lowering refuses @%s", g->name);
  int32_t nres = fhjit_num_results(g), nin = fhjit_num_inputs(g);
  out->nkernels = nres ? hook.kernels : 0;
  for (int32_t k = 0; k < out->nkernels; k++) {
    lw_kernel *kd = &out->kernels[k];
    snprintf(kd->name, sizeof kd->name, "fake_%s_%d", g->name, (int)k);
    kd->grid[0] = 7 + (uint32_t)k, kd->grid[1] = 2, kd->grid[2] = 1;
    kd->block[0] = 128, kd->block[1] = kd->block[2] = 1;
    kd->shared_bytes = 256;
    kd->args[kd->nargs++] = (lw_arg){LW_ARG_PARAMS, 0};
    kd->args[kd->nargs++] = (lw_arg){LW_ARG_PSTRIDE, 0};
    for (int32_t i = 0; i < nin; i++) kd->args[kd->nargs++] = (lw_arg){LW_ARG_INPUT, i};
    for (int32_t r = 0; r < nres; r++) kd->args[kd->nargs++] = (lw_arg){LW_ARG_RESULT, r};
    if (hook.scratch) kd->args[kd->nargs++] = (lw_arg){LW_ARG_SCRATCH, 0};
    if (hook.bad_index) kd->args[2].index = nin + 3;
  }
  if (hook.scratch) out->nscratch = 1, out->scratch_bytes[0] = 4096;
  out->ptx = nres ? hand_ptx(out) : NULL;
  return FHJIT_OK;
}

/* The hook's program without its PTX, not counted: what the runtime checks
 * disk entries against (rt_describe). */
static fhjit_status hook_describe(fhjit_graph *g, const char *arch, lw_program *out) {
  int calls = hook.calls;
  char seen[sizeof hook.arch];
  memcpy(seen, hook.arch, sizeof seen);
  fhjit_status st = hook_lower(g, arch, out);
  hook.calls = calls;
  memcpy(hook.arch, seen, sizeof seen);
  free(out->ptx);
  out->ptx = NULL;
  return st;
}

/* --------------------------------------------------------------- fixtures */

static char cache_dir[64];

static void setup(void) {
  snprintf(cache_dir, sizeof cache_dir, "/tmp/fhjit-rt-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(cache_dir));
  setenv("FHJIT_CACHE_DIR", cache_dir, 1);
  unsetenv("FHJIT_CACHE");
  unsetenv("FAKE_CUDA_FAIL");
  memset(&hook, 0, sizeof hook);
  hook.kernels = 1;
  rt_lower = hook_lower;
  rt_describe = hook_describe;
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(path);
    else unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static void teardown(void) { remove_tree(cache_dir); }

/* Files in a directory (not . and ..); the first one's path in first. */
static int count_files(const char *dir, char *first, size_t size) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (!n && first) snprintf(first, size, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  return n;
}

/* ------------------------------------------------------------------ graphs */

static const uint64_t Q62 = UINT64_C(1152921504606748673), Q32 = 268369921;

/* s = add(a, b) over plaintexts [rows, n]; `name` names the graph. */
static fhjit_graph *add_graph(fhjit_context *c, const char *name, fhjit_radix radix, int rows,
                              int n) {
  fhjit_graph *g = fhjit_graph_create(c, name, radix);
  ck_assert_ptr_nonnull(g);
  fhjit_type t = tu_poly(0, 0, NULL, rows, n);
  fhjit_value a = fhjit_input(g, "a", &t), b = fhjit_input(g, "b", &t);
  fhjit_value s = fhjit_add(g, a, b);
  ck_assert_int_ne(s, FHJIT_NO_VALUE);
  fhjit_set_name(g, s, "s");
  ck_assert_int_eq(fhjit_output(g, s, NULL), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
  return g;
}

static void expect(fhjit_context *c, fhjit_status got, fhjit_status want, const char *f1,
                   const char *f2, const char *f3) {
  const char *msg = fhjit_last_error(c);
  ck_assert_msg(got == want, "status %d (%s), want %d (%s): %s", got, fhjit_status_name(got), want,
                fhjit_status_name(want), msg);
  ck_assert_int_eq(fhjit_last_status(c), want);
  const char *frags[] = {f1, f2, f3};
  for (int i = 0; i < 3; i++)
    if (frags[i]) ck_assert_msg(tu_contains(msg, frags[i]), "'%s' lacks '%s'", msg, frags[i]);
}

static fhjit_cuda_kernel *compile_ok(fhjit_graph *g, const fhjit_cuda_options *o,
                                     fhjit_cuda_compile_info *info) {
  fhjit_cuda_kernel *k = fhjit_cuda_compile(g, o, info);
  ck_assert_msg(k, "%s", fhjit_last_error(fhjit_graph_context(g)));
  return k;
}

static fhjit_cuda_ptr alloc_ok(fhjit_context *c, size_t bytes) {
  fhjit_cuda_ptr p = 0;
  ck_assert_msg(fhjit_cuda_alloc(c, bytes, &p) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert(p != 0 && p % 16 == 0);
  return p;
}

/* Buffers for add_graph(rows, n): a parameter table and a, b, s. */
typedef struct add_bufs {
  fhjit_cuda_ptr params, in[2], out[1];
  int64_t pstride;
  fhjit_cuda_args args;
} add_bufs;

static void add_bufs_init(add_bufs *b, fhjit_context *c, fhjit_radix radix, int rows, int n) {
  size_t ws = radix == FHJIT_R32 ? 4 : 8;
  b->pstride = rows;
  b->params = alloc_ok(c, (size_t)(8 * rows) * ws);
  for (int i = 0; i < 2; i++) b->in[i] = alloc_ok(c, (size_t)(rows * n) * ws);
  b->out[0] = alloc_ok(c, (size_t)(rows * n) * ws);
  memset(&b->args, 0, sizeof b->args);
  b->args.params = b->params;
  b->args.pstride = b->pstride;
  b->args.inputs = b->in;
  b->args.ninputs = 2;
  b->args.results = b->out;
  b->args.nresults = 1;
}

/* ------------------------------------------------------------ no driver */

START_TEST(no_driver) {
  const char *path = "/nonexistent/fhjit-test/libcuda.so.1";
  setenv("FHJIT_LIBCUDA", path, 1);
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "nodrv", FHJIT_R62, 2, 16);
  ck_assert_int_eq(fhjit_cuda_available(c), 0);
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, path, "cannot open shared object file",
         "fhjit_cuda_available");
  fhjit_cuda_compile_info info;
  memset(&info, 0x5a, sizeof info);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, &info));
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_compile", path, NULL);
  fhjit_cuda_ptr bufs[3] = {16, 32, 48};
  fhjit_cuda_args a = {.params = 64, .pstride = 2, .inputs = bufs, .ninputs = 2,
                       .results = bufs + 2, .nresults = 1};
  expect(c, fhjit_cuda_launch(g, &a), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_launch", path, NULL);
  fhjit_cuda_ptr p = 77;
  expect(c, fhjit_cuda_alloc(c, 1024, &p), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_alloc", path, NULL);
  ck_assert(p == 0);
  expect(c, fhjit_cuda_free(c, 4096), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_free", NULL, NULL);
  char host[32] = {0};
  expect(c, fhjit_cuda_upload(c, 4096, host, sizeof host), FHJIT_ERR_NO_DRIVER, "upload", NULL,
         NULL);
  expect(c, fhjit_cuda_download(c, host, 4096, sizeof host), FHJIT_ERR_NO_DRIVER, "download",
         NULL, NULL);
  fhjit_cuda_ptr table = 5;
  int64_t pstride = 0;
  expect(c, fhjit_cuda_param_table(c, FHJIT_R62, &Q62, 1, 0, 0, 1, &table, &pstride),
         FHJIT_ERR_NO_DRIVER, "fhjit_cuda_alloc", NULL, NULL);
  ck_assert(table == 0);
  ck_assert_ptr_null(fhjit_cuda_driver_proc(c, "cuInit"));
  ck_assert_int_eq(fhjit_last_status(c), FHJIT_ERR_NO_DRIVER);
  ck_assert_int_eq(fhjit_cuda_launch_kernel(NULL, &a), FHJIT_ERR_ARGUMENT);
  /* nothing was loaded, so releasing a context is a no-op */
  ck_assert_int_eq(fhjit_cuda_release_context(c, (fhjit_cuda_context)1), FHJIT_OK);
  /* the reason repeats at every call, in every context */
  fhjit_context *c2 = fhjit_context_create();
  ck_assert_int_eq(fhjit_cuda_available(c2), 0);
  expect(c2, fhjit_last_status(c2), FHJIT_ERR_NO_DRIVER, path, NULL, NULL);
  fhjit_context_destroy(c2);
  fhjit_context_destroy(c);
}
END_TEST

/* An environment variable makes the fake fail in one way; the reason is in
 * every call's message. */
static void expect_unavailable(const char *var, const char *value, const char *f1,
                               const char *f2) {
  use_fake();
  setenv(var, value, 1);
  fhjit_context *c = fhjit_context_create();
  ck_assert_int_eq(fhjit_cuda_available(c), 0);
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, f1, f2, NULL);
  fhjit_graph *g = add_graph(c, "g", FHJIT_R32, 1, 8);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, "fhjit_cuda_compile", f1, f2);
  fhjit_context_destroy(c);
}

START_TEST(init_failure) {
  expect_unavailable("FAKE_CUDA_FAIL", "cuInit=100", "cuInit failed",
                     "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device");
}
END_TEST

START_TEST(no_device) {
  expect_unavailable("FAKE_CUDA_DEVICES", "0", "no usable CUDA driver", "sees no device");
}
END_TEST

START_TEST(driver_too_old) {
  expect_unavailable("FAKE_CUDA_VERSION", "11080", "CUDA 11.8", "CUDA 12.0 fhjit needs");
}
END_TEST

START_TEST(driver_lacks_symbol) {
  expect_unavailable("FHJIT_LIBCUDA", FAKE_CUDA_OLD_PATH, "has no symbol cuCtxGetId",
                     "older than CUDA 12.0");
}
END_TEST

START_TEST(available_and_procs) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  ck_assert_int_eq(fhjit_cuda_available(c), 1);
  ck_assert_ptr_eq(fhjit_cuda_driver_proc(c, "cuCtxCreate_v2"), (void *)fake_ctx_create);
  ck_assert_ptr_null(fhjit_cuda_driver_proc(c, "cuNoSuchFunction"));
  expect(c, fhjit_last_status(c), FHJIT_ERR_NO_DRIVER, "no symbol cuNoSuchFunction", NULL, NULL);
  ck_assert_ptr_null(fhjit_cuda_driver_proc(c, NULL));
  ck_assert_int_eq(fhjit_last_status(c), FHJIT_ERR_ARGUMENT);
  /* cuInit runs once per process */
  ck_assert_int_eq(fake_calls("cuInit"), 1);
  fhjit_context_destroy(c);
}
END_TEST

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

/* ------------------------------------------------------ driver failures */

START_TEST(link_failure_log) {
  use_fake();
  setenv("FAKE_CUDA_FAIL", "cuLinkComplete", 1);
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "linkfail", FHJIT_R62, 2, 16);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "could not compile the PTX of graph @linkfail for sm_90",
         "cuLinkComplete failed: CUDA_ERROR_INVALID_PTX (218)",
         "ptxas fatal   : Unresolved extern function 'fake_missing'");
  ck_assert_int_eq(fake_live_modules(), 0);
  ck_assert_int_eq(count_files(cache_dir, NULL, 0), 0);
  ck_assert_int_eq(fake_calls("cuLinkDestroy"), 1);
  /* a failure is not cached */
  unsetenv("FAKE_CUDA_FAIL");
  fhjit_cuda_compile_info info;
  compile_ok(g, NULL, &info);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(hook.calls, 2);

  /* PTX the driver's assembler rejects: its log is in the message */
  hook.syntax_error = 1;
  fhjit_graph *g2 = add_graph(c, "syntax", FHJIT_R62, 2, 32);
  ck_assert_ptr_null(fhjit_cuda_compile(g2, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "cuLinkAddData_v2 failed",
         "syntax error at 'FAKE_SYNTAX_ERROR'", "driver log");
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(load_failures) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  setenv("FAKE_CUDA_FAIL", "cuModuleLoadData", 1);
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "ld", FHJIT_R32, 2, 16), NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "cannot load the cubin",
         "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE", NULL);
  unsetenv("FAKE_CUDA_FAIL");
  hook.misnamed = 1;
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "nm", FHJIT_R32, 2, 16), NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "kernel fake_nm_0",
         "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND", NULL);
  ck_assert_int_eq(fake_live_modules(), 0);
  hook.misnamed = 0;
  hook.bad_index = 1;
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "bi", FHJIT_R32, 2, 16), NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_LLVM, "input index out of range", NULL, NULL);
  hook.bad_index = 0;
  hook.refuse = 1;
  fhjit_graph *g = add_graph(c, "refused", FHJIT_R32, 2, 16);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_UNSUPPORTED, "fake lowering refuses @refused", NULL,
         NULL);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  ck_assert_int_eq(hook.calls, 5); /* not cached */
  ck_assert_int_eq(fake_calls("cuLinkComplete"), 2); /* the bad program was never linked */
  /* unbound */
  fhjit_graph *u = fhjit_graph_create(c, "unbound", FHJIT_R32);
  fhjit_type t = tu_poly(0, 0, NULL, 1, 4);
  fhjit_output(u, fhjit_input(u, "x", &t), NULL);
  ck_assert_ptr_null(fhjit_cuda_compile(u, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_ARGUMENT, "@unbound is not bound", NULL, NULL);
  ck_assert_ptr_null(fhjit_cuda_compile(NULL, NULL, NULL));
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(out_of_memory) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  fhjit_cuda_ptr p = 1;
  expect(c, fhjit_cuda_alloc(c, (size_t)1 << 45, &p), FHJIT_ERR_MEMORY,
         "cannot allocate 35184372088832 bytes", "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY", NULL);
  ck_assert(p == 0);
  expect(c, fhjit_cuda_alloc(c, 0, &p), FHJIT_ERR_ARGUMENT, "zero bytes", NULL, NULL);
  int before = fake_live_allocs();
  setenv("FAKE_CUDA_FAIL", "cuMemAlloc", 1);
  expect(c, fhjit_cuda_alloc(c, 64, &p), FHJIT_ERR_MEMORY, "out of memory", NULL, NULL);
  /* scratch buffers are allocated at compile time: their failure fails it */
  hook.scratch = 1;
  fhjit_graph *g = add_graph(c, "scr", FHJIT_R62, 2, 16);
  ck_assert_ptr_null(fhjit_cuda_compile(g, NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_MEMORY, "scratch buffer #0 of 4096 bytes",
         "@scr", NULL);
  ck_assert_int_eq(fake_live_modules(), 0);
  ck_assert_int_eq(fake_live_allocs(), before);
  unsetenv("FAKE_CUDA_FAIL");
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k = compile_ok(g, NULL, &info);
  ck_assert_int_eq(info.scratch_bytes, 4096);
  ck_assert_int_eq(fhjit_cuda_scratch_count(k), 1);
  ck_assert_int_eq(fhjit_cuda_scratch_size(k, 0), 4096);
  ck_assert_int_eq(fhjit_cuda_scratch_size(k, 1), -1);
  ck_assert_int_eq(fake_live_allocs(), before + 1);
  fhjit_context_destroy(c);
  ck_assert_int_eq(fake_live_allocs(), before);
}
END_TEST

/* ---------------------------------------------------------------- launch */

START_TEST(launch_arguments) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "la", FHJIT_R32, 3, 32);
  add_bufs b;
  add_bufs_init(&b, c, FHJIT_R32, 3, 32);
  CUstream s;
  ck_assert_int_eq(fake_stream_create(&s, 0), CUDA_SUCCESS);
  b.args.stream = s;
  b.args.pstride = 5; /* larger than rows: the table must then span 7*5+3 words */
  fhjit_cuda_ptr wide = alloc_ok(c, (7 * 5 + 3) * 4);
  b.args.params = wide;
  ck_assert_int_eq(fake_launches(), 0);
  ck_assert_msg(fhjit_cuda_launch(g, &b.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(hook.calls, 1);
  ck_assert_int_eq(fake_launches(), 1);
  fake_launch l;
  ck_assert(fake_launch_get(0, &l));
  ck_assert_str_eq(l.name, "fake_la_0");
  ck_assert_ptr_eq(l.stream, s);
  ck_assert_ptr_eq(l.ctx, current_context());
  ck_assert_int_eq(l.nparams, 5);
  ck_assert(l.params[0] == wide && l.params[1] == 5 && l.params[2] == b.in[0] &&
            l.params[3] == b.in[1] && l.params[4] == b.out[0]);
  /* the lazy compile happened once */
  ck_assert_msg(fhjit_cuda_launch(g, &b.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(hook.calls, 1);
  ck_assert_int_eq(fake_launches(), 2);

  /* two kernels launch in order; scratch: the kernel's own, or the caller's */
  hook.kernels = 2;
  hook.scratch = 1;
  fhjit_graph *g2 = add_graph(c, "two", FHJIT_R32, 3, 64);
  fhjit_cuda_kernel *k = compile_ok(g2, NULL, NULL);
  add_bufs b2;
  add_bufs_init(&b2, c, FHJIT_R32, 3, 64);
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &b2.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(fake_launches(), 4);
  fake_launch l0, l1;
  fake_launch_get(2, &l0);
  fake_launch_get(3, &l1);
  ck_assert_str_eq(l0.name, "fake_two_0");
  ck_assert_str_eq(l1.name, "fake_two_1");
  ck_assert_int_eq(l1.grid[0], 8);
  ck_assert_int_eq(l0.nparams, 6);
  ck_assert(l0.params[5] != 0 && l0.params[5] == l1.params[5]);
  ck_assert_ptr_null(l0.stream);
  fhjit_cuda_ptr mine = alloc_ok(c, 4096);
  b2.args.scratch = &mine;
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &b2.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  fake_launch_get(4, &l0);
  ck_assert(l0.params[5] == mine);
  fhjit_cuda_ptr small = alloc_ok(c, 1024);
  b2.args.scratch = &small;
  expect(c, fhjit_cuda_launch_kernel(k, &b2.args), FHJIT_ERR_ARGUMENT, "scratch buffer #0",
         "spans 4096 bytes", NULL);
  ck_assert_int_eq(fake_launches(), 6);
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(bad_pointers) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  const int rows = 2, n = 64;
  const size_t bytes = rows * n * 8;
  fhjit_graph *g = add_graph(c, "bp", FHJIT_R62, rows, n);
  fhjit_cuda_kernel *k = compile_ok(g, NULL, NULL);
  add_bufs b;
  add_bufs_init(&b, c, FHJIT_R62, rows, n);
  fhjit_cuda_args a = b.args;
  fhjit_cuda_ptr in[2], out[1];
  a.inputs = in;
  a.results = out;
#define RESET() (memcpy(in, b.in, sizeof in), memcpy(out, b.out, sizeof out), a.params = b.params, \
                 a.pstride = b.pstride, a.ninputs = 2, a.nresults = 1, a.options = NULL)
  RESET();
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &a) == FHJIT_OK, "%s", fhjit_last_error(c));
  int launched = fake_launches();

  in[0] = 0;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "graph @bp", "input #0 (%a)",
         "null pointer");
  RESET();
  in[1] = b.in[1] + 8;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "input #1 (%b)",
         "misaligned pointer", "16-byte aligned");
  RESET();
  out[0] = b.out[0] + 16; /* 16 bytes past the end of its allocation */
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "result #0 (%s)", "spans 1024 bytes",
         "ends 1008 bytes after");
  RESET();
  fhjit_cuda_ptr short_buf = alloc_ok(c, bytes - 8);
  in[0] = short_buf;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "input #0 (%a)", "allocation", NULL);
  RESET();
  void *host = aligned_alloc(64, bytes);
  in[1] = (fhjit_cuda_ptr)(uintptr_t)host;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "input #1 (%b)",
         "not in memory allocated through the CUDA driver", NULL);
  free(host);
  RESET();
  fhjit_cuda_ptr freed = alloc_ok(c, bytes);
  ck_assert_int_eq(fhjit_cuda_free(c, freed), FHJIT_OK);
  out[0] = freed;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "result #0",
         "not in memory allocated", NULL);
  RESET();
  a.pstride = rows - 1;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "pstride 1", "2 columns", NULL);
  RESET();
  a.pstride = 3; /* the table allocation holds 8 x 2 words only */
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "parameter table", "spans 184 bytes",
         NULL);
  RESET();
  a.params = 0;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "parameter table", "null pointer",
         NULL);
  RESET();
  a.ninputs = 1;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "takes 2 inputs and 1 results",
         "give 1 and 1", NULL);
  RESET();
  a.inputs = NULL;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "null input array", NULL, NULL);
  a.inputs = in;
  RESET();
  out[0] = b.params;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "result #0 (%s) overlaps parameter table",
         NULL, NULL);
  RESET();
  expect(c, fhjit_cuda_launch_kernel(k, NULL), FHJIT_ERR_ARGUMENT, "null arguments", NULL, NULL);
  ck_assert_int_eq(fake_launches(), launched);

  /* without the driver's view, only the cheap checks remain */
  fhjit_cuda_options fast = {.flags = FHJIT_CUDA_NO_POINTER_CHECKS};
  RESET();
  a.options = &fast;
  in[0] = short_buf;
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &a) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(fake_launches(), launched + 1);
  in[1] = 0;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "input #1 (%b)", "null pointer",
         NULL);
  RESET();
  a.options = &fast;
  out[0] = b.in[0] + 16;
  expect(c, fhjit_cuda_launch_kernel(k, &a), FHJIT_ERR_ARGUMENT, "result #0 (%s) overlaps input #0 (%a)",
         "same buffer", NULL);
  ck_assert_int_eq(fake_launches(), launched + 1);

  /* two results may not overlap each other */
  fhjit_graph *g2 = fhjit_graph_create(c, "two", FHJIT_R62);
  fhjit_type t = tu_poly(0, 0, NULL, rows, n);
  fhjit_value x = fhjit_input(g2, "x", &t), y = fhjit_input(g2, "y", &t);
  fhjit_output(g2, fhjit_add(g2, x, y), "s");
  fhjit_output(g2, fhjit_sub(g2, x, y), "d");
  ck_assert_int_eq(fhjit_bind(g2), FHJIT_OK);
  ck_assert_int_eq(fhjit_num_results(g2), 2);
  fhjit_cuda_ptr big = alloc_ok(c, 3 * bytes), outs[2] = {big, big + bytes - 64};
  fhjit_cuda_args a2 = b.args;
  a2.results = outs;
  a2.nresults = 2;
  expect(c, fhjit_cuda_launch(g2, &a2), FHJIT_ERR_ARGUMENT, "graph @two", "overlaps result #0",
         NULL);
  outs[1] = big + bytes;
  ck_assert_msg(fhjit_cuda_launch(g2, &a2) == FHJIT_OK, "%s", fhjit_last_error(c));
  fhjit_context_destroy(c);
#undef RESET
}
END_TEST

START_TEST(in_place) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  const int rows = 2, n = 32;
  fhjit_graph *g = add_graph(c, "ip", FHJIT_R32, rows, n);
  fhjit_cuda_kernel *k = compile_ok(g, NULL, NULL);
  add_bufs b;
  add_bufs_init(&b, c, FHJIT_R32, rows, n);
  for (int i = 0; i < 2; i++) {
    b.out[0] = b.in[i]; /* s = a + b written over a, then over b */
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &b.args) == FHJIT_OK, "%s", fhjit_last_error(c));
    fake_launch l;
    fake_launch_get(fake_launches() - 1, &l);
    ck_assert(l.params[4] == b.in[i] && l.params[2 + i] == b.in[i]);
  }
  int launched = fake_launches();

  /* an input with a layout other than dense cannot be overwritten */
  fhjit_graph *gs = fhjit_graph_create(c, "strided", FHJIT_R32);
  fhjit_type t = tu_poly(0, 0, NULL, rows, n);
  fhjit_value x = fhjit_input(gs, "x", &t), y = fhjit_input(gs, "y", &t);
  fhjit_value prod = fhjit_mul(gs, x, y);
  fhjit_set_name(gs, prod, "prod");
  fhjit_output(gs, prod, "m");
  fhjit_layout wide;
  fhjit_dense_layout(&t, &wide);
  wide.row_stride = 2 * n;
  ck_assert_int_eq(fhjit_bind_input(gs, x, NULL, &wide), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(gs), FHJIT_OK);
  size_t xbytes;
  ck_assert_int_eq(fhjit_cuda_input_bytes(gs, 0, &xbytes), FHJIT_OK);
  ck_assert_uint_eq(xbytes, (size_t)((rows - 1) * 2 * n + n) * 4);
  fhjit_cuda_ptr xs = alloc_ok(c, xbytes), ins[2] = {xs, b.in[1]}, outs[1] = {xs};
  fhjit_cuda_args a = b.args;
  a.inputs = ins;
  a.results = outs;
  expect(c, fhjit_cuda_launch(gs, &a), FHJIT_ERR_ARGUMENT, "result #0 (%prod, output m) overlaps input #0 (%x)",
         "bound with the dense layout", NULL);
  outs[0] = b.in[1];
  ck_assert_msg(fhjit_cuda_launch(gs, &a) == FHJIT_OK, "%s", fhjit_last_error(c));
  launched++;

  /* a result may only overwrite an input it is computed from */
  fhjit_graph *g3 = fhjit_graph_create(c, "three", FHJIT_R32);
  fhjit_value p = fhjit_input(g3, "p", &t), q = fhjit_input(g3, "q", &t),
              r = fhjit_input(g3, "r", &t);
  fhjit_output(g3, fhjit_add_lazy(g3, p, q), "s");
  fhjit_output(g3, r, "r_out"); /* keeps r an input of the graph */
  ck_assert_int_eq(fhjit_bind(g3), FHJIT_OK);
  fhjit_cuda_ptr rbuf = alloc_ok(c, (size_t)(rows * n) * 4), in3[3] = {b.in[0], b.in[1], rbuf},
                 out3[1] = {rbuf};
  a.inputs = in3;
  a.ninputs = 3;
  a.results = out3;
  expect(c, fhjit_cuda_launch(g3, &a), FHJIT_ERR_ARGUMENT, "overlaps input #2 (%r)",
         "not computed from that input", NULL);

  /* nor in a program of several kernels (not pointwise as launched) */
  hook.kernels = 2;
  fhjit_graph *g4 = add_graph(c, "multi", FHJIT_R32, rows, 2 * n);
  add_bufs b4;
  add_bufs_init(&b4, c, FHJIT_R32, rows, 2 * n);
  b4.out[0] = b4.in[0];
  expect(c, fhjit_cuda_launch(g4, &b4.args), FHJIT_ERR_ARGUMENT, "overlaps input #0 (%a)",
         "not pointwise", NULL);
  ck_assert_int_eq(fake_launches(), launched);
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(contexts) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  ck_assert_ptr_null(current_context());
  /* no current context: the primary one of device 0 becomes current */
  fhjit_graph *g = add_graph(c, "ctx", FHJIT_R62, 2, 16);
  fhjit_cuda_kernel *k = compile_ok(g, NULL, NULL);
  CUcontext primary = current_context();
  ck_assert_ptr_nonnull(primary);
  fhjit_cuda_context cur = NULL;
  ck_assert_int_eq(fhjit_cuda_current_context(c, 0, &cur), FHJIT_OK);
  ck_assert_ptr_eq(cur, primary);
  ck_assert_ptr_eq(fhjit_cuda_kernel_context(k), primary);
  ck_assert_int_eq(fake_calls("cuDevicePrimaryCtxRetain"), 1);
  add_bufs bp;
  add_bufs_init(&bp, c, FHJIT_R62, 2, 16);
  CUstream sp;
  ck_assert_int_eq(fake_stream_create(&sp, 0), CUDA_SUCCESS);

  /* another context current: the kernel of the primary one is refused */
  CUcontext other;
  ck_assert_int_eq(fake_ctx_create(&other, 0, 0), CUDA_SUCCESS);
  ck_assert_ptr_eq(current_context(), other);
  int launched = fake_launches();
  expect(c, fhjit_cuda_launch_kernel(k, &bp.args), FHJIT_ERR_ARGUMENT, "were loaded in CUDA context",
         "compile the graph in that context first", "@ctx");
  /* a stream of the primary context while another is current */
  bp.args.stream = sp;
  expect(c, fhjit_cuda_launch(g, &bp.args), FHJIT_ERR_ARGUMENT, "belongs to CUDA context",
         "current context is", NULL);
  bp.args.stream = NULL;
  /* fhjit_cuda_launch compiles for the current context, whose pointers must
   * be its own */
  expect(c, fhjit_cuda_launch(g, &bp.args), FHJIT_ERR_ARGUMENT, "parameter table",
         "belongs to CUDA context", "not to the launch's context");
  ck_assert_int_eq(fake_launches(), launched);
  add_bufs bo;
  add_bufs_init(&bo, c, FHJIT_R62, 2, 16);
  ck_assert_msg(fhjit_cuda_launch(g, &bo.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  fake_launch l;
  fake_launch_get(fake_launches() - 1, &l);
  ck_assert_ptr_eq(l.ctx, other);
  ck_assert_int_eq(fake_live_modules(), 2);
  ck_assert_int_eq(fake_calls("cuDevicePrimaryCtxRetain"), 1);

  /* back in the primary context, with its stream: fine */
  ck_assert_int_eq(fake_ctx_set(primary), CUDA_SUCCESS);
  bp.args.stream = sp;
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &bp.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  /* with no current context at all, the kernel's own is made current */
  ck_assert_int_eq(fake_ctx_set(NULL), CUDA_SUCCESS);
  bp.args.stream = NULL;
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &bp.args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_ptr_eq(current_context(), primary);

  /* releasing a CUDA context unloads what was loaded there */
  ck_assert_int_eq(fhjit_cuda_release_context(c, other), FHJIT_OK);
  ck_assert_int_eq(fake_live_modules(), 1);
  ck_assert_int_eq(fhjit_cuda_release_context(c, NULL), FHJIT_ERR_ARGUMENT);

  /* a context destroyed behind fhjit's back: refused, and no crash later */
  CUcontext doomed;
  ck_assert_int_eq(fake_ctx_create(&doomed, 0, 0), CUDA_SUCCESS);
  fhjit_graph *g2 = add_graph(c, "doomed", FHJIT_R62, 2, 32);
  fhjit_cuda_kernel *kd = compile_ok(g2, NULL, NULL);
  add_bufs bd;
  add_bufs_init(&bd, c, FHJIT_R62, 2, 32);
  ck_assert_int_eq(fake_ctx_destroy(doomed), CUDA_SUCCESS);
  ck_assert(fhjit_cuda_launch_kernel(kd, &bd.args) != FHJIT_OK);
  ck_assert_int_eq(fake_ctx_set(primary), CUDA_SUCCESS);
  expect(c, fhjit_cuda_launch_kernel(kd, &bd.args), FHJIT_ERR_ARGUMENT, "were loaded in CUDA context",
         NULL, NULL);
  fhjit_context_destroy(c);
  ck_assert_int_eq(fake_live_modules(), 1); /* the dead context's module died with it */
}
END_TEST

static void *compile_on_new_thread(void *arg) {
  fhjit_graph *g = arg;
  fhjit_cuda_options o = {.device = 1};
  return fhjit_cuda_compile(g, &o, NULL);
}

static void *current_on_new_thread(void *arg) {
  fhjit_cuda_context cur = NULL;
  fhjit_status s = fhjit_cuda_current_context(arg, 0, &cur);
  return s == FHJIT_OK ? cur : NULL;
}

START_TEST(primary_of_missing_device) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  /* a new thread has no current context; asking makes the primary current */
  pthread_t t0;
  void *cur = NULL;
  pthread_create(&t0, NULL, current_on_new_thread, c);
  pthread_join(t0, &cur);
  ck_assert_ptr_nonnull(cur);
  ck_assert_ptr_null(current_context());
  expect(c, fhjit_cuda_current_context(c, 0, NULL), FHJIT_ERR_ARGUMENT, "null result", NULL, NULL);
  fhjit_graph *g = add_graph(c, "dev1", FHJIT_R32, 1, 16);
  pthread_t t;
  void *k = (void *)1;
  pthread_create(&t, NULL, compile_on_new_thread, g);
  pthread_join(t, &k);
  ck_assert_ptr_null(k);
  expect(c, fhjit_last_status(c), FHJIT_ERR_CUDA, "no CUDA device 1",
         "cuDeviceGet failed: CUDA_ERROR_INVALID_DEVICE", NULL);
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(targets) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = add_graph(c, "tg", FHJIT_R62, 1, 16);
  fhjit_cuda_options o = {.target = "sm_9"};
  ck_assert_ptr_null(fhjit_cuda_compile(g, &o, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "\"sm_9\" is not of the form sm_XX", NULL, NULL);
  o.target = "sm_100";
  ck_assert_ptr_null(fhjit_cuda_compile(g, &o, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "sm_100", NULL, NULL);
  o.target = "sm_91";
  ck_assert_ptr_null(fhjit_cuda_compile(g, &o, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "not supported", "sm_90a", NULL);
  o.target = "sm_80";
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k80 = compile_ok(g, &o, &info);
  ck_assert_str_eq(info.target, "sm_80");
  ck_assert_str_eq(hook.arch, "sm_80");
  o.target = "sm_90a";
  ck_assert_ptr_ne(compile_ok(g, &o, &info), k80);
  ck_assert_str_eq(hook.arch, "sm_90a");
  fhjit_context_destroy(c);

  /* a device newer than every target: the newest portable one */
  setenv("FAKE_CUDA_CC", "120", 1);
  c = fhjit_context_create();
  compile_ok(add_graph(c, "tg", FHJIT_R62, 1, 16), NULL, &info);
  ck_assert_str_eq(info.target, "sm_90");
  o.target = "sm_90a"; /* 'a' code runs on its own device only */
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "tg", FHJIT_R62, 1, 16), &o, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "cannot run on the device, which is sm_120",
         NULL, NULL);
  fhjit_context_destroy(c);
  /* older than every target */
  setenv("FAKE_CUDA_CC", "61", 1);
  c = fhjit_context_create();
  ck_assert_ptr_null(fhjit_cuda_compile(add_graph(c, "tg", FHJIT_R62, 1, 16), NULL, NULL));
  expect(c, fhjit_last_status(c), FHJIT_ERR_TARGET, "the device is sm_61, older than every target",
         "sm_70", NULL);
  fhjit_context_destroy(c);
}
END_TEST

/* ------------------------------------------------------------- threads */

typedef struct thread_job {
  fhjit_graph *g;
  fhjit_cuda_kernel *k;
  fhjit_cuda_source source;
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
  for (int i = 0; i < N; i++) jobs[i] = (thread_job){add_graph(c, "mt", FHJIT_R62, 3, 64), NULL, 0};
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

/* ------------------------------------------------------ the real lowering */

START_TEST(real_lowering) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
    fhjit_context *c = fhjit_context_create();
    fhjit_graph *g = fhjit_graph_create(c, "tp", (fhjit_radix)radix);
    fhjit_type ct = tu_poly(2, 0, NULL, 3, 256);
    fhjit_value a = fhjit_input(g, "a", &ct), b = fhjit_input(g, "b", &ct);
    fhjit_value a0 = fhjit_extract(g, a, 0), a1 = fhjit_extract(g, a, 1);
    fhjit_value b0 = fhjit_extract(g, b, 0), b1 = fhjit_extract(g, b, 1);
    fhjit_value cross = fhjit_add_lazy(g, fhjit_mul(g, a0, b1), fhjit_mul(g, a1, b0));
    fhjit_value parts[3] = {fhjit_mul(g, a0, b0), cross, fhjit_mul(g, a1, b1)};
    ck_assert_int_eq(fhjit_output(g, fhjit_pack(g, 3, parts), "d"), FHJIT_OK);
    ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
    fhjit_cuda_compile_info info;
    fhjit_cuda_kernel *k = compile_ok(g, NULL, &info);
    ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
    ck_assert_int_eq(info.nkernels, 1);
    ck_assert(info.lower_ms > 0);
    size_t ws = radix == FHJIT_R32 ? 4 : 8, ibytes, rbytes;
    ck_assert_int_eq(fhjit_cuda_input_bytes(g, 1, &ibytes), FHJIT_OK);
    ck_assert_int_eq(fhjit_cuda_result_bytes(g, 0, &rbytes), FHJIT_OK);
    ck_assert_uint_eq(ibytes, 2 * 3 * 256 * ws);
    ck_assert_uint_eq(rbytes, 3 * 3 * 256 * ws);
    fhjit_cuda_ptr params = alloc_ok(c, 8 * 3 * ws), ins[2] = {alloc_ok(c, ibytes), alloc_ok(c, ibytes)},
                   outs[1] = {alloc_ok(c, rbytes)};
    fhjit_cuda_args args = {.params = params, .pstride = 3, .inputs = ins, .ninputs = 2,
                            .results = outs, .nresults = 1};
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    fake_launch l;
    ck_assert(fake_launch_get(fake_launches() - 1, &l));
    /* the fake found the kernel in LLVM's PTX, with its parameters */
    ck_assert_int_eq(l.nparams, 5);
    ck_assert(l.params[0] == params && l.params[1] == 3 && l.params[2] == ins[0] &&
              l.params[3] == ins[1] && l.params[4] == outs[0]);
    ck_assert_uint_ge((uint64_t)l.grid[0] * l.block[0], 1);
    fhjit_context_destroy(c);
  }
}
END_TEST

/* A forward NTT over 2 rows of 2^16 words (two kernels), compiled for
 * `target` with its buffers allocated: the launch arguments in *args, whose
 * pointers live in bufs. */
typedef struct ntt_bufs {
  fhjit_cuda_ptr params, ins[2], outs[1];
} ntt_bufs;

static fhjit_cuda_kernel *ntt_kernel(fhjit_context *c, fhjit_radix radix, const char *target,
                                     ntt_bufs *b, fhjit_cuda_args *args) {
  char text[256];
  snprintf(text, sizeof text,
           "graph @nt radix(%s) {\n"
           "  %%x = input pt<[], 2, 65536> coef mont\n"
           "  %%tw = input twiddles<2, 65536>\n"
           "  %%f = ntt_fwd %%x, %%tw mode(mont)\n"
           "  output %%f\n"
           "}\n", radix == FHJIT_R32 ? "r32" : "r62");
  fhjit_graph *g = fhjit_parse(c, text, strlen(text), "nt.fh");
  ck_assert_msg(g && fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
  fhjit_cuda_options o = {.target = target};
  fhjit_cuda_compile_info info;
  /* the per-row counters, which 2 rows would not get by default (their
   * first grid is small: test_ntt_emit's test_pdl) */
  ck_assert_int_eq(setenv("FHJIT_NTT_PLAN", "rowsync=1", 1), 0);
  fhjit_cuda_kernel *k = compile_ok(g, &o, &info);
  unsetenv("FHJIT_NTT_PLAN");
  ck_assert_int_eq(info.nkernels, 2);
  size_t ib, tb, rb;
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 0, &ib), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 1, &tb), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_result_bytes(g, 0, &rb), FHJIT_OK);
  b->params = alloc_ok(c, 8 * 2 * 8);
  b->ins[0] = alloc_ok(c, ib), b->ins[1] = alloc_ok(c, tb);
  b->outs[0] = alloc_ok(c, rb);
  *args = (fhjit_cuda_args){.params = b->params, .pstride = 2, .inputs = b->ins, .ninputs = 2,
                            .results = b->outs, .nresults = 1};
  return k;
}

/* The last launch of an NTT program (its two kernels) passed `own` last. */
static void expect_own(uint64_t own, const char *when) {
  fake_launch l0, l1;
  ck_assert(fake_launch_get(fake_launches() - 2, &l0));
  ck_assert(fake_launch_get(fake_launches() - 1, &l1));
  ck_assert_msg(l0.nparams == 6 && l1.nparams == 6 && l0.params[5] == own && l1.params[5] == own,
                "%s: own %llu/%llu, expected %llu", when, (unsigned long long)l0.params[5],
                (unsigned long long)l1.params[5], (unsigned long long)own);
}

/* A two-kernel NTT on sm_90: both kernels go through cuLaunchKernelEx with
 * programmatic stream serialization (the first waits for the stream's
 * previous kernel, the second for the first, each itself), with own = 1
 * (the module's per-row counters) unless the caller gives scratch; for
 * sm_80 both are plain launches; a failing cuLaunchKernelEx is reported
 * under its own name and kernel, and once a launch failed half-way the
 * kernel's own launches keep own = 0. */
START_TEST(ntt_dependent_launch) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  for (int arch = 0; arch < 2; arch++) {
    fhjit_context *c = fhjit_context_create();
    ntt_bufs b;
    fhjit_cuda_args args;
    fhjit_cuda_kernel *k = ntt_kernel(c, FHJIT_R32, arch ? "sm_80" : "sm_90", &b, &args);
    int before = fake_calls("cuLaunchKernelEx");
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    fake_launch l0, l1;
    ck_assert(fake_launch_get(fake_launches() - 2, &l0));
    ck_assert(fake_launch_get(fake_launches() - 1, &l1));
    ck_assert_int_eq(l0.pdl, arch ? 0 : 1);
    ck_assert_int_eq(l1.pdl, arch ? 0 : 1);
    /* sm_90: the last argument says the launch uses the kernel's own state */
    ck_assert_int_eq(l0.nparams, arch ? 5 : 6);
    ck_assert_int_eq(l1.nparams, arch ? 5 : 6);
    if (!arch) {
      expect_own(1, "own state");
      /* the caller's scratch (none here): launches may overlap, own = 0 */
      fhjit_cuda_ptr none[1] = {0};
      args.scratch = none;
      ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
      expect_own(0, "caller's scratch");
      args.scratch = NULL;
    }
    ck_assert_int_eq(fake_calls("cuLaunchKernelEx") - before, (arch ? 0 : 4));
    if (!arch) {
      setenv("FAKE_CUDA_FAIL", "cuLaunchKernelEx=1#6", 1); /* kernel 1 of the third launch */
      ck_assert_int_eq(fhjit_cuda_launch_kernel(k, &args), FHJIT_ERR_CUDA);
      unsetenv("FAKE_CUDA_FAIL");
      ck_assert_msg(tu_contains(fhjit_last_error(c), "cuLaunchKernelEx"), "%s", fhjit_last_error(c));
      ck_assert_msg(tu_contains(fhjit_last_error(c), "fhjit_ntt0_n16_k1"), "%s", fhjit_last_error(c));
      /* kernel 0 ran and counted, kernel 1 never will: from now on the
       * kernel's own launches take the grid-wide wait (own = 0) */
      ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
      expect_own(0, "after a launch that failed half-way");
    }
    fhjit_context_destroy(c);
  }
}
END_TEST

/* The per-row counters of an NTT program serve one stream: the first one
 * it was launched on with its own state; launches on other streams, on the
 * per-thread default stream and into a capture pass own = 0 (the grid-wide
 * wait), so launches on several streams never share them. */
START_TEST(ntt_counters_home_stream) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  fhjit_context *c = fhjit_context_create();
  ntt_bufs b;
  fhjit_cuda_args args;
  fhjit_cuda_kernel *k = ntt_kernel(c, FHJIT_R62, "sm_90", &b, &args);
  CUstream s1, s2;
  ck_assert_int_eq(fake_stream_create(&s1, 0), CUDA_SUCCESS);
  ck_assert_int_eq(fake_stream_create(&s2, 0), CUDA_SUCCESS);
  struct {
    CUstream stream;
    int capture, own;
  } steps[] = {{s1, 0, 1}, {s2, 0, 0}, {s1, 0, 1}, {NULL, 0, 0},
               {FHJIT_CU_STREAM_PER_THREAD, 0, 0}, {s1, 1, 0}, {s1, 0, 1}};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    args.stream = (fhjit_cuda_stream)steps[i].stream;
    if (steps[i].capture) ck_assert_int_eq(fake_begin_capture(steps[i].stream, 0), CUDA_SUCCESS);
    int before = fake_launches();
    ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    if (steps[i].capture) {
      void *graph = NULL;
      ck_assert_int_eq(fake_end_capture(steps[i].stream, &graph), CUDA_SUCCESS);
      continue; /* recorded in the graph, not in the launch log */
    }
    ck_assert_int_eq(fake_launches() - before, 2);
    char when[32];
    snprintf(when, sizeof when, "step %zu", i);
    expect_own((uint64_t)steps[i].own, when);
  }
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(nothing_to_launch) {
  use_fake();
  rt_lower = lw_compile_ptx, rt_describe = lw_describe_program;
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(c, "view", FHJIT_R32);
  fhjit_type ct = tu_poly(2, 0, NULL, 1, 16);
  fhjit_value a = fhjit_input(g, "a", &ct);
  fhjit_output(g, fhjit_extract(g, a, 1), "a1");
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_num_results(g), 0);
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k = compile_ok(g, NULL, &info);
  ck_assert_int_eq(info.nkernels, 0);
  ck_assert_int_eq(fake_calls("cuLinkComplete"), 0);
  fhjit_cuda_ptr params = alloc_ok(c, 64), in = alloc_ok(c, 2 * 16 * 4);
  fhjit_cuda_args args = {.params = params, .pstride = 1, .inputs = &in, .ninputs = 1};
  ck_assert_msg(fhjit_cuda_launch_kernel(k, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert_int_eq(fake_launches(), 0);
  fhjit_context_destroy(c);
}
END_TEST

/* ----------------------------------------------------------------- helpers */

START_TEST(memory_helpers) {
  use_fake();
  fhjit_context *c = fhjit_context_create();
  uint64_t host[100], back[100];
  for (int i = 0; i < 100; i++) host[i] = UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(i + 1);
  fhjit_cuda_ptr p = alloc_ok(c, sizeof host);
  ck_assert_int_eq(fhjit_cuda_upload(c, p, host, sizeof host), FHJIT_OK);
  memset(back, 0, sizeof back);
  ck_assert_int_eq(fhjit_cuda_download(c, back, p, sizeof back), FHJIT_OK);
  ck_assert_mem_eq(back, host, sizeof host);
  expect(c, fhjit_cuda_upload(c, p, host, sizeof host + 8), FHJIT_ERR_CUDA,
         "cuMemcpyHtoD_v2 failed: CUDA_ERROR_INVALID_VALUE", "808 bytes", NULL);
  expect(c, fhjit_cuda_download(c, NULL, p, 8), FHJIT_ERR_ARGUMENT, "null pointer", NULL, NULL);
  ck_assert_int_eq(fhjit_cuda_upload(c, p, host, 0), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_free(c, p), FHJIT_OK);
  expect(c, fhjit_cuda_free(c, p), FHJIT_ERR_CUDA, "cuMemFree_v2 failed", NULL, NULL);
  ck_assert_int_eq(fhjit_cuda_free(c, 0), FHJIT_OK);

  /* the parameter table helper uploads exactly fhjit_param_table's words */
  uint64_t moduli[3] = {Q62, UINT64_C(576460752303423649), UINT64_C(1152921504606584833)};
  for (int radix = FHJIT_R32; radix <= FHJIT_R62; radix++) {
    uint64_t m[3];
    for (int i = 0; i < 3; i++) m[i] = radix == FHJIT_R32 ? (i ? 134176769 : Q32) : moduli[i];
    m[2] = radix == FHJIT_R32 ? 1032193 : m[2];
    fhjit_cuda_ptr table;
    int64_t pstride;
    ck_assert_msg(fhjit_cuda_param_table(c, (fhjit_radix)radix, m, 3, 1024, 0, 7, &table,
                                         &pstride) == FHJIT_OK,
                  "%s", fhjit_last_error(c));
    ck_assert_int_eq(pstride, 3);
    size_t ws = radix == FHJIT_R32 ? 4 : 8;
    unsigned char want[8 * 3 * 8], got[8 * 3 * 8];
    ck_assert_int_eq(fhjit_param_table(c, (fhjit_radix)radix, m, 3, 1024, 0, 7, want, 3), FHJIT_OK);
    ck_assert_int_eq(fhjit_cuda_download(c, got, table, 24 * ws), FHJIT_OK);
    ck_assert_mem_eq(got, want, 24 * ws);
    ck_assert_int_eq(fhjit_cuda_free(c, table), FHJIT_OK);
  }
  int live = fake_live_allocs();
  uint64_t even = 1000;
  fhjit_cuda_ptr table = 9;
  int64_t pstride;
  ck_assert_int_eq(fhjit_cuda_param_table(c, FHJIT_R62, &even, 1, 0, 0, 1, &table, &pstride),
                   FHJIT_ERR_MODULUS);
  ck_assert(table == 0);
  setenv("FAKE_CUDA_FAIL", "cuMemcpyHtoD", 1);
  expect(c, fhjit_cuda_param_table(c, FHJIT_R62, moduli, 1, 0, 0, 1, &table, &pstride),
         FHJIT_ERR_CUDA, "fhjit_cuda_upload", "cuMemcpyHtoD_v2 failed", NULL);
  ck_assert_int_eq(fake_live_allocs(), live);
  fhjit_context_destroy(c);
}
END_TEST

START_TEST(buffer_sizes) {
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = fhjit_graph_create(c, "sz", FHJIT_R62);
  const int64_t batch[2] = {3, 1};
  fhjit_type ct = tu_poly(2, 2, batch, 4, 8), pt = tu_poly(0, 2, batch, 4, 8);
  fhjit_value a = fhjit_input(g, "a", &ct), p = fhjit_input(g, "p", &pt);
  fhjit_output(g, fhjit_mul_plain(g, a, p), "m");
  size_t bytes;
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 0, &bytes), FHJIT_ERR_ARGUMENT);
  fhjit_layout l = {.offset = 5, .comp_stride = 1000, .batch_stride = {100, 7}, .row_stride = 20,
                    .index_stride = 2};
  ck_assert_int_eq(fhjit_bind_input(g, a, NULL, &l), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 0, &bytes), FHJIT_OK);
  ck_assert_uint_eq(bytes, (5 + 1000 + 2 * 100 + 0 * 7 + 3 * 20 + 7 * 2 + 1) * 8);
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 1, &bytes), FHJIT_OK);
  ck_assert_uint_eq(bytes, 3 * 4 * 8 * 8);
  ck_assert_int_eq(fhjit_cuda_result_bytes(g, 0, &bytes), FHJIT_OK);
  ck_assert_uint_eq(bytes, 2 * 3 * 4 * 8 * 8);
  ck_assert_int_eq(fhjit_cuda_input_bytes(g, 2, &bytes), FHJIT_ERR_ARGUMENT);
  ck_assert(tu_contains(fhjit_last_error(c), "has no input #2"));
  ck_assert_int_eq(fhjit_cuda_result_bytes(g, -1, &bytes), FHJIT_ERR_ARGUMENT);
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
  sp_buf b = {0};
  rt_desc_write(&b, &p);
  ck_assert(!b.failed);
  lw_program q;
  ck_assert(rt_desc_read(b.data, b.len, &q));
  ck_assert_int_eq(q.nkernels, 3);
  ck_assert_int_eq(q.nscratch, 2);
  ck_assert_mem_eq(q.kernels, p.kernels, sizeof p.kernels);
  ck_assert_mem_eq(q.scratch_bytes, p.scratch_bytes, sizeof p.scratch_bytes);
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

#ifdef FHJIT_HAVE_CUDA_H
#include "cuda_values.h"
long cudah_value(const char *name, int *found);
const char *cudah_symbol(const char *plain);
uintptr_t cudah_stream_legacy(void);
void cudah_launch_layout(size_t out[8]);

/* fhjit's declarations agree with the CUDA toolkit's cuda.h. */
START_TEST(agrees_with_cuda_h) {
  int found;
#define CHECK_VALUE(n)                                                               \
  ck_assert_msg(cudah_value(#n, &found) == (long)(n) && found, "%s: cuda.h has %ld, fhjit %ld", \
                #n, cudah_value(#n, &found), (long)(n));
  FHJIT_CUDA_VALUES(CHECK_VALUE)
#undef CHECK_VALUE
#define CHECK_SYMBOL(plain, symbol)                                                   \
  ck_assert_msg(!strcmp(cudah_symbol(#plain), #symbol), "%s: cuda.h means %s, fhjit loads %s", \
                #plain, cudah_symbol(#plain), #symbol);
  RT_DRIVER_SYMBOLS(CHECK_SYMBOL)
#undef CHECK_SYMBOL
  ck_assert(cudah_stream_legacy() == (uintptr_t)FHJIT_CU_STREAM_LEGACY);
  size_t theirs[8], ours[8] = {sizeof(CUlaunchAttribute),
                               offsetof(CUlaunchAttribute, value),
                               offsetof(CUlaunchAttribute, value.programmatic_stream_serialization_allowed),
                               sizeof(CUlaunchConfig),
                               offsetof(CUlaunchConfig, shared_bytes),
                               offsetof(CUlaunchConfig, stream),
                               offsetof(CUlaunchConfig, attrs),
                               offsetof(CUlaunchConfig, nattrs)};
  cudah_launch_layout(theirs);
  for (int i = 0; i < 8; i++)
    ck_assert_msg(theirs[i] == ours[i], "launch structure figure %d: cuda.h %zu, fhjit %zu", i,
                  theirs[i], ours[i]);
}
END_TEST
#endif

static Suite *suite(void) {
  Suite *s = suite_create("runtime");
  TCase *tc = tcase_create("runtime");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, no_driver);
  tcase_add_test(tc, init_failure);
  tcase_add_test(tc, no_device);
  tcase_add_test(tc, driver_too_old);
  tcase_add_test(tc, driver_lacks_symbol);
  tcase_add_test(tc, available_and_procs);
  tcase_add_test(tc, cache_cold_memory_disk);
  tcase_add_test(tc, cache_corrupt_entries);
  tcase_add_test(tc, cache_off);
  tcase_add_test(tc, cache_default_dirs);
  tcase_add_test(tc, link_failure_log);
  tcase_add_test(tc, load_failures);
  tcase_add_test(tc, out_of_memory);
  tcase_add_test(tc, launch_arguments);
  tcase_add_test(tc, bad_pointers);
  tcase_add_test(tc, in_place);
  tcase_add_test(tc, contexts);
  tcase_add_test(tc, primary_of_missing_device);
  tcase_add_test(tc, targets);
  tcase_add_test(tc, threads);
  tcase_add_test(tc, real_lowering);
  tcase_add_test(tc, nothing_to_launch);
  tcase_add_test(tc, ntt_dependent_launch);
  tcase_add_test(tc, ntt_counters_home_stream);
  tcase_add_test(tc, memory_helpers);
  tcase_add_test(tc, buffer_sizes);
  tcase_add_test(tc, description_roundtrip);
#ifdef FHJIT_HAVE_CUDA_H
  tcase_add_test(tc, agrees_with_cuda_h);
#endif
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  /* The driver is opened once per process: every test needs its own. */
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
