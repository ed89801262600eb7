/* ctxrt.h — libctxrt, the runtime linked into programs that run ctx models.
 *
 * Design. The runtime turns files into flat, checked arrays and back:
 *   - a *forest* is a batch of input structures (trees, DAGs or sequences) held in
 *     a handful of flat arrays (no per-node allocation); it is made by a reader
 *     (bracketed PTB trees or node lists, from a file or a memory buffer) or by a
 *     seeded generator, checked once against what the model declares
 *     (ctxrt_forest_validate), and then only read;
 *   - *weights* are named float32 tensors read from / written to safetensors,
 *     checked against the model's parameter list, or filled from a documented
 *     seeded generator;
 *   - results are written as NumPy `.npy` files.
 * The file formats are specified in docs/formats.md.
 *
 * Rules every function follows: the library never prints and never exits. A
 * function that can fail returns a CtxrtStatus (CTXRT_OK == 0) and, on failure,
 * fills the CtxrtError it was given (which may be NULL to ignore the details) with
 * `FILE:LINE: error: MESSAGE` (just `FILE: error: MESSAGE` where no line applies,
 * and `error: MESSAGE` where there is no file at all); messages are lowercase, put
 * names in quotes, have no final period, and name the structure (1-based) and the
 * node id where that applies. On failure the output pointer is set to NULL and
 * nothing is leaked. Every object has an explicit create/destroy pair; destroy
 * functions accept NULL. Readers are iterative (no recursion on input depth) and
 * use memory bounded by a small multiple of the input size. Nothing here keeps
 * global state, so separate objects may be used from separate threads.
 */
#ifndef CTXRT_H
#define CTXRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------
 * Errors
 */

typedef enum CtxrtStatus {
  CTXRT_OK = 0,
  CTXRT_ERR_IO = 1,      /* a file could not be opened, read or written */
  CTXRT_ERR_SYNTAX = 2,  /* malformed input text or bytes */
  CTXRT_ERR_INVALID = 3, /* well-formed input that breaks a rule (cycle, arity...) */
  CTXRT_ERR_ARG = 4,     /* a bad argument or spec string from the caller */
  CTXRT_ERR_NOMEM = 5,   /* out of memory, or an input too large to represent; an
                          * allocation from 64 MiB on that exceeds /proc/meminfo's
                          * MemAvailable + SwapFree is refused (not left to the OOM
                          * killer), and the message gives both sizes */
  CTXRT_ERR_DEVICE = 6,  /* no CUDA driver or GPU, or the driver refused (its message) */
} CtxrtStatus;

/* Room for several lines: the weights check lists every problem it finds. */
#define CTXRT_MSG_SIZE 2048

typedef struct CtxrtError {
  CtxrtStatus status;       /* CTXRT_OK when nothing went wrong */
  int32_t line;             /* 1-based line the message names; 0 when none */
  char msg[CTXRT_MSG_SIZE]; /* the whole message, NUL-terminated, truncated to fit;
                               several problems are several lines */
} CtxrtError;

/* Sets [err] to "no error" (status CTXRT_OK, empty message). [err] may be NULL. */
void ctxrt_error_clear(CtxrtError *err);

/* ------------------------------------------------------------------------------
 * Forests: a batch of input structures
 *
 * Nodes are numbered globally from 0 in "the input's own order" (PTB: pre-order of
 * the opening parentheses; node lists: as listed; generators: as documented below),
 * structure after structure. Arrays of per-node items are indexed by this global
 * node index. Dependencies are global node indices: a tree node's children in
 * order, a DAG node's predecessors in order, a sequence element's previous element
 * (the first element has none). The struct is owned by the library; treat every
 * field as read-only.
 */

typedef enum CtxrtKind {
  CTXRT_KIND_ANY = 0, /* in a CtxrtSpec: accept any kind; in a forest: no structures */
  CTXRT_TREE = 1,
  CTXRT_DAG = 2,
  CTXRT_SEQUENCE = 3,
} CtxrtKind;

typedef struct CtxrtForest {
  CtxrtKind kind; /* the kind of every structure */
  char *name;     /* the input's name used in messages (a path, or a spec) */
  int32_t num_structs;
  int32_t num_nodes;
  int32_t *struct_begin;     /* [num_structs + 1]: structure s holds nodes
                                [struct_begin[s], struct_begin[s + 1]) */
  int32_t *struct_line;      /* [num_structs]: line of its first text (0: generated) */
  int64_t *id;               /* [num_nodes]: the user's node id (PTB and generators:
                                the node's position within its structure, from 0) */
  int32_t *line;             /* [num_nodes]: source line, 0 when generated */
  int32_t *dep_begin;        /* [num_nodes + 1]: node n depends on
                                dep[dep_begin[n] .. dep_begin[n + 1]) */
  int32_t *dep;              /* global node indices, see above */
  int32_t *val_begin;        /* [num_nodes + 1]: node n's values are
                                val[val_begin[n] .. val_begin[n + 1]) (maybe none) */
  double *val;               /* per-node input values, flattened */
  unsigned char *val_is_int; /* parallel to val: 1 when written as an integer */
  int32_t *label;            /* [num_nodes] offset into labels, -1 for none; NULL when
                                the input has no labels (everything but PTB) */
  char *labels;              /* NUL-terminated label strings (PTB), or NULL */
} CtxrtForest;

/* Frees [forest] and everything it owns. NULL is allowed. */
void ctxrt_forest_destroy(CtxrtForest *forest);

/* The number of dependencies of node [node] of [forest]. */
int32_t ctxrt_forest_num_deps(const CtxrtForest *forest, int32_t node);

/* The PTB label of node [node] of [forest], or NULL when it has none. */
const char *ctxrt_forest_label(const CtxrtForest *forest, int32_t node);

/* Writes to [out] (room for num_nodes entries, or NULL to only count) the global
 * indices of the nodes no other node depends on, in node order: each tree's root,
 * each DAG's sinks, each sequence's last element — the nodes whose outputs a run
 * reports. Returns how many there are, or -1 when out of memory. Meant for a
 * forest that passed ctxrt_forest_validate. */
int32_t ctxrt_forest_outputs(const CtxrtForest *forest, int32_t *out);

/* "tree", "dag", "sequence", or "any" for CTXRT_KIND_ANY. */
const char *ctxrt_kind_name(CtxrtKind kind);

