/* test_cache.c: the disk cache against hostile and stale entries, through
 * the fake libcuda (fake_cuda/) and the real lowering. A FIFO in an entry's
 * place (which must not hang a compile), a symbolic link, an entry of
 * another user or writable by others, a cache directory that is not the
 * user's or is writable by others, and entries edited with their checksum
 * recomputed (another grid, kernel count, kernel name, argument, scratch
 * size, another graph's kernels, an altered cubin): each is refused or
 * rebuilt, never loaded, and the reason is in info.disk_note. Graphs that
 * differ only in their names never share an entry whose symbols are not
 * theirs, nor do compiles under different NTT plans; a kernel shared by
 * graphs that differ in dead values takes none of its facts from them. */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "fhjit/fhjit.h"
#include "fhjit/fhjit_cuda.h"
#include "runtime/runtime.h"
#include "testutil.h"

static fake_cuda_calls_fn fake_calls;
static char cache_dir[64];

static void setup(void) {
  snprintf(cache_dir, sizeof cache_dir, "/tmp/fhjit-cache-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(cache_dir));
  setenv("FHJIT_CACHE_DIR", cache_dir, 1);
  setenv("FHJIT_LIBCUDA", FAKE_CUDA_PATH, 1);
  unsetenv("FHJIT_CACHE");
  unsetenv("FAKE_CUDA_FAIL");
  void *h = dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h, "%s", dlerror());
  *(void **)&fake_calls = dlsym(h, "fake_cuda_calls");
  ck_assert_ptr_nonnull(fake_calls);
}

static void teardown(void) {
  chmod(cache_dir, 0700);
  DIR *d = opendir(cache_dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(path);
  }
  if (d) closedir(d);
  rmdir(cache_dir);
}

/* ------------------------------------------------------------- graphs */

/* An anchored graph: f = ntt(x) with an epilogue of two results (add and
 * sub of f), the inverse of f * y (a prologue, f in scratch), and x + y (a
 * pointwise step): several kernels, a scratch buffer. */
static fhjit_graph *anchored(fhjit_context *c, const char *name) {
  fhjit_graph *g = fhjit_graph_create(c, name, FHJIT_R62);
  fhjit_type xt = tu_poly(0, 0, NULL, 2, 16);
  fhjit_type tt = {.kind = FHJIT_KIND_TWIDDLE, .rows = 2, .n = 16};
  fhjit_value x = fhjit_input(g, "x", &xt), y = fhjit_input(g, "y", &xt);
  fhjit_value tf = fhjit_input(g, "tf", &tt), ti = fhjit_input(g, "ti", &tt);
  fhjit_value f = fhjit_ntt(g, x, tf, FHJIT_NTT_COEF_STD_TO_NTT);
  fhjit_value v = fhjit_ntt(g, fhjit_mul(g, f, y), ti, FHJIT_NTT_TO_COEF_STD);
  fhjit_value outs[4] = {fhjit_add(g, f, f), fhjit_sub(g, f, y), v, fhjit_add(g, x, y)};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(fhjit_output(g, outs[i], NULL), FHJIT_OK);
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
  return g;
}

