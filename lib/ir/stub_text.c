/* stub_text.c: placeholder for the text format (parse.c, print.c); deleted
 * when they land. */
#include "ir/ir.h"
fhjit_graph *fhjit_parse(fhjit_context *ctx, const char *text, size_t length, const char *filename) {
  (void)text; (void)length; (void)filename;
  ir_error(ctx, FHJIT_ERR_UNSUPPORTED, "fhjit_parse: not implemented yet");
  return NULL;
}
const char *fhjit_print(fhjit_graph *g) { (void)g; return NULL; }
const char *fhjit_print_dot(fhjit_graph *g) { (void)g; return NULL; }
