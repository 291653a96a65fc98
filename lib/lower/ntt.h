/* ntt.h: lowering of the negacyclic NTT (SPEC section 5) to LLVM IR loop
 * nests (prefix lw_ntt_): the schedule (how the logN stages are cut into
 * kernels, shared-memory passes and per-thread register butterflies), the
 * target-neutral IR builder, the PTX entry that fills an lw_program for the
 * runtime, and a host entry that JIT-compiles the same IR and runs it.
 *
 * Schedule. Index i of a row is split as i = i1 * N2 + i2 (N = N1 * N2).
 * Forward (Cooley-Tukey) stages 0..log N1 - 1 only mix i1 bits: kernel 1
 * runs them on the N2 columns (C consecutive columns per block, so every
 * global access is a contiguous run of C words); stages log N1.. mix i2 bits
 * within a contiguous chunk of N2: kernel 2 runs them in shared memory, C
 * chunks per block. The inverse (Gentleman-Sande) runs the same two kernels
 * in the other order. N <= 2^12 runs in one kernel (whole rows per block).
 * Inside a kernel, each of the block's threads holds E = 2^log_e words in
 * registers and applies up to log_e stages to them ("a pass"); passes are
 * separated by barriers and exchange data through shared memory. Radix-2
 * butterflies give the same bits under any grouping of stages, so every
 * plan computes exactly SPEC's representatives.
 *
 * A kernel is a list of phases separated by barriers. On the GPU a phase is
 * run by the block's threads (tid from the special registers, bar.sync
 * between phases, shared memory in addrspace(3)); on the host the same phase
 * body is wrapped in a loop over thread ids, inside a loop over blocks, and
 * shared memory is a buffer the caller passes. */
#ifndef FHJIT_LOWER_NTT_H
#define FHJIT_LOWER_NTT_H

#include <llvm-c/Core.h>

#include "ir/ntt.h"
#include "lower/arith.h"
#include "lower/counters.h"
#include "lower/lw_llvm.h"
#include "nvptx/nvptx.h"

/* Passes of one kernel: each runs at least one stage of at most
 * IR_NTT_MAX_LOG, so every plan the keys can give fits (8 did not: r62
 * 2^16 with e=1 has a chunk kernel of 9 or 10 one-stage passes, which
 * wrote past pass_e into the plan and gave wrong words). */
#define LW_NTT_MAX_PASSES IR_NTT_MAX_LOG
/* The most batch-rows that get per-row completion counters (4 bytes each,
 * two arrays per NTT in its module). */
#define LW_NTT_ROWSYNC_MAX_ROWS 65536
/* rowsync's default needs kernel 0 to have this many blocks at least
 * (measured on the H200's 132 SMs: a win from 1024, a loss at 512) */
#define LW_NTT_ROWSYNC_MIN_BLOCKS 1024
/* Words per thread: at most 2^LW_NTT_MAX_LOG_E. */
#define LW_NTT_MAX_LOG_E 5

/* lw_ntt_redc62_ptx, lw_ntt_shoup62_ptx, lw_ntt_csub62_ptx: the r62 PTX
 * forms of the NTT's arithmetic (arith.h). */

