/* options.c: fhjit_context_set_option, the public setter of a context's
 * tuning options (ir.h, ir_options). It lives in the lowering because the
 * lowering owns the options' syntax: a value is checked here by the same
 * parser that reads it at compile time, so a bad value is refused when it
 * is set, with a message that says why. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lower/lw_llvm.h"
#include "lower/bconv.h"
#include "lower/ntt.h"

fhjit_status fhjit_context_set_option(fhjit_context *ctx, const char *name, const char *value) {
  const char *fn = "fhjit_context_set_option";
  if (!ctx) return FHJIT_ERR_ARGUMENT;
  int o = ir_option_by_name(name);
  if (o < 0)
    return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                    "%s: unknown option \"%s\" (options: ntt_plan, pw_plan, max_values, cache, "
                    "cache_dir, bconv_plan, ntt_schedule, host_pipeline)",
                    fn,
                    name ? name : "(null)");
  if (value) {
    char why[512] = "";
    int bad = 0;
    switch ((ir_opt)o) {
    case IR_OPT_NTT_PLAN: {
      lw_ntt_tuning t;
      lw_ntt_tuning_default(&t);
      fhjit_context *probe = fhjit_context_create(); /* for the parser's message */
      if (!probe) return ir_error(ctx, FHJIT_ERR_MEMORY, "%s: out of memory", fn);
      ir_option_set(probe, IR_OPT_NTT_PLAN, ""); /* its message: "error: ntt_plan: ..." */
      if ((bad = lw_ntt_tuning_parse(probe, value, &t) != FHJIT_OK)) {
        const char *m = fhjit_last_error(probe), *prefix = "error: ntt_plan: ";
        snprintf(why, sizeof why, "%s", strncmp(m, prefix, strlen(prefix)) ? m : m + strlen(prefix));
      }
      fhjit_context_destroy(probe);
      if (bad)
        return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: ntt_plan=\"%s\": %s", fn, value, why);
      break;
    }
    case IR_OPT_PW_PLAN: {
      lw_pw_plan pw;
      if (lw_pw_plan_parse(value, &pw, why, sizeof why) < 0)
        return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: pw_plan=\"%s\": %s", fn, value, why);
      break;
    }
    case IR_OPT_BCONV_PLAN: {
      lw_bconv_tuning bt;
      if (lw_bconv_tuning_parse(value, &bt, why, sizeof why) < 0)
        return ir_error(ctx, FHJIT_ERR_ARGUMENT, "%s: bconv_plan=\"%s\": %s", fn, value, why);
      break;
    }
    case IR_OPT_MAX_VALUES: {
      int64_t v;
      if (lw_max_values_parse(value, &v))
        return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                        "%s: max_values=\"%s\": expected a whole number from 1 to %lld", fn,
                        value, (long long)LW_MAX_VALUES_CEILING);
      break;
    }
    case IR_OPT_CACHE: {
      static const char *const ok[] = {"", "0", "off", "no", "false", "1", "on", "yes", "true"};
      int good = 0;
      for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) good |= !strcasecmp(value, ok[i]);
      if (!good)
        return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                        "%s: cache=\"%s\": expected on or off (1/0, yes/no, true/false)", fn,
                        value);
      break;
    }
    case IR_OPT_CACHE_DIR:
      if (*value && value[0] != '/')
        return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                        "%s: cache_dir=\"%s\": expected an absolute path (or \"\" for the "
                        "default)",
                        fn, value);
      break;
    case IR_OPT_NTT_SCHEDULE: {
      lw_ntt_schedule sc;
      if (!lw_ntt_schedule_parse(value, &sc))
        return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                        "%s: ntt_schedule=\"%s\": expected auto, two_kernel or cluster", fn, value);
      break;
    }
    case IR_OPT_HOST_PIPELINE: {
      int gpu;
      if (!lw_host_pipeline_parse(value, &gpu))
        return ir_error(ctx, FHJIT_ERR_ARGUMENT,
                        "%s: host_pipeline=\"%s\": expected lean or gpu", fn, value);
      break;
    }
    case IR_NUM_OPTS: SP_UNREACHABLE("option id");
    }
  }
  return ir_option_set(ctx, (ir_opt)o, value);
}
