/* rg_emit.c: writes randgraph's random graphs as .fh text, so that the
 * machines with a GPU (where the unit tests and randgraph do not build: the
 * static-LLVM build has no internal library) can run the same corpus through
 * fhjit-run --backend=cuda --check (scripts/random-graphs-run.sh).
 *
 *   rg_emit [--seed S] [--count N] [--ntt P] [--reindex P] [--mix P] [--plans P]
 *           [--copies K --copy FILE ...] DIR
 *
 * Each graph is printed, parsed back, bound and printed again; the two texts
 * must be equal (so the file is the graph the generator built, layouts and
 * facts included), else rg_emit reports the seed and exits 1. Input
 * aliasing (two inputs over one buffer) does not survive text and is left to
 * the host tests. --mix P: P % of the ops SPEC 7's limb-mixing ops (on a
 * chain Q ++ P; randgraph's mix_percent). Files: DIR/rg<seed>.fh.
 *
 * --plans P: P % of the graphs (default 50) get a random `ntt_plan` on their
 * first line (`// ntt_plan: one=3,epivec=0`), which random-graphs-run.sh
 * passes to fhjit-run: the schedule and fusion keys of docs/ntt.md drawn
 * from the seed, so that rarely chosen combinations of fusions and
 * schedules meet random graphs. Every key here must be valid for any graph
 * (keys that do not apply have no effect).
 *
 * --copy FILE (repeatable) with --copies K: also K copies of FILE (a graph
 * of the tree, e.g. the CKKS examples) each under its own random plan,
 * DIR/<folder>_<name>_p<i>.fh (plans drawn from --seed, that and i): the CKKS
 * operations' fusions under rarely chosen keys. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fhjit/fhjit.h"
#include "randgraph.h"

/* Keys of docs/ntt.md's tuning table that any graph accepts: schedules
 * (one=3: two kernels from n = 16), the fusions' switches, launch forms. */
static const char *const plan_items[] = {
    "one=3", "one=3", "one=3", "epi=0", "epivec=0", "provec=0", "autpro=1", "tail=0",
    "tws=1", "tws=2", "shoup=1", "shoup=2", "early=1", "pdl=0", "entry=0", "pdlmix=0",
    "pdlmix=1", "pdlmix=2", "rowsync=0", "e=2", "c_col=2", "pad=0", "pad_chunk=2",
    "liftfuse=0", "mixfuse=0", "mixfuse=1", "digitfwd=0", "bconvbatch=0", "ipfuse=1",
    "ipacc=1", "mdip=0", "mdipk=1", "mdintt=0", "mdbconv=0", "mdrs=0", "l2pf=1", "twpf=1",
    "minb=2", "rowplans=0", "ipsmem=2", "minb_epi=4", "autcol=0", "autcol=2", "ipntt=0",
    "ipntt=1", "epipf=1", "epics=3", "epics=7"};

static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* One to four distinct keys drawn from the seed, in plan_items' order (a
 * key drawn twice keeps its first value). */
static void random_plan(uint64_t seed, char *out, size_t size) {
  enum { NITEMS = sizeof plan_items / sizeof *plan_items };
  uint64_t state = seed ^ UINT64_C(0x6E74745F706C616E);
  int take[NITEMS] = {0}, n = 1 + (int)(next_random(&state) % 4);
  for (int i = 0; i < n; i++) take[next_random(&state) % NITEMS] = 1;
  out[0] = 0;
  size_t len = 0;
  for (int i = 0; i < NITEMS; i++) {
    if (!take[i]) continue;
    size_t key = strcspn(plan_items[i], "=");
    char probe[32];
    snprintf(probe, sizeof probe, ",%.*s=", (int)key, plan_items[i]);
    char have[600];
    snprintf(have, sizeof have, ",%s", out);
    if (strstr(have, probe)) continue;
    len += (size_t)snprintf(out + len, size - len, "%s%s", len ? "," : "", plan_items[i]);
  }
}