/* One kernel of a plan. */
typedef struct lw_ntt_kplan {
  int cols;       /* 1: sub-transforms are columns (stride N/M); 0: contiguous chunks */
  int m;          /* log2 of the local transform length M */
  int log_c;      /* C = 2^log_c sub-transforms per block */
  int log_e;      /* E = 2^log_e words per thread */
  int log_subs;   /* sub-transforms per row: N / M = 2^log_subs */
  int npass;
  int pass_b[LW_NTT_MAX_PASSES]; /* pass j covers local bits [b, b + e) */
  int pass_e[LW_NTT_MAX_PASSES];
  int staged_load;  /* global -> shared copy before the first pass */
  int staged_store; /* shared -> global copy after the last pass */
  int pre, post;    /* this kernel applies the kind's pre step / post step */
  int in_place;     /* source and destination are the same buffer */
  int pad_shift;    /* shared index: chunks k + (k >> pad_shift) within a chunk row,
                     * columns x + (x >> pad_shift) of the linear index; 0: none */
  uint32_t threads; /* per block */
  int64_t blocks;   /* grid */
  uint32_t smem_words;
  int minb;         /* > 0: minimum blocks per SM (launch bound) */
  int early;        /* GPU: the first pass's global loads issued before the tws phase */
  /* GPU, sm_90 on (the caller clears it for older targets): kernel 0 lets
   * kernel 1 launch early (griddepcontrol.launch_dependents), kernel 1
   * reads parameters and twiddles, then waits for kernel 0 (LW_KERNEL_PDL).
   * 1: griddepcontrol.wait; 2: both kernels take a last argument
   * (LW_ARG_OWN): 1 selects per-row completion counters in the module
   * (ntt_emit_sync.c), 0 the grid-wide wait */
  int pdl;
  /* with pdl: kernel 0 is a dependent launch of the stream's previous
   * kernel too (griddepcontrol.wait before any access, LW_KERNEL_PDL), and
   * kernel 1 lets the stream's next kernel launch early */
  int entry;
  /* with entry, kernel 0 of an ipntt head right after the group's previous
   * head (anchor_ipntt.c): its wait for the stream's previous kernel (that
   * head) at its end instead of its start. It reads and writes nothing
   * that head touches, and every kernel before that head has completed
   * when it launches (that head triggers after its own wait), so it runs
   * beside that head; waiting before it exits keeps the next kernel's
   * wait for it a wait for both. */
  int late_entry;
  /* 1: the twiddle constants (w4, wk4) of the block's sub-transforms, for
   * the levels below tws_log (entries j < 2^tws_log of a sub-transform's
   * table subtree: the levels several threads share), are computed once
   * per block, in a first phase, into shared memory from word tws_word on
   * (2 words per entry; columns share one set); the passes read them from
   * there, and the deeper levels' twiddles from global memory as before. */
  int tws, tws_log;
  uint32_t tws_word;
  /* r62: twiddle products in Shoup's form (ntt_emit_phase.c,
   * make_const_shoup): 1 those by the shared twiddle constants (which then
   * hold REDC(w) in place of 4w) and the pre and post steps', 2 also every
   * other twiddle product; 0 none (r32: always 0) */
  int shoup;
  /* chunk kernels: the stages of local bits [0, tail) run in the staged
   * copy (ntt_emit_phase.c, tail_stages), on the words of each 16-byte
   * vector: the forward's last stages before the staged store, the
   * inverse's first after the staged load; the passes cover [tail, m). Set
   * where the passes would otherwise end on a short pass of that many
   * stages, which then costs no round trip through shared memory and no
   * barrier. */
  int tail;
  /* GPU, forward: the first pass prefetches into L1 the twiddles that later
   * passes and the tail load from global memory (ntt_emit_phase.c,
   * prefetch_later_twiddles) */
  int twpf;
  /* r32: twiddles from global memory as products of two entries of the
   * row's table (ntt_emit_phase.c, lw_ne_global_twiddle): index i = hi + lo
   * with lo = i mod 2^twsplit, T[i] = REDC(T[hi] * T[lo]), so a kernel reads
   * T[hi] (one word of every 2^twsplit, shared by neighbouring threads) and
   * the table's first 2^twsplit words (hot in the caches) instead of
   * streaming the table; 0 off. Exact for the power tables SPEC 5 defines
   * (canonical at r32), which the interpreter insists on (interp.c). */
  int twsplit;
  /* a pass's stage reads its run of twiddles from global memory as 16-byte
   * vectors where the table's rows keep them aligned (ntt_emit_phase.c,
   * vector_twiddles); 0 word by word */
  int twvec;
  /* GPU, kernel 0 with entry: before its wait for the stream's previous
   * kernel, each thread prefetches into the L2 the source words its first
   * pass or staged load reads (ntt_emit_phase.c, prefetch_source) */
  int l2pf;
  /* the last kernel's fused epilogue: 1 evaluated V elements at a time
   * where its walk allows (ntt_emit_fuse.c, epi_value_vec: vector loads of
   * its inputs), 0 element by element */
  int epivec;
  /* GPU, the last kernel with a fused epilogue (not a reduce kernel),
   * before its wait for kernel 0: 1 prefetches into the L2 each epilogue
   * input laid out as the transform's rows, at the positions its block
   * stores (ntt_emit_phase.c, lw_ne_prefetch_epilogue); 0 off. (A bit 2,
   * the reduce kernel's keys prefetched, measured slower everywhere and
   * was removed: docs/ntt.md.) */
  int epipf;
  /* GPU, the last kernel with a fused epilogue: its epilogue's input loads
   * stream (evalstream.c: not allocated in the L1, evict-first in the L2:
   * read once, so the L2 evicts them first): bit 1 in a reduce kernel (the keys),
   * bit 2 in any other; bit 4 the `.cs` operator instead; 0 plain loads */
  int epics;
  /* kernel 0's fused prologue in its staged load: 1 evaluated V elements at
   * a time where its walk allows (ntt_emit_fuse.c, pro_value_vec), 0
   * element by element */
  int provec;
  /* GPU sm_90 on: the cluster schedule (ntt_cluster.c, docs/ntt-cluster.md):
   * log2 of the blocks per cluster C; 0 for the other kernels. A cluster
   * kernel runs whole rows: m = log N, one cluster of C blocks per
   * batch-row (blocks = batch_rows * C), block r of a cluster keeping the
   * row's words [r S, (r + 1) S) (S = N / C) in its dynamic shared memory
   * (smem_words: S padded, pad_shift), the passes over the local bits
   * [0, log S), and the stages of the top log C bits exchanged once through
   * distributed shared memory, 2^log_u columns of C words per thread at a
   * time. The host runs it too, a cluster's blocks phase by phase. */
  int cluster;
  int log_u;
  /* cluster kernels: 1 for the vector exchange: a thread's 2^log_u columns
   * are consecutive (l = ((it T + tid) << log_u) + u), and the words bound
   * for (forward) or coming from (inverse) one block move as 2^log_xw-word
   * vectors (st/ld.shared::cluster.v2/.v4, at most 16 bytes), the global
   * accesses of the columns too; 0: one word per access, columns T apart. */
  int xvec;
  int log_xw;
  /* the padding's step: x + ((x >> pad_shift) << pad_w), 2^pad_w words per
   * 2^pad_shift (0: one word; xvec: log_xw, which keeps a vector aligned) */
  int pad_w;
  /* cluster kernels: each cluster transforms 2^log_rows batch-rows in turn
   * (rows [cid 2^log_rows, ...) of cluster cid, blocks = ceil(batch_rows /
   * 2^log_rows) C); 0: one row per cluster. With ahead (log_rows > 0, the
   * GPU where the source is a dense view read as is), the next row's
   * global loads are asynchronous copies (cp.async) into shared memory
   * issued while the current row's passes run: the forward's cross
   * segment's words into a staging area after the slice (S words, each
   * thread's own), the inverse's staged load into a second slice (the
   * slices alternate by row). slice_words: one slice (S padded);
   * smem_words: the block's whole dynamic shared memory. */
  int log_rows;
  int ahead;
  uint32_t slice_words;
} lw_ntt_kplan;

