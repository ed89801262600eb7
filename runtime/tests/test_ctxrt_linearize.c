/* test_ctxrt_linearize.c — the linearizer (ctxrt_linear_*): hand-worked numberings
 * of a PTB tree, a DAG listed out of order with shared predecessors and a batch of
 * sequences; every generator shape checked against an independent verifier
 * (check_linear: levels contiguous and exact, dependencies in strictly lower
 * levels, leaves exactly the ids below leaf_end, inverse permutations, dependency
 * rows, outputs, values, stable order within a level); 100,000-node chains and
 * sequences; mixed tiny and large trees; buffer reuse; determinism; every error;
 * the vector conversion of the value rows against C's conversion, bit for bit.
 */
#include "ctxrt_testutil.h"
#include "runtime/ctxrt_int.h"

#include <math.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CtxrtForest *gen(const char *text) {
  CtxrtGenSpec spec;
  CtxrtError err;
  CtxrtForest *f;
  ck_assert_msg(ctxrt_gen_parse(text, &spec, &err) == CTXRT_OK, "%s", err.msg);
  ck_assert_msg(ctxrt_generate(&spec, &f, &err) == CTXRT_OK, "%s", err.msg);
  return f;
}

static CtxrtLinear *lin_ok(const CtxrtForest *f, int32_t num_values, int32_t max_deps) {
  CtxrtLinear *lin;
  CtxrtError err;
  CtxrtStatus st = ctxrt_linear_create(f, num_values, max_deps, &lin, &err);
  ck_assert_msg(st == CTXRT_OK, "unexpected error: %s", err.msg);
  return lin;
}

/* An assertion that costs nothing when it holds (Check's own record a checkpoint
 * each, too slow for the per-node checks of 100,000-node inputs). */
