/* blas_tree.c — the hand-written C baselines: the zoo's models (docs/models.md) in
 * plain C, with OpenBLAS doing the matrix products, the way a careful programmer
 * writes them.
 *
 * It reads the same inputs (PTB trees or node lists, through libctxrt) and the same
 * safetensors weights as ctx, splits the structures into batches of --batch, parses
 * every batch before timing, and then times each batch from parsed structures in
 * memory to all root outputs: ctxrt_linear_fill (level-contiguous node ids, the
 * same linearizer ctx runs), then
 *  - node-independent products of the whole batch in one sgemm before the levels:
 *    childsum's [W_iou; W_f]·x (the two matrices stacked once at load), dagrnn's W·x;
 *  - level by level (default), all nodes of a level gathered into one matrix and one
 *    cblas_sgemm per weight matrix per level (a cblas_sgemv per node when the level
 *    has at most SGEMV_ROWS nodes: faster there), with the algebra that saves
 *    products: U·(h_0 + h_1) once per node (treegru, treelstm, childsum's Σ h_k,
 *    dagrnn's Σ h_p), and treelstm's U_f·h_k of both children (childsum: of all
 *    children) as one product over the level;
 *  - or, with --per-node, one node at a time in the same order, one cblas_sgemv per
 *    weight matrix and operand (the better choice for small batches in several cases);
 *  - the elementwise epilogues in C (-ffast-math: glibc's vector expf/tanhf).
 * mvrnn's B·a, A·b are sgemv per node (every node has its own matrices); its
 * WM·[A; B] is one sgemm per level over the level's matrices laid side by side
 * (per node: two sgemm on WM's halves, no copy). After one warm-up pass it runs
 * --repeat passes over all batches and prints, like `ctx run --time`,
 *   blas: corename=NAME threads=T
 *   time: median_ms=M p10_ms=P p90_ms=Q batches=N batch_size=B
 * With --output it writes the root outputs of the last pass as float32 .npy.
 *
 * usage: blas_tree MODEL --input FILE --weights W.safetensors [-D H=256] [-D V=20000]
 *                   [--batch B] [--repeat R] [--threads T] [--per-node] [--output OUT.npy]
 */
#include "bench/common/bench_util.h"
#include "runtime/ctxrt.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { TREEFC, TREEGRU, TREELSTM, CHILDSUM, MVRNN, DAGRNN, SEQLSTM } Model;

static const char *const model_names[] = {"treefc",   "treegru", "treelstm", "childsum",
                                          "mvrnn",    "dagrnn",  "seqlstm"};

typedef struct Bench {
  Model model;
  int H, V, D, K; /* K: max dependencies per node (linearizer row length) */
  int nvals;      /* values per node the model reads */
  const float *p[8]; /* parameters in declaration order */
  /* per-node state, indexed by new (level-ordered) id */
  float *h, *c;
  const float **mat; /* mvrnn: each node's matrix (leaves: into EmbM) */
  int *mat_ld;       /* its leading dimension */
  /* level scratch */
  float *x, *g, *y, *f, *wide;
  float *stacked; /* childsum: [W_iou; W_f], [4H x H], built at load */
  bool per_node;  /* the per-node baseline: one sgemv per node and weight matrix */
} Bench;

static inline float sigm(float v) { return 1.0f / (1.0f + expf(-v)); }

/* Y[n x rows] (ld ldy) = X[n x cols] (ld ldx) . Wt, W [rows x cols] row-major;
 * beta 0 or 1. One sgemm (one sgemv per row up to SGEMV_ROWS rows, and always in
 * the per-node baseline). */
/* Up to this many rows, a product is one sgemv per row: OpenBLAS 0.3.21's SkylakeX
 * sgemm of [n x 256] x [256 x 1024] took 52 / 54 / 76 us at n = 2 / 4 / 10, its
 * sgemv 10.6 us a row (best of 2000 calls, one Zen 5 core). */
#define SGEMV_ROWS 4

static void mm_rows(bool per_row, int n, int rows, int cols, const float *X, int ldx,
                    const float *W, float *Y, int ldy, float beta) {
  if (n <= 0) return;
  if (n <= SGEMV_ROWS || per_row)
    for (int i = 0; i < n; i++)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, cols, 1.0f, W, cols, X + (size_t)i * ldx, 1,
                  beta, Y + (size_t)i * ldy, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, rows, cols, 1.0f, X, ldx, W, cols,
                beta, Y, ldy);
}

