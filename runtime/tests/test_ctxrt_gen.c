/* test_ctxrt_gen.c — splitmix64, generator spec strings and the generators:
 * golden outputs (computed by an independent Python transcription of the text in
 * ctxrt.h), determinism, the shape of every kind, 100,000-node chains, and every
 * spec error with its exact message. */
#include "ctxrt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

START_TEST(test_splitmix64) {
  CtxrtRng rng;
  ctxrt_rng_seed(&rng, 0);
  ck_assert_uint_eq(ctxrt_rng_next(&rng), 0xE220A8397B1DCDAFu);
  ck_assert_uint_eq(ctxrt_rng_next(&rng), 0x6E789E6AA1B965F4u);
  ck_assert_uint_eq(ctxrt_rng_next(&rng), 0x06C45D188009454Fu);
  ctxrt_rng_seed(&rng, 0);
  ck_assert_uint_eq(ctxrt_rng_below(&rng, 1000), 0xE220A8397B1DCDAFu % 1000);
  ck_assert(ctxrt_rng_unit(&rng) == (double)(0x6E789E6AA1B965F4u >> 11) * 0x1.0p-53);
  for (int i = 0; i < 1000; i++) {
    double u = ctxrt_rng_unit(&rng);
    ck_assert(u >= 0 && u < 1);
  }
}
END_TEST

static CtxrtForest *gen(const char *text) {
  CtxrtGenSpec spec;
  CtxrtError err;
  CtxrtForest *f;
  ck_assert_msg(ctxrt_gen_parse(text, &spec, &err) == CTXRT_OK, "%s", err.msg);
  ck_assert_msg(ctxrt_generate(&spec, &f, &err) == CTXRT_OK, "%s", err.msg);
  return f;
}

typedef struct Golden {
  const char *spec;
  int32_t nodes;
  int32_t dep_begin[16];
  int32_t dep[16];
  double val[16];
} Golden;

static const Golden golden[] = {
    {"binary:leaves=5,seed=7,vocab=100",
     9,
     {0, 2, 4, 4, 6, 6, 8, 8, 8, 8},
     {1, 8, 2, 3, 4, 5, 6, 7},
     {74, 5, 98, 82, 85}},
    {"nary:nodes=8,arity=3,seed=3,vocab=50",
     8,
     {0, 3, 6, 6, 7, 7, 7, 7, 7},
     {1, 3, 7, 2, 5, 6, 4},
     {20, 42, 22, 0, 11, 2, 31, 12}},
    {"grid:rows=2,cols=3,seed=1,features=2",
     6,
     {0, 0, 1, 2, 3, 5, 7},
     {0, 1, 0, 1, 3, 2, 4},
     {0x1.10a2de0000000p-3, 0x1.f75c6e0000000p-2, 0x1.e24e8c0000000p-1,
      -0x1.c7cf2e0000000p-4, -0x1.c895640000000p-4, 0x1.0d34300000000p-1,
      0x1.8267b20000000p-1, 0x1.79eec40000000p-5, -0x1.b7473a0000000p-2,
      0x1.2d0d720000000p-1, -0x1.88a2380000000p-3, 0x1.afcd440000000p-3}},
    {"binary:leaves=3,count=2,seed=42,vocab=10,values=all",
     10,
     {0, 2, 4, 4, 4, 4, 6, 6, 8, 8, 8},
     {1, 4, 2, 3, 6, 7, 8, 9},
     {8, 4, 0, 2, 5, 4, 7, 6, 8, 5}},
    {"sequence:length=4,seed=9,vocab=1000,features=1",
     4,
     {0, 0, 1, 2, 3},
     {0, 1, 2},
     {228, 0x1.00b62a0000000p-1, 638, 0x1.23a6340000000p-1, 601, -0x1.8aa42e0000000p-1,
      748, 0x1.ef27580000000p-1}},
};

START_TEST(test_golden) {
  const Golden *g = &golden[_i];
  CtxrtForest *f = gen(g->spec);
  ck_assert_int_eq(f->num_nodes, g->nodes);
  for (int32_t n = 0; n <= g->nodes; n++)
    ck_assert_int_eq(f->dep_begin[n], g->dep_begin[n]);
  for (int32_t k = 0; k < f->dep_begin[g->nodes]; k++)
    ck_assert_int_eq(f->dep[k], g->dep[k]);
  for (int32_t k = 0; k < f->val_begin[g->nodes]; k++)
    ck_assert_msg(f->val[k] == g->val[k], "value %d: %a != %a", k, f->val[k], g->val[k]);
  ctxrt_forest_destroy(f);
}
END_TEST