/* ------------------------------------------------------------------------------
 * Vocabularies: one word per line, id = line number counting from 0
 *
 * A line is the word itself, stripped of blanks (space, tab, CR, VT, FF) at both
 * ends. An empty line takes its id but matches nothing. A word with whitespace, a
 * parenthesis or a NUL byte inside (it could never match a PTB token) and a word
 * listed twice are errors naming the line.
 */

typedef struct CtxrtVocab CtxrtVocab;

/* Reads the vocabulary file [path] into [*out]. Returns CTXRT_OK, or an error code
 * with [err] filled and [*out] set to NULL. */
CtxrtStatus ctxrt_vocab_read_file(const char *path, CtxrtVocab **out, CtxrtError *err);

/* Like ctxrt_vocab_read_file, from the [len] bytes at [data]; [name] is used in
 * messages. The buffer need not be NUL-terminated and is not kept. */
CtxrtStatus ctxrt_vocab_read_buffer(const char *name, const char *data, size_t len,
                                    CtxrtVocab **out, CtxrtError *err);

/* Frees [vocab]. NULL is allowed. */
void ctxrt_vocab_destroy(CtxrtVocab *vocab);

/* The number of words in [vocab]. */
int32_t ctxrt_vocab_size(const CtxrtVocab *vocab);

/* The id of the [len]-byte word at [word] in [vocab], or -1 when it is unknown. */
int32_t ctxrt_vocab_lookup(const CtxrtVocab *vocab, const char *word, size_t len);

/* Makes the readers give words not in [vocab] the id of the [len]-byte word
 * at [word] (an unknown-word token such as `<unk>`) instead of reporting
 * them. CTXRT_ERR_INVALID when [word] is not in [vocab]. */
CtxrtStatus ctxrt_vocab_set_fallback(CtxrtVocab *vocab, const char *word, size_t len,
                                     CtxrtError *err);

/* The id a reader gives the [len]-byte word at [word]: its id, else the
 * fallback's (ctxrt_vocab_set_fallback), else -1. */
int32_t ctxrt_vocab_word_id(const CtxrtVocab *vocab, const char *word, size_t len);

/* The word with id [id] (NUL-terminated), or NULL when [id] is out of range. */
const char *ctxrt_vocab_word(const CtxrtVocab *vocab, int32_t id);

/* ------------------------------------------------------------------------------
 * Readers (formats in docs/formats.md)
 *
 * Both formats accept inputs up to 2 GiB - 1 bytes. The buffer versions take
 * [len] bytes at [data] (not necessarily NUL-terminated, not kept) and use [name]
 * in messages. On success [*out] is a new forest (possibly with no structures: an
 * empty input is reported by ctxrt_forest_validate); on failure [*out] is NULL and
 * [err] names the first problem in the input, with its line.
 */

/* Reads bracketed trees, one per line. Each leaf carries one value, its word id:
 * the leaf token parsed as an integer or, when [vocab] is not NULL, looked up in
 * [vocab]. Internal nodes carry no value. Every node keeps its label. */
CtxrtStatus ctxrt_read_ptb_file(const char *path, const CtxrtVocab *vocab,
                                CtxrtForest **out, CtxrtError *err);
CtxrtStatus ctxrt_read_ptb_buffer(const char *name, const char *data, size_t len,
                                  const CtxrtVocab *vocab, CtxrtForest **out,
                                  CtxrtError *err);

/* Reads node lists. Catches, besides malformed lines, mixed structure kinds and
 * dependencies listed in a sequence, and, when a structure ends, a duplicate id
 * (the earliest repeat) or an unknown dependency id (the first in node order). */
CtxrtStatus ctxrt_read_nodes_file(const char *path, CtxrtForest **out, CtxrtError *err);
CtxrtStatus ctxrt_read_nodes_buffer(const char *name, const char *data, size_t len,
                                    CtxrtForest **out, CtxrtError *err);

/* Reads CoNLL-U dependency trees (Universal Dependencies), one tree per
 * sentence: every word (a line whose ID is an integer) is a node, its head's
 * child, children in sentence order; multiword-token lines (ID `3-4`),
 * empty-node lines (ID `5.1`) and comment lines (`#`) are skipped. Each node
 * carries one value: field [column] of its line (1 FORM, 2 LEMMA, 3 UPOS,
 * 4 XPOS; ctxrt_conllu_column maps the names) looked up in [vocab], or
 * without one read as an integer word id. A node's id is its word ID (from 1).
 * Catches, besides malformed lines (not ten tab-separated columns, an empty
 * column, a bad ID or HEAD), word IDs out of sequence and a HEAD outside the
 * sentence; roots and cycles are ctxrt_forest_validate's. CTXRT_ERR_ARG for a
 * [column] outside 1..4. */
CtxrtStatus ctxrt_read_conllu_file(const char *path, const CtxrtVocab *vocab, int column,
                                   CtxrtForest **out, CtxrtError *err);
CtxrtStatus ctxrt_read_conllu_buffer(const char *name, const char *data, size_t len,
                                     const CtxrtVocab *vocab, int column,
                                     CtxrtForest **out, CtxrtError *err);

/* The field number of the CoNLL-U column [name] ("FORM" 1, "LEMMA" 2, "UPOS" 3,
 * "XPOS" 4), or -1 for any other name. */
int ctxrt_conllu_column(const char *name);

/* ------------------------------------------------------------------------------
 * Validation against what the model declares
 */

typedef enum CtxrtValuesOn {
  CTXRT_VALUES_ALL = 0,    /* every node carries exactly num_values values */
  CTXRT_VALUES_LEAVES = 1, /* nodes without dependencies carry exactly num_values;
                              the others carry none or exactly num_values (the
                              model does not read them, but they are checked) */
} CtxrtValuesOn;

typedef struct CtxrtSpec {
  CtxrtKind kind;     /* the kind the model reads; CTXRT_KIND_ANY: any */
  int32_t max_arity;  /* most children (tree) / predecessors (dag); 0: no limit */
  int32_t min_arity;  /* fewest children of a node that has any; 0: no minimum */
  int32_t num_values; /* values per node, the model's per-node inputs flattened */
  CtxrtValuesOn values_on;
  const int64_t *word_bound; /* NULL, or [num_values] entries: V > 0 makes that
                                value a word id that must be an integer in [0, V);
                                0 makes it a plain number */
} CtxrtSpec;