static void mm(const Bench *b, int n, int rows, int cols, const float *X, int ldx,
               const float *W, float *Y, int ldy, float beta) {
  mm_rows(b->per_node, n, rows, cols, X, ldx, W, Y, ldy, beta);
}

/* ---- models: one level [s, e) of nodes at a time ------------------------------- */

static int word(const CtxrtLinear *L, int w) { return L->ival[(size_t)w * L->num_values]; }
static int dep(const CtxrtLinear *L, int w, int k) { return L->dep[(size_t)w * L->max_deps + k]; }

static void treefc_level(Bench *b, const CtxrtLinear *L, int s, int e, bool leaf) {
  int H = b->H, n = e - s;
  const float *Emb = b->p[0], *W = b->p[1], *bias = b->p[2];
  if (leaf) {
    for (int w = s; w < e; w++)
      memcpy(b->h + (size_t)w * H, Emb + (size_t)word(L, w) * H, sizeof(float) * (size_t)H);
    return;
  }
  for (int i = 0; i < n; i++) {
    float *row = b->x + (size_t)i * 2 * H;
    memcpy(row, b->h + (size_t)dep(L, s + i, 0) * H, sizeof(float) * (size_t)H);
    memcpy(row + H, b->h + (size_t)dep(L, s + i, 1) * H, sizeof(float) * (size_t)H);
  }
  float *out = b->h + (size_t)s * H;
  mm(b, n, H, 2 * H, b->x, 2 * H, W, out, H, 0.0f);
  for (size_t i = 0; i < (size_t)n * H; i++) {
    float v = out[i] + bias[i % (size_t)H];
    out[i] = v > 0.0f ? v : 0.0f;
  }
}

static void treegru_level(Bench *b, const CtxrtLinear *L, int s, int e, bool leaf) {
  int H = b->H, n = e - s;
  const float *Emb = b->p[0], *Urz = b->p[1], *brz = b->p[2], *Uh = b->p[3], *bh = b->p[4];
  if (leaf) {
    for (int w = s; w < e; w++)
      memcpy(b->h + (size_t)w * H, Emb + (size_t)word(L, w) * H, sizeof(float) * (size_t)H);
    return;
  }
  float *S = b->x, *G = b->g, *T = b->y, *Ht = b->f;
  for (int i = 0; i < n; i++) {
    const float *h0 = b->h + (size_t)dep(L, s + i, 0) * H;
    const float *h1 = b->h + (size_t)dep(L, s + i, 1) * H;
    for (int j = 0; j < H; j++) S[(size_t)i * H + j] = h0[j] + h1[j];
  }
  mm(b, n, 2 * H, H, S, H, Urz, G, 2 * H, 0.0f);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < H; j++) {
      float r = sigm(G[(size_t)i * 2 * H + j] + brz[j]);
      T[(size_t)i * H + j] = r * S[(size_t)i * H + j];
    }
  mm(b, n, H, H, T, H, Uh, Ht, H, 0.0f);
  for (int i = 0; i < n; i++) {
    float *h = b->h + (size_t)(s + i) * H;
    for (int j = 0; j < H; j++) {
      float z = sigm(G[(size_t)i * 2 * H + H + j] + brz[H + j]);
      float ht = tanhf(Ht[(size_t)i * H + j] + bh[j]);
      float sv = S[(size_t)i * H + j];
      h[j] = z * sv + (1.0f - z) * ht;
    }
  }
}