typedef struct lw_ntt_plan {
  fhjit_radix radix;
  ir_ntt_kind kind;
  int log_n;
  int64_t rows;       /* limbs: the modulus of batch-row r is params column cols[r % rows] */
  int64_t batch_rows; /* rows of the whole [.., rows, N] extent: prod(batch) * rows */
  /* Compile-time facts of the buffers (elements). The first kernel reads
   * source element (br, i) at src_offset + sum_a coord_a * src_stride[a] +
   * i * src_index_stride, where coord is br in the row-major index space
   * src_ext[0..src_nax) (components, batch axes, rows: any view of an
   * input); later kernels and the destination are dense [batch_rows, N].
   * Twiddle row r is at tw + tw_offset + r * tw_row_stride (index stride 1).
   * lw_ntt_plan_make sets the dense source view and tw_row_stride = N. */
  int src_nax;
  int64_t src_ext[FHJIT_MAX_BATCH + 2], src_stride[FHJIT_MAX_BATCH + 2];
  int64_t src_offset, src_index_stride;
  int64_t tw_offset, tw_row_stride;
  /* The transform's basis (SPEC section 7): row r (= batch-row % rows)
   * reads parameter column cols[r] and twiddle row cols[r] (chain
   * positions); NULL: the identity (lw_ntt_plan_make's default).
   * anchor_plan.c sets it to the NTT node's bound basis (ir_node.basis): it
   * points into the bound graph and is read only while kernels are built
   * (lw_column). */
  const int32_t *cols;
  /* GPU: words added to dst in every kernel (and to the source argument of
   * the kernels that read dst): the transform written at rows of a larger
   * buffer (modup, mixsteps.c). The host path is passed an offset pointer
   * instead (0 from lw_ntt_plan_make) */
  int64_t dst_offset;
  /* Rescale's lift in the first kernel's load (mixsteps.c, ntt_plan key
   * liftfuse): 1 when every source word x is a coefficient-standard word
   * of the modulus q at params column lift_col (x < q: the source view
   * repeats that one row, row stride 0), and row r transforms
   * lift_r(x) = (x >= q - floor(q/2) ? x - q : x) mod t_r (t_r its own
   * modulus; SPEC section 7, the interpreter's op_rescale) in place of x.
   * Only a forward from coefficient-standard form: its pre step's to_mont
   * is the reduction (ntt_emit_phase.c, lift_step). With a prologue (a
   * forward from coefficient-Montgomery form: mixsteps.c, mdrs_steps) row
   * r transforms the prologue's word plus lift_r(x) in Montgomery form,
   * mod t_r. 0 from lw_ntt_plan_make. */
  int lift;
  int32_t lift_col;
  /* With a prologue: > 0 when it computes only rows [0, pro_rows) of each
   * polynomial (numbered in its own result as polynomials of pro_rows
   * rows), the others loaded from the source view (mixsteps.c,
   * mdrs_steps: a moddown's P rows with rescale's last row). 0 from
   * lw_ntt_plan_make: the prologue computes every row. */
  int pro_rows;
  /* 1: the grid's blocks run the batch rows in (row, polynomial) order,
   * the same row of every polynomial one after another (ntt_emit.c,
   * block_order), so that an epilogue or prologue reading an operand that
   * several polynomials share (HMult's tensor product: x0 and y0 in both
   * components) finds it in the L2; 0: polynomial by polynomial. Kernels
   * whose blocks span rows, cluster and reduce kernels keep the plain
   * order. */
  int pminor;
  /* A forward two-kernel plan's source is automorphism(source view,
   * aut_k) in the coefficient domain (SPEC section 7), computed in its
   * staged loads (ntt_emit_aut.c, lw_ntt_plan_aut); 0: the source view
   * itself (lw_ntt_plan_make). */
  int64_t aut_k;
  int aut_scalar; /* kernel 0's staged load one word a thread (ntt_plan autvec=0) */
  int aut_scalar1; /* kernel 1's staged copy one word a thread (ntt_plan autvec1=0) */
  /* kernel 0 loads its first pass's words as the plain kernel does and
   * permutes its registers (ntt_plan autreg=1, ntt_emit_aut.c) */
  int aut_reg;
  int aut_reg1; /* the same for kernel 1 (ntt_plan autcol=3) */
  int nkernels;
  lw_ntt_kplan k[2];
  /* A cluster plan (k[0].cluster) keeps the two-kernel schedule of the
   * same transform here, for targets without clusters (lw_ntt_for_target
   * swaps it in); unused otherwise. */
  int two_nkernels;
  lw_ntt_kplan two[2];
  /* ipfuse (lw_ntt_plan_reduce): > 0, the last kernel's grid runs over the
   * reduce_rows output rows (of every polynomial), each block transforming
   * its row of each of the reduce_members members in turn (lw_ntt_reduce);
   * 0: the plain transform */
  int reduce_members;
  int64_t reduce_rows;
  /* > 0: the reduce kernel accumulates (lw_ntt_reduce.acc): per thread the
   * current member's words and reduce_acc components of the sum (the
   * host's shared slots: 1 + reduce_acc blocks of words); 0: every
   * member's words (reduce_members blocks) */
  int reduce_acc;
  /* > 0: the reduce kernel's minimum blocks per SM (tuning minb_red), in
   * place of the last kernel's own minb: its blocks have half the
   * threads of the chunk kernel's and hold every member's words */
  int reduce_minb;
  /* > 0: the last kernel's minimum blocks per SM when it computes a fused
   * epilogue (tuning minb_epi; not a reduce kernel), in place of its own
   * minb: an epilogue adds loads and products after the butterflies, and
   * more resident blocks hide their latency where the plain transform
   * runs best with fewer (ntt_plan.c, default_plans) */
  int epi_minb;
  /* slots (reduce_acc 0) on the GPU: members [0, reduce_smem) keep their
   * words in shared memory after the body's (fewer registers, so more
   * blocks per SM), the rest in registers; the host keeps all in shared
   * memory anyway. At most reduce_members - 1 (the last member's words
   * are read at once). */
  int reduce_smem;
  /* Counts between kernels (counters.h, planned by mixsteps_ipsync.c;
   * GPU, sm_90, dependent launches): sig on a reduce plan (ipsync): its
   * last kernel runs the blocks of the sum's counted rows first and
   * counts them; wait: kernel 0 starts a block once the part of the step
   * before it that its row reads is counted (ipsync: a row of the sum;
   * convsync: a digit of the conversion), in place of waiting for the
   * whole kernel, and waits for the total before it ends. Such kernels
   * take LW_ARG_OWN (0: the grid-wide wait, no counters). ntt_emit_sync.c.
   * off: on 0 (lw_ntt_plan_make). */
  lw_sync sig, wait;
} lw_ntt_plan;