/* Forests from arrays, for programs that hold structures already (no text):
 * [num_structs] structures of [kind], structure s with num_nodes[s] nodes;
 * per-node arrays hold the nodes of all structures one after the other, and
 * node indices count from 0 within their structure. Node n depends on
 * num_deps[n] nodes listed in order in [deps] (all nodes' lists concatenated):
 * a tree node's children, a DAG node's predecessors. Sequences need neither
 * (both may be NULL): each element depends on the one before it. [values]
 * holds [num_values] numbers for every node (NULL when [num_values] is 0);
 * with CTXRT_VALUES_LEAVES those of nodes with dependencies are ignored. A
 * value that is an integer counts as one (word ids). The name [name] is used
 * in messages; nodes are named by their index. Errors: CTXRT_ERR_ARG for
 * negative counts or missing arrays, CTXRT_ERR_INVALID for a dependency
 * outside its structure or a value that is not finite (NaN, inf). The
 * arrays are copied, not kept; validate the forest as any other. */
CtxrtStatus ctxrt_forest_from_arrays(const char *name, CtxrtKind kind, int32_t num_structs,
                                     const int32_t *num_nodes, const int32_t *num_deps,
                                     const int32_t *deps, int32_t num_values,
                                     const double *values, CtxrtValuesOn values_on,
                                     CtxrtForest **out, CtxrtError *err);

/* Trees as parent arrays: heads[n] is node n's parent (an index within its
 * structure) or -1 for the root, the children of a node in index order (a
 * CoNLL-U HEAD column minus one). A head outside [-1, num_nodes[s]) is
 * CTXRT_ERR_INVALID; otherwise as ctxrt_forest_from_arrays. */
CtxrtStatus ctxrt_forest_from_heads(const char *name, int32_t num_structs,
                                    const int32_t *num_nodes, const int32_t *heads,
                                    int32_t num_values, const double *values,
                                    CtxrtValuesOn values_on, CtxrtForest **out,
                                    CtxrtError *err);

/* Checks [forest] against [spec] and returns CTXRT_OK or CTXRT_ERR_INVALID (or
 * CTXRT_ERR_NOMEM) with [err] naming the first problem: an empty input or an empty
 * structure, the wrong kind, a node with more or fewer dependencies than allowed,
 * a dependency listed twice or outside its structure, the wrong number of values
 * on a node, a word id that is not an integer or lies outside [0, V), a tree node
 * with two parents, a tree with no or several roots, a cycle (trees and DAGs), a
 * sequence element depending on anything but the element before it. Structures
 * are checked in order, and within one, per-node problems in node order first. */
CtxrtStatus ctxrt_forest_validate(const CtxrtForest *forest, const CtxrtSpec *spec,
                                  CtxrtError *err);

/* ------------------------------------------------------------------------------
 * The random number generator: splitmix64 (Steele, Lea, Flood 2014)
 *
 *   state += 0x9E3779B97F4A7C15;
 *   z = state;
 *   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
 *   z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
 *   return z ^ (z >> 31);
 *
 * all arithmetic modulo 2^64, the state starting at the seed. Derived draws:
 *   below(m) = next() % m                      (an integer in [0, m), m >= 1)
 *   unit()   = (next() >> 11) * 2^-53          (a double in [0, 1))
 * With seed 0 the first three outputs are 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
 * 0x06C45D188009454F.
 */

typedef struct CtxrtRng {
  uint64_t state;
} CtxrtRng;

void ctxrt_rng_seed(CtxrtRng *rng, uint64_t seed);
uint64_t ctxrt_rng_next(CtxrtRng *rng);
uint64_t ctxrt_rng_below(CtxrtRng *rng, uint64_t m); /* [m] >= 1 */
double ctxrt_rng_unit(CtxrtRng *rng);

/* ------------------------------------------------------------------------------
 * Generators: seeded, deterministic batches of structures
 *
 * Spec strings (for a command line such as `--gen binary:leaves=20,count=10`):
 *
 *   SPEC  := SHAPE [ ':' PARAM { ',' PARAM } ]
 *   PARAM := KEY '=' VALUE             (no spaces; each key at most once)
 *
 *   SHAPE      required keys     structure (node ids = order within the structure)
 *   binary     leaves=N          random binary tree of N leaves, 2N-1 nodes,
 *                                pre-order; each internal node with m leaves
 *                                below it gives 1 + below(m-1) to its left child
 *                                (drawn as the node is made, so in pre-order)
 *   complete   height=H          complete binary tree, 2^(H+1)-1 nodes (H = 0: one
 *                                node), level order: node i's children 2i+1, 2i+2
 *   nary       nodes=N,arity=K   random tree of N nodes, at most K children each:
 *                                node i >= 1 takes as parent open[below(#open)],
 *                                where open lists the earlier nodes with fewer
 *                                than K children: starting as [0]; after each
 *                                pick, a parent that became full is overwritten
 *                                by the last entry (which is dropped), then i is
 *                                appended
 *   chain      nodes=N           a tree of N nodes, node i's only child is i+1
 *   grid       rows=R,cols=C     R x C DAG, node r*C+c depends on (r-1,c) then
 *                                (r,c-1), where they exist
 *   sequence   length=N          N elements, each depending on the one before
 *
 *   common keys (optional)
 *   count=N          structures in the batch (default 1)
 *   seed=S           unsigned 64-bit seed (default 0)
 *   vocab=V          one word id per node, below(V) (default: none)
 *   features=D       D feature values per node, each (float)(2 * unit() - 1)
 *   values=leaves|all  which nodes carry the values: "leaves" (nodes without
 *                    dependencies) or "all"; default leaves for binary and
 *                    complete, all otherwise
 *
 * One generator stream (seeded with S) is drawn in this order: structure by
 * structure, first the shape's draws, then for each node in node order that
 * carries values, its word id (if vocab is given) and then its D features. Integer
 * values are decimal without sign; a batch is limited to CTXRT_GEN_MAX_NODES nodes
 * and CTXRT_GEN_MAX_VALUES values.
 */

#define CTXRT_GEN_MAX_NODES (1 << 26)
#define CTXRT_GEN_MAX_VALUES (1 << 28)