static void treelstm_level(Bench *b, const CtxrtLinear *L, int s, int e, bool leaf) {
  int H = b->H, n = e - s;
  const float *Emb = b->p[0], *Uiou = b->p[1], *biou = b->p[2], *Uf = b->p[3], *bf = b->p[4];
  float *G = b->g, *F = b->f, *S = b->x, *HC = b->y;
  if (leaf) {
    for (int i = 0; i < n; i++) {
      const float *gw = Emb + (size_t)word(L, s + i) * 3 * H;
      float *h = b->h + (size_t)(s + i) * H, *c = b->c + (size_t)(s + i) * H;
      for (int j = 0; j < H; j++) {
        float ig = sigm(gw[j] + biou[j]), og = sigm(gw[H + j] + biou[H + j]);
        float u = tanhf(gw[2 * H + j] + biou[2 * H + j]);
        c[j] = ig * u;
        h[j] = og * tanhf(c[j]);
      }
    }
    return;
  }
  for (int i = 0; i < n; i++) {
    const float *h0 = b->h + (size_t)dep(L, s + i, 0) * H;
    const float *h1 = b->h + (size_t)dep(L, s + i, 1) * H;
    for (int j = 0; j < H; j++) S[(size_t)i * H + j] = h0[j] + h1[j];
    memcpy(HC + (size_t)(2 * i) * H, h0, sizeof(float) * (size_t)H);
    memcpy(HC + (size_t)(2 * i + 1) * H, h1, sizeof(float) * (size_t)H);
  }
  mm(b, n, 3 * H, H, S, H, Uiou, G, 3 * H, 0.0f);
  mm(b, 2 * n, H, H, HC, H, Uf, F, H, 0.0f);
  for (int i = 0; i < n; i++) {
    const float *c0 = b->c + (size_t)dep(L, s + i, 0) * H;
    const float *c1 = b->c + (size_t)dep(L, s + i, 1) * H;
    const float *g = G + (size_t)i * 3 * H;
    const float *f0 = F + (size_t)(2 * i) * H, *f1 = f0 + H;
    float *h = b->h + (size_t)(s + i) * H, *c = b->c + (size_t)(s + i) * H;
    for (int j = 0; j < H; j++) {
      float ig = sigm(g[j] + biou[j]), og = sigm(g[H + j] + biou[H + j]);
      float u = tanhf(g[2 * H + j] + biou[2 * H + j]);
      float cv = ig * u + sigm(f0[j] + bf[j]) * c0[j] + sigm(f1[j] + bf[j]) * c1[j];
      c[j] = cv;
      h[j] = og * tanhf(cv);
    }
  }
}

/* Before the levels: G0 = X . [W_iou; W_f]^T for every node of the batch at once
 * (the node-independent products; the stacked matrix is built at load). */
static void childsum_prologue(Bench *b, const CtxrtLinear *L) {
  int H = b->H, N = L->num_nodes;
  const float *Emb = b->p[0];
  for (int w = 0; w < N; w++)
    memcpy(b->x + (size_t)w * H, Emb + (size_t)word(L, w) * H, sizeof(float) * (size_t)H);
  mm_rows(false, N, 4 * H, H, b->x, H, b->stacked, b->g, 4 * H, 0.0f);
}

static void childsum_level(Bench *b, const CtxrtLinear *L, int s, int e, bool leaf) {
  int H = b->H, n = e - s, K = L->max_deps;
  const float *Uiou = b->p[2], *biou = b->p[3], *Uf = b->p[5], *bf = b->p[6];
  /* G rows [W_iou.x | W_f.x] of the level's nodes, from the prologue */
  float *G = b->g + (size_t)s * 4 * H, *S = b->wide, *HC = b->wide + (size_t)n * H;
  float *FC = b->f;
  int nc = 0;
  if (!leaf) {
    for (int i = 0; i < n; i++) {
      float *si = S + (size_t)i * H;
      memset(si, 0, sizeof(float) * (size_t)H);
      for (int k = 0; k < L->num_deps[s + i]; k++, nc++) {
        const float *hk = b->h + (size_t)L->dep[(size_t)(s + i) * K + k] * H;
        memcpy(HC + (size_t)nc * H, hk, sizeof(float) * (size_t)H);
        for (int j = 0; j < H; j++) si[j] += hk[j];
      }
    }
    mm(b, n, 3 * H, H, S, H, Uiou, G, 4 * H, 1.0f);
    mm(b, nc, H, H, HC, H, Uf, FC, H, 0.0f);
  }
  nc = 0;
  for (int i = 0; i < n; i++) {
    const float *g = G + (size_t)i * 4 * H, *fx = g + 3 * H;
    float *h = b->h + (size_t)(s + i) * H, *c = b->c + (size_t)(s + i) * H;
    for (int j = 0; j < H; j++) {
      float ig = sigm(g[j] + biou[j]);
      c[j] = ig * tanhf(g[2 * H + j] + biou[2 * H + j]);
    }
    int nd = leaf ? 0 : L->num_deps[s + i];
    for (int k = 0; k < nd; k++, nc++) {
      const float *ck = b->c + (size_t)L->dep[(size_t)(s + i) * K + k] * H;
      const float *fc = FC + (size_t)nc * H;
      for (int j = 0; j < H; j++) c[j] += sigm(fx[j] + bf[j] + fc[j]) * ck[j];
    }
    for (int j = 0; j < H; j++) h[j] = sigm(g[H + j] + biou[H + j]) * tanhf(c[j]);
  }
}