static int same_forest(const CtxrtForest *a, const CtxrtForest *b) {
  if (a->num_nodes != b->num_nodes || a->num_structs != b->num_structs) return 0;
  int32_t n = a->num_nodes;
  return memcmp(a->dep_begin, b->dep_begin, (size_t)(n + 1) * 4) == 0 &&
         memcmp(a->dep, b->dep, (size_t)a->dep_begin[n] * 4) == 0 &&
         memcmp(a->val_begin, b->val_begin, (size_t)(n + 1) * 4) == 0 &&
         memcmp(a->val, b->val, (size_t)a->val_begin[n] * 8) == 0;
}

START_TEST(test_deterministic) {
  CtxrtForest *a = gen("binary:leaves=50,count=20,seed=11,vocab=300");
  CtxrtForest *b = gen("binary:leaves=50,count=20,seed=11,vocab=300");
  CtxrtForest *c = gen("binary:leaves=50,count=20,seed=12,vocab=300");
  ck_assert(same_forest(a, b));
  ck_assert(!same_forest(a, c));
  ctxrt_forest_destroy(a);
  ctxrt_forest_destroy(b);
  ctxrt_forest_destroy(c);
}
END_TEST

static void validate_ok(const CtxrtForest *f, const CtxrtSpec *spec) {
  CtxrtError err;
  ck_assert_msg(ctxrt_forest_validate(f, spec, &err) == CTXRT_OK, "%s", err.msg);
}