typedef enum CtxrtGenShape {
  CTXRT_GEN_BINARY = 1,
  CTXRT_GEN_COMPLETE,
  CTXRT_GEN_NARY,
  CTXRT_GEN_CHAIN,
  CTXRT_GEN_GRID,
  CTXRT_GEN_SEQUENCE,
} CtxrtGenShape;

typedef enum CtxrtGenValues {
  CTXRT_GEN_VALUES_DEFAULT = 0, /* leaves for binary and complete, else all */
  CTXRT_GEN_VALUES_ALL,
  CTXRT_GEN_VALUES_LEAVES,
} CtxrtGenValues;

/* A parsed spec. The parser requires the shape's sizes; for count, vocab, features
 * and values zero means "not given", so a caller may fill vocab or features from
 * the model before generating. */
typedef struct CtxrtGenSpec {
  CtxrtGenShape shape;
  int64_t size;  /* leaves (binary), height (complete), nodes (nary, chain),
                    rows (grid), length (sequence) */
  int64_t size2; /* arity (nary), cols (grid) */
  int64_t count; /* 0 means 1 */
  uint64_t seed;
  int64_t vocab;    /* 0: no word ids */
  int64_t features; /* 0: no features */
  CtxrtGenValues values;
} CtxrtGenSpec;

/* Parses the NUL-terminated spec string [text] into [*out]. On a bad spec returns
 * CTXRT_ERR_ARG with [err] saying `error: bad generator spec 'TEXT': WHY`. */
CtxrtStatus ctxrt_gen_parse(const char *text, CtxrtGenSpec *out, CtxrtError *err);

/* Writes the canonical spec string of [spec] to [buf] of [size] bytes, truncating,
 * and returns the length it needed (like snprintf): the shape's keys, count and
 * seed, vocab and features when given, and values with its default resolved, e.g.
 * `binary:leaves=20,count=10,seed=7,vocab=100,values=leaves`. Parsing it gives an
 * equivalent spec back. */
size_t ctxrt_gen_format(const CtxrtGenSpec *spec, char *buf, size_t size);

/* Generates the batch [spec] describes into [*out], named by its canonical spec
 * string. Returns CTXRT_ERR_ARG for a size out of range (below 1, or a batch over
 * the limits) with [err] set, and [*out] NULL. */
CtxrtStatus ctxrt_generate(const CtxrtGenSpec *spec, CtxrtForest **out, CtxrtError *err);

/* ------------------------------------------------------------------------------
 * Weights: named float32 tensors, safetensors files, the default initialiser
 */

#define CTXRT_MAX_DIMS 8

/* One parameter the model declares: a name and a row-major shape. */
typedef struct CtxrtParam {
  const char *name;
  int32_t ndim; /* 0 .. CTXRT_MAX_DIMS; 0 is a scalar */
  int64_t shape[CTXRT_MAX_DIMS];
} CtxrtParam;

typedef struct CtxrtTensor {
  char *name;
  int32_t ndim;
  int64_t shape[CTXRT_MAX_DIMS];
  int64_t numel; /* product of the shape (1 for a scalar) */
  float *data;   /* numel floats, row-major, 64-byte aligned */
} CtxrtTensor;

/* Bits of CtxrtWeights.converted: the dtypes a file's tensors were converted from. */
enum { CTXRT_CONVERTED_F64 = 1, CTXRT_CONVERTED_F16 = 2, CTXRT_CONVERTED_BF16 = 4 };

typedef struct CtxrtWeights {
  int32_t count;
  CtxrtTensor *tensors; /* in file order (read) or declaration order (created) */
  int32_t num_converted; /* tensors the file held as F64, F16 or BF16 (read as float32) */
  unsigned converted;    /* CTXRT_CONVERTED_* bits of those dtypes */
} CtxrtWeights;

/* The note that the file [path] held [weights]' F64, F16 or BF16 tensors,
 * converted to float32 (`W.safetensors: note: 2 tensors converted to float32
 * from F64`), NUL-terminated and truncated to [buf]'s [len] bytes; "" when
 * none was converted. ctx run prints it, ctxrt_model_load passes it on. */
void ctxrt_weights_note(const CtxrtWeights *weights, const char *path, char *buf, size_t len);

/* Makes zero-filled weights with one tensor per entry of [params] ([n] of them),
 * in that order. Returns CTXRT_ERR_ARG for a bad shape or a duplicate name. */
CtxrtStatus ctxrt_weights_create(const CtxrtParam *params, int32_t n, CtxrtWeights **out,
                                 CtxrtError *err);

/* Frees [weights]. NULL is allowed. */
void ctxrt_weights_destroy(CtxrtWeights *weights);

/* The tensor named [name] in [weights], or NULL. */
const CtxrtTensor *ctxrt_weights_find(const CtxrtWeights *weights, const char *name);

/* Checks [weights] (read from the file [name], used in messages) against the
 * model's [n] parameters [params]: every parameter present with its exact shape,
 * and no other tensor. Returns CTXRT_ERR_INVALID with every problem in the
 * message, one line each (`NAME: error: ...`): the parameters, in declaration
 * order, that are missing or mis-shaped (with both shapes), then the extra
 * tensors in file order. A missing parameter that ctxrt_weights_match pairs
 * with an extra tensor is one problem naming both (`missing tensor 'U_iou'
 * (shape [6, 2]); the file has 'cell.U_iou.weight' [6, 2]: rename it`). Lines
 * past the message's room are counted in a last line. */
CtxrtStatus ctxrt_weights_check(const CtxrtWeights *weights, const char *name,
                                const CtxrtParam *params, int32_t n, CtxrtError *err);

/* Pairs each of the [n] parameters [params] with a tensor of [weights]:
 * match[i] is the index in weights->tensors of the tensor named exactly
 * params[i].name, else of a tensor named like it that no parameter is named
 * exactly — PyTorch's spelling of it: a module path before it and `.weight`
 * after it dropped (`cell.U_iou.weight` for `U_iou`), case ignored, or one or
 * two letters apart — else -1. Each tensor is paired once at most. Returns how
 * many pairs are not exact. */
int32_t ctxrt_weights_match(const CtxrtWeights *weights, const CtxrtParam *params,
                            int32_t n, int32_t *match);