/* The per-node baseline's mvrnn node [w]: sgemv B.a, A.b, W.[..]; two sgemm for P. */
static void mvrnn_node(Bench *b, const CtxrtLinear *L, int w) {
  int H = b->H, l = dep(L, w, 0), r = dep(L, w, 1);
  const float *A = b->mat[l], *B = b->mat[r], *W = b->p[2], *bias = b->p[3], *WM = b->p[4];
  int lda = b->mat_ld[l], ldb = b->mat_ld[r];
  float *X = b->x, *out = b->h + (size_t)w * H, *P = b->c + (size_t)w * H * H;
  cblas_sgemv(CblasRowMajor, CblasNoTrans, H, H, 1.0f, B, ldb, b->h + (size_t)l * H, 1, 0.0f, X,
              1);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, H, H, 1.0f, A, lda, b->h + (size_t)r * H, 1, 0.0f,
              X + H, 1);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, H, 2 * H, 1.0f, W, 2 * H, X, 1, 0.0f, out, 1);
  for (int j = 0; j < H; j++) out[j] = tanhf(out[j] + bias[j]);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, H, H, H, 1.0f, WM, 2 * H, A, lda, 0.0f,
              P, H);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, H, H, H, 1.0f, WM + H, 2 * H, B, ldb,
              1.0f, P, H);
  b->mat[w] = P;
  b->mat_ld[w] = H;
}

static void mvrnn_level(Bench *b, const CtxrtLinear *L, int s, int e, bool leaf) {
  int H = b->H, n = e - s;
  const float *Emb = b->p[0], *EmbM = b->p[1], *W = b->p[2], *bias = b->p[3], *WM = b->p[4];
  if (leaf) {
    for (int w = s; w < e; w++) {
      memcpy(b->h + (size_t)w * H, Emb + (size_t)word(L, w) * H, sizeof(float) * (size_t)H);
      b->mat[w] = EmbM + (size_t)word(L, w) * H * H;
      b->mat_ld[w] = H;
    }
    return;
  }
  if (b->per_node) { /* P = WM[:, :H].A + WM[:, H:].B in place, no copy */
    mvrnn_node(b, L, s);
    return;
  }
  /* X = [B.a; A.b] per node (sgemv each), M = [A_i; B_i] side by side [2H x nH] */
  float *X = b->x, *M = b->wide;
  size_t ldm = (size_t)n * H;
  for (int i = 0; i < n; i++) {
    int l = dep(L, s + i, 0), r = dep(L, s + i, 1);
    const float *A = b->mat[l], *B = b->mat[r];
    int lda = b->mat_ld[l], ldb = b->mat_ld[r];
    cblas_sgemv(CblasRowMajor, CblasNoTrans, H, H, 1.0f, B, ldb, b->h + (size_t)l * H, 1, 0.0f,
                X + (size_t)i * 2 * H, 1);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, H, H, 1.0f, A, lda, b->h + (size_t)r * H, 1, 0.0f,
                X + (size_t)i * 2 * H + H, 1);
    for (int k = 0; k < H; k++) {
      memcpy(M + (size_t)k * ldm + (size_t)i * H, A + (size_t)k * lda, sizeof(float) * (size_t)H);
      memcpy(M + (size_t)(H + k) * ldm + (size_t)i * H, B + (size_t)k * ldb,
             sizeof(float) * (size_t)H);
    }
  }
  float *out = b->h + (size_t)s * H;
  mm(b, n, H, 2 * H, X, 2 * H, W, out, H, 0.0f);
  for (size_t i = 0; i < (size_t)n * H; i++) out[i] = tanhf(out[i] + bias[i % (size_t)H]);
  /* P (all nodes) = WM [H x 2H] . M [2H x nH], stored in the level's block of c-matrices */
  float *P = b->c + (size_t)s * H * H;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, H, n * H, 2 * H, 1.0f, WM, 2 * H, M,
              (int)ldm, 0.0f, P, (int)ldm);
  for (int i = 0; i < n; i++) {
    b->mat[s + i] = P + (size_t)i * H;
    b->mat_ld[s + i] = (int)ldm;
  }
}

