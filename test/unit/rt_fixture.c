/* rt_fixture.c: the runtime tests' shared fixture (rt_fixture.h): the fake
 * libcuda's entry points, the hand-written-PTX lowering hook, the per-test
 * set-up and tear-down, graphs, buffers and the forking runner. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_fixture.h"

/* ------------------------------------------------------------- the fake */

fake_cuda_calls_fn fake_calls;
fake_cuda_launches_fn fake_launches;
fake_cuda_launch_get_fn fake_launch_get;
fake_cuda_live_fn fake_live_modules, fake_live_allocs;
ctx_create_fn fake_ctx_create;
ctx_set_fn fake_ctx_set, fake_ctx_destroy;
ctx_get_fn fake_ctx_get;
stream_create_fn fake_stream_create;
capture_fn fake_begin_capture;
capture_end_fn fake_end_capture;

void use_fake(void) {
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

CUcontext current_context(void) {
  CUcontext c = NULL;
  ck_assert_int_eq(fake_ctx_get(&c), CUDA_SUCCESS);
  return c;
}

/* ------------------------------------------------- hand-written programs */

rt_hook hook;

static char *hand_ptx(const lw_program *p) {
  sp_buf b = {0};
  sp_buf_printf(&b, "//\n// hand-written for the runtime tests\n.version 7.8\n.target sm_90\n"
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

/* The hook is global and lowers for every fhjit context: threads compiling
 * in separate contexts (test_kernel_cache's `threads`) hold separate locks,
 * so the hook takes its own. */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;

static fhjit_status hook_lower_locked(fhjit_graph *g, const char *arch, lw_program *out);

static fhjit_status hook_lower(fhjit_graph *g, const char *arch, lw_program *out) {
  pthread_mutex_lock(&hook_lock);
  fhjit_status st = hook_lower_locked(g, arch, out);
  pthread_mutex_unlock(&hook_lock);
  return st;
}

static fhjit_status hook_lower_locked(fhjit_graph *g, const char *arch, lw_program *out) {
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
  if (hook.scratch) out->nscratch = 1, out->scratch_bytes[0] = out->scratch_arena = 4096;
  out->ptx = nres ? hand_ptx(out) : NULL;
  return FHJIT_OK;
}

/* The hook's program without its PTX, not counted: what the runtime checks
 * disk entries against (rt_describe). */
static fhjit_status hook_describe(fhjit_graph *g, const char *arch, lw_program *out) {
  pthread_mutex_lock(&hook_lock);
  int calls = hook.calls;
  char seen[sizeof hook.arch];
  memcpy(seen, hook.arch, sizeof seen);
  fhjit_status st = hook_lower_locked(g, arch, out);
  hook.calls = calls;
  memcpy(hook.arch, seen, sizeof seen);
  pthread_mutex_unlock(&hook_lock);
  free(out->ptx);
  out->ptx = NULL;
  return st;
}

/* --------------------------------------------------------------- fixtures */

char cache_dir[64];

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

int count_files(const char *dir, char *first, size_t size) {
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

Suite *rt_suite(const char *name, TCase **tc) {
  Suite *s = suite_create(name);
  *tc = tcase_create(name);
  tcase_add_checked_fixture(*tc, setup, teardown);
  tcase_set_timeout(*tc, 120);
  suite_add_tcase(s, *tc);
  return s;
}

int rt_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  /* The driver is opened once per process: every test needs its own. */
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ------------------------------------------------------------------ graphs */

const uint64_t Q62 = UINT64_C(1152921504606748673), Q32 = 268369921;

fhjit_graph *add_graph(fhjit_context *c, const char *name, fhjit_radix radix, int rows, int n) {
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

void expect(fhjit_context *c, fhjit_status got, fhjit_status want, const char *f1, const char *f2,
            const char *f3) {
  const char *msg = fhjit_last_error(c);
  ck_assert_msg(got == want, "status %d (%s), want %d (%s): %s", got, fhjit_status_name(got), want,
                fhjit_status_name(want), msg);
  ck_assert_int_eq(fhjit_last_status(c), want);
  const char *frags[] = {f1, f2, f3};
  for (int i = 0; i < 3; i++)
    if (frags[i]) ck_assert_msg(tu_contains(msg, frags[i]), "'%s' lacks '%s'", msg, frags[i]);
}

fhjit_cuda_kernel *compile_ok(fhjit_graph *g, const fhjit_cuda_options *o,
                              fhjit_cuda_compile_info *info) {
  fhjit_cuda_kernel *k = fhjit_cuda_compile(g, o, info);
  ck_assert_msg(k, "%s", fhjit_last_error(fhjit_graph_context(g)));
  return k;
}

fhjit_cuda_ptr alloc_ok(fhjit_context *c, size_t bytes) {
  fhjit_cuda_ptr p = 0;
  ck_assert_msg(fhjit_cuda_alloc(c, bytes, &p) == FHJIT_OK, "%s", fhjit_last_error(c));
  ck_assert(p != 0 && p % 16 == 0);
  return p;
}

void add_bufs_init(add_bufs *b, fhjit_context *c, fhjit_radix radix, int rows, int n) {
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
