/* cg_math.c — exp, tanh and sigmoid of float32 as plain arithmetic.
 *
 * libm's expf and tanhf are calls the loop vectorizer cannot widen, and in
 * the recursive cells (a sigmoid per gate, a tanh per state) those scalar
 * calls cost as much as the matrix products. These versions are straight-line
 * IR — fmul, fadd, a shift into the exponent — so a loop of them
 * vectorizes like any elementwise loop.
 *
 * exp(x): x = n ln2 + r with n the integer nearest x log2(e) and |r| <=
 * ln2 / 2 (ln2 in two parts, so r is exact to float precision), e^r - 1 by
 * a degree-7 minimax polynomial (the Cephes expf coefficients), 2^n built
 * in the exponent bits (two factors, so that denormal results underflow
 * gradually). Relative error within 2 ulp where the result is a normal
 * float (x in [-87.3, 88.72]), the denormal's precision below that, 0 below
 * -104, +inf above 88.72; NaN stays NaN.
 * tanh(x): sign(x) -m / (2 + m) with m = e^(-2|x|) - 1, which the
 * polynomial gives to its relative precision where |x| is small, so tanh
 * keeps it there too; absolute error below 2e-7 everywhere.
 * sigmoid(x) = 1 / (1 + exp(-x)), with x at least -88 (below, the true
 * value is under 7e-39 and so is the result: 0 or sigmoid(-88)). Below
 * -87.33 the true value is under the smallest normal float (1.2e-38) and
 * the result may be 0: AVX2's reciprocal estimate (vrcpps) flushes results
 * in the denormal range, AVX-512's (vrcp14ps) keeps them.
 * A NaN argument runs through the arithmetic as a NaN (the clamps keep it,
 * and no float-to-integer conversion sees it), so none of them tests for it.
 * The polynomials and the argument reduction are fused multiply-adds where
 * the target has FMA, and the quotients may be a reciprocal estimate refined
 * by a Newton step (quotient, below): no division in a gate's loop.
 *
 * Results differ from the float64 reference by these rounding errors only
 * (TESTING.md tolerances); --disable=vector-math uses libm instead.
 */
#include "codegen/cg_int.h"

#include <math.h>
#include <string.h>

static LLVMValueRef fc(LLVMTypeRef f32, double v) { return LLVMConstReal(f32, v); }

/* A call of the float intrinsic [name] of one argument. */
static LLVMValueRef intrinsic(LLVMBuilderRef b, LLVMModuleRef mod, const char *name,
                              LLVMValueRef x) {
  LLVMTypeRef t = LLVMTypeOf(x);
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, &t, 1);
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(LLVMGetTypeContext(t), id, &t, 1), f, &x, 1,
                        "");
}

/* i32 in the context of [t] */
static LLVMTypeRef i32_for(LLVMTypeRef t) { return LLVMInt32TypeInContext(LLVMGetTypeContext(t)); }

/* a when x PRED k (an ordered comparison), else [other]. */
static LLVMValueRef pick(LLVMBuilderRef b, LLVMRealPredicate pred, LLVMValueRef x, double k,
                         LLVMValueRef a, LLVMValueRef other) {
  LLVMValueRef c = LLVMBuildFCmp(b, pred, x, fc(LLVMTypeOf(x), k), "");
  return LLVMBuildSelect(b, c, a, other, "");
}

LLVMValueRef cg_math_fmuladd(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x,
                            LLVMValueRef y, LLVMValueRef z) {
  static const char name[] = "llvm.fmuladd";
  LLVMTypeRef t = LLVMTypeOf(x);
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, &t, 1);
  LLVMValueRef args[3] = {x, y, z};
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(LLVMGetTypeContext(t), id, &t, 1), f, args, 3,
                        "");
}

/* c[0] + x (c[1] + x (c[2] + ...)) */
static LLVMValueRef horner(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x, const double *c,
                           int n) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  LLVMValueRef y = fc(f32, c[n - 1]);
  for (int i = n - 2; i >= 0; i--) y = cg_math_fmuladd(b, mod, y, x, fc(f32, c[i]));
  return y;
}

/* num / den where a reciprocal estimate refined by a Newton step may stand
 * in for the division (arcp; the kernel's "reciprocal-estimates" attribute,
 * cg_emit.c, lets x86 use it: vrcpps and two FMAs instead of a vdivps,
 * which issues once every 8-10 cycles — a tanh and a sigmoid per gate
 * element made the divisions the gate loops' bottleneck; contract lets the
 * step's multiply and subtract fuse). The estimate's relative error after
 * the step, ~2^-23, is a float rounding's. LLVM takes the estimate only for
 * a quotient without infinities (ninf): callers keep num and den finite. */