/* Reads a safetensors file. F32 tensors are read as they are, F64, F16 and BF16
 * ones converted to float32 (round to nearest; counted in num_converted and
 * converted). Rejected with a message: a file shorter than 8 bytes, a header
 * length past the end of the file, a header that is not a JSON object or is
 * malformed, a duplicate tensor name, another dtype (naming the tensor and
 * dtype), a bad shape or data_offsets entry, offsets that disagree with the shape
 * and dtype, overlap or run past the data (truncated). */
CtxrtStatus ctxrt_st_read_file(const char *path, CtxrtWeights **out, CtxrtError *err);
CtxrtStatus ctxrt_st_read_buffer(const char *name, const unsigned char *data, size_t len,
                                 CtxrtWeights **out, CtxrtError *err);

/* Writes [weights] as a safetensors file: tensors in order, data contiguous from
 * offset 0, the JSON header padded with spaces to a multiple of 8 bytes. The
 * buffer version returns a malloc'ed buffer in [*out] (free it) of [*len] bytes. */
CtxrtStatus ctxrt_st_write_file(const char *path, const CtxrtWeights *weights,
                                CtxrtError *err);
CtxrtStatus ctxrt_st_write_buffer(const CtxrtWeights *weights, unsigned char **out,
                                  size_t *len, CtxrtError *err);

/* The default initialiser. One splitmix64 stream seeded with the seed fills the
 * parameters in declaration order, elements in row-major order, each element
 *     v = (float)(unit() * 0.2 - 0.1)      (double arithmetic, then rounded)
 * so every value lies in [-0.1, 0.1]. Call ctxrt_init_begin once, then one fill per
 * parameter, in order. The f64 fill stores the same float values widened, so it
 * equals the f32 fill converted to double. */
typedef struct CtxrtInit {
  CtxrtRng rng;
} CtxrtInit;

void ctxrt_init_begin(CtxrtInit *init, uint64_t seed);
void ctxrt_init_fill_f32(CtxrtInit *init, float *dst, size_t n);
void ctxrt_init_fill_f64(CtxrtInit *init, double *dst, size_t n);

/* Fills every tensor of [weights], in order, as above from [seed]. */
void ctxrt_weights_init(CtxrtWeights *weights, uint64_t seed);

/* ------------------------------------------------------------------------------
 * .npy arrays (NumPy format version 1.0, C order, little-endian)
 */

typedef enum CtxrtDtype {
  CTXRT_F32 = 1, /* '<f4' */
  CTXRT_F64 = 2, /* '<f8' */
} CtxrtDtype;

typedef struct CtxrtArray {
  CtxrtDtype dtype;
  int32_t ndim;
  int64_t shape[CTXRT_MAX_DIMS];
  int64_t numel;
  void *data; /* numel floats or doubles, row-major */
} CtxrtArray;

/* Writes the [ndim]-dimensional array of [dtype] with shape [shape] whose elements
 * are at [data] (row-major) to the file [path], byte for byte as numpy.save writes
 * it: the header dict `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`,
 * spaces to leave room for growing the first axis, then more spaces and a newline
 * so that the header ends on a multiple of 64 bytes. */
CtxrtStatus ctxrt_npy_write_file(const char *path, CtxrtDtype dtype, const void *data,
                                 int32_t ndim, const int64_t *shape, CtxrtError *err);

/* Like ctxrt_npy_write_file, into a malloc'ed buffer [*out] (free it) of [*len]
 * bytes. */
CtxrtStatus ctxrt_npy_write_buffer(CtxrtDtype dtype, const void *data, int32_t ndim,
                                   const int64_t *shape, unsigned char **out, size_t *len,
                                   CtxrtError *err);

/* Reads a `.npy` file of '<f4' or '<f8' in C order (format versions 1.0 to 3.0)
 * into a new array [*out]. Anything else, and a truncated file, is an error. */
CtxrtStatus ctxrt_npy_read_file(const char *path, CtxrtArray **out, CtxrtError *err);
CtxrtStatus ctxrt_npy_read_buffer(const char *name, const unsigned char *data, size_t len,
                                  CtxrtArray **out, CtxrtError *err);

/* Frees [array]. NULL is allowed. */
void ctxrt_array_destroy(CtxrtArray *array);

/* ------------------------------------------------------------------------------
 * Linearization: the flat arrays generated code reads (ARCHITECTURE.md, "The
 * runtime contract")
 *
 * Nodes get new ids 0 .. num_nodes-1 ordered by *level*: level 0 holds the nodes
 * without dependencies (tree leaves, DAG sources, first elements of sequences),
 * level L the nodes whose deepest dependency is at level L-1 (height for trees,
 * topological level for DAGs, position for sequences) — or, with `balance`
 * set, any level from there up to one below the lowest level of the nodes
 * that depend on it (the last level for those nothing depends on), chosen
 * so that the levels from 1 on hold about equally many nodes; the level
 * count and level 0 are the same either way. Level l is the id range
 * [level_start[l], level_start[l + 1]), so every dependency of a node has a smaller
 * id range than the node, and the nodes without dependencies are exactly the ids
 * below leaf_end (a leaf test is one compare). Within a level nodes keep the
 * forest's order (structure by structure, then node order), so the numbering is
 * deterministic. The work is O(nodes + dependencies) with no recursion; all arrays
 * live in one 64-byte-aligned block that ctxrt_linear_fill reuses when it is large
 * enough, so a timed loop over batches need not allocate.
 *
 * Per-node values are dense: node w's j-th value is val[w * num_values + j] as a
 * float and ival[w * num_values + j] as an int32 (CTXRT_NOT_INT when the value is
 * not an integer that fits, so INT32_MIN itself reads as "not an integer"); a node
 * without values has has_val[w] == 0 and rows of zeros (with V == 0 every has_val
 * is 0). Errors found while writing rows name the first bad node in new-id order.
 * Every field but skip_val and skip_ival is read-only for the caller; the arrays
 * stay valid until the next ctxrt_linear_fill or ctxrt_linear_destroy.
 */

#define CTXRT_NOT_INT INT32_MIN
#define CTXRT_MAX_GROUPS 8
/* The group key of the nodes that are dependency [p] of another node
 * (ctxrt_linear_set_groups). */
#define CTXRT_POSITION_GROUP(p) (-1 - (int32_t)(p))