/* Makes plan p's last kernel a reduce kernel (ipfuse, mixsteps.c) over
 * `members` members and out_rows output rows: one row per block, no
 * per-row counters (pdl 2 becomes 1), no early loads, a cluster plan
 * replaced by its two-kernel schedule, the grid over the output rows. */
void lw_ntt_plan_reduce(lw_ntt_plan *p, int members, int64_t out_rows, int acc);

/* Makes plan p read automorphism(source, k) (coefficient domain, k odd,
 * 1 <= k < 2N) instead of its source, where it can: a forward two-kernel
 * plan (not the cluster schedule, not a reduce plan), whose kernel 0 then
 * loads through shared memory (staged_load; no early loads) unless reg
 * (then its first pass loads as the plain kernel's and permutes its
 * registers, aut_reg); kernel 1 as k1 says (the ntt_plan autcol values):
 * LW_AUT_STAGED through shared memory too, LW_AUT_DIRECT its first pass
 * loading its chunk's words at permuted positions straight from memory,
 * LW_AUT_REGS loading as the plain kernel's and permuting its registers
 * (aut_reg1). A kernel whose first pass is not the full pass over its top
 * bits is staged instead of permuting registers. 1 when it did, 0 with p
 * unchanged. */
enum { LW_AUT_STAGED = 1, LW_AUT_DIRECT = 2, LW_AUT_REGS = 3 };
int lw_ntt_plan_aut(lw_ntt_plan *p, int64_t k, int k1, int reg);

/* The schedules lw_ntt_plan_make chooses between (the ntt_schedule
 * option: "auto", "two_kernel", "cluster"). auto is two_kernel until the
 * cluster schedule has been measured on the H200 (docs/ntt-cluster.md). */
typedef enum lw_ntt_schedule {
  LW_NTT_SCHED_AUTO = 0,
  LW_NTT_SCHED_TWO_KERNEL,
  LW_NTT_SCHED_CLUSTER
} lw_ntt_schedule;
/* The cluster schedule's sizes: 2^14 .. 2^17 (smaller rows fit one block). */
#define LW_NTT_CLUSTER_MIN_LOG 14
#define LW_NTT_CLUSTER_MAX_LOG 17
/* Dynamic shared memory a block may have on sm_90 (227 KB). */
#define LW_NTT_CLUSTER_SMEM_MAX (227 * 1024)
/* The cluster kernels' passes: the plans the GPU has run (more, from one
 * stage a pass, are refused with a message) */
#define LW_NTT_CLUSTER_MAX_PASSES 8
/* The ntt_schedule option's text: 1 when valid (*out set; NULL and ""
 * are auto), 0 otherwise. */
int lw_ntt_schedule_parse(const char *text, lw_ntt_schedule *out);

/* Schedule choices that may be overridden (tuning, sweeps); -1 everywhere
 * means the default. Every combination that lw_ntt_plan_make_tuned accepts
 * computes SPEC's exact representatives (only the grouping of the
 * butterflies and the data movement change). */