static fhjit_graph *pointwise(fhjit_context *c, const char *name) {
  fhjit_graph *g = fhjit_graph_create(c, name, FHJIT_R62);
  fhjit_type t = tu_poly(0, 0, NULL, 2, 64);
  fhjit_value a = fhjit_input(g, "a", &t), b = fhjit_input(g, "b", &t);
  ck_assert_int_eq(fhjit_output(g, fhjit_mul(g, a, b), NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_bind(g), FHJIT_OK);
  return g;
}

/* A limb-mixing graph (SPEC 7's rescale, examples/s7/rescale.fh): its
 * kernels are NTTs planned by the ntt_plan option, though no node is one. */
static fhjit_graph *mixing(fhjit_context *c, const char *name) {
  (void)name;
  static const char text[] =
      "graph @rescale radix(r32) moduli(1073707009, 1073698817, 1073692673, 1073682433) {\n"
      "  %x = input ct<2, [], 4, 1024> ntt mont\n"
      "  %fw = input twiddles<4, 1024>\n"
      "  %iv = input twiddles<4, 1024>\n"
      "  %t = input table<3>\n"
      "  %y = rescale %x, %fw, %iv, %t\n"
      "  output %y\n"
      "}\n";
  fhjit_graph *g = fhjit_parse(c, text, strlen(text), "rescale.fh");
  ck_assert_msg(g, "%s", fhjit_last_error(c));
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
  return g;
}

typedef fhjit_graph *(*make_fn)(fhjit_context *, const char *);

/* Compiles the graph in a new fhjit context (no memory cache); checks that
 * the loaded program is exactly the graph's own (lw_describe_program). */
static fhjit_cuda_compile_info compile_fresh(make_fn make, const char *name) {
  fhjit_context *c = fhjit_context_create();
  fhjit_graph *g = make(c, name);
  fhjit_cuda_compile_info info;
  fhjit_cuda_kernel *k = fhjit_cuda_compile(g, NULL, &info);
  ck_assert_msg(k, "%s", fhjit_last_error(c));
  lw_program want;
  ck_assert_int_eq(lw_describe_program(g, info.target, &want), FHJIT_OK);
  ck_assert_int_eq(k->prog.nkernels, want.nkernels);
  for (int32_t i = 0; i < want.nkernels; i++) {
    ck_assert_str_eq(k->prog.kernels[i].name, want.kernels[i].name);
    ck_assert_int_eq(k->prog.kernels[i].grid[0], want.kernels[i].grid[0]);
    ck_assert_int_eq(k->prog.kernels[i].nargs, want.kernels[i].nargs);
  }
  fhjit_context_destroy(c);
  return info;
}

/* The only entry of the cache directory. */
static void entry_path(char *out, size_t size) {
  DIR *d = opendir(cache_dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') snprintf(out, size, "%s/%s", cache_dir, e->d_name), n++;
  closedir(d);
  ck_assert_int_eq(n, 1);
}

static int count_entries(void) {
  DIR *d = opendir(cache_dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static void expect_rebuilt(make_fn make, const char *name, const char *why) {
  fhjit_cuda_compile_info info = compile_fresh(make, name);
  ck_assert_msg(info.source == FHJIT_CUDA_COMPILED && info.disk_rejected && info.disk_written,
                "%s: source %d rejected %d written %d (%s)", why, info.source, info.disk_rejected,
                info.disk_written, info.disk_note);
  ck_assert_msg(tu_contains(info.disk_note, why), "note '%s' lacks '%s'", info.disk_note, why);
  info = compile_fresh(make, name); /* and the rebuilt entry serves */
  ck_assert_msg(info.source == FHJIT_CUDA_FROM_DISK, "%s: not rebuilt (%s)", why, info.disk_note);
  ck_assert_str_eq(info.disk_note, "");
}

/* ------------------------------------------------------------- entries */

typedef struct entry {
  unsigned char header[48];
  unsigned char *body; /* key, ptx, cubin, description */
  size_t key_len, ptx_len, cubin_len, desc_len;
} entry;

static void entry_read(const char *path, entry *e) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fread(e->header, 1, 48, f), 48);
  uint32_t kl;
  uint64_t pl, cl, dl;
  memcpy(&kl, e->header + 12, 4);
  memcpy(&pl, e->header + 16, 8);
  memcpy(&cl, e->header + 24, 8);
  memcpy(&dl, e->header + 32, 8);
  e->key_len = kl, e->ptx_len = pl, e->cubin_len = cl, e->desc_len = dl;
  size_t n = kl + pl + cl + dl;
  e->body = malloc(n);
  ck_assert_int_eq(fread(e->body, 1, n, f), n);
  fclose(f);
}

/* Writes e with its sizes and checksum recomputed, as a forger would. */
static void entry_write(const char *path, const entry *e) {
  unsigned char h[48];
  memcpy(h, e->header, 48);
  uint32_t kl = (uint32_t)e->key_len;
  uint64_t pl = e->ptx_len, cl = e->cubin_len, dl = e->desc_len;
  memcpy(h + 12, &kl, 4);
  memcpy(h + 16, &pl, 8);
  memcpy(h + 24, &cl, 8);
  memcpy(h + 32, &dl, 8);
  uint32_t format;
  memcpy(&format, h + 8, 4);
  uint64_t sum = rt_checksum(rt_checksum(format, h + 8, 32), e->body, kl + pl + cl + dl);
  memcpy(h + 40, &sum, 8);
  unlink(path);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fwrite(h, 1, 48, f), 48);
  ck_assert_int_eq(fwrite(e->body, 1, kl + pl + cl + dl, f), kl + pl + cl + dl);
  fclose(f);
}

/* e with its description replaced by p's. */
static void entry_set_desc(entry *e, const lw_program *p) {
  sp_buf b = {0};
  rt_desc_write(&b, p);
  size_t before = e->key_len + e->ptx_len + e->cubin_len;
  e->body = realloc(e->body, before + b.len);
  memcpy(e->body + before, b.data, b.len);
  e->desc_len = b.len;
  sp_buf_free(&b);
}

static void entry_get_desc(const entry *e, lw_program *p) {
  ck_assert(rt_desc_read(e->body + e->key_len + e->ptx_len + e->cubin_len, e->desc_len, p));
}

/* --------------------------------------------------------------- tests */

/* A graph compiled under a long name, then under a short one: an anchored
 * program's symbols come from its structure, so the short one loads the
 * same, right module; a fused kernel is named after its graph, so another
 * name is another entry with its own symbols. */
/* The disk cache follows the context's options cache and cache_dir over
 * the environment: entries go to cache_dir's directory, none with cache
 * off, and the variable applies again once the option is unset. */
static int entries_in(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d))) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

