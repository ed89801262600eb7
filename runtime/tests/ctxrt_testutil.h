/* ctxrt_testutil.h — helpers shared by the runtime's Check suites: a private
 * temporary directory, reading inputs from strings, and the main() runner. */
#ifndef CTXRT_TESTUTIL_H
#define CTXRT_TESTUTIL_H

#include "runtime/ctxrt.h"

#include <check.h>
#include <stddef.h>

/* Per-test timeout in seconds: generous, for AddressSanitizer builds. */
#define TU_TIMEOUT 120

/* A path inside the suite's temporary directory (a static buffer per call slot:
 * up to four results stay valid at once). */
const char *tu_path(const char *name);

/* Writes [len] bytes (or strlen(data) when [len] is (size_t)-1) to tu_path(name);
 * returns that path. */
const char *tu_write(const char *name, const void *data, size_t len);

/* Reads [text] as node lists / PTB (no vocabulary) named "x", failing the test on
 * an error. */
CtxrtForest *tu_nodes(const char *text);
CtxrtForest *tu_ptb(const char *text);

/* Reads [text] expecting an error; returns the message (a static buffer). */
const char *tu_nodes_err(const char *text);
const char *tu_ptb_err(const char *text);

/* Reads node lists [text] (must succeed), validates against [spec] and returns the
 * message ("" when it passed). */
const char *tu_validate(const char *text, const CtxrtSpec *spec);

/* A malloc'ed copy of the concatenation of [count] copies of [piece]. */
char *tu_repeat(const char *piece, size_t count);

/* Makes the temporary directory, runs [s] and returns main's exit status. */
int tu_run(Suite *s);

#endif