typedef struct lw_ntt_tuning {
  int one;       /* largest log N run in one kernel (whole rows per block) */
  int n1;        /* two kernels: log2 of the column length N1 (N = N1 * N2) */
  int e_one, e_col, e_chunk; /* log2 words per thread, 1..4, per kernel type */
  int c_col;     /* log2 columns per block of the column kernel */
  int t_one, t_chunk; /* log2 target threads per block: rows / chunks per block */
  int pad_col;   /* column kernel shared index x + (x >> pad_col); 0: none */
  int pad_chunk; /* chunk rows: k + (k >> pad_chunk); 0: none */
  int minb;      /* > 0: at least this many blocks per SM (ptxas register cap): one kernel */
  int minb_col, minb_chunk; /* the same for the column and the chunk kernel */
  int minb_epi;  /* lw_ntt_plan.epi_minb */
  int minb_red;  /* the same for an ipfuse reduce kernel (lw_ntt_plan.reduce_minb;
                  * default: the chunk kernel's minb_chunk) */
  int ipsmem;    /* that reduce kernel with slots: the first ipsmem members' words kept
                  * in shared memory instead of registers (lw_ntt_plan.reduce_smem) */
  int early;     /* 1: lw_ntt_kplan.early where a kernel has shared twiddles */
  int pdl;       /* lw_ntt_kplan.pdl of both kernels of a two-kernel plan */
  int entry;     /* with pdl: lw_ntt_kplan.entry (default 1) */
  int pdlmix;    /* with pdl and entry: a step program's conversion kernels (1) and its
                  * pointwise ones too (2) are dependent launches (an_plan.pdl_mix; default:
                  * anchor_plan.c, mix_default) */
  int bcrev;     /* GPU: a conversion kernel's blocks in reverse order (lw_bconv_plan.rev):
                  * 0 never, 1 where its output is at least 32 MB and a step follows
                  * (anchor_gpu.c, bconv_reversed; default), 2 always */
  int rowsync;   /* with pdl: 1 for pdl 2 up to LW_NTT_ROWSYNC_MAX_ROWS rows (default: N >= 2^16
                  * and at least LW_NTT_ROWSYNC_MIN_BLOCKS blocks in kernel 0) */
  int tws;       /* twiddle constants shared per block: 0 none, 1 column kernels, 2 all */
  int shoup;     /* r62: lw_ntt_kplan.shoup of every kernel (default 0) */
  int tail;      /* 0: no lw_ntt_kplan.tail (default 1: where it saves a pass) */
  int twpf;      /* lw_ntt_kplan.twpf of every kernel (default 0) */
  int twsplit;   /* r32: lw_ntt_kplan.twsplit of every kernel (default 0) */
  int twvec;     /* lw_ntt_kplan.twvec of every kernel (default 0) */
  int l2pf;      /* lw_ntt_kplan.l2pf of every kernel (default 0) */
  int epivec;    /* lw_ntt_kplan.epivec of every kernel (default 1) */
  int epipf;     /* lw_ntt_kplan.epipf of every kernel (0 or 1; default 0) */
  int epics;     /* lw_ntt_kplan.epics of every kernel (bits 1, 2, 4; default 0) */
  int provec;    /* lw_ntt_kplan.provec of every kernel (default 1) */
  int epi;       /* 0: no epilogue fusion in graphs (anchor_plan.c; for comparisons) */
  /* the cluster schedule (sizes 2^14 .. 2^17): sched 1 selects it (the
   * ntt_schedule option sets it), cluster its log2 blocks per cluster
   * (1..3; default by row size), t_cluster / e_cluster its log2 threads per
   * block and words per thread */
  int sched;
  int cluster, t_cluster, e_cluster;
  /* its exchange: xvec 0 scalar, 1 vectors (lw_ntt_kplan.xvec; default 1),
   * u_cluster log2 columns per thread (default: about E words, and with
   * xvec at least a 16-byte vector's) */
  int xvec, u_cluster;
  int minb_cluster; /* > 0: the cluster kernel's minimum blocks per SM (lw_ntt_kplan.minb) */
  /* rows_cluster: log2 rows a cluster transforms in turn (lw_ntt_kplan.log_rows,
   * default 0); ahead_cluster: with several, each next row's loads issued
   * ahead (lw_ntt_kplan.ahead, default 1) */
  int rows_cluster, ahead_cluster;
  int mixfuse;   /* a moddown's or rescale's computed operand (mixsteps.c): 0 always
                  * materialised, 1 always computed in its kernels, default: by bytes */
  int digitfwd;  /* modups sharing one inverse NTT (mixsteps.c): 0 a forward NTT per
                  * digit, 1 (default) one forward NTT of all their converted rows */
  int liftfuse;  /* rescale (mixsteps.c): 1 (default) its lift computed in its forward NTT's
                  * loads (lw_ntt_plan.lift), 0 a lift kernel writing the lifted rows */
  int ipfuse;    /* that batched forward NTT: 1 (default) its last kernel computes the
                  * sum the digits feed (a key switch's inner product) where the
                  * digits' values are in registers (mixsteps.c), 0 it stores them */
  int ipacc;     /* that last kernel: 1 folds each digit into the sum as its body ends
                  * where the sum is a left fold over the digits in their order (2
                  * components x E words live), 0 (default: measured faster) keeps
                  * every digit's words until all are transformed (D x E words) */
  int autpro;    /* an NTT whose operand's cone holds a coefficient-domain automorphism:
                  * 0 (default) the operand computed by a pointwise kernel first, 1 in
                  * the NTT's first kernel (a prologue of scattered loads: measured
                  * r62 +67%, r32 +154% over the NTT, against one pass of its own) */
  int autcol;    /* an NTT whose operand is a coefficient-domain automorphism of a value in
                  * memory: 1 the automorphism in a forward two-kernel plan's staged loads
                  * (lw_ntt_plan_aut: kernel 0 takes the source columns, kernel 1 permutes
                  * its chunks' words through shared memory; the default: H200,
                  * 272f0fe, 2^16, r32 +14.1% over the NTT alone against +47.9%
                  * with a pass first), 2 the same but kernel 1's first pass loads
                  * them at permuted positions directly (r32 +20.1%, r62 +8.2%
                  * against autcol=1's +9.4%), 3 kernel 1 loading as the plain kernel
                  * and permuting its registers (ntt_emit_aut.c), 0 as autpro says */
  int autvec;    /* with autcol: kernel 0's staged load reads 16-byte vectors, a thread's
                  * consecutive columns (1, r62's default), or one word a thread, a
                  * warp's consecutive columns (0, r32's default: its scattered shared
                  * stores then hit every bank once, where r32's 4-word vectors put 4
                  * lanes on each) */
  int autvec1;   /* with autcol=1: kernel 1's staged copy reads 16-byte vectors (1, the
                  * default) or one word a thread (0): a warp's 32 consecutive slots
                  * then go to positions s k mod N2 an odd stride apart, where a
                  * 4-word vector's 4 stores each put 8 lanes on 8 banks */
  int autreg;    /* with autcol: kernel 0 loads its first pass's source rows as the plain
                  * kernel does and permutes its registers (a compile-time permutation and
                  * a per-thread negacyclic rotation, ntt_emit_aut.c) instead of its
                  * staged load through shared memory (0); 1 by default */
  int bconvbatch; /* those digits' conversions (mixsteps.c, batched_fwd): 1 (default)
                   * one kernel for all digits of one shape, 0 one kernel per digit */
  int mdip;       /* moddowns whose operands are materialised (mixsteps.c, md_group: hoisted
                   * rotations' inner products): 1 (default) one pointwise kernel computing
                   * all of them into one buffer, 0 one kernel each */
  int mdipk;      /* with mdip: at most this many members' operands per pointwise kernel
                   * (1..16; default as measured: r32 2, r62 1), each kernel writing its
                   * members' places of the one buffer */
  int mdintt;     /* with mdip: 1 (default) one inverse NTT of every member's P rows, 0 one
                   * per moddown */
  int mdbconv;    /* with mdintt: 1 (default) one conversion P -> Q of them all, 0 one per
                   * moddown */
  int pminor;     /* block order (lw_ntt_plan.pminor): 1 (default) the polynomials' same
                   * rows adjacent in launch order, 0 polynomial by polynomial */
  int rowplans;   /* 1 (default): the measured plans of small batches (ntt_plan.c,
                   * batch_plans) over the size's own; 0: the size's plan at any batch */
  int mdrs;       /* rescale(add(d, moddown(a))) (mixsteps.c, mdrs_steps; HMult): 1 (default)
                   * one forward NTT for both, of moddown's converted rows plus rescale's
                   * lift, 0 moddown's and rescale's steps each */
  int ipchain;    /* 1: the inverse NTT after a reduce kernel (ipfuse), when it reads rows of
                   * the sum, runs its first kernel inside the reduce kernel
                   * (mixsteps_ipchain.c); 0 (default: measured slower) its two kernels of
                   * its own */
  int ipsync;     /* 1: the step after a reduce kernel that reads rows of its sum (moddown's
                   * inverse NTT of the P rows) waits for those rows only, counted per row
                   * (lw_ntt_plan.sig and .wait, mixsteps_ipsync.c); 0 (default: measured
                   * 4 us slower on the H200) for the whole reduce kernel */
  int convsync;   /* 1: a key switch's batched forward NTT after the digits' conversion
                   * (one launch, bconvbatch) waits for each row's digit only, counted
                   * per digit, and runs the digits the conversion finishes first first
                   * (mixsteps_ipsync.c); 0 (default: measured 4 us slower on the H200)
                   * for the whole conversion */
  int latewait;   /* ipntt: 1 (default) a head right after another waits for it at its end
                   * (lw_ntt_kplan.late_entry), 0 at its start */
  int ipntt;      /* forward NTTs of several operands with one table whose only readers
                   * sum their products (a key switch written with ntt_fwd nodes,
                   * anchor_ipntt.c): 1 (default) each one's first kernel alone, then one
                   * last kernel of them all computing the sum (ipfuse's reduce form), 0
                   * each transform stored */
  int l2pfprev;   /* l2pf on an NTT step whose source the step right before writes: 1
                   * (default) kept, 0 dropped (anchor_plan.c, l2pf_steps) */
} lw_ntt_tuning;