static int emit_one(const char *dir, uint64_t seed, const rg_config *cfg, int plans) {
  static char err[1 << 14];
  int rc = 1;
  fhjit_context *ctx = fhjit_context_create();
  fhjit_graph *g = rg_random_graph(ctx, seed, cfg, err, sizeof err), *back = NULL;
  char *text = NULL;
  if (!g) {
    fprintf(stderr, "rg_emit: seed %llu: the generator failed: %s\n", (unsigned long long)seed,
            err);
    goto done;
  }
  const char *printed = fhjit_print(g);
  text = printed ? strdup(printed) : NULL;
  if (!text) {
    fprintf(stderr, "rg_emit: seed %llu: print: %s\n", (unsigned long long)seed,
            fhjit_last_error(ctx));
    goto done;
  }
  back = fhjit_parse(ctx, text, strlen(text), "printed");
  if (!back || (!fhjit_is_bound(back) && fhjit_bind(back) != FHJIT_OK)) {
    fprintf(stderr, "rg_emit: seed %llu: the printed graph does not parse or bind: %s\n%s\n",
            (unsigned long long)seed, fhjit_last_error(ctx), text);
    goto done;
  }
  const char *again = fhjit_print(back);
  if (!again || strcmp(again, text) != 0) {
    fprintf(stderr, "rg_emit: seed %llu: printing does not round-trip:\n%s\n-- then --\n%s\n",
            (unsigned long long)seed, text, again ? again : "(null)");
    goto done;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/rg%llu.fh", dir, (unsigned long long)seed);
  char plan[512] = "";
  uint64_t draw = seed * UINT64_C(0x2545F4914F6CDD1D);
  if ((int)((draw >> 33) % 100) < plans) random_plan(seed, plan, sizeof plan);
  FILE *f = fopen(path, "w");
  if (!f || (plan[0] && fprintf(f, "// ntt_plan: %s\n", plan) < 0) || fputs(text, f) < 0 ||
      fclose(f) != 0) {
    fprintf(stderr, "rg_emit: %s: %s\n", path, strerror(errno));
    goto done;
  }
  rc = 0;
done:
  free(text);
  if (back) fhjit_graph_destroy(back);
  if (g) fhjit_graph_destroy(g);
  fhjit_context_destroy(ctx);
  return rc;
}

/* K copies of the graph file `src` in dir, each with a random plan line. */
static int copy_with_plans(const char *dir, const char *src, int copies, uint64_t seed) {
  FILE *in = fopen(src, "rb");
  if (!in) {
    fprintf(stderr, "rg_emit: %s: %s\n", src, strerror(errno));
    return 1;
  }
  static char text[1 << 20];
  size_t len = fread(text, 1, sizeof text - 1, in);
  int big = !feof(in);
  fclose(in);
  if (big) {
    fprintf(stderr, "rg_emit: %s: larger than %zu bytes\n", src, sizeof text - 1);
    return 1;
  }
  /* the name: the file's folder and stem (examples/ckks/keyswitch.fh ->
   * ckks_keyswitch), as several folders hold a keyswitch.fh */
  const char *base = src, *c;
  int slashes = 0;
  for (c = src + strlen(src); c > src && slashes < 2; c--)
    if (c[-1] == '/' && ++slashes == 2) base = c;
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)strcspn(base, "."), base);
  for (char *p = name; *p; p++)
    if (*p == '/') *p = '_';
  uint64_t h = seed;
  for (c = name; *c; c++) h = (h ^ (uint8_t)*c) * UINT64_C(0x100000001B3);
  for (int i = 0; i < copies; i++) {
    char path[4096], plan[512];
    random_plan(h + (uint64_t)i, plan, sizeof plan);
    snprintf(path, sizeof path, "%s/%s_p%d.fh", dir, name, i);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "// ntt_plan: %s\n", plan) < 0 || fwrite(text, 1, len, f) != len ||
        fclose(f) != 0) {
      fprintf(stderr, "rg_emit: %s: %s\n", path, strerror(errno));
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  uint64_t seed = 1;
  long count = 100;
  int plans = 50;
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.max_ops = 24;
  cfg.ntt_percent = 40;
  cfg.reindex_percent = 15;
  const char *dir = NULL, *copy[64];
  int ncopy = 0, copies = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = strtol(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--ntt") && i + 1 < argc) cfg.ntt_percent = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reindex") && i + 1 < argc) cfg.reindex_percent = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--plans") && i + 1 < argc) plans = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--mix") && i + 1 < argc) cfg.mix_percent = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--copies") && i + 1 < argc) copies = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--copy") && i + 1 < argc && ncopy < 64) copy[ncopy++] = argv[++i];
    else if (argv[i][0] != '-' && !dir) dir = argv[i];
    else dir = NULL, i = argc;
  }
  if (!dir) {
    fprintf(stderr, "usage: %s [--seed S] [--count N] [--ntt PERCENT] [--reindex PERCENT] [--mix PERCENT] "
                    "[--plans PERCENT] [--copies K --copy FILE ...] DIR\n",
            argv[0]);
    return 2;
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "rg_emit: %s: %s\n", dir, strerror(errno));
    return 1;
  }
  long failed = 0;
  for (long k = 0; k < count; k++) failed += emit_one(dir, seed + (uint64_t)k, &cfg, plans);
  for (int i = 0; i < ncopy; i++) failed += copy_with_plans(dir, copy[i], copies, seed);
  printf("rg_emit: %ld graphs (seeds %llu..%llu) in %s, %ld failed\n", count - failed,
         (unsigned long long)seed, (unsigned long long)(seed + (uint64_t)count - 1), dir, failed);
  return failed ? 1 : 0;
}