#define EXPECT(c)                                                                        \
  do {                                                                                   \
    if (!(c)) ck_abort_msg("%s:%d: failed: %s", __FILE__, __LINE__, #c);                 \
  } while (0)

/* The level of each new id, from level_start; checks the ranges tile [0, n). */
static int32_t *levels_of(const CtxrtLinear *lin) {
  int32_t n = lin->num_nodes, L = lin->num_levels;
  int32_t *lev = malloc(((size_t)n + 1) * sizeof *lev);
  ck_assert_ptr_nonnull(lev);
  EXPECT((lin->level_start[0]) == (0));
  EXPECT((lin->level_start[L]) == (n));
  EXPECT((lin->leaf_end) == (L > 0 ? lin->level_start[1] : 0));
  for (int32_t l = 0; l < L; l++) {
    EXPECT((lin->level_len[l]) > (0));
    EXPECT((lin->level_len[l]) == (lin->level_start[l + 1] - lin->level_start[l]));
    for (int32_t w = lin->level_start[l]; w < lin->level_start[l + 1]; w++)
      lev[w] = l;
  }
  return lev;
}

/* Forest node [v]'s place among the dependencies of a node that has it
 * (the last such node), -1 when none has. */
static int32_t position_of(const CtxrtForest *f, int32_t v) {
  int32_t at = -1;
  for (int32_t u = 0; u < f->num_nodes; u++)
    for (int32_t j = f->dep_begin[u]; j < f->dep_begin[u + 1]; j++)
      if (f->dep[j] == v) at = j - f->dep_begin[u];
  return at;
}

/* The group of forest node [v] (ctxrt_linear_set_groups): the first whose
 * arity it has or whose position it holds, num_groups for the rest. */
static int32_t group_of(const CtxrtLinear *lin, const CtxrtForest *f, int32_t v) {
  for (int32_t g = 0; g < lin->num_groups; g++) {
    int32_t key = lin->group_arity[g];
    if (key >= 0 ? key == ctxrt_forest_num_deps(f, v) : key == CTXRT_POSITION_GROUP(position_of(f, v)))
      return g;
  }
  return lin->num_groups;
}

static void check_perm(const CtxrtLinear *lin, const CtxrtForest *f, const int32_t *lev) {
  int32_t L = lin->num_levels;
  for (int32_t w = 0; w < lin->num_nodes; w++) {
    int32_t v = lin->to_input[w], g = group_of(lin, f, v);
    EXPECT(v >= 0 && v < lin->num_nodes);
    EXPECT((lin->to_new[v]) == (w));
    /* within a level, by arity group, then forest order */
    if (w > 0 && lev[w - 1] == lev[w]) {
      int32_t u = lin->to_input[w - 1], h = group_of(lin, f, u);
      EXPECT(h < g || (h == g && u < v));
    }
    /* the groups' ends: g's nodes before its end, the later groups' after it */
    for (int32_t e = 0; e < lin->num_groups; e++) {
      int32_t end = lin->group_end[e * L + lev[w]];
      EXPECT(end >= lin->level_start[lev[w]] && end <= lin->level_start[lev[w] + 1]);
      EXPECT((g <= e) == (w < end));
    }
  }
}

/* Dependency rows translate the forest's, lie in lower levels, make the level
 * exact (balanced: at least the height), and leaves are exactly the ids below
 * leaf_end. */
static void check_deps(const CtxrtLinear *lin, const CtxrtForest *f, const int32_t *lev) {
  int32_t K = lin->max_deps;
  for (int32_t w = 0; w < lin->num_nodes; w++) {
    int32_t v = lin->to_input[w], c = ctxrt_forest_num_deps(f, v), want = 0;
    EXPECT((lin->num_deps[w]) == (c));
    EXPECT((c == 0) == (w < lin->leaf_end));
    EXPECT((c) <= (K));
    for (int32_t k = 0; k < K; k++) {
      int32_t d = lin->dep[(size_t)w * (size_t)K + (size_t)k];
      if (k >= c) {
        EXPECT((d) == (-1));
        continue;
      }
      EXPECT((d) == (lin->to_new[f->dep[f->dep_begin[v] + k]]));
      EXPECT((lev[d]) < (lev[w]));
      if (lev[d] + 1 > want) want = lev[d] + 1;
    }
    if (lin->balance)
      EXPECT((lev[w]) >= (want));
    else
      EXPECT((lev[w]) == (want));
  }
}

static void check_outputs(const CtxrtLinear *lin, const CtxrtForest *f) {
  int32_t *out = malloc(((size_t)f->num_nodes + 1) * sizeof *out);
  ck_assert_ptr_nonnull(out);
  int32_t count = ctxrt_forest_outputs(f, out);
  EXPECT((lin->num_outputs) == (count));
  for (int32_t i = 0; i < count; i++)
    EXPECT((lin->outputs[i]) == (lin->to_new[out[i]]));
  free(out);
}

static void check_values(const CtxrtLinear *lin, const CtxrtForest *f) {
  int32_t V = lin->num_values;
  for (int32_t w = 0; V > 0 && w < lin->num_nodes; w++) {
    int32_t v = lin->to_input[w], b = f->val_begin[v], c = f->val_begin[v + 1] - b;
    EXPECT((lin->has_val[w]) == (c > 0));
    for (int32_t j = 0; j < V; j++) {
      size_t at = (size_t)w * (size_t)V + (size_t)j;
      double x = c ? f->val[b + j] : 0;
      EXPECT(lin->val[at] == (float)x);
      if (x == (int32_t)x)
        EXPECT((lin->ival[at]) == ((int32_t)x));
      else
        EXPECT((lin->ival[at]) == (CTXRT_NOT_INT));
    }
  }
}

/* The independent verifier: everything the contract promises. */
static void check_linear(const CtxrtLinear *lin, const CtxrtForest *f) {
  EXPECT((lin->num_nodes) == (f->num_nodes));
  EXPECT((lin->kind) == (f->kind));
  int32_t *lev = levels_of(lin);
  check_perm(lin, f, lev);
  check_deps(lin, f, lev);
  check_outputs(lin, f);
  check_values(lin, f);
  free(lev);
}

static void eq_array(const int32_t *got, const int32_t *want, int32_t n) {
  for (int32_t i = 0; i < n; i++)
    if (got[i] != want[i]) ck_abort_msg("entry %d: %d != %d", i, got[i], want[i]);
}

START_TEST(test_ptb_golden) {
  /* pre-order: 0 root, 1 (2 17), 2 (4 ..), 3 (2 5), 4 (3 901) */
  CtxrtForest *f = tu_ptb("(3 (2 17) (4 (2 5) (3 901)))\n");
  CtxrtLinear *lin = lin_ok(f, 1, 0);
  ck_assert_int_eq(lin->num_levels, 3);
  ck_assert_int_eq(lin->leaf_end, 3);
  ck_assert_int_eq(lin->max_deps, 2);
  eq_array(lin->level_start, (const int32_t[]){0, 3, 4, 5}, 4);
  eq_array(lin->level_len, (const int32_t[]){3, 1, 1}, 3);
  eq_array(lin->to_input, (const int32_t[]){1, 3, 4, 2, 0}, 5);
  eq_array(lin->to_new, (const int32_t[]){4, 0, 3, 1, 2}, 5);
  eq_array(lin->num_deps, (const int32_t[]){0, 0, 0, 2, 2}, 5);
  eq_array(lin->dep, (const int32_t[]){-1, -1, -1, -1, -1, -1, 1, 2, 0, 3}, 10);
  eq_array(lin->ival, (const int32_t[]){17, 5, 901, 0, 0}, 5);
  ck_assert(lin->val[0] == 17 && lin->val[1] == 5 && lin->val[2] == 901);
  ck_assert(lin->has_val[2] == 1 && lin->has_val[3] == 0 && lin->val[3] == 0);
  ck_assert_int_eq(lin->num_outputs, 1);
  ck_assert_int_eq(lin->outputs[0], 4);
  check_linear(lin, f);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_dag_shared_out_of_order) {
  /* listed so that no single scan works: Kahn's algorithm; node 9 is shared */
  CtxrtForest *f = tu_nodes("dag\n5 1 : 7 9\n7 2 : 9\n9 3\n8 4.5 : 9 7\n");
  CtxrtLinear *lin = lin_ok(f, 1, 0);
  eq_array(lin->level_start, (const int32_t[]){0, 1, 2, 4}, 4);
  eq_array(lin->to_input, (const int32_t[]){2, 1, 0, 3}, 4);
  eq_array(lin->dep, (const int32_t[]){-1, -1, 0, -1, 1, 0, 0, 1}, 8);
  eq_array(lin->outputs, (const int32_t[]){2, 3}, 2);
  eq_array(lin->ival, (const int32_t[]){3, 2, 1, CTXRT_NOT_INT}, 4);
  ck_assert(lin->val[3] == 4.5f);
  check_linear(lin, f);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_sequences_by_position) {
  CtxrtForest *f =
      tu_nodes("sequence\n0 1\n1 2\n2 3\nsequence\n0 4\nsequence\n0 5\n1 6\n");
  CtxrtLinear *lin = lin_ok(f, 1, 0);
  eq_array(lin->level_start, (const int32_t[]){0, 3, 5, 6}, 4);
  eq_array(lin->to_input, (const int32_t[]){0, 3, 4, 1, 5, 2}, 6);
  eq_array(lin->dep, (const int32_t[]){-1, -1, -1, 0, 2, 3}, 6);
  eq_array(lin->outputs, (const int32_t[]){5, 1, 4}, 3);
  eq_array(lin->ival, (const int32_t[]){1, 4, 5, 2, 6, 3}, 6);
  check_linear(lin, f);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
}
END_TEST

static const char *const shapes[] = {
    "binary:leaves=19,count=10,seed=1,vocab=100",
    "binary:leaves=1,count=3,seed=2,vocab=5,features=2,values=all",
    "complete:height=6,count=2,features=3",
    "nary:nodes=300,arity=4,count=3,seed=5,vocab=40",
    "chain:nodes=50,count=2,vocab=9",
    "grid:rows=7,cols=9,count=2,seed=3,features=2",
    "sequence:length=30,count=4,seed=8,vocab=1000,features=1",
};
static const int32_t shape_values[] = {1, 3, 3, 1, 1, 2, 2};

START_TEST(test_generated_shapes) {
  CtxrtForest *f = gen(shapes[_i]);
  CtxrtLinear *lin = lin_ok(f, shape_values[_i], 0);
  check_linear(lin, f);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_node_list_examples) {
  CtxrtForest *f = tu_nodes("tree\n0 17 : 1 2 3\n1 5\n2 901 : 4\n3 6\n4 7\n"
                            "tree\n4 1 : 3\n3 2 : 2\n2 3 : 1\n1 4 : 0\n0 5\n");
  CtxrtLinear *lin = lin_ok(f, 1, 3);
  check_linear(lin, f);
  ck_assert_int_eq(lin->num_levels, 5);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
  f = tu_nodes("dag\n0 0.1 0.2 0.3\n1 0.4 0.5 0.6 : 0\n2 0.7 0.8 0.9 : 0\n"
               "3 1.0 1.1 1.2 : 1 2\n");
  lin = lin_ok(f, 3, 0);
  check_linear(lin, f);
  eq_array(lin->level_len, (const int32_t[]){1, 2, 1}, 3);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
}
END_TEST

/* 100,000 levels of one node each: no recursion anywhere. */
START_TEST(test_long_chain_and_sequence) {
  const char *specs[] = {"chain:nodes=100000,vocab=7", "sequence:length=100000,vocab=7"};
  for (int i = 0; i < 2; i++) {
    CtxrtForest *f = gen(specs[i]);
    CtxrtLinear *lin = lin_ok(f, 1, 0);
    ck_assert_int_eq(lin->num_levels, 100000);
    ck_assert_int_eq(lin->leaf_end, 1);
    ck_assert_int_eq(lin->level_len[99999], 1);
    ck_assert_int_eq(lin->outputs[0], 99999);
    check_linear(lin, f);
    ctxrt_linear_destroy(lin);
    ctxrt_forest_destroy(f);
  }
}
END_TEST

/* A single leaf, a deep left spine and a small tree in one batch. */
START_TEST(test_mixed_batch) {
  char *spine = tu_repeat("(1 ", 400), *close = tu_repeat(" (0 2))", 400);
  size_t len = strlen(spine) + strlen(close) + 64;
  char *text = malloc(len);
  ck_assert_ptr_nonnull(text);
  snprintf(text, len, "(0 9)\n%s(0 3)%s\n(2 (1 4) (1 5))\n", spine, close);
  CtxrtForest *f = tu_ptb(text);
  CtxrtLinear *lin = lin_ok(f, 1, 2);
  check_linear(lin, f);
  ck_assert_int_eq(lin->num_levels, 401);
  ck_assert_int_eq(lin->leaf_end, 1 + 401 + 2);
  ck_assert_int_eq(lin->level_len[1], 2); /* the spine's first and the small root */
  ck_assert_int_eq(lin->outputs[0], 0);   /* the lone leaf is its own root */
  ck_assert_int_eq(lin->outputs[1], f->num_nodes - 1);
  free(spine);
  free(close);
  free(text);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
}
END_TEST

/* skip_val / skip_ival: the skipped view keeps what it held (here a marker),
 * the other is written as always, and the rows are still checked. */
START_TEST(test_skip_views) {
  CtxrtForest *f = tu_nodes("dag\n0 1.5 2\n1 3 4 : 0\n");
  CtxrtLinear *lin = lin_ok(NULL, 0, 0);
  CtxrtError err;
  for (int skip = 1; skip <= 2; skip++) {
    ck_assert_int_eq(ctxrt_linear_fill(lin, f, 2, 0, &err), CTXRT_OK);
    for (int j = 0; j < 4; j++) {
      lin->val[j] = -7.0f;
      lin->ival[j] = -7;
    }
    lin->skip_val = skip == 1;
    lin->skip_ival = skip == 2;
    ck_assert_int_eq(ctxrt_linear_fill(lin, f, 2, 0, &err), CTXRT_OK);
    const float fv[] = {1.5f, 2, 3, 4};
    const int32_t iv[] = {CTXRT_NOT_INT, 2, 3, 4};
    for (int j = 0; j < 4; j++) {
      ck_assert_float_eq(lin->val[j], skip == 1 ? -7.0f : fv[j]);
      ck_assert_int_eq(lin->ival[j], skip == 2 ? -7 : iv[j]);
    }
    ck_assert_int_eq(lin->has_val[0] + lin->has_val[1], 2);
    lin->skip_val = lin->skip_ival = 1;
    ck_assert_int_eq(ctxrt_linear_fill(lin, f, 3, 0, &err), CTXRT_ERR_INVALID);
    ck_assert_str_eq(err.msg, "x:2: error: structure 1, node 0: expected 3 values or none, "
                              "found 2");
    lin->skip_val = lin->skip_ival = 0;
  }
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_fixed_arity_pads) {
  CtxrtForest *f = tu_ptb("(0 7)\n");
  CtxrtLinear *lin = lin_ok(f, 1, 2);
  ck_assert_int_eq(lin->max_deps, 2);
  eq_array(lin->dep, (const int32_t[]){-1, -1}, 2);
  ck_assert_int_eq(lin->leaf_end, 1);
  check_linear(lin, f);
  ctxrt_linear_destroy(lin);
  lin = lin_ok(f, 0, 0); /* no values read, no dependency columns */
  ck_assert_int_eq(lin->max_deps, 0);
  ck_assert_int_eq(lin->num_values, 0);
  ck_assert_int_eq(lin->has_val[0], 0);
  check_linear(lin, f);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(f);
}
END_TEST

static int same_linear(const CtxrtLinear *a, const CtxrtLinear *b) {
  int32_t n = a->num_nodes;
  size_t nk = (size_t)n * (size_t)a->max_deps, nv = (size_t)n * (size_t)a->num_values;
  return n == b->num_nodes && a->num_levels == b->num_levels &&
         a->max_deps == b->max_deps && a->num_values == b->num_values &&
         memcmp(a->level_start, b->level_start, ((size_t)a->num_levels + 1) * 4) == 0 &&
         memcmp(a->to_input, b->to_input, (size_t)n * 4) == 0 &&
         memcmp(a->dep, b->dep, nk * 4) == 0 && memcmp(a->val, b->val, nv * 4) == 0 &&
         memcmp(a->ival, b->ival, nv * 4) == 0;
}

/* Refilling one linearization gives what a fresh one gives, and a smaller batch
 * after a larger one reuses the memory. */
START_TEST(test_reuse_and_determinism) {
  CtxrtForest *big = gen("binary:leaves=40,count=10,seed=4,vocab=50");
  CtxrtForest *dag = tu_nodes("dag\n5 1 : 7 9\n7 2 : 9\n9 3\n8 4 : 9 7\n");
  CtxrtForest *small = gen("binary:leaves=5,count=2,seed=4,vocab=50");
  CtxrtLinear *fresh = lin_ok(big, 1, 2), *lin = lin_ok(NULL, 0, 0);
  CtxrtError err;
  ck_assert_int_eq(lin->num_nodes, 0);
  ck_assert_int_eq(lin->num_levels, 0);
  ck_assert_int_eq(ctxrt_linear_fill(lin, big, 1, 2, &err), CTXRT_OK);
  ck_assert(same_linear(lin, fresh));
  const void *block = lin->dep;
  ck_assert_int_eq(ctxrt_linear_fill(lin, dag, 1, 2, &err), CTXRT_OK);
  check_linear(lin, dag);
  ck_assert_int_eq(ctxrt_linear_fill(lin, small, 1, 2, &err), CTXRT_OK);
  check_linear(lin, small);
  ck_assert_int_eq(ctxrt_linear_fill(lin, big, 1, 2, &err), CTXRT_OK);
  ck_assert(same_linear(lin, fresh));
  ck_assert_ptr_eq(lin->dep, block);
  ctxrt_linear_destroy(fresh);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(big);
  ctxrt_forest_destroy(dag);
  ctxrt_forest_destroy(small);
}
END_TEST

typedef struct ErrCase {
  const char *text;
  int32_t num_values, max_deps;
  CtxrtStatus status;
  const char *msg;
} ErrCase;

static const ErrCase errors[] = {
    {"dag\n0 : 1\n1 : 2\n2 : 1\n", 0, 0, CTXRT_ERR_INVALID,
     "x:3: error: structure 1, node 1: on a dependency cycle"},
    {"dag\n0 1\ndag\n3 : 4\n4 : 3\n", 0, 0, CTXRT_ERR_INVALID,
     "x:5: error: structure 2, node 4: on a dependency cycle"},
    {"tree\n0 1 : 1 2 3\n1 2\n2 3\n3 4\n", 1, 2, CTXRT_ERR_INVALID,
     "x:2: error: structure 1, node 0: 3 dependencies, more than the most allowed, 2"},
    {"dag\n0 1 2\n1 3 : 0\n", 2, 0, CTXRT_ERR_INVALID,
     "x:3: error: structure 1, node 1: expected 2 values or none, found 1"},
    {"sequence\n0 1\n", -1, 0, CTXRT_ERR_ARG,
     "error: linearize: negative num_values (-1) or max_deps (0)"},
};

START_TEST(test_errors) {
  const ErrCase *c = &errors[_i];
  CtxrtForest *f = tu_nodes(c->text);
  CtxrtLinear *lin = (CtxrtLinear *)&lin;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_linear_create(f, c->num_values, c->max_deps, &lin, &err),
                   c->status);
  ck_assert_ptr_null(lin);
  ck_assert_int_eq(err.status, c->status);
  ck_assert_str_eq(err.msg, c->msg);
  /* a failed refill leaves an empty but usable linearization */
  lin = lin_ok(NULL, 0, 0);
  ck_assert_int_eq(ctxrt_linear_fill(lin, f, c->num_values, c->max_deps, &err),
                   c->status);
  ck_assert_int_eq(lin->num_nodes, 0);
  ck_assert_int_eq(lin->num_levels, 0);
  ck_assert_int_eq(lin->level_start[0], 0);
  CtxrtForest *g = gen("binary:leaves=3,vocab=4");
  ck_assert_int_eq(ctxrt_linear_fill(lin, g, 1, 0, &err), CTXRT_OK);
  check_linear(lin, g);
  ctxrt_linear_destroy(lin);
  ctxrt_forest_destroy(g);
  ctxrt_forest_destroy(f);
}
END_TEST