static LLVMValueRef quotient(LLVMBuilderRef b, LLVMValueRef num, LLVMValueRef den) {
  LLVMValueRef q = LLVMBuildFDiv(b, num, den, "");
  LLVMSetFastMathFlags(q, LLVMFastMathAllowReciprocal | LLVMFastMathNoInfs |
                              LLVMFastMathAllowContract);
  return q;
}

/* 1.5 * 2^23: t = x log2(e) + M rounds x log2(e) to an integer n in t's low
 * mantissa bits (|n| < 2^22), n = t - M as a float, and bits(t) << 23 is n
 * in the exponent field (M's own bits shift out): no round or float-to-int
 * conversion, and a NaN stays a NaN without an integer conversion's poison. */
#define ROUND_MAGIC 12582912.0

/* x = n ln2 + r for [cx] in [-104, 88.72] (or NaN, which stays NaN):
 * returns e^r - 1 = r + r^2 p(r) by the polynomial, and sets *n_bits to an
 * i32 holding n in its low bits (bits(t), above). */
static LLVMValueRef expm1_reduced(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef cx,
                                  LLVMValueRef *n_bits) {
  LLVMTypeRef f32 = LLVMTypeOf(cx);
  LLVMValueRef t = cg_math_fmuladd(b, mod, cx, fc(f32, M_LOG2E), fc(f32, ROUND_MAGIC));
  LLVMValueRef nn = LLVMBuildFSub(b, fc(f32, ROUND_MAGIC), t, ""); /* -n */
  LLVMValueRef r = cg_math_fmuladd(b, mod, nn, fc(f32, 0.693359375), cx);
  r = cg_math_fmuladd(b, mod, nn, fc(f32, -2.12194440e-4), r);
  static const double p[] = {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2,
                             8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4};
  *n_bits = LLVMBuildBitCast(b, t, i32_for(f32), "");
  return cg_math_fmuladd(b, mod, horner(b, mod, r, p, 6), LLVMBuildFMul(b, r, r, ""), r);
}

/* 2^k as a float for the integer k (in [-126, 127]) in the low bits of the
 * i32 [k]: k << 23 plus the exponent's bias. */
static LLVMValueRef pow2(LLVMBuilderRef b, LLVMValueRef k, LLVMTypeRef f32) {
  LLVMTypeRef it = LLVMTypeOf(k);
  LLVMValueRef bits = LLVMBuildAdd(b, LLVMBuildShl(b, k, LLVMConstInt(it, 23, 0), ""),
                                   LLVMConstInt(it, 127u << 23, 0), "");
  return LLVMBuildBitCast(b, bits, f32, "");
}

/* [x] at least [lo], a NaN kept (x86 takes it as vmaxps, operands in the
 * order that returns x for a NaN). */
static LLVMValueRef at_least(LLVMBuilderRef b, LLVMValueRef x, double lo) {
  return pick(b, LLVMRealOLT, x, lo, fc(LLVMTypeOf(x), lo), x);
}

/* [x] limited to [lo, hi], a NaN kept. */
static LLVMValueRef clamp(LLVMBuilderRef b, LLVMValueRef x, double lo, double hi) {
  x = at_least(b, x, lo);
  return pick(b, LLVMRealOGT, x, hi, fc(LLVMTypeOf(x), hi), x);
}

/* e^x over [-104, 88.72]: 2^n as two factors 2^h 2^(n - h), both normal for
 * n in [-150, 128], so results in the denormal range underflow gradually. */
LLVMValueRef cg_math_exp(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  LLVMValueRef n_bits, em1 = expm1_reduced(b, mod, clamp(b, x, -104.0, 88.72283935546875), &n_bits);
  LLVMTypeRef it = LLVMTypeOf(n_bits);
  LLVMValueRef n = LLVMBuildSub(b, n_bits, LLVMConstInt(it, 0x4B400000u, 0), ""); /* - bits(M) */
  LLVMValueRef h = LLVMBuildAShr(b, n, LLVMConstInt(it, 1, 0), "");
  LLVMValueRef y = LLVMBuildFMul(b, LLVMBuildFAdd(b, em1, fc(f32, 1.0), ""), pow2(b, h, f32), "");
  y = LLVMBuildFMul(b, y, pow2(b, LLVMBuildSub(b, n, h, ""), f32), "");
  y = pick(b, LLVMRealOGT, x, 88.72283935546875, fc(f32, INFINITY), y);
  return pick(b, LLVMRealOLT, x, -104.0, fc(f32, 0.0), y);
}