/* All fields -1 (the defaults). */
void lw_ntt_tuning_default(lw_ntt_tuning *t);
/* Parses "key=value,..." (keys as the field names, e (all three e_*), t
 * (both t_*), pad (both pad_*) and minb (the one kernel and both minb_*)
 * besides: ntt_plan.c's tuning_keys, which a bad item's error lists) over *t; cluster=<log2 C> also selects the
 * cluster schedule. NULL
 * or "" change nothing.
 * Errors: FHJIT_ERR_ARGUMENT naming the bad item. */
fhjit_status lw_ntt_tuning_parse(fhjit_context *ctx, const char *text, lw_ntt_tuning *t);

/* Chooses the schedule for one transform over [batch_rows, N] words. The
 * same plan serves the GPU and the host. The environment variable
 * FHJIT_NTT_PLAN (lw_ntt_tuning_parse's syntax) overrides the defaults (it
 * is part of compile-cache keys: see fhjit_graph_hash). Errors:
 * FHJIT_ERR_UNSUPPORTED (N outside 2^4..2^17, too many rows for one launch
 * grid), FHJIT_ERR_ARGUMENT (a malformed FHJIT_NTT_PLAN or one this size
 * cannot take). */
fhjit_status lw_ntt_plan_make(fhjit_context *ctx, fhjit_radix radix, ir_ntt_kind kind,
                              int log_n, int64_t rows, int64_t batch_rows, lw_ntt_plan *out);
/* log2 of the cluster schedule's blocks per cluster when ntt_plan does
 * not set `cluster` (1..3; measured rule in ntt_plan.c). */
int lw_ntt_cluster_log_default(fhjit_radix radix, int log_n);
/* The same with explicit tuning (NULL: defaults; the environment is not
 * read). */
fhjit_status lw_ntt_plan_make_tuned(fhjit_context *ctx, fhjit_radix radix, ir_ntt_kind kind,
                                    int log_n, int64_t rows, int64_t batch_rows,
                                    const lw_ntt_tuning *t, lw_ntt_plan *out);