typedef struct CtxrtLinear {
  CtxrtKind kind;
  int32_t num_nodes;
  int32_t num_levels; /* the "batches"; 0 only for an empty forest */
  int32_t leaf_end;   /* == level_start[1] (0 when empty) */
  int32_t max_deps;   /* K: row length of dep */
  int32_t num_values; /* V: row length of val and ival */
  int32_t num_outputs;
  int32_t *level_start;   /* [num_levels + 1] */
  int32_t *level_len;     /* [num_levels]: level_start[l + 1] - level_start[l] */
  int32_t *num_deps;      /* [num_nodes] */
  int32_t *dep;           /* [num_nodes * K]: dependency k of node w (a new id) at
                             dep[w * K + k] in the forest's order, -1 past num_deps[w] */
  int32_t *to_input;      /* [num_nodes]: new id -> forest node index */
  int32_t *to_new;        /* [num_nodes]: forest node index -> new id */
  int32_t *outputs;       /* [num_outputs]: ctxrt_forest_outputs, as new ids */
  float *val;             /* [num_nodes * V] */
  int32_t *ival;          /* [num_nodes * V] */
  unsigned char *has_val; /* [num_nodes] */
  /* Set by the caller (calloc, ctxrt_linear_create: 0): nonzero skips writing
   * val (skip_val) or ival (skip_ival) in ctxrt_linear_fill, for a reader that
   * never looks at them (their contents are then unspecified); the rows are
   * still checked and has_val still set. dagrnn's 512 float features per
   * node: writing their int32 view was 0.9 of the 1.5 ms a batch of 10 grids
   * took to linearize. */
  unsigned char skip_val, skip_ival;
  /* Set by the caller (0 at creation): nonzero makes ctxrt_linear_fill place
   * the nodes with dependencies in balanced levels (above: each between its
   * height and one below the lowest level of its users; level by level, the
   * nodes that must go there, then ready ones of the least slack, up to an
   * even share of those left). The kernels of schedules with
   * `balance_levels` read it so when their level products' weights exceed
   * the L2 of a thread (CtxrtModelDesc.balance_threads). */
  unsigned char balance;
  /* Groups (ctxrt_linear_set_groups): within each level the nodes of group
   * 0 come first, then those of group 1, ..., then the rest (each group in the
   * forest's order; a node joins the first group it matches); group g of level
   * l ends at group_end[g * num_levels + l]. group_arity[g] >= 0: the nodes
   * with exactly that many dependencies; CTXRT_POSITION_GROUP(p): the nodes
   * that are dependency p of another node (a tree's child p). */
  int32_t num_groups;
  int32_t group_arity[CTXRT_MAX_GROUPS];
  int32_t *group_end;     /* [num_groups * num_levels] */
  int32_t *position_;     /* private: each node's place in its parent's dependencies */
  void *block_;           /* private: the arrays' block, its size and scratch */
  size_t cap_;
  void *scratch_;
  size_t scratch_cap_;
} CtxrtLinear;

/* Linearizes [forest] into a new [*out]. [num_values] (>= 0) is the number of
 * values per node the model reads: each node must carry none or exactly that many
 * (0: values are not copied). [max_deps] > 0 fixes K (a node with more
 * dependencies is an error); 0 takes K from the forest (its largest count). The
 * forest should have passed ctxrt_forest_validate; still checked here, naming the
 * structure and node: dependencies out of range, cycles, arity over [max_deps],
 * value counts. CTXRT_ERR_ARG for a negative argument, CTXRT_ERR_NOMEM when out of
 * memory or when num_nodes * K or num_nodes * V exceeds INT32_MAX. [forest] may
 * be NULL: an empty linearization, to fill later. */
CtxrtStatus ctxrt_linear_create(const CtxrtForest *forest, int32_t num_values,
                                int32_t max_deps, CtxrtLinear **out, CtxrtError *err);

/* Like ctxrt_linear_create, into the existing [lin] (from ctxrt_linear_create),
 * reusing its memory when large enough. On failure [lin] is left empty (no nodes,
 * no levels) but still valid, and keeps its memory. */
CtxrtStatus ctxrt_linear_fill(CtxrtLinear *lin, const CtxrtForest *forest,
                              int32_t num_values, int32_t max_deps, CtxrtError *err);

/* Makes the fills of [lin] after it order each level's nodes in [n] groups
 * (CtxrtLinear, group_arity: [arity], distinct; an arity >= 0, or
 * CTXRT_POSITION_GROUP(p) for p in [0, 2^30)); n == 0 turns grouping off.
 * CTXRT_ERR_ARG for n outside [0, CTXRT_MAX_GROUPS] or a repeated group.
 * Grouping permutes ids only within levels: every other property of a
 * linearization holds as without it. A position group is meant for trees
 * (ctxrt_forest_validate: one parent per node); in a DAG, a node that is a
 * dependency of several nodes takes its place in the last of them. */
CtxrtStatus ctxrt_linear_set_groups(CtxrtLinear *lin, const int32_t *arity, int32_t n,
                                    CtxrtError *err);

/* Frees [lin]. NULL is allowed. */
void ctxrt_linear_destroy(CtxrtLinear *lin);

/* ------------------------------------------------------------------------------
 * Compiled models: running a kernel ctx generated (ctx run's JIT, ctx build's
 * libraries)
 *
 * A model descriptor says everything the runtime needs to run a compiled kernel:
 * the kernel's entry point and its buffer table (the kernel's calling convention:
 * kernel(bufs, num_nodes, num_levels), bufs[i] pointing at the data of bufs[i] of
 * the table; the full signature is CtxrtKernelFn's), the model's parameters, what it reads (a CtxrtSpec: kind, arity,
 * values per node, word bounds), K for the linearizer, and where each node's
 * output lives. ctx fills one in at run time (the JIT) or writes it as C (ctx
 * build). A CtxrtModel binds a descriptor to weights and runs it on forest after
 * forest, reusing its buffers (a loop over batches allocates only when a batch is
 * larger than any before it). Per batch:
 *   forest --ctxrt_linear_fill--> levels, dep, num_deps, val, ival
 *   PARAM -> the weights' float32 tensor; VALUES / IVALUES / NUM_DEPS / LEVELS ->
 *   the linearizer's arrays; DEP -> a copy with every absent slot (-1) pointing
 *   at row num_nodes; RESULT / SCRATCH -> (num_nodes + 1) rows, the last one zero;
 *   LEVEL_SCRATCH -> (widest level + 1) rows; INVARIANT -> one row; PACKED ->
 *   filled once at creation
 *   kernel(bufs, num_nodes, num_levels, tid, nthreads, barrier, ctx) on each
 *   thread of the model's team --> output rows in the forest's order
 * A model runs its kernel on a team of threads (ctxrt_model_set_threads;
 * default: every online core) created at the first run that needs it and
 * parked between runs; the calling thread is one of them. The results do not
 * depend on the number of threads. A model is used by one thread at a time.
 */