START_TEST(test_binary) {
  CtxrtForest *f = gen("binary:leaves=20,count=10,seed=7,vocab=100");
  ck_assert_int_eq(f->kind, CTXRT_TREE);
  ck_assert_int_eq(f->num_structs, 10);
  ck_assert_int_eq(f->num_nodes, 10 * 39);
  for (int32_t s = 0; s < 10; s++) {
    int32_t leaves = 0;
    ck_assert_int_eq(f->struct_begin[s], 39 * s);
    ck_assert_int_eq(f->struct_line[s], 0);
    for (int32_t n = f->struct_begin[s]; n < f->struct_begin[s + 1]; n++) {
      int32_t deps = ctxrt_forest_num_deps(f, n),
              vals = f->val_begin[n + 1] - f->val_begin[n];
      ck_assert(deps == 0 || deps == 2);
      ck_assert_int_eq(f->id[n], n - f->struct_begin[s]);
      ck_assert_int_eq(f->line[n], 0);
      ck_assert_int_eq(vals, deps == 0);
      if (deps == 0) {
        leaves++;
        double w = f->val[f->val_begin[n]];
        ck_assert(w >= 0 && w < 100 && w == (int)w && f->val_is_int[f->val_begin[n]]);
      } else {
        /* pre-order: the left child follows its parent */
        ck_assert_int_eq(f->dep[f->dep_begin[n]], n + 1);
      }
    }
    ck_assert_int_eq(leaves, 20);
  }
  CtxrtSpec spec = {CTXRT_TREE, 2, 2, 1, CTXRT_VALUES_LEAVES, (const int64_t[]){100}};
  validate_ok(f, &spec);
  ck_assert_str_eq(f->name, "binary:leaves=20,count=10,seed=7,vocab=100,values=leaves");
  ctxrt_forest_destroy(f);
  f = gen("binary:leaves=1");
  ck_assert_int_eq(f->num_nodes, 1);
  ck_assert_int_eq(f->val_begin[1], 0);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_complete) {
  CtxrtForest *f = gen("complete:height=3,vocab=7,values=all");
  ck_assert_int_eq(f->num_nodes, 15);
  for (int32_t n = 0; n < 15; n++) {
    int32_t deps = ctxrt_forest_num_deps(f, n);
    ck_assert_int_eq(deps, n < 7 ? 2 : 0);
    if (deps) {
      ck_assert_int_eq(f->dep[f->dep_begin[n]], 2 * n + 1);
      ck_assert_int_eq(f->dep[f->dep_begin[n] + 1], 2 * n + 2);
    }
    ck_assert_int_eq(f->val_begin[n + 1] - f->val_begin[n], 1);
  }
  CtxrtSpec spec = {CTXRT_TREE, 2, 2, 1, CTXRT_VALUES_ALL, (const int64_t[]){7}};
  validate_ok(f, &spec);
  ctxrt_forest_destroy(f);
  f = gen("complete:height=0");
  ck_assert_int_eq(f->num_nodes, 1);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_nary) {
  CtxrtForest *f = gen("nary:nodes=500,arity=4,count=3,seed=5,vocab=20");
  ck_assert_int_eq(f->num_nodes, 1500);
  int32_t full = 0;
  for (int32_t n = 0; n < f->num_nodes; n++) {
    ck_assert_int_le(ctxrt_forest_num_deps(f, n), 4);
    full += ctxrt_forest_num_deps(f, n) == 4;
    ck_assert_int_eq(f->val_begin[n + 1] - f->val_begin[n], 1);
  }
  ck_assert_int_gt(full, 0);
  CtxrtSpec spec = {CTXRT_TREE, 4, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){20}};
  validate_ok(f, &spec);
  ctxrt_forest_destroy(f);
  f = gen("nary:nodes=10,arity=1");
  for (int32_t n = 0; n < 9; n++)
    ck_assert_int_eq(f->dep[f->dep_begin[n]], n + 1);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_chain) {
  CtxrtForest *f = gen("chain:nodes=100000,vocab=5");
  ck_assert_int_eq(f->num_nodes, 100000);
  for (int32_t n = 0; n + 1 < 100000; n++) {
    ck_assert_int_eq(ctxrt_forest_num_deps(f, n), 1);
    ck_assert_int_eq(f->dep[f->dep_begin[n]], n + 1);
  }
  ck_assert_int_eq(ctxrt_forest_num_deps(f, 99999), 0);
  CtxrtSpec spec = {CTXRT_TREE, 1, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){5}};
  validate_ok(f, &spec);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_grid) {
  CtxrtForest *f = gen("grid:rows=4,cols=5,count=2,features=3");
  ck_assert_int_eq(f->kind, CTXRT_DAG);
  ck_assert_int_eq(f->num_nodes, 40);
  for (int32_t n = 0; n < 40; n++) {
    int32_t i = n % 20, r = i / 5, c = i % 5, k = f->dep_begin[n];
    ck_assert_int_eq(ctxrt_forest_num_deps(f, n), (r > 0) + (c > 0));
    if (r > 0) ck_assert_int_eq(f->dep[k++], n - 5);
    if (c > 0) ck_assert_int_eq(f->dep[k++], n - 1);
    ck_assert_int_eq(f->val_begin[n + 1] - f->val_begin[n], 3);
  }
  for (int32_t k = 0; k < f->val_begin[40]; k++) {
    double x = f->val[k];
    ck_assert(x >= -1 && x < 1 && x == (double)(float)x && !f->val_is_int[k]);
  }
  CtxrtSpec spec = {CTXRT_DAG, 2, 0, 3, CTXRT_VALUES_ALL, NULL};
  validate_ok(f, &spec);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_sequence) {
  CtxrtForest *f = gen("sequence:length=100000,vocab=9,count=2");
  ck_assert_int_eq(f->kind, CTXRT_SEQUENCE);
  ck_assert_int_eq(f->num_nodes, 200000);
  ck_assert_int_eq(ctxrt_forest_num_deps(f, 100000), 0);
  ck_assert_int_eq(f->dep[f->dep_begin[100001]], 100000);
  CtxrtSpec spec = {CTXRT_SEQUENCE, 0, 0, 1, CTXRT_VALUES_ALL, (const int64_t[]){9}};
  validate_ok(f, &spec);
  ctxrt_forest_destroy(f);
  f = gen("sequence:length=5,vocab=9,values=leaves");
  ck_assert_int_eq(f->val_begin[5], 1);
  ctxrt_forest_destroy(f);
}
END_TEST

