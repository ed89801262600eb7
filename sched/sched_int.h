/* sched_int.h — declarations shared by the files of sched/. */
#ifndef CTX_SCHED_INT_H
#define CTX_SCHED_INT_H

#include "sched/sched.h"

/* Hoisting of node-independent operators into a prologue that runs once per
 * inference (sched_invariant.c). */
void sched_hoist_invariant(CtxArena *a, IlirKernel *k);

#endif