/* The kernel's entry point. Every thread of a team of [nthreads] calls it with
 * the same arguments and its own [tid] in [0, nthreads); the kernel computes
 * tid's contiguous share of each level's nodes and calls barrier(barrier_ctx)
 * once after each level (never when nthreads is 1), which returns once all
 * threads have called it, their stores visible. */
typedef void (*CtxrtKernelFn)(void *const *bufs, int64_t num_nodes, int64_t num_levels,
                              int64_t tid, int64_t nthreads, void (*barrier)(void *),
                              void *barrier_ctx);

/* What a kernel buffer holds (the order of ILIR's buffer kinds). */
typedef enum CtxrtBufKind {
  CTXRT_BUF_PARAM = 0,    /* f32[size]: parameter [param] */
  CTXRT_BUF_VALUES = 1,   /* f32 per-node input values (the linearizer's val) */
  CTXRT_BUF_IVALUES = 2,  /* i32 per-node values as integers (ival) */
  CTXRT_BUF_RESULT = 3,   /* f32[(num_nodes + 1) * size] */
  CTXRT_BUF_SCRATCH = 4,  /* f32[(num_nodes + 1) * size] */
  CTXRT_BUF_DEP = 5,      /* i32[num_nodes * K]: num_nodes where absent */
  CTXRT_BUF_NUM_DEPS = 6, /* i32[num_nodes] */
  CTXRT_BUF_LEVELS = 7,   /* i32[num_levels + 1] */
  CTXRT_BUF_PACKED = 8,   /* f32[rows * cols]: a block of parameter [param],
                             transposed when the model is created: element (r, c)
                             = param[off + c * stride + r], stored in panels of
                             [panel] columns, each row by row: at (c / panel) *
                             panel * rows + r * w + c % panel, w the panel's
                             width (panel 0: one panel) */
  CTXRT_BUF_LEVEL_SCRATCH = 9, /* f32[(widest level + 1) * size]: rows for the
                                  nodes of one level */
  CTXRT_BUF_INVARIANT = 10,    /* f32[size]: a value the same at every node, which
                                  the kernel computes once per run */
  CTXRT_BUF_PHASES = 11,       /* i32[num_levels]: 1 where a barrier follows level
                                  l, 0 where level l + 1 runs in the same phase
                                  (unroll_recursion: phases of up to [size] levels,
                                  decided per batch for the team's thread count;
                                  runtime/ctxrt_linearize.c, "phases", says when that is sound) */
  CTXRT_BUF_ARITY_END = 12,    /* i32[num_levels]: the end of each level's group of
                                  nodes with exactly [size] dependencies, or, for a
                                  negative [size], of the nodes that are dependency
                                  -1 - size of another (CTXRT_POSITION_GROUP; the
                                  linearizer's groups, ctxrt_linear_set_groups: one
                                  per such buffer, in table order) */
} CtxrtBufKind;

typedef struct CtxrtModelBuf {
  int32_t kind;  /* a CtxrtBufKind */
  int64_t size;  /* floats per node (RESULT, SCRATCH), in all (PARAM, PACKED) */
  int32_t param; /* PARAM, PACKED: the index into the descriptor's params */
  int64_t off, stride, rows, cols, panel; /* PACKED: the block (CTXRT_BUF_PACKED) */
} CtxrtModelBuf;

typedef struct CtxrtModelDesc {
  const char *name;       /* the model's name, used in messages */
  CtxrtKernelFn kernel;
  int32_t num_bufs;
  const CtxrtModelBuf *bufs;
  int32_t num_params;
  const CtxrtParam *params; /* declaration order (the default initialiser's) */
  CtxrtSpec spec;           /* what an input must be (ctxrt_forest_validate) */
  int32_t max_deps;         /* K for ctxrt_linear_fill (0: from the forest) */
  int32_t out_buf;          /* a RESULT buffer: the output of node n is */
  int64_t out_off;          /*   bufs[out_buf][n * size + out_off ..] */
  int64_t out_size;         /*   out_size floats (the output row) */
  /* A CUDA kernel (ctx build/run --target cuda; docs/cuda.md) instead of [kernel]:
   * its PTX (NUL-terminated) and entry point, run as one cooperative launch of
   * blocks of [gpu_block_threads] threads with [gpu_shared_bytes] of dynamic
   * shared memory each. NULL [ptx]: the CPU kernel. */
  const char *ptx;
  const char *ptx_entry;
  int32_t gpu_block_threads;
  int64_t gpu_shared_bytes;
  /* The views of the per-node values the kernel never reads (CTXRT_UNREAD_VAL,
   * CTXRT_UNREAD_IVAL; 0: it may read both): ctxrt_model_run's linearization
   * then does not write them (CtxrtLinear's skip_val, skip_ival). */
  int32_t unread_values;
  /* A CUDA kernel that spreads a level's sums over the whole grid (a GRID
   * loop, docs/cuda.md): launched with every co-resident block, not with as
   * many as the widest level has nodes. */
  int32_t gpu_all_blocks;
  /* The nodes of a level one block of a CUDA kernel takes at a time: 1 (0
   * reads as 1), or with its nodes on warps (`bind node to warp`) its warps:
   * a level of N nodes is launched ceil(N / gpu_nodes_per_block) blocks. */
  int32_t gpu_nodes_per_block;
  /* The most threads a CPU run may have for ctxrt_model_run to linearize its
   * batch in balanced levels (CtxrtLinear.balance): a schedule's
   * `balance_levels` sets it to the thread counts whose share of the level
   * products' weights exceeds a thread's L2 (one thread: fills it), where a
   * level of one node waits on the weights as long as a level of several
   * (0: never). */
  int32_t balance_threads;
} CtxrtModelDesc;

#define CTXRT_UNREAD_VAL 1
#define CTXRT_UNREAD_IVAL 2

typedef struct CtxrtModel CtxrtModel;