START_TEST(options_steer_the_cache) {
  char other[64];
  snprintf(other, sizeof other, "/tmp/fhjit-cache-opt-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(other));
  fhjit_context *c = fhjit_context_create();
  ck_assert_int_eq(fhjit_context_set_option(c, "cache_dir", other), FHJIT_OK);
  fhjit_cuda_compile_info info;
  ck_assert_ptr_nonnull(fhjit_cuda_compile(pointwise(c, "opt1"), NULL, &info));
  ck_assert_int_eq(info.disk_written, 1);
  ck_assert_int_eq(entries_in(other), 1);
  ck_assert_int_eq(entries_in(cache_dir), 0); /* not where FHJIT_CACHE_DIR says */
  ck_assert_int_eq(fhjit_context_set_option(c, "cache", "off"), FHJIT_OK);
  ck_assert_ptr_nonnull(fhjit_cuda_compile(anchored(c, "opt2"), NULL, &info));
  ck_assert_int_eq(info.disk_written, 0);
  ck_assert_int_eq(entries_in(other), 1);
  ck_assert_int_eq(fhjit_context_set_option(c, "cache", NULL), FHJIT_OK);
  ck_assert_int_eq(fhjit_context_set_option(c, "cache_dir", NULL), FHJIT_OK);
  ck_assert_ptr_nonnull(fhjit_cuda_compile(anchored(c, "opt3"), NULL, &info));
  ck_assert_int_eq(info.disk_written, 1);
  ck_assert_int_eq(entries_in(cache_dir), 1);
  fhjit_context_destroy(c);
  DIR *d = opendir(other);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", other, e->d_name);
    if (e->d_name[0] != '.') unlink(path);
  }
  if (d) closedir(d);
  rmdir(other);
}
END_TEST

START_TEST(names_share_no_wrong_entry) {
  char longname[201];
  memset(longname, 'n', 200);
  longname[200] = 0;
  fhjit_cuda_compile_info info = compile_fresh(anchored, longname);
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(info.disk_written, 1);
  info = compile_fresh(anchored, "s");
  ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_DISK);
  ck_assert_int_eq(count_entries(), 1);
  info = compile_fresh(pointwise, "alpha");
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  info = compile_fresh(pointwise, "beta");
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(count_entries(), 3);
  info = compile_fresh(pointwise, "beta");
  ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_DISK);
}
END_TEST

/* The description of graph make's program under FHJIT_NTT_PLAN plan. */
static sp_buf description_under(make_fn make, const char *plan) {
  setenv("FHJIT_NTT_PLAN", plan, 1);
  fhjit_context *c = fhjit_context_create();
  lw_program want;
  ck_assert_int_eq(lw_describe_program(make(c, "d"), "sm_90", &want), FHJIT_OK);
  sp_buf b = {0};
  rt_desc_write(&b, &want);
  fhjit_context_destroy(c);
  return b;
}

/* Another NTT plan is another entry, also for a graph whose NTTs come
 * from limb-mixing ops, and also where the plan leaves every launch the
 * same (pminor: only the block order inside the kernels), so that the
 * description check alone would have served one plan's code for the
 * other: the graph hash keys the option. */
