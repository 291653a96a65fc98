/* rg_emit.c: writes randgraph's random graphs as .fh text, so that the
 * machines with a GPU (where the unit tests and randgraph do not build: the
 * static-LLVM build has no internal library) can run the same corpus through
 * fhjit-run --backend=cuda --check (scripts/random-graphs-run.sh).
 *
 *   rg_emit [--seed S] [--count N] [--ntt P] [--reindex P] DIR
 *
 * Each graph is printed, parsed back, bound and printed again; the two texts
 * must be equal (so the file is the graph the generator built, layouts and
 * facts included), else rg_emit reports the seed and exits 1. Input
 * aliasing (two inputs over one buffer) does not survive text and is left to
 * the host tests. Files: DIR/rg<seed>.fh. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "randgraph.h"

static int emit_one(const char *dir, uint64_t seed, const rg_config *cfg) {
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
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
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

int main(int argc, char **argv) {
  uint64_t seed = 1;
  long count = 100;
  rg_config cfg;
  rg_default_config(&cfg);
  cfg.max_ops = 24;
  cfg.ntt_percent = 40;
  cfg.reindex_percent = 15;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--count") && i + 1 < argc) count = strtol(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--ntt") && i + 1 < argc) cfg.ntt_percent = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reindex") && i + 1 < argc) cfg.reindex_percent = atoi(argv[++i]);
    else if (argv[i][0] != '-' && !dir) dir = argv[i];
    else dir = NULL, i = argc;
  }
  if (!dir) {
    fprintf(stderr, "usage: %s [--seed S] [--count N] [--ntt PERCENT] [--reindex PERCENT] DIR\n",
            argv[0]);
    return 2;
  }
  long failed = 0;
  for (long k = 0; k < count; k++) failed += emit_one(dir, seed + (uint64_t)k, &cfg);
  printf("rg_emit: %ld graphs (seeds %llu..%llu) in %s, %ld failed\n", count - failed,
         (unsigned long long)seed, (unsigned long long)(seed + (uint64_t)count - 1), dir, failed);
  return failed ? 1 : 0;
}