/* Arity groups: random trees of mixed arity and grid DAGs under several group
 * lists, every contract property (group order, group ends) checked; the groups
 * stay for later fills until turned off; bad group lists are errors. */
START_TEST(test_arity_groups) {
  static const char *const kinds[] = {"nary:nodes=300,arity=4,count=3,seed=5",
                                      "grid:rows=6,cols=7,count=2", "binary:leaves=40"};
  static const int32_t lists[][3] = {{2, 0, 0}, {1, 3, 0}, {0, 2, 1}};
  static const int32_t counts[] = {1, 2, 3};
  CtxrtError err;
  CtxrtLinear *lin = lin_ok(NULL, 0, 0);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      CtxrtForest *f = gen(kinds[i]);
      ck_assert_int_eq(ctxrt_linear_set_groups(lin, lists[j], counts[j], &err), CTXRT_OK);
      ck_assert_int_eq(ctxrt_linear_fill(lin, f, 0, 4, &err), CTXRT_OK);
      ck_assert_int_eq(lin->num_groups, counts[j]);
      check_linear(lin, f);
      ctxrt_forest_destroy(f);
    }
  CtxrtForest *f = tu_nodes("tree\n0 : 1 2 3\n1 : 4\n2 : 5 6\n3\n4\n5\n6\n");
  ck_assert_int_eq(ctxrt_linear_set_groups(lin, (const int32_t[]){2, 1}, 2, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_linear_fill(lin, f, 0, 0, &err), CTXRT_OK);
  /* level 1: 1 (one child), 2 (two), 3 is a leaf; level 0 the leaves 3 4 5 6 */
  eq_array(lin->level_start, (const int32_t[]){0, 4, 6, 7}, 4);
  eq_array(lin->to_input, (const int32_t[]){3, 4, 5, 6, 2, 1, 0}, 7);
  eq_array(lin->group_end, (const int32_t[]){0, 5, 6, 0, 6, 6}, 6);
  ck_assert_int_eq(ctxrt_linear_set_groups(lin, NULL, 0, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_linear_fill(lin, f, 0, 0, &err), CTXRT_OK);
  eq_array(lin->to_input, (const int32_t[]){3, 4, 5, 6, 1, 2, 0}, 7);
  check_linear(lin, f);
  ctxrt_forest_destroy(f);
  ck_assert_int_eq(ctxrt_linear_set_groups(lin, (const int32_t[]){1, 1}, 2, &err), CTXRT_ERR_ARG);
  ck_assert_int_eq(ctxrt_linear_set_groups(lin, (const int32_t[]){-1, -1}, 2, &err),
                   CTXRT_ERR_ARG);
  ck_assert_int_eq(ctxrt_linear_set_groups(lin, (const int32_t[]){INT32_MIN}, 1, &err),
                   CTXRT_ERR_ARG);
  ck_assert_int_eq(ctxrt_linear_set_groups(lin, NULL, CTXRT_MAX_GROUPS + 1, &err),
                   CTXRT_ERR_ARG);
  ctxrt_linear_destroy(lin);
}
END_TEST

/* Position groups: each level's nodes that are child 0 of their parent,
 * then child 1, then the rest (roots, later children); checked on a small
 * tree by hand and on random trees and a grid by the contract checks. */
START_TEST(test_position_groups) {
  CtxrtError err;
  CtxrtLinear *lin = lin_ok(NULL, 0, 0);
  const int32_t two[] = {CTXRT_POSITION_GROUP(0), CTXRT_POSITION_GROUP(1)};
  CtxrtForest *f = tu_nodes("tree\n0 : 1 2 3\n1 : 4\n2 : 5 6\n3\n4\n5\n6\n");
  ck_assert_int_eq(ctxrt_linear_set_groups(lin, two, 2, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_linear_fill(lin, f, 0, 0, &err), CTXRT_OK);
  /* level 0: 4 and 5 are first children, 6 a second, 3 a third; level 1: 1
   * the first child of 0, 2 its second; level 2: the root */
  eq_array(lin->level_start, (const int32_t[]){0, 4, 6, 7}, 4);
  eq_array(lin->to_input, (const int32_t[]){4, 5, 6, 3, 1, 2, 0}, 7);
  eq_array(lin->group_end, (const int32_t[]){2, 5, 6, 3, 6, 6}, 6);
  check_linear(lin, f);
  ctxrt_forest_destroy(f);
  static const char *const kinds[] = {"nary:nodes=300,arity=4,count=3,seed=5",
                                      "binary:leaves=40,count=4", "grid:rows=5,cols=6"};
  const int32_t mixed[] = {CTXRT_POSITION_GROUP(1), 0, CTXRT_POSITION_GROUP(0)};
  for (int i = 0; i < 3; i++) {
    f = gen(kinds[i]);
    ck_assert_int_eq(ctxrt_linear_set_groups(lin, i == 2 ? two : mixed, i == 2 ? 2 : 3, &err),
                     CTXRT_OK);
    ck_assert_int_eq(ctxrt_linear_fill(lin, f, 0, 4, &err), CTXRT_OK);
    check_linear(lin, f);
    ctxrt_forest_destroy(f);
  }
  ctxrt_linear_destroy(lin);
}
END_TEST

/* Balanced levels (CtxrtLinear.balance): a chain of five internal nodes
 * beside a tree of three. By height the levels above the leaves hold 3, 2,
 * 1, 1, 1 nodes; balanced 2, 2, 2, 1, 1: each level takes the chain's node
 * that must go there and one of the small tree's, whose root waits until
 * level 3. The level count, the leaf level and every contract but the
 * exact height hold (check_linear), on generated trees, grids and
 * sequences too, where no level holds more nodes than by height's widest. */
START_TEST(test_balance_levels) {
  CtxrtForest *f = tu_nodes("tree\n0 : 10 1\n1 : 11 2\n2 : 12 3\n3 : 13 4\n4 : 14 15\n"
                            "10\n11\n12\n13\n14\n15\n"
                            "tree\n20 : 21 22\n21 : 23 24\n22 : 25 26\n23\n24\n25\n26\n");
  CtxrtLinear *lin = lin_ok(NULL, 0, 0), *asap = lin_ok(f, 0, 0);
  CtxrtError err;
  eq_array(asap->level_len, (const int32_t[]){10, 3, 2, 1, 1, 1}, 6);
  lin->balance = 1;
  ck_assert_int_eq(ctxrt_linear_fill(lin, f, 0, 0, &err), CTXRT_OK);
  eq_array(lin->level_len, (const int32_t[]){10, 2, 2, 2, 1, 1}, 6);
  int32_t *lev = levels_of(lin);
  const int32_t chain_level[] = {5, 4, 3, 2, 1}; /* forest nodes 0..4: their heights */
  for (int32_t v = 0; v < 5; v++)
    ck_assert_int_eq(lev[lin->to_new[v]], chain_level[v]);
  ck_assert_int_eq(lev[lin->to_new[11]], 3); /* the small tree's root (forest node 11) */
  free(lev);
  check_linear(lin, f);
  ctxrt_forest_destroy(f);
  static const char *const kinds[] = {"binary:leaves=40,count=10,seed=3",
                                      "nary:nodes=300,arity=4,count=6,seed=5",
                                      "grid:rows=5,cols=6", "sequence:length=9,count=3"};
  for (int i = 0; i < 4; i++) {
    f = gen(kinds[i]);
    ctxrt_linear_destroy(asap);
    asap = lin_ok(f, 0, 0);
    ck_assert_int_eq(ctxrt_linear_fill(lin, f, 0, 0, &err), CTXRT_OK);
    check_linear(lin, f);
    ck_assert_int_eq(lin->num_levels, asap->num_levels);
    ck_assert_int_eq(lin->leaf_end, asap->leaf_end);
    int32_t widest = 0;
    for (int32_t l = 1; l < asap->num_levels; l++)
      if (asap->level_len[l] > widest) widest = asap->level_len[l];
    for (int32_t l = 1; l < lin->num_levels; l++)
      ck_assert_int_le(lin->level_len[l], widest);
    ctxrt_forest_destroy(f);
  }
  ctxrt_linear_destroy(asap);
  ctxrt_linear_destroy(lin);
}
END_TEST

START_TEST(test_empty_forest) {
  CtxrtForest *f = tu_nodes("# nothing\n");
  CtxrtLinear *lin = lin_ok(f, 1, 0);
  ck_assert_int_eq(lin->num_nodes, 0);
  ck_assert_int_eq(lin->num_levels, 0);
  ck_assert_int_eq(lin->leaf_end, 0);
  ck_assert_int_eq(lin->num_outputs, 0);
  ck_assert_int_eq(lin->level_start[0], 0);
  ctxrt_linear_destroy(lin);
  ctxrt_linear_destroy(NULL);
  ctxrt_forest_destroy(f);
}
END_TEST

/* ctxrt__to_f32 (the value rows' conversion, in the CPU's widest vectors)
 * and each instruction set it chooses from that this CPU has (AVX, AVX-512,
 * the scalar loop) give C's (float) of each double, bit for bit, at every
 * length around the
 * vector widths (the scalar tails) and for the cases where rounding or range
 * matter: ties to even, overflow to infinity, float denormals and underflow
 * to zero, signed zero, infinities and NaN. */
START_TEST(test_value_conversion) {
  enum { N = 70 };
  static const double special[] = {0.0,
                                   -0.0,
                                   1.0 + 0x1p-24,
                                   1.0 + 0x1p-23 + 0x1p-24,
                                   -(1.0 + 0x1p-24),
                                   3.4028235677973366e38,
                                   1e39,
                                   -1e39,
                                   0x1p-149,
                                   0x1p-150,
                                   0x1.8p-150,
                                   1e-46,
                                   0x1p-130,
                                   INFINITY,
                                   -INFINITY,
                                   NAN,
                                   0.1,
                                   -2.5e-7};
  enum { S = sizeof special / sizeof special[0] };
  double src[N + 1];
  float got[N + 1], want[N + 1];
  CtxrtRng rng;
  ctxrt_rng_seed(&rng, 7);
  for (int i = 0; i <= N; i++)
    src[i] = i % 3 == 0 ? special[(i / 3) % S] : (ctxrt_rng_unit(&rng) - 0.5) * 1e3;
  int ran = 0;
  for (int isa = -1; isa < CTXRT_ISA_COUNT; isa++) /* -1: the dispatcher */
    for (int n = 0; n <= N; n++)
      for (int off = 0; off < 2 && off + n <= N + 1; off++) { /* unaligned too */
        memset(got, 0x55, sizeof got);
        if (isa < 0)
          ctxrt__to_f32(got, src + off, (size_t)n);
        else if (!ctxrt__to_f32_isa((CtxrtIsa)isa, got, src + off, (size_t)n))
          continue;
        ran += n == N && off == 0;
        for (int i = 0; i < n; i++) {
          want[i] = (float)src[off + i];
          uint32_t a, b;
          memcpy(&a, &got[i], 4);
          memcpy(&b, &want[i], 4);
          ck_assert_msg(a == b || (isnan(got[i]) && isnan(want[i])),
                        "isa %d n=%d off=%d i=%d: %a gave %a, C's conversion %a", isa, n,
                        off, i, src[off + i], (double)got[i], (double)want[i]);
        }
        uint32_t past;
        memcpy(&past, &got[n], 4);
        ck_assert_msg(past == 0x55555555u, "isa %d n=%d: wrote past the end", isa, n);
      }
  ck_assert_int_ge(ran, 2); /* the dispatcher and the scalar loop at least */
}
END_TEST

static Suite *linearize_suite(void) {
  Suite *s = suite_create("linearize");
  TCase *tc = tcase_create("linearize");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_ptb_golden);
  tcase_add_test(tc, test_dag_shared_out_of_order);
  tcase_add_test(tc, test_sequences_by_position);
  tcase_add_loop_test(tc, test_generated_shapes, 0,
                      (int)(sizeof shapes / sizeof shapes[0]));
  tcase_add_test(tc, test_node_list_examples);
  tcase_add_test(tc, test_long_chain_and_sequence);
  tcase_add_test(tc, test_mixed_batch);
  tcase_add_test(tc, test_fixed_arity_pads);
  tcase_add_test(tc, test_skip_views);
  tcase_add_test(tc, test_reuse_and_determinism);
  tcase_add_loop_test(tc, test_errors, 0, (int)(sizeof errors / sizeof errors[0]));
  tcase_add_test(tc, test_empty_forest);
  tcase_add_test(tc, test_arity_groups);
  tcase_add_test(tc, test_position_groups);
  tcase_add_test(tc, test_balance_levels);
  tcase_add_test(tc, test_value_conversion);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(linearize_suite());
}