START_TEST(ntt_plans_are_other_entries) {
  sp_buf a = description_under(mixing, ""), b = description_under(mixing, "pminor=0");
  ck_assert(a.len == b.len && !memcmp(a.data, b.data, a.len));
  sp_buf_free(&a);
  sp_buf_free(&b);
  setenv("FHJIT_NTT_PLAN", "", 1);
  ck_assert_int_eq(compile_fresh(mixing, "r").source, FHJIT_CUDA_COMPILED);
  setenv("FHJIT_NTT_PLAN", "pminor=0", 1);
  ck_assert_int_eq(compile_fresh(mixing, "r").source, FHJIT_CUDA_COMPILED);
  ck_assert_int_eq(compile_fresh(mixing, "r").source, FHJIT_CUDA_FROM_DISK);
  unsetenv("FHJIT_NTT_PLAN");
  ck_assert_int_eq(compile_fresh(mixing, "r").source, FHJIT_CUDA_FROM_DISK);
  ck_assert_int_eq(count_entries(), 2);
}
END_TEST

/* A FIFO where the entry was: the compile neither blocks on it (alarm
 * kills a hung test) nor loads it, and replaces it. */
START_TEST(fifo_entry) {
  compile_fresh(anchored, "g");
  char path[512];
  entry_path(path, sizeof path);
  ck_assert_int_eq(unlink(path), 0);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  alarm(60);
  expect_rebuilt(anchored, "g", "is not a regular file");
  alarm(0);
  struct stat st;
  ck_assert_int_eq(lstat(path, &st), 0);
  ck_assert(S_ISREG(st.st_mode));
}
END_TEST

START_TEST(symlink_entry) {
  compile_fresh(anchored, "g");
  char path[512], copy[600];
  entry_path(path, sizeof path);
  snprintf(copy, sizeof copy, "%s.copy", cache_dir);
  ck_assert_int_eq(rename(path, copy), 0);
  ck_assert_int_eq(symlink(copy, path), 0); /* a sound entry, behind a link */
  expect_rebuilt(anchored, "g", "is a symbolic link");
  unlink(copy);
  struct stat st;
  ck_assert_int_eq(lstat(path, &st), 0);
  ck_assert(S_ISREG(st.st_mode));
}
END_TEST

/* A dead writer's temporary file (older than an hour) is swept by the next
 * store; a fresh one (a live writer's), a link and an entry are left. */
static void touch_tmp(const char *name, time_t age) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", cache_dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("half an entry", f);
  fclose(f);
  struct timespec t[2] = {{.tv_sec = time(NULL) - age}, {.tv_sec = time(NULL) - age}};
  ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

static int tmp_exists(const char *name) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", cache_dir, name);
  return lstat(path, &st) == 0;
}

START_TEST(stale_temporaries_swept) {
  touch_tmp(".tmp-99999-1-7f", 2 * 3600);
  touch_tmp(".tmp-99999-2-7f", 60);
  touch_tmp(".other", 2 * 3600);
  char link[512];
  snprintf(link, sizeof link, "%s/.tmp-link", cache_dir);
  ck_assert_int_eq(symlink("/nonexistent", link), 0);
  fhjit_cuda_compile_info info = compile_fresh(pointwise, "g");
  ck_assert(info.disk_written);
  ck_assert(!tmp_exists(".tmp-99999-1-7f"));
  ck_assert(tmp_exists(".tmp-99999-2-7f"));
  ck_assert(tmp_exists(".other"));
  ck_assert(tmp_exists(".tmp-link"));
  ck_assert_int_eq(count_entries(), 1);
}
END_TEST

/* Entries another user could have written: writable by the group or
 * others, or (as root) owned by someone else. */
START_TEST(foreign_entries) {
  compile_fresh(pointwise, "g");
  char path[512];
  entry_path(path, sizeof path);
  ck_assert_int_eq(chmod(path, 0620), 0);
  expect_rebuilt(pointwise, "g", "writable by its group or others (mode 0620)");
  ck_assert_int_eq(chmod(path, 0602), 0);
  expect_rebuilt(pointwise, "g", "writable by its group or others (mode 0602)");
  if (geteuid() == 0) {
    ck_assert_int_eq(chown(path, 4242, 4242), 0);
    expect_rebuilt(pointwise, "g", "is owned by uid 4242");
  }
}
END_TEST