START_TEST(test_parse_and_format) {
  CtxrtGenSpec spec;
  CtxrtError err;
  char buf[256];
  ck_assert_int_eq(ctxrt_gen_parse("binary:leaves=20,count=10,seed=7", &spec, &err),
                   CTXRT_OK);
  ck_assert_int_eq(spec.shape, CTXRT_GEN_BINARY);
  ck_assert_int_eq(spec.size, 20);
  ck_assert_int_eq(spec.count, 10);
  ck_assert_uint_eq(spec.seed, 7);
  ck_assert_int_eq(spec.vocab, 0);
  ck_assert_int_eq(spec.values, CTXRT_GEN_VALUES_DEFAULT);
  ck_assert_int_eq(ctxrt_gen_format(&spec, buf, sizeof buf), 46);
  ck_assert_str_eq(buf, "binary:leaves=20,count=10,seed=7,values=leaves");
  ck_assert_int_eq(
      ctxrt_gen_parse("grid:cols=3,rows=2,features=8,seed=18446744073709551615", &spec,
                      &err),
      CTXRT_OK);
  ck_assert_int_eq(spec.size, 2);
  ck_assert_int_eq(spec.size2, 3);
  ck_assert_uint_eq(spec.seed, UINT64_MAX);
  ctxrt_gen_format(&spec, buf, sizeof buf);
  ck_assert_str_eq(buf, "grid:rows=2,cols=3,count=1,seed=18446744073709551615,features=8,"
                        "values=all");
  CtxrtGenSpec again;
  ck_assert_int_eq(ctxrt_gen_parse(buf, &again, &err), CTXRT_OK);
  ck_assert(again.size == 2 && again.size2 == 3 && again.seed == UINT64_MAX &&
            again.features == 8 && again.values == CTXRT_GEN_VALUES_ALL);
  ck_assert_int_eq(
      ctxrt_gen_parse("nary:nodes=5,arity=2,vocab=3,values=leaves", &spec, &err),
      CTXRT_OK);
  ck_assert_int_eq(spec.values, CTXRT_GEN_VALUES_LEAVES);
  ck_assert_int_eq(ctxrt_gen_parse("chain:nodes=3", &spec, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_gen_parse("sequence:length=3", &spec, &err), CTXRT_OK);
  ck_assert_int_eq(ctxrt_gen_parse("complete:height=25", &spec, &err), CTXRT_OK);
  /* truncation reports the length needed */
  ck_assert_int_eq(ctxrt_gen_format(&spec, buf, 4), 47);
  ck_assert_str_eq(buf, "com");
}
END_TEST

static const char *parse_err(const char *text) {
  static char msg[CTXRT_MSG_SIZE];
  CtxrtGenSpec spec;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_gen_parse(text, &spec, &err), CTXRT_ERR_ARG);
  ck_assert_int_eq(spec.shape, 0);
  strcpy(msg, err.msg);
  return msg;
}

START_TEST(test_parse_syntax_errors) {
  ck_assert_str_eq(parse_err(""),
                   "error: bad generator spec '': unknown shape '' (expected "
                   "binary, complete, nary, chain, grid or sequence)");
  ck_assert_str_eq(
      parse_err("ternary:leaves=3"),
      "error: bad generator spec 'ternary:leaves=3': unknown shape 'ternary' "
      "(expected binary, complete, nary, chain, grid or sequence)");
  ck_assert_str_eq(parse_err("binary"),
                   "error: bad generator spec 'binary': missing 'leaves'");
  ck_assert_str_eq(parse_err("binary:"), "error: bad generator spec 'binary:': expected "
                                         "KEY=VALUE, found ''");
  ck_assert_str_eq(parse_err("binary:leaves"),
                   "error: bad generator spec 'binary:leaves': expected KEY=VALUE, found "
                   "'leaves'");
  ck_assert_str_eq(
      parse_err("binary:leaves=3,"),
      "error: bad generator spec 'binary:leaves=3,': expected KEY=VALUE, found ''");
  ck_assert_str_eq(parse_err("binary:leaves=x"),
                   "error: bad generator spec 'binary:leaves=x': 'leaves' needs a "
                   "non-negative integer, found 'x'");
  ck_assert_str_eq(parse_err("binary:leaves=-3"),
                   "error: bad generator spec 'binary:leaves=-3': 'leaves' needs a "
                   "non-negative integer, found '-3'");
  ck_assert_str_eq(parse_err("binary:leaves="),
                   "error: bad generator spec 'binary:leaves=': 'leaves' needs a "
                   "non-negative integer, found ''");
  ck_assert_str_eq(
      parse_err("binary:leaves=0"),
      "error: bad generator spec 'binary:leaves=0': 'leaves' must be from 1 to "
      "67108864, found 0");
  ck_assert_str_eq(
      parse_err("binary:leaves=99999999999999999999"),
      "error: bad generator spec 'binary:leaves=99999999999999999999': 'leaves' "
      "out of range, found '99999999999999999999'");
  ck_assert_str_eq(
      parse_err("binary:leaves=3,height=2"),
      "error: bad generator spec 'binary:leaves=3,height=2': unknown key 'height' "
      "for 'binary' (expected leaves, count, seed, vocab, features or values)");
}
END_TEST

