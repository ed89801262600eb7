/* driver_profile.h — ctx run --profile and --perf-map (driver_profile.c),
 * private to driver/.
 *
 * A profile is the plan of a kernel's regions (codegen.h), the counters the
 * profiled kernel fills, the model's own timings (ctxrt_model_times) and
 * the driver's wall clock around each run: together, where a run's time
 * goes, printed as one table after the runs.
 */
#ifndef CTX_DRIVER_PROFILE_H
#define CTX_DRIVER_PROFILE_H

#include "codegen/codegen.h"

typedef struct CtxProfile CtxProfile;

/* A profile of [k] (its plan: pass ctx_profile_plan to cg_jit_compile_with). */
CtxProfile *ctx_profile_create(const IlirKernel *k);
const CgProfile *ctx_profile_plan(const CtxProfile *p);
void ctx_profile_free(CtxProfile *p);

/* Starts counting (after the warm-up): zeroes [jit]'s counters and
 * [model]'s timings, and reads the clocks the cycle counter is calibrated
 * against. */
void ctx_profile_start(CtxProfile *p, CgJit *jit, CtxrtModel *model);

/* After each run: keeps [jit]'s counters and [model]'s timings so far,
 * which [batch] of the input it ran and the run's wall time [ms]. */
void ctx_profile_add_run(CtxProfile *p, const CgJit *jit, const CtxrtModel *model,
                         int64_t batch, double ms);

/* Stops counting and appends the table to [out], over each batch's faster
 * half of its runs (driver_profile.c says why): [threads] the team's size,
 * [name] the model's. */
void ctx_profile_report(CtxProfile *p, CgJit *jit, int threads, const char *name, CtxBuf *out);

/* Appends a line `START SIZE NAME` (hex) per function of [jit] to
 * /tmp/perf-PID.map, the file perf reads symbols of JIT-compiled code from.
 * Returns false when the file cannot be written ([path] names it). */
bool ctx_perf_map_write(const CgJit *jit, char *path, size_t path_size);

#endif