/* A one-line description of a plan ("2 kernels: cols M=2^8 C=16 E=8 passes
 * 3+3+2 | chunks ..."), for diagnostics and benches. */
void lw_ntt_plan_describe(const lw_ntt_plan *p, char *buf, size_t size);
/* ceil(log2 x) (ntt_plan.c, shared with the emitter). */
int lw_ntt_ilog2(uint64_t x);
/* Shared words of one sub-transform row in a chunk kernel (with padding). */
int64_t lw_ntt_chunk_stride(const lw_ntt_kplan *k);

/* Pointwise work fused into an NTT's kernels.
 *
 * Prologue (sub != NULL): the first kernel computes its source element by
 * element instead of loading it, with lower.c's evaluator (lw_build_eval)
 * for result 0 of `sub`, a bound pointwise graph; its inputs become extra
 * arguments of that kernel. comp >= 0: the source is component `comp` of
 * result 0; -1: the whole of it (batch-row = component-major).
 *
 * Epilogue (nepi > 0): the last kernel, where it stores the transform's
 * final word at (batch-row br, index i), also evaluates result 0 of each
 * epi[t].sub there (lw_build_eval_reg: input epi[t].reg is the transform's
 * value, taken from registers) and stores it into that target's dense
 * buffer. ntt_comps <= 1: the transform has one component and every
 * component c of the target is computed at walk offset br * N + i and
 * stored at (c * batch_rows + br) * N + i; ntt_comps > 1: the target has the
 * transform's shape (components included), and only component br /
 * (batch_rows / ntt_comps) is computed, stored at br * N + i. skip_store:
 * the transform's own result is not stored (nothing else reads it). */
#define LW_NTT_MAX_EPI 4

typedef struct lw_ntt_epi {
  fhjit_graph *sub;
  int32_t reg;
} lw_ntt_epi;

/* ipfuse (the plan's reduce_members > 0): the members of a batched forward
 * NTT, member k's converted rows at batch rows [urow[k], urow[k] + m_k) of
 * each polynomial (rows per polynomial: the plan's rows), its output row o
 * (of out_rows) being converted row o (o < s0[k]) or o - nd[k] (o >= s0[k]
 * + nd[k]), and rows [s0[k], s0[k] + nd[k]) the operand's own rows (NTT
 * domain, read from epilogue 0's input d_input at d_offset + o *
 * d_row_stride + i * d_index_stride). The last kernel's block of output
 * row o transforms that row of every member in turn, keeps each member's
 * final words, and evaluates epilogue 0 with member k's word as register
 * input reg[k] (nothing else is stored). One polynomial only. */
typedef struct lw_ntt_reduce {
  int members;
  int64_t out_rows;
  int64_t s0[LW_MAX_REG], nd[LW_MAX_REG], urow[LW_MAX_REG];
  int32_t reg[LW_MAX_REG];
  int32_t d_input;
  int64_t d_offset, d_row_stride, d_index_stride;
  /* acc > 0 (ipacc): the sum is a left fold over the members in their order
   * and the epilogue's sub-graph has one result per member: result 0 is
   * T_0 (member 0's term), result k > 0 op_k(acc, T_k), the graph's own
   * fold step with the previous partial sum as register input acc_reg (of
   * acc components, read at the component evaluated); each result is
   * evaluated right after member k's body, with member k's word and the
   * accumulator's as registers, into the accumulator (acc components x E
   * words a thread); the last one is the sum. 0: result 0 is the sum of
   * every member's words (the slots). */
  int acc;
  int32_t acc_reg;
} lw_ntt_reduce;

typedef struct lw_ntt_fusion {
  fhjit_graph *sub; /* prologue */
  int comp;
  int nepi;         /* epilogue */
  lw_ntt_epi epi[LW_NTT_MAX_EPI];
  int ntt_comps;
  int skip_store;
  /* store_rows > 0: the prologue's last input is no operand of its
   * sub-graph but a buffer receiving each source word the prologue computes
   * (batch-row br = p * rows + r of the transform, index i) at word
   * ((p * store_rows) + store_first + r) * N + i: a value some later kernel
   * reads is written where it is computed (a modup's digit rows) */
  int64_t store_rows, store_first;
  lw_ntt_reduce red; /* ipfuse: members > 0 with the plan's reduce_members */
  /* ipchain (mixsteps_ipchain.c): chain != NULL on a reduce plan: its last
   * kernel also runs kernel 0 of plan `chain` (an inverse NTT of rows
   * [chain_row0, chain_row0 + chain->rows) of each component of epilogue
   * 0's output, which that plan's source view reads) on the words the
   * block has just stored, its arguments (chain's twiddles, source,
   * destination) appended to the kernel's (ntt_emit_chain.c). chained: this
   * plan's kernel 0 is that work of the step before it: only its last
   * kernel is built and run. */
  const lw_ntt_plan *chain;
  int64_t chain_row0;
  int chained;
  /* head (ipntt, anchor_ipntt.c): only kernel 0 is built and run, its
   * intermediate words being the step's output (kernel 1 runs in a later
   * step, over the words of several such steps; chained is set there) */
  int head;
} lw_ntt_fusion;

/* ipchain: the arguments a chain adds to the reduce kernel (twiddles,
 * source, destination of the chained plan), and whether plan `chain`'s
 * kernel 0 can run in reduce plan p's last kernel on output rows [row0,
 * row0 + chain->rows) of each component: a two-kernel inverse NTT of the
 * same size whose kernel 0 is a chunk kernel (not in place, no lift, no
 * row offset) with the reduce kernel's threads, whose blocks each lie
 * within one reduce block, reading those rows of the sum (its source view
 * the dense rows of epilogue 0's output: component c's row r at (c
 * out_rows + row0 + r) N), one polynomial. */