/* Before the levels: h = X . W^T for every node of the batch in one product. */
static void dagrnn_prologue(Bench *b, const CtxrtLinear *L) {
  mm_rows(false, L->num_nodes, b->H, b->D, L->val, b->D, b->p[0], b->h, b->H, 0.0f);
}

static void dagrnn_level(Bench *b, const CtxrtLinear *L, int s, int e, bool leaf) {
  int H = b->H, n = e - s, K = L->max_deps;
  const float *U = b->p[1], *bias = b->p[2];
  float *out = b->h + (size_t)s * H, *S = b->x;
  if (!leaf) {
    for (int i = 0; i < n; i++) {
      float *si = S + (size_t)i * H;
      memset(si, 0, sizeof(float) * (size_t)H);
      for (int k = 0; k < L->num_deps[s + i]; k++) {
        const float *hp = b->h + (size_t)L->dep[(size_t)(s + i) * K + k] * H;
        for (int j = 0; j < H; j++) si[j] += hp[j];
      }
    }
    mm(b, n, H, H, S, H, U, out, H, 1.0f);
  }
  for (size_t i = 0; i < (size_t)n * H; i++) out[i] = tanhf(out[i] + bias[i % (size_t)H]);
}

static void seqlstm_level(Bench *b, const CtxrtLinear *L, int s, int e, bool leaf) {
  int H = b->H, n = e - s;
  const float *Emb = b->p[0], *U = b->p[1], *bias = b->p[2];
  float *G = b->g, *Hp = b->x;
  if (!leaf) {
    for (int i = 0; i < n; i++)
      memcpy(Hp + (size_t)i * H, b->h + (size_t)dep(L, s + i, 0) * H, sizeof(float) * (size_t)H);
    mm(b, n, 4 * H, H, Hp, H, U, G, 4 * H, 0.0f);
  }
  for (int i = 0; i < n; i++) {
    const float *ew = Emb + (size_t)word(L, s + i) * 4 * H;
    const float *g = G + (size_t)i * 4 * H;
    const float *cp = leaf ? NULL : b->c + (size_t)dep(L, s + i, 0) * H;
    float *h = b->h + (size_t)(s + i) * H, *c = b->c + (size_t)(s + i) * H;
    for (int j = 0; j < H; j++) {
      float gi = ew[j] + bias[j], gf = ew[H + j] + bias[H + j];
      float gu = ew[2 * H + j] + bias[2 * H + j], go = ew[3 * H + j] + bias[3 * H + j];
      if (!leaf) gi += g[j], gf += g[H + j], gu += g[2 * H + j], go += g[3 * H + j];
      float cv = sigm(gi) * tanhf(gu) + (leaf ? 0.0f : sigm(gf) * cp[j]);
      c[j] = cv;
      h[j] = sigm(go) * tanhf(cv);
    }
  }
}

typedef void (*LevelFn)(Bench *, const CtxrtLinear *, int, int, bool);
static const LevelFn level_fns[] = {treefc_level,  treegru_level, treelstm_level, childsum_level,
                                    mvrnn_level,   dagrnn_level,  seqlstm_level};

/* ---- setup ------------------------------------------------------------------- */

static int set_params(Bench *b, CtxrtParam *ps) {
  int H = b->H, V = b->V, D = b->D, n = 0;
#define P1(NAME, A) ps[n++] = (CtxrtParam){NAME, 1, {A}}
#define P2(NAME, A, B) ps[n++] = (CtxrtParam){NAME, 2, {A, B}}
  switch (b->model) {
  case TREEFC: P2("Emb", V, H); P2("W", H, 2 * H); P1("b", H); break;
  case TREEGRU:
    P2("Emb", V, H); P2("U_rz", 2 * H, H); P1("b_rz", 2 * H); P2("U_h", H, H); P1("b_h", H);
    break;
  case TREELSTM:
    P2("Emb", V, 3 * H); P2("U_iou", 3 * H, H); P1("b_iou", 3 * H); P2("U_f", H, H);
    P1("b_f", H);
    break;
  case CHILDSUM:
    P2("Emb", V, H); P2("W_iou", 3 * H, H); P2("U_iou", 3 * H, H); P1("b_iou", 3 * H);
    P2("W_f", H, H); P2("U_f", H, H); P1("b_f", H);
    break;
  case MVRNN:
    P2("Emb", V, H); ps[n++] = (CtxrtParam){"EmbM", 3, {V, H, H}}; P2("W", H, 2 * H);
    P1("b", H); P2("WM", H, 2 * H);
    break;
  case DAGRNN: P2("W", H, D); P2("U", H, H); P1("b", H); break;
  case SEQLSTM: P2("Emb", V, 4 * H); P2("U", 4 * H, H); P1("b", 4 * H); break;
  }
#undef P1
#undef P2
  return n;
}

