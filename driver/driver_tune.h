/* driver_tune.h — ctx tune's parts (driver_tune.c: running candidates;
 * driver_tune_space.c: the space and the search), private to driver/. */
#ifndef CTX_DRIVER_TUNE_H
#define CTX_DRIVER_TUNE_H

#include "driver/driver.h"
#include "sched/sched.h"

enum { TUNE_MAX_OUTPUTS = 16 };

typedef struct {
  const CtxOptions *opts;
  const char *self;   /* this ctx binary (/proc/self/exe) */
  const char *model;  /* MODEL.ctx */
  const char *name;   /* the model's name */
  const RaProgram *program;
  char dir[256];      /* the scratch directory */
  char *outputs[TUNE_MAX_OUTPUTS]; /* the .npy files a run writes (ref/, cand/) */
  int noutputs;
  long repeat;        /* passes over the sample of one timing (--repeat) */
  long batches;       /* batches per pass (from the default's first run) */
  double default_ms;  /* the default schedule's median (0: not yet measured) */
} TuneCtx;

double ctx_tune_now(void);

/* Runs the interpreter on the sample into DIR/ref/; false with the reason
 * in [why]. */
bool ctx_tune_reference(TuneCtx *T, char *why, size_t size);

/* Times the schedule file [sched] (median ms per batch into [*ms]) and
 * checks its outputs against the interpreter's; false with the reason. */
bool ctx_tune_measure(TuneCtx *T, const char *sched, double *ms, char *why, size_t size);

/* Whether DIR/cand/'s outputs match DIR/ref/'s (the last measured run). */
bool ctx_tune_outputs_match(TuneCtx *T, char *why, size_t size);

#endif