START_TEST(test_parse_range_errors) {
  ck_assert_str_eq(parse_err("grid:rows=3,rows=3"),
                   "error: bad generator spec 'grid:rows=3,rows=3': 'rows' given twice");
  ck_assert_str_eq(parse_err("grid:rows=3"),
                   "error: bad generator spec 'grid:rows=3': missing 'cols'");
  ck_assert_str_eq(
      parse_err("complete:height=26"),
      "error: bad generator spec 'complete:height=26': 'height' must be from 0 "
      "to 25, found 26");
  ck_assert_str_eq(
      parse_err("chain:nodes=5,values=some"),
      "error: bad generator spec 'chain:nodes=5,values=some': 'values' must be "
      "'leaves' or 'all', found 'some'");
  ck_assert_str_eq(
      parse_err("chain:nodes=5,count=0"),
      "error: bad generator spec 'chain:nodes=5,count=0': 'count' must be at "
      "least 1, found 0");
  ck_assert_str_eq(
      parse_err("chain:nodes=5,vocab=0"),
      "error: bad generator spec 'chain:nodes=5,vocab=0': 'vocab' must be at "
      "least 1, found 0");
  ck_assert_str_eq(
      parse_err("chain:nodes=5,vocab=3000000000"),
      "error: bad generator spec 'chain:nodes=5,vocab=3000000000': 'vocab' must "
      "be from 1 to 2147483647, found 3000000000");
  ck_assert_str_eq(
      parse_err("grid:rows=10000,cols=10000"),
      "error: bad generator spec 'grid:rows=10000,cols=10000': 100000000 nodes in "
      "all, more than the limit 67108864");
  ck_assert_str_eq(
      parse_err("sequence:length=1000,count=1000,features=300"),
      "error: bad generator spec 'sequence:length=1000,count=1000,features=300': "
      "300000000 values in all, more than the limit 268435456");
  ck_assert_str_eq(
      parse_err("sequence : length=3"),
      "error: bad generator spec 'sequence : length=3': unknown shape 'sequence ' "
      "(expected binary, complete, nary, chain, grid or sequence)");
}
END_TEST

START_TEST(test_generate_errors) {
  CtxrtGenSpec spec = {CTXRT_GEN_NARY, 10, 0, 0, 0, 0, 0, CTXRT_GEN_VALUES_DEFAULT};
  CtxrtForest *f = (CtxrtForest *)&f;
  CtxrtError err;
  ck_assert_int_eq(ctxrt_generate(&spec, &f, &err), CTXRT_ERR_ARG);
  ck_assert_ptr_null(f);
  ck_assert_str_eq(err.msg,
                   "error: bad generator spec 'nary:nodes=10,arity=0,count=1,seed=0,"
                   "values=all': 'arity' must be from 1 to 67108864, found 0");
  spec.size2 = 2;
  spec.vocab = -1;
  ck_assert_int_eq(ctxrt_generate(&spec, &f, &err), CTXRT_ERR_ARG);
  spec.vocab = 0;
  spec.shape = (CtxrtGenShape)99;
  ck_assert_int_eq(ctxrt_generate(&spec, &f, &err), CTXRT_ERR_ARG);
  ck_assert_str_eq(err.msg, "error: bad generator spec 'invalid': unknown shape 99");
}
END_TEST

START_TEST(test_validation_names_spec) {
  /* generated nodes have no line: the message is NAME: error: ... */
  CtxrtForest *f = gen("binary:leaves=4,seed=3,vocab=50");
  CtxrtSpec spec = {CTXRT_TREE, 2, 0, 1, CTXRT_VALUES_LEAVES, (const int64_t[]){10}};
  CtxrtError err;
  ck_assert_int_eq(ctxrt_forest_validate(f, &spec, &err), CTXRT_ERR_INVALID);
  ck_assert_int_eq(err.line, 0);
  const char *prefix = "binary:leaves=4,count=1,seed=3,vocab=50,values=leaves: error: "
                       "structure 1, node ";
  ck_assert_msg(strncmp(err.msg, prefix, strlen(prefix)) == 0, "%s", err.msg);
  ctxrt_forest_destroy(f);
}
END_TEST

static Suite *gen_suite(void) {
  Suite *s = suite_create("gen");
  TCase *tc = tcase_create("generators");
  tcase_set_timeout(tc, TU_TIMEOUT);
  tcase_add_test(tc, test_splitmix64);
  tcase_add_loop_test(tc, test_golden, 0, (int)(sizeof golden / sizeof golden[0]));
  tcase_add_test(tc, test_deterministic);
  tcase_add_test(tc, test_binary);
  tcase_add_test(tc, test_complete);
  tcase_add_test(tc, test_nary);
  tcase_add_test(tc, test_chain);
  tcase_add_test(tc, test_grid);
  tcase_add_test(tc, test_sequence);
  tcase_add_test(tc, test_parse_and_format);
  tcase_add_test(tc, test_parse_syntax_errors);
  tcase_add_test(tc, test_parse_range_errors);
  tcase_add_test(tc, test_generate_errors);
  tcase_add_test(tc, test_validation_names_spec);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run(gen_suite());
}
