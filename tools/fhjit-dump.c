/* fhjit-dump.c: reads one .fh graph and prints it in canonical text, as
 * Graphviz, as a binding summary, or as the LLVM IR / PTX that fhjit
 * generates for it. Uses the public API only (links libfhjit.so). Exit
 * status: 0 success, 1 an error in the input or the compiler, 2 bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fhjit/fhjit.h"
#include "readfile.h"

static const char usage_text[] =
    "usage: fhjit-dump FILE.fh [options]\n"
    "\n"
    "Reads one graph in the fhjit text format (FILE '-' reads stdin) and\n"
    "writes it out in the form --emit asks for.\n"
    "\n"
    "options:\n"
    "  --emit=graph     canonical .fh text (default; the graph need not be bound)\n"
    "  --emit=dot       Graphviz of the graph\n"
    "  --emit=info      bind the graph, then list its inputs, materialised\n"
    "                   results, outputs (views and aliases) and its hash\n"
    "  --emit=llvm      bind, then the LLVM IR of its GPU kernels\n"
    "  --emit=llvm-opt  the same after optimisation\n"
    "  --emit=ptx       bind, then PTX from the NVPTX backend\n"
    "  --emit=plan      bind, then the kernel plan: steps (NTTs and what fused\n"
    "                   into them, conversions, pointwise kernels), kernels and\n"
    "                   scratch buffers, without generating code\n"
    "  --bind           bind before --emit=graph or --emit=dot (shows bound\n"
    "                   types in the Graphviz labels; reports shape errors)\n"
    "  --arch=sm_XX     GPU target of llvm, llvm-opt, ptx and plan (default sm_90)\n"
    "  -o FILE          write to FILE instead of stdout\n"
    "  --help           this text\n"
    "  --version        the library version\n"
    "\n"
    "exit status: 0 success, 1 error in the input or during compilation,\n"
    "2 bad usage\n";

typedef enum emit { E_GRAPH, E_DOT, E_INFO, E_LLVM, E_LLVM_OPT, E_PTX, E_PLAN } emit;

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "fhjit-dump: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nusage: fhjit-dump FILE.fh [--emit=graph|dot|info|llvm|llvm-opt|ptx|plan] "
                  "[--bind] [--arch=sm_XX] [-o FILE]\n(see fhjit-dump --help)\n");
  return 2;
}

/* Library messages located in a file already read "FILE:L:C: error: ...";
 * the others get the tool's prefix. */
static int report(const fhjit_context *ctx) {
  const char *msg = fhjit_last_error(ctx);
  const char *nl = strchr(msg, '\n');
  const char *err = strstr(msg, "error: ");
  if (err && (!nl || err < nl)) fprintf(stderr, "%s\n", msg);
  else
    fprintf(stderr, "fhjit-dump: error: %s (%s)\n", *msg ? msg : "unknown failure",
            fhjit_status_name(fhjit_last_status(ctx)));
  return 1;
}

/* -------------------------------------------------------------- --emit=info */

/* The type as the text format spells it, facts included. */
static void put_type(FILE *out, const fhjit_type *t) {
  char text[FHJIT_TYPE_TEXT_MAX];
  fhjit_type_text(t, text, sizeof text);
  fputs(text, out);
}

/* All strides in type order, then the offset: the full binding, dense or not. */
static void put_layout(FILE *out, const fhjit_type *t, const fhjit_layout *l) {
  fputs("strides(", out);
  int k = 0;
#define S(v) fprintf(out, "%s%" PRId64, k++ ? ", " : "", (int64_t)(v))
  if (t->kind == FHJIT_KIND_KEY) S(l->digit_stride);
  if (t->comps > 0) S(l->comp_stride);
  if (t->kind == FHJIT_KIND_POLY)
    for (int a = 0; a < t->nbatch; a++) S(l->batch_stride[a]);
  S(l->row_stride);
  S(l->index_stride);
#undef S
  fprintf(out, ") offset(%" PRId64 ")", l->offset);
}

static int emit_info(fhjit_graph *g, FILE *out) {
  fhjit_context *ctx = fhjit_graph_context(g);
  fprintf(out, "graph @%s radix(%s)\n", fhjit_graph_name(g),
          fhjit_graph_radix(g) == FHJIT_R32 ? "r32" : "r62");
  for (int32_t i = 0; i < fhjit_num_inputs(g); i++) {
    fhjit_type t;
    fhjit_layout l;
    if (fhjit_input_binding(g, i, &t, &l) != FHJIT_OK) return report(ctx);
    fprintf(out, "input %d %%%s: ", (int)i, fhjit_value_name(g, fhjit_input_value(g, i)));
    put_type(out, &t);
    fputc(' ', out);
    put_layout(out, &t, &l);
    fputc('\n', out);
  }
  for (int32_t i = 0; i < fhjit_num_results(g); i++) {
    fhjit_type t;
    if (fhjit_result_type(g, i, &t) != FHJIT_OK) return report(ctx);
    fprintf(out, "result %d: ", (int)i);
    put_type(out, &t);
    fprintf(out, " (%" PRId64 " elements)\n", fhjit_type_elements(&t));
  }
  for (int32_t i = 0; i < fhjit_num_outputs(g); i++) {
    fhjit_output_info o;
    if (fhjit_output_info_get(g, i, &o) != FHJIT_OK) return report(ctx);
    fprintf(out, "output %s = %%%s: %s %d", o.name, fhjit_value_name(g, o.value),
            o.is_input_alias ? "alias of input" : "result", (int)o.source);
    if (o.component >= 0) fprintf(out, " component %d", (int)o.component);
    fputs(", ", out);
    put_type(out, &o.type);
    fputc(' ', out);
    put_layout(out, &o.type, &o.layout);
    fputc('\n', out);
  }
  uint64_t h[2];
  if (fhjit_graph_hash(g, h) != FHJIT_OK) return report(ctx);
  fprintf(out, "hash %016" PRIx64 "%016" PRIx64 "\n", h[0], h[1]);
  return 0;
}