/* A cache directory writable by others, or not the user's, or not a
 * directory: the disk cache is left alone (neither read nor written), the
 * compile succeeds and says why. */
START_TEST(unsafe_directory) {
  compile_fresh(pointwise, "g");
  const mode_t modes[] = {0770, 0707, 0720, 0702, 01777};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
    ck_assert_int_eq(chmod(cache_dir, modes[i]), 0);
    fhjit_cuda_compile_info info = compile_fresh(pointwise, "other");
    ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
    ck_assert_int_eq(info.disk_written, 0);
    ck_assert_int_eq(info.disk_rejected, 0);
    ck_assert_msg(tu_contains(info.disk_note, "is writable by its group or others"), "%s",
                  info.disk_note);
    info = compile_fresh(pointwise, "g"); /* its entry is there, but not read */
    ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
    ck_assert_int_eq(count_entries(), 1);
  }
  ck_assert_int_eq(chmod(cache_dir, 0700), 0);
  ck_assert_int_eq(compile_fresh(pointwise, "g").source, FHJIT_CUDA_FROM_DISK);
  if (geteuid() == 0) {
    ck_assert_int_eq(chown(cache_dir, 4242, 4242), 0);
    fhjit_cuda_compile_info info = compile_fresh(pointwise, "g");
    ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
    ck_assert_msg(tu_contains(info.disk_note, "is owned by uid 4242, not by this user"), "%s",
                  info.disk_note);
    ck_assert_int_eq(chown(cache_dir, 0, 0), 0);
  }
  char file[600];
  snprintf(file, sizeof file, "%s/plain-file", cache_dir);
  FILE *f = fopen(file, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  setenv("FHJIT_CACHE_DIR", file, 1);
  fhjit_cuda_compile_info info = compile_fresh(pointwise, "g");
  ck_assert_int_eq(info.source, FHJIT_CUDA_COMPILED);
  ck_assert_msg(tu_contains(info.disk_note, "is not a directory"), "%s", info.disk_note);
}
END_TEST

/* Edits of a sound entry with the checksum recomputed: every field of the
 * description is checked against the graph's own program, so none loads. */
typedef enum edit { E_GRID, E_BLOCK, E_DROP_KERNEL, E_ADD_KERNEL, E_NAME, E_ARG, E_FLAGS,
                    E_SCRATCH, E_ARENA, E_OTHER_GRAPH, E_CLUSTER, E_NEDITS } edit;

static void apply_edit(lw_program *p, edit what, const lw_program *other) {
  lw_kernel *k = &p->kernels[p->nkernels - 1];
  switch (what) {
  case E_GRID: k->grid[0] += 1; break;
  case E_BLOCK: k->block[0] /= 2; break;
  case E_DROP_KERNEL: p->nkernels--; break;
  case E_ADD_KERNEL: p->kernels[p->nkernels] = p->kernels[0], p->nkernels++; break;
  case E_NAME: snprintf(p->kernels[0].name, sizeof p->kernels[0].name, "fhjit_ntt0_n4_k1"); break;
  case E_ARG: p->kernels[0].args[2].index ^= 1; break;
  case E_FLAGS: p->kernels[0].flags ^= LW_KERNEL_PDL; break;
  case E_SCRATCH: p->scratch_bytes[0] /= 2; break; /* still inside the arena */
  case E_ARENA: p->scratch_arena += 256; break;
  case E_CLUSTER: /* a valid cluster (of one block) the graph's program does not state */
    p->kernels[0].cluster[0] = p->kernels[0].cluster[1] = p->kernels[0].cluster[2] = 1;
    break;
  default: *p = *other; break;
  }
}