#define LW_NTT_CHAIN_ARGS 3
int lw_ntt_chain_fits(const lw_ntt_plan *p, const lw_ntt_plan *chain, int64_t row0);
/* Whether plan n's batch row b = c n->rows + r reads exactly row (c
 * out_rows + row0 + r) of a sum of out_rows rows per component (its
 * source view the dense rows [row0, row0 + n->rows) of each component),
 * for every b (ipchain, ipsync; ntt_emit_chain.c). */
int lw_ntt_reads_sum_rows(const lw_ntt_plan *n, int64_t out_rows, int64_t row0);

/* Adds the kernels of plan p to module m, named "<prefix>_k<j>". Every
 * kernel takes (params, i64 pstride, twiddles, src, dst); the first one also
 * the prologue's inputs (src is then unused), the last one then, per
 * epilogue target, its sub-graph's inputs and its output buffer (fu may be
 * NULL: neither): src as the plan's source view, dst dense [batch_rows, N];
 * kernel 1 of a two-kernel plan works in place on dst. For LW_GPU each is a
 * PTX kernel with launch bounds; for LW_HOST each is "<prefix>_k<j>_host"(ptr
 * slots, i64 block_begin, i64 block_end, ptr shared), slot j holding
 * argument j as 64 bits, and runs every thread of blocks [block_begin,
 * block_end). */
fhjit_status lw_ntt_build(fhjit_context *ctx, const lw_ntt_plan *p, const lw_ntt_fusion *fu,
                          lw_target target, const char *prefix, LLVMContextRef c,
                          LLVMModuleRef m);

/* Clears what target t lacks (programmatic dependent launch before sm_90:
 * pdl, entry; clusters: a cluster plan becomes its two-kernel schedule)
 * from a plan about to be built for it. */
void lw_ntt_for_target(lw_ntt_plan *p, const nv_target *t);
/* Kernel j's launch facts, for a plan lw_ntt_for_target has seen: its
 * LW_KERNEL_PDL flag, cluster dimensions and dynamic shared memory, and the
 * trailing LW_ARG_OWN argument (appended after the others are set). */
void lw_ntt_launch_facts(const lw_ntt_plan *p, int j, lw_kernel *k);

/* PTX and launch description of a standalone NTT: kernel arguments are
 * PARAMS, PSTRIDE, INPUT 1 (the twiddle table), then src and dst: INPUT 0
 * (the data) and RESULT 0 for the first kernel, RESULT 0 twice for the
 * second. arch: NULL means sm_90. */
fhjit_status lw_ntt_compile_ptx(fhjit_context *ctx, const lw_ntt_plan *p, const char *arch,
                                lw_program *out);

/* LLVM IR text of a plan's module (kind: FHJIT_EMIT_LLVM, _LLVM_OPT or
 * _PTX), malloc'd. */
fhjit_status lw_ntt_emit_text(fhjit_context *ctx, const lw_ntt_plan *p, fhjit_emit_kind kind,
                              const char *arch, char **text);

/* Host path: the plan's kernels JIT-compiled for this machine. */
typedef struct lw_ntt_host lw_ntt_host;

fhjit_status lw_ntt_host_create(fhjit_context *ctx, const lw_ntt_plan *p,
                                const lw_ntt_fusion *fu, lw_ntt_host **out);
void lw_ntt_host_destroy(lw_ntt_host *h);
/* Runs the transform: twiddles and `in` as the plan says, out dense
 * [batch_rows, N] words of the radix, not overlapping `in`; with a prologue,
 * `in` is unused (may be NULL); extra[]: the prologue's inputs, then per
 * epilogue target its inputs and its output (the kernels' extra arguments
 * in order). threads: worker threads, 0 = automatic. */
fhjit_status lw_ntt_host_run(fhjit_context *ctx, lw_ntt_host *h, const void *params,
                             int64_t pstride, const void *twiddles, const void *in, void *out,
                             const void *const *extra, int threads);

/* ------------------------------------------------ graphs with NTT anchors */

/* 1 when a live value of bound graph g is an NTT (the graph then runs as a
 * chain of kernels: see anchor.c). In anchor_plan.c; the three below in
 * anchor_gpu.c. */
int lw_graph_has_anchor(const fhjit_graph *g);
/* fhjit_emit / lw_compile_ptx for such graphs: text of `kind` (malloc'd) and,
 * when prog is not NULL, the program (PTX, kernels, scratch). */
fhjit_status lw_anchor_compile_gpu(fhjit_graph *g, const char *arch, fhjit_emit_kind kind,
                                   char **text, lw_program *prog);
/* lw_describe_program for such graphs: the program without building code. */
fhjit_status lw_anchor_describe(fhjit_graph *g, const char *arch, lw_program *out);
/* fhjit_emit's FHJIT_EMIT_PLAN for such graphs: one line per step (what it
 * computes, fused prologues and epilogues, buffers), its kernels and the
 * scratch buffers (malloc'd text). */
fhjit_status lw_anchor_plan_text(fhjit_graph *g, const char *arch, char **text);

/* epics: the parameters of epilogue evaluator sub (bit 2 + j: input j)
 * whose loads stream: the words of polynomials and keys of the
 * transform's length 2^log_n, each read at one position; not tables or
 * views of them that every position of a row reads (index stride 0). */
uint64_t lw_epics_params(const fhjit_graph *sub, int log_n);

#endif