/* One batch: linearize, run level by level, copy the roots to [out]. */
static int run_batch(Bench *b, CtxrtLinear *L, const CtxrtForest *f, float *out) {
  CtxrtError err;
  if (ctxrt_linear_fill(L, f, b->nvals, b->K, &err)) bench_die("linearize", err.msg);
  if (b->model == CHILDSUM) childsum_prologue(b, L);
  if (b->model == DAGRNN) dagrnn_prologue(b, L);
  LevelFn fn = level_fns[b->model];
  for (int l = 0; l < L->num_levels; l++) {
    int s = L->level_start[l], e = L->level_start[l + 1];
    if (!b->per_node) fn(b, L, s, e, l == 0);
    else /* a level's nodes are independent: one at a time is a topological order */
      for (int w = s; w < e; w++) fn(b, L, w, w + 1, l == 0);
  }
  for (int k = 0; k < L->num_outputs; k++)
    memcpy(out + (size_t)k * b->H, b->h + (size_t)L->outputs[k] * b->H,
           sizeof(float) * (size_t)b->H);
  return L->num_outputs;
}

int main(int argc, char **argv) {
  bench_prog = "blas_tree";
  Bench b;
  memset(&b, 0, sizeof b);
  const char *input = NULL, *weights = NULL, *output = NULL;
  int batch = 1, repeat = 5, threads = 1, model = -1;
  b.H = 0, b.V = 20000, b.D = 0, b.K = 8;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--input") && v) input = v, i++;
    else if (!strcmp(a, "--weights") && v) weights = v, i++;
    else if (!strcmp(a, "--output") && v) output = v, i++;
    else if (!strcmp(a, "--batch") && v) batch = atoi(v), i++;
    else if (!strcmp(a, "--repeat") && v) repeat = atoi(v), i++;
    else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
    else if (!strcmp(a, "--per-node")) b.per_node = true;
    else if (!strncmp(a, "-D", 2)) {
      const char *kv = a[2] ? a + 2 : v;
      if (!a[2]) i++;
      if (!kv || kv[1] != '=') bench_die("bad -D", kv);
      int val = atoi(kv + 2);
      if (kv[0] == 'H') b.H = val;
      else if (kv[0] == 'V') b.V = val;
      else if (kv[0] == 'D') b.D = val;
      else if (kv[0] == 'K') b.K = val;
      else bench_die("unknown dim", kv);
    } else if (model < 0 && a[0] != '-') {
      for (int m = 0; m < 7; m++)
        if (!strcmp(a, model_names[m])) model = m;
      if (model < 0) bench_die("unknown model", a);
    } else bench_die("bad argument", a);
  }
  if (model < 0 || !input || !weights || batch < 1 || repeat < 1)
    bench_die("usage: blas_tree MODEL --input FILE --weights W.safetensors [-D H=..] [--batch B] "
        "[--repeat R] [--threads T] [--output OUT.npy]", NULL);
  b.model = (Model)model;
  if (!b.H) b.H = b.model == MVRNN ? 64 : 256;
  if (!b.D) b.D = b.H;
  int H = b.H;
  openblas_set_num_threads(threads);
  /* which kernel OpenBLAS picked (OPENBLAS_CORETYPE may force one): the runner checks it */
  printf("blas: corename=%s threads=%d\n", openblas_get_corename(), threads);

  bool ptb = b.model <= TREELSTM || b.model == MVRNN;
  b.nvals = b.model == DAGRNN ? b.D : 1;
  b.K = b.model == CHILDSUM ? b.K : b.model == SEQLSTM ? 1 : 2;
  int64_t bound = b.V;
  CtxrtSpec spec = {b.model == DAGRNN ? CTXRT_DAG : b.model == SEQLSTM ? CTXRT_SEQUENCE
                                                                       : CTXRT_TREE,
                    b.model == SEQLSTM ? 0 : b.K, (ptb ? 2 : 0), b.nvals,
                    ptb ? CTXRT_VALUES_LEAVES : CTXRT_VALUES_ALL,
                    b.model == DAGRNN ? NULL : &bound};
  CtxrtError err;
  CtxrtWeights *w;
  if (ctxrt_st_read_file(weights, &w, &err)) bench_die("weights", err.msg);
  CtxrtParam ps[8];
  int np = set_params(&b, ps);
  if (ctxrt_weights_check(w, weights, ps, np, &err)) bench_die("weights", err.msg);
  for (int i = 0; i < np; i++) b.p[i] = ctxrt_weights_find(w, ps[i].name)->data;
  if (b.model == CHILDSUM) { /* [W_iou; W_f]: the node-independent products in one sgemm */
    b.stacked = bench_xmalloc(sizeof(float) * 4 * (size_t)H * (size_t)H);
    memcpy(b.stacked, b.p[1], sizeof(float) * 3 * (size_t)H * (size_t)H);
    memcpy(b.stacked + 3 * (size_t)H * H, b.p[4], sizeof(float) * (size_t)H * (size_t)H);
  }

  int nb;
  CtxrtForest **batches = bench_read_batches(input, ptb, batch, &nb);
  size_t max_nodes = 0, total_out = 0;
  for (int i = 0; i < nb; i++) {
    if (ctxrt_forest_validate(batches[i], &spec, &err)) bench_die("validate", err.msg);
    if ((size_t)batches[i]->num_nodes > max_nodes) max_nodes = (size_t)batches[i]->num_nodes;
    total_out += (size_t)ctxrt_forest_outputs(batches[i], NULL);
  }
  /* state and scratch sized for the largest batch */
  size_t N = max_nodes + 1, Hs = (size_t)H;
  b.h = bench_xmalloc(sizeof(float) * N * Hs);
  b.c = bench_xmalloc(sizeof(float) * N * Hs * (b.model == MVRNN ? Hs : 1));
  b.x = bench_xmalloc(sizeof(float) * N * 2 * Hs);
  b.g = bench_xmalloc(sizeof(float) * N * 4 * Hs);
  b.y = bench_xmalloc(sizeof(float) * N * 2 * Hs);
  b.f = bench_xmalloc(sizeof(float) * N * 2 * Hs);
  b.wide = bench_xmalloc(sizeof(float) * N * 2 * Hs * (b.model == MVRNN ? Hs : 1));
  b.mat = malloc(sizeof *b.mat * N);
  b.mat_ld = malloc(sizeof *b.mat_ld * N);
  float *out = bench_xmalloc(sizeof(float) * (total_out + 1) * Hs);
  CtxrtLinear *L;
  if (ctxrt_linear_create(NULL, b.nvals, b.K, &L, &err)) bench_die("linearize", err.msg);
  /* only the view of the values this model reads, as ctx's runtime does
   * (CtxrtModelDesc.unread_values): dagrnn's float features, the word ids */
  L->skip_ival = b.model == DAGRNN;
  L->skip_val = b.model != DAGRNN;

  /* warm-up pass (also writes the outputs), then the timed passes */
  for (int i = 0, row = 0; i < nb; i++) row += run_batch(&b, L, batches[i], out + (size_t)row * Hs);
  double *ms = malloc(sizeof *ms * (size_t)nb * (size_t)repeat);
  for (int r = 0; r < repeat; r++)
    for (int i = 0, row = 0; i < nb; i++) {
      double t0 = bench_now_ms();
      row += run_batch(&b, L, batches[i], out + (size_t)row * Hs);
      ms[r * nb + i] = bench_now_ms() - t0;
    }
  bench_print_times(ms, nb * repeat, batch);
  if (output) {
    int64_t shape[2] = {(int64_t)total_out, H};
    if (ctxrt_npy_write_file(output, CTXRT_F32, out, 2, shape, &err)) bench_die("output", err.msg);
  }
  for (int i = 0; i < nb; i++) ctxrt_forest_destroy(batches[i]);
  free(batches);
  ctxrt_linear_destroy(L);
  ctxrt_weights_destroy(w);
  free(b.h), free(b.c), free(b.x), free(b.g), free(b.y), free(b.f), free(b.wide);
  free(b.mat), free(b.mat_ld), free(b.stacked), free(out), free(ms);
  return 0;
}
