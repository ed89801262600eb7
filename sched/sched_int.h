/* sched_int.h — declarations shared by the files of sched/. */
#ifndef CTX_SCHED_INT_H
#define CTX_SCHED_INT_H

#include "sched/sched.h"

/* Hoisting of node-independent operators into a prologue that runs once per
 * inference (sched_invariant.c); only the buffers of [only] (NULL: any). */
void sched_hoist_invariant(CtxArena *a, IlirKernel *k, const bool *only);

/* A schedule's directives (sched_plan.c): the buffers its hoist, dense and
 * tile directives name, into [plan] (before the passes); its loop directives
 * applied to [k] (after hoisting, before tiling), false after reporting one
 * that does not apply. */
void sched_schedule_sets(CtxArena *a, const IlirKernel *k, SchedPlan *plan);
bool sched_schedule_loops(CtxArena *a, CtxDiag *diag, IlirKernel *k, const SchedPlan *plan);

#endif