/* tanh and sigmoid need e^-|..| only where it changes a float result: their
 * argument to the exponential is clamped to [-87, 88] (one factor 2^n;
 * beyond, 1 + e rounds to 1 or the quotient is below FLT_MIN either way),
 * and a NaN runs through as a NaN.
 * tanh |x| = -m / (2 + m) with m = e^-2|x| - 1 = 2^n (e^r - 1) + (2^n - 1):
 * for small |x| (n = 0) m is the polynomial's e^r - 1 itself, so the
 * quotient keeps tanh's relative precision near 0 without a series of its
 * own; the sign of x is or-ed in (the quotient is at least 0). */
LLVMValueRef cg_math_tanh(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  LLVMValueRef a = intrinsic(b, mod, "llvm.fabs", x);
  LLVMValueRef n_bits, em1 = expm1_reduced(
                           b, mod, at_least(b, LLVMBuildFMul(b, a, fc(f32, -2.0), ""), -87.0),
                           &n_bits); /* -2|x| <= 0 */
  LLVMValueRef scale = pow2(b, n_bits, f32);
  LLVMValueRef m = cg_math_fmuladd(b, mod, em1, scale, LLVMBuildFSub(b, scale, fc(f32, 1.0), ""));
  LLVMValueRef t = quotient(b, LLVMBuildFNeg(b, m, ""), LLVMBuildFAdd(b, fc(f32, 2.0), m, ""));
  LLVMTypeRef it = i32_for(f32);
  LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildBitCast(b, x, it, ""),
                                   LLVMConstInt(it, 0x80000000u, 0), "");
  return LLVMBuildBitCast(b, LLVMBuildOr(b, LLVMBuildBitCast(b, t, it, ""), sign, ""), f32, "");
}

/* sigmoid(x) = 1 / (1 + 2^n p(r)), with -x = n ln2 + r as in
 * expm1_reduced but with x's sign folded into the multiply-adds, and e^r
 * itself by a degree-6 polynomial in Horner form (its coefficients fitted
 * here for the least maximum relative error on |r| <= ln2 / 2: 3.8e-9, below
 * float32's rounding; tanh keeps expm1_reduced, whose e^r - 1 it needs near
 * 0). 1 + 2^n p is one multiply-add. 18 vector operations where e^-x as
 * exp's then 1 + it took 22: these run at about two a cycle on a Zen 5 core
 * whatever their latency (a loop of sigmoids 11-13 cycles a vector, a
 * shorter dependency chain no faster), and treelstm's cells do 4 sigmoids
 * per element; whole kernels, 7 alternating rounds against the 22-operation
 * version, H=256: treelstm, treegru, seqlstm, childsum at B=1 and 10
 * 0.98-1.01x the time, within that host's noise. Largest relative error against libm's double over 2
 * million points of [-87, 330]: 1.40e-7 (1.41e-7 before). x is clamped to
 * [-88, 87]: e^-x and the sum stay finite (quotient), and n within [-126,
 * 127] for pow2; beyond, the sigmoid is 0 or 1 to float precision anyway
 * (below -87.33 it may flush to 0, as before). A NaN runs through as a
 * NaN. */
LLVMValueRef cg_math_sigmoid(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  LLVMValueRef v = clamp(b, x, -88.0, 87.0);
  LLVMValueRef t = cg_math_fmuladd(b, mod, v, fc(f32, -M_LOG2E), fc(f32, ROUND_MAGIC));
  LLVMValueRef n = LLVMBuildFSub(b, t, fc(f32, ROUND_MAGIC), ""); /* round(-v log2 e) */
  LLVMValueRef r = cg_math_fmuladd(b, mod, n, fc(f32, -0.693359375), LLVMBuildFNeg(b, v, ""));
  r = cg_math_fmuladd(b, mod, n, fc(f32, 2.12194440e-4), r);
  static const double p[] = {1.0, 1.0, 0.4999999403953552, 0.1666652113199234,
                             0.04166838899254799, 0.008368716575205326, 0.0013814597623422742};
  LLVMValueRef e_r = horner(b, mod, r, p, 7);
  LLVMValueRef scale = pow2(b, LLVMBuildBitCast(b, t, i32_for(f32), ""), f32);
  return quotient(b, fc(f32, 1.0), cg_math_fmuladd(b, mod, e_r, scale, fc(f32, 1.0)));
}