/* A model running [desc] (kept, not copied: it must outlive the model) with
 * [weights], borrowed: they must hold every parameter (by name, with its size)
 * and outlive the model. CTXRT_ERR_INVALID names a missing or mis-sized
 * parameter. */
CtxrtStatus ctxrt_model_create(const CtxrtModelDesc *desc, const CtxrtWeights *weights,
                               CtxrtModel **out, CtxrtError *err);

/* Like ctxrt_model_create with weights the model owns: read from the safetensors
 * file [weights_path] and checked against the parameters (ctxrt_weights_check),
 * or, when [weights_path] is NULL, the default initialiser's from [seed]. On
 * success [err] (when not NULL) has status CTXRT_OK and, as its message, the
 * note of ctxrt_weights_note when the file's tensors were converted, else "". */
CtxrtStatus ctxrt_model_load(const CtxrtModelDesc *desc, const char *weights_path,
                             uint64_t seed, CtxrtModel **out, CtxrtError *err);

/* Loads the CUDA driver (dlopen of libcuda.so.1, or the library the environment
 * variable CTXRT_CUDA_DRIVER names), initializes it and counts its GPUs into
 * [*devices]. CTXRT_ERR_DEVICE: `error: no CUDA driver (libcuda.so.1 not
 * found)`, a symbol it lacks, the driver's own error, or no GPU. A model with a
 * CUDA kernel (desc->ptx) gets the same errors from ctxrt_model_create, and
 * runs on the GPU the environment variable CTXRT_CUDA_DEVICE numbers (0, the
 * default, to [*devices] - 1; counted after CUDA_VISIBLE_DEVICES, as the
 * driver lists them): another value is CTXRT_ERR_DEVICE at creation. */
CtxrtStatus ctxrt_cuda_probe(int32_t *devices, CtxrtError *err);

/* Frees [model] (and the weights it owns). NULL is allowed. */
void ctxrt_model_destroy(CtxrtModel *model);

/* Runs [model]'s kernel on [threads] threads from the next run on (0: one per
 * CPU the process may run on — its affinity mask, as taskset sets it — the
 * default; the environment variable CTXRT_THREADS, when set
 * to a positive integer, replaces that default). The team is created at the
 * first run with more than one thread; fewer threads run when the system
 * refuses to create more. CTXRT_ERR_ARG for a negative count or a NULL
 * model. */
CtxrtStatus ctxrt_model_set_threads(CtxrtModel *model, int32_t threads, CtxrtError *err);

/* The threads the next run of [model] uses (resolving 0 as above). */
int32_t ctxrt_model_threads(const CtxrtModel *model);

/* Runs the kernel over [forest], which must have passed ctxrt_forest_validate
 * with desc->spec, and writes its output rows (out_size floats each) to [out]:
 * one per output node in ctxrt_forest_outputs order, or with [all_nodes] one
 * per node in the forest's order. [out] NULL: into the model's own buffer
 * (ctxrt_model_outputs). Returns the linearizer's status. */
CtxrtStatus ctxrt_model_run(CtxrtModel *model, const CtxrtForest *forest, int all_nodes,
                            float *out, CtxrtError *err);

/* Where a model's runs spent their time (wall clock, seconds, summed over
 * the runs since the model was created or ctxrt_model_reset_times): the
 * linearizer, binding the batch's buffers, the kernel on the team, copying
 * the output rows. */
typedef struct CtxrtModelTimes {
  int64_t runs;
  double linearize_s, bind_s, kernel_s, copy_s;
  int64_t levels, steps; /* dependency levels, and the level ends at which the
                            kernel waited for its team (barriers on two or more
                            threads), summed over the runs */
} CtxrtModelTimes;

void ctxrt_model_times(const CtxrtModel *model, CtxrtModelTimes *times);
void ctxrt_model_reset_times(CtxrtModel *model);

/* Reads the [len] bytes at [data] as bracketed trees ([nodes] 0; leaf words
 * through the model's vocabulary when it has one, ctxrt_model_set_vocab) or
 * node lists ([nodes] 1), named [name] in messages, validates them against
 * desc->spec and runs the model on them (into the model's own buffer: a row
 * per output node, or per node with ctxrt_model_set_all_nodes). */
CtxrtStatus ctxrt_model_run_text(CtxrtModel *model, const char *name, const char *data,
                                 size_t len, int nodes, CtxrtError *err);

/* The same for CoNLL-U text (ctxrt_read_conllu_buffer): field [column] (1
 * FORM .. 4 XPOS) of each word looked up in the model's vocabulary, or read as
 * an integer word id when it has none. */
CtxrtStatus ctxrt_model_run_conllu(CtxrtModel *model, const char *name, const char *data,
                                   size_t len, int column, CtxrtError *err);

/* Whether the runs from text and arrays give a row for every node (in the
 * input's order, as ctx run --all-nodes) instead of one per output node. */
void ctxrt_model_set_all_nodes(CtxrtModel *model, int all_nodes);

/* The vocabulary of the text runs: the [len] bytes at [data] (one word a
 * line, ctxrt_vocab_read_buffer; [name] in messages), words not in it taking
 * the id of [unk] when not NULL (ctxrt_vocab_set_fallback); [data] NULL: none
 * (words are integer ids). On failure the model keeps its vocabulary. */
CtxrtStatus ctxrt_model_set_vocab(CtxrtModel *model, const char *name, const char *data,
                                  size_t len, const char *unk, CtxrtError *err);

/* Makes a forest of desc->spec's kind from arrays (ctxrt_forest_from_heads
 * when [heads] is not NULL, else ctxrt_forest_from_arrays with [num_deps] and
 * [deps]; desc->spec's values per node, "arrays" in messages), validates it
 * and runs the model on it as ctxrt_model_run_text does. */
CtxrtStatus ctxrt_model_run_arrays(CtxrtModel *model, int32_t num_structs,
                                   const int32_t *num_nodes, const int32_t *num_deps,
                                   const int32_t *deps, const int32_t *heads,
                                   const double *values, CtxrtError *err);

/* The rows of the last ctxrt_model_run into the model's own buffer or
 * ctxrt_model_run_text: [*rows] rows of desc->out_size floats (NULL, 0 before). */
const float *ctxrt_model_outputs(const CtxrtModel *model, int64_t *rows);

#ifdef __cplusplus
}
#endif

#endif /* CTXRT_H */