START_TEST(tampered_descriptions) {
  static const char *const what[E_NEDITS] = {"grid",   "block",    "kernel count",
                                             "kernel count", "name", "arguments",
                                             "flags",  "scratch",  "scratch arena",
                                             "kernel count", "cluster"};
  compile_fresh(anchored, "g");
  char path[512];
  entry_path(path, sizeof path);
  entry good;
  entry_read(path, &good);
  lw_program sound, other;
  entry_get_desc(&good, &sound);
  ck_assert_int_ge(sound.nkernels, 3);
  ck_assert_int_eq(sound.nscratch, 1);
  {
    fhjit_context *c = fhjit_context_create();
    ck_assert_int_eq(lw_describe_program(pointwise(c, "g"), "sm_90", &other), FHJIT_OK);
    fhjit_context_destroy(c);
  }
  for (int i = 0; i < E_NEDITS; i++) {
    entry bad = good;
    size_t n = good.key_len + good.ptx_len + good.cubin_len + good.desc_len;
    bad.body = malloc(n);
    memcpy(bad.body, good.body, n);
    lw_program p = sound;
    apply_edit(&p, (edit)i, &other);
    entry_set_desc(&bad, &p);
    entry_write(path, &bad);
    free(bad.body);
    int loads = fake_calls("cuModuleLoadData");
    fhjit_cuda_compile_info info = compile_fresh(anchored, "g");
    ck_assert_msg(info.source == FHJIT_CUDA_COMPILED && info.disk_rejected, "edit %d loaded", i);
    ck_assert_int_eq(fake_calls("cuModuleLoadData"), loads + 1); /* the rebuilt one only */
    ck_assert_msg(tu_contains(info.disk_note, what[i]), "edit %d: '%s'", i, info.disk_note);
    ck_assert_msg(tu_contains(info.disk_note, "differs from the graph's program"), "%s",
                  info.disk_note);
  }
  free(good.body);
}
END_TEST

/* A cubin edited with the checksum recomputed: the cache cannot tell a
 * cubin from its PTX without compiling it (the directory's owner is
 * trusted), but one the driver refuses, or that lacks a kernel, is
 * rebuilt, not launched. */
START_TEST(tampered_cubin) {
  compile_fresh(anchored, "g");
  char path[512];
  entry_path(path, sizeof path);
  entry good;
  entry_read(path, &good);
  size_t n = good.key_len + good.ptx_len + good.cubin_len + good.desc_len;
  for (int i = 0; i < 2; i++) {
    entry bad = good;
    bad.body = malloc(n);
    memcpy(bad.body, good.body, n);
    char *cubin = (char *)bad.body + good.key_len + good.ptx_len;
    if (i == 0) {
      memcpy(cubin, "GARBAGE!", 8); /* no image the driver knows */
    } else { /* a loadable image without the first kernel */
      char *at = strstr(cubin, ".entry fhjit_ntt0_n4_k0(");
      ck_assert_ptr_nonnull(at);
      memcpy(at + 7, "xxxxx", 5);
    }
    entry_write(path, &bad);
    free(bad.body);
    expect_rebuilt(anchored, "g", i == 0 ? "cuModuleLoadData" : "cuModuleGetFunction");
  }
  free(good.body);
}
END_TEST

/* An entry of another graph's program under this graph's key (a forged
 * key, sizes and checksum): the kernel names and launch facts give it
 * away. */
START_TEST(another_graphs_entry) {
  compile_fresh(pointwise, "alpha");
  char alpha[512];
  entry_path(alpha, sizeof alpha);
  entry a;
  entry_read(alpha, &a);
  ck_assert_int_eq(rename(alpha, "/tmp/fhjit-test-cache-alpha"), 0);
  compile_fresh(pointwise, "beta");
  char beta[512];
  entry_path(beta, sizeof beta);
  entry b;
  entry_read(beta, &b);
  unlink("/tmp/fhjit-test-cache-alpha");
  /* alpha's PTX, cubin and description behind beta's key */
  entry forged = a;
  size_t rest = a.ptx_len + a.cubin_len + a.desc_len;
  forged.key_len = b.key_len;
  forged.body = malloc(b.key_len + rest);
  memcpy(forged.body, b.body, b.key_len);
  memcpy(forged.body + b.key_len, a.body + a.key_len, rest);
  entry_write(beta, &forged);
  expect_rebuilt(pointwise, "beta", "a kernel's name differs from the graph's program");
  free(forged.body);
  free(a.body);
  free(b.body);
}
END_TEST

/* A graph with a dead conversion to chain positions 3..5, and the same
 * graph without it: one hash, so one kernel in memory. Its facts must not
 * come from the dead value: compiled first for the graph holding it, the
 * kernel asked for 6 parameter columns and refused the other graph's
 * 3-column table (and a dead NTT refused an in-place launch of a
 * pointwise kernel), whichever graph the launch was for. */