/* --------------------------------------------------------------------- main */

int main(int argc, char **argv) {
  const char *file = NULL, *arch = NULL, *outpath = NULL;
  emit mode = E_GRAPH;
  int bind = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_text, stdout);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("fhjit-dump (fhjit %s)\n", fhjit_version());
      return 0;
    } else if (strncmp(a, "--emit=", 7) == 0) {
      static const char *const names[] = {"graph", "dot", "info", "llvm", "llvm-opt", "ptx",
                                          "plan"};
      int found = -1;
      for (int k = 0; k < 7; k++)
        if (strcmp(a + 7, names[k]) == 0) found = k;
      if (found < 0)
        return usage_error("unknown --emit kind '%s' (graph, dot, info, llvm, llvm-opt, ptx or plan)",
                           a + 7);
      mode = (emit)found;
    } else if (strncmp(a, "--arch=", 7) == 0) {
      if (!a[7]) return usage_error("%s needs a target such as sm_90", "--arch=");
      arch = a + 7;
    } else if (strcmp(a, "--bind") == 0) {
      bind = 1;
    } else if (strcmp(a, "-o") == 0) {
      if (i + 1 >= argc) return usage_error("%s needs a file name", "-o");
      outpath = argv[++i];
    } else if (a[0] == '-' && a[1]) {
      return usage_error("unknown option '%s'", a);
    } else if (file) {
      return usage_error("more than one input file ('%s')", a);
    } else {
      file = a;
    }
  }
  if (!file) return usage_error("%s", "no input file");

  int from_stdin = strcmp(file, "-") == 0;
  size_t len = 0;
  char *text, err[1024];
  if (tool_read_file(file, TOOL_GRAPH_FILE_LIMIT, "the graph file limit", &text, &len, err,
                     sizeof err)) {
    fprintf(stderr, "fhjit-dump: error: %s\n", err);
    return 1;
  }

  fhjit_context *ctx = fhjit_context_create();
  if (!ctx) {
    free(text);
    fprintf(stderr, "fhjit-dump: error: out of memory\n");
    return 1;
  }
  int rc = 0;
  const char *result = NULL;
  fhjit_graph *g = fhjit_parse(ctx, text, len, from_stdin ? "<stdin>" : file);
  free(text);
  if (!g) {
    rc = report(ctx);
    goto done;
  }
  if ((bind || mode >= E_INFO) && fhjit_bind(g) != FHJIT_OK) {
    rc = report(ctx);
    goto done;
  }
  switch (mode) {
  case E_GRAPH: result = fhjit_print(g); break;
  case E_DOT: result = fhjit_print_dot(g); break;
  case E_INFO: break;
  case E_LLVM: result = fhjit_emit(g, FHJIT_EMIT_LLVM, arch); break;
  case E_LLVM_OPT: result = fhjit_emit(g, FHJIT_EMIT_LLVM_OPT, arch); break;
  case E_PTX: result = fhjit_emit(g, FHJIT_EMIT_PTX, arch); break;
  case E_PLAN: result = fhjit_emit(g, FHJIT_EMIT_PLAN, arch); break;
  }
  if (mode != E_INFO && !result) {
    rc = report(ctx);
    goto done;
  }

  FILE *out = outpath ? fopen(outpath, "wb") : stdout;
  if (!out) {
    fprintf(stderr, "fhjit-dump: error: cannot write '%s': %s\n", outpath, strerror(errno));
    rc = 1;
    goto done;
  }
  if (mode == E_INFO) rc = emit_info(g, out);
  else fputs(result, out);
  if (fflush(out) != 0 || ferror(out)) {
    fprintf(stderr, "fhjit-dump: error: cannot write '%s': %s\n",
            outpath ? outpath : "<stdout>", strerror(errno));
    rc = 1;
  }
  if (outpath && fclose(out) != 0 && rc == 0) {
    fprintf(stderr, "fhjit-dump: error: cannot write '%s': %s\n", outpath, strerror(errno));
    rc = 1;
  }
done:
  fhjit_context_destroy(ctx);
  return rc;
}