static fhjit_graph *with_dead(fhjit_context *c, int dead, int ntt) {
  char text[1024];
  snprintf(text, sizeof text,
           "graph @d radix(r62) moduli(1152921504606830593, 2199023251457, 2199023228929, "
           "2199023210497, 1152921504606791681, 1152921504606748673) {\n"
           "  %%x = input ct<2, [], 3, 1024> coef mont\n"
           "  %%t = input table<12>\n"
           "  %%w = input twiddles<3, 1024>\n"
           "  %%y = add %%x, %%x\n"
           "%s"
           "  output %%y\n"
           "}\n",
           !dead ? "" : ntt ? "  %z = ntt_fwd %x, %w mode(mont)\n"
                            : "  %z = bconv %x, %t basis(3, 4, 5)\n");
  fhjit_graph *g = fhjit_parse(c, text, strlen(text), "d.fh");
  ck_assert_msg(g, "%s", fhjit_last_error(c));
  ck_assert_msg(fhjit_bind(g) == FHJIT_OK, "%s", fhjit_last_error(c));
  return g;
}

START_TEST(dead_values_decide_no_kernel_fact) {
  for (int ntt = 0; ntt < 2; ntt++) {
    fhjit_context *c = fhjit_context_create();
    fhjit_cuda_options nodisk = {.flags = FHJIT_CUDA_NO_DISK_CACHE};
    fhjit_graph *a = with_dead(c, 1, ntt), *b = with_dead(c, 0, ntt);
    uint64_t ha[2], hb[2];
    ck_assert_int_eq(fhjit_graph_hash(a, ha), FHJIT_OK);
    ck_assert_int_eq(fhjit_graph_hash(b, hb), FHJIT_OK);
    ck_assert(ha[0] == hb[0] && ha[1] == hb[1]);
    fhjit_cuda_kernel *ka = fhjit_cuda_compile(a, &nodisk, NULL);
    ck_assert_msg(ka, "%s", fhjit_last_error(c));
    fhjit_cuda_compile_info info;
    ck_assert_ptr_eq(fhjit_cuda_compile(b, &nodisk, &info), ka);
    ck_assert_int_eq(info.source, FHJIT_CUDA_FROM_MEMORY);
    ck_assert_int_eq(ka->param_rows, 3);
    ck_assert_int_eq(ka->pointwise, 1);
    /* b's launch with its own 3-column table, in place over %x */
    const uint64_t q[] = {1152921504606830593u, 2199023251457u, 2199023228929u};
    fhjit_cuda_ptr params, x, t, w;
    int64_t pstride;
    ck_assert_int_eq(fhjit_cuda_param_table(c, FHJIT_R62, q, 3, 0, 0, 1, &params, &pstride),
                     FHJIT_OK);
    ck_assert_int_eq(pstride, 3);
    ck_assert_int_eq(fhjit_cuda_alloc(c, 2 * 3 * 1024 * 8, &x), FHJIT_OK);
    ck_assert_int_eq(fhjit_cuda_alloc(c, 12 * 8, &t), FHJIT_OK);
    ck_assert_int_eq(fhjit_cuda_alloc(c, 3 * 1024 * 8, &w), FHJIT_OK);
    fhjit_cuda_ptr in[3] = {x, t, w}, out[1] = {x};
    fhjit_cuda_args args = {.params = params, .pstride = pstride, .inputs = in, .ninputs = 3,
                            .results = out, .nresults = 1};
    ck_assert_msg(fhjit_cuda_launch(b, &args) == FHJIT_OK, "%s", fhjit_last_error(c));
    fhjit_context_destroy(c);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("cache");
  TCase *tc = tcase_create("cache");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, names_share_no_wrong_entry);
  tcase_add_test(tc, options_steer_the_cache);
  tcase_add_test(tc, ntt_plans_are_other_entries);
  tcase_add_test(tc, fifo_entry);
  tcase_add_test(tc, stale_temporaries_swept);
  tcase_add_test(tc, symlink_entry);
  tcase_add_test(tc, foreign_entries);
  tcase_add_test(tc, unsafe_directory);
  tcase_add_test(tc, tampered_descriptions);
  tcase_add_test(tc, tampered_cubin);
  tcase_add_test(tc, another_graphs_entry);
  tcase_add_test(tc, dead_values_decide_no_kernel_fact);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
