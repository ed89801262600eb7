/* cg_math.c — exp, tanh and sigmoid of float32 as plain arithmetic.
 *
 * libm's expf and tanhf are calls the loop vectorizer cannot widen, and in
 * the recursive cells (a sigmoid per gate, a tanh per state) those scalar
 * calls cost as much as the matrix products. These versions are straight-line
 * IR — fmul, fadd, floor, a shift into the exponent — so a loop of them
 * vectorizes like any elementwise loop.
 *
 * exp(x): x = n ln2 + r with n = floor(x log2(e) + 1/2) and |r| <= ln2 / 2
 * (ln2 in two parts, so r is exact to float precision), e^r by a degree-7
 * minimax polynomial (the Cephes expf coefficients), 2^n built in the
 * exponent bits (two factors, so that denormal results underflow gradually).
 * Relative error within 2 ulp where the result is a normal float (x in
 * [-87.3, 88.72]), the denormal's precision below that, 0 below -104, +inf
 * above 88.72; NaN stays NaN.
 * tanh(x): sign(x) (1 - e) / (1 + e) with e = exp(-2|x|), and the series
 * x - x^3/3 + 2x^5/15 - 17x^7/315 for |x| < 1/16, where the quotient would
 * lose relative precision; absolute error below 2e-7 everywhere.
 * sigmoid(x) = 1 / (1 + exp(-x)), with x at least -88 (below, the true
 * value is under 7e-39 and so is the result: 0 or sigmoid(-88)). Below
 * -87.33 the true value is under the smallest normal float (1.2e-38) and
 * the result may be 0: AVX2's reciprocal estimate (vrcpps) flushes results
 * in the denormal range, AVX-512's (vrcp14ps) keeps them.
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

/* copysign(x, sign) */
static LLVMValueRef copysign_of(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x,
                                LLVMValueRef sign) {
  static const char name[] = "llvm.copysign";
  LLVMTypeRef t = LLVMTypeOf(x);
  unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(mod, id, &t, 1);
  LLVMValueRef args[2] = {x, sign};
  return LLVMBuildCall2(b, LLVMIntrinsicGetType(LLVMGetTypeContext(t), id, &t, 1), f, args, 2,
                        "");
}

/* a when x PRED k (an ordered comparison, or LLVMRealUNO: x is NaN), else
 * [other]. */
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
 * cg_emit.c, lets x86 use it: vrcp14ps and two FMAs instead of a vdivps,
 * which issues once every 8-10 cycles — a tanh and a sigmoid per gate
 * element made the divisions the gate loops' bottleneck). The estimate's
 * relative error after the step, ~2^-23, is a float rounding's. LLVM takes
 * the estimate only for a quotient without infinities (ninf): callers keep
 * num and den finite. */
static LLVMValueRef quotient(LLVMBuilderRef b, LLVMValueRef num, LLVMValueRef den) {
  LLVMValueRef q = LLVMBuildFDiv(b, num, den, "");
  LLVMSetFastMathFlags(q, LLVMFastMathAllowReciprocal | LLVMFastMathNoInfs);
  return q;
}

/* e^x for x already in [-104, 88.72]: x = n ln2 + r, e^r by the
 * polynomial, times 2^n — as two factors when [gradual] (both normal for n in
 * [-150, 128], so results in the denormal range underflow gradually), else
 * as one, which needs n in [-126, 127] (x in [-87, 88]). */
static LLVMValueRef exp_core(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef cx, bool gradual) {
  LLVMTypeRef f32 = LLVMTypeOf(cx), i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(f32));
  LLVMValueRef n = intrinsic(b, mod, "llvm.floor",
                             cg_math_fmuladd(b, mod, cx, fc(f32, M_LOG2E), fc(f32, 0.5)));
  LLVMValueRef nn = LLVMBuildFNeg(b, n, "");
  LLVMValueRef r = cg_math_fmuladd(b, mod, nn, fc(f32, 0.693359375), cx);
  r = cg_math_fmuladd(b, mod, nn, fc(f32, -2.12194440e-4), r);
  static const double p[] = {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2,
                             8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4};
  LLVMValueRef y = cg_math_fmuladd(b, mod, horner(b, mod, r, p, 6), LLVMBuildFMul(b, r, r, ""), r);
  y = LLVMBuildFAdd(b, y, fc(f32, 1.0), "");
  LLVMValueRef ni = LLVMBuildFPToSI(b, n, i32, "");
  LLVMValueRef h = gradual ? LLVMBuildAShr(b, ni, LLVMConstInt(i32, 1, 0), "") : ni;
  LLVMValueRef parts[2] = {h, LLVMBuildSub(b, ni, h, "")};
  for (int k = 0; k < (gradual ? 2 : 1); k++) {
    LLVMValueRef bits = LLVMBuildShl(b, LLVMBuildAdd(b, parts[k], LLVMConstInt(i32, 127, 0), ""),
                                     LLVMConstInt(i32, 23, 0), "");
    y = LLVMBuildFMul(b, y, LLVMBuildBitCast(b, bits, f32, ""), "");
  }
  return y;
}

/* [x] at least [lo], NaN to lo: the select keeps a NaN out of the integer
 * conversion in exp_core (poison for NaN); x86 takes it as vmaxps. */
static LLVMValueRef at_least(LLVMBuilderRef b, LLVMValueRef x, double lo) {
  return pick(b, LLVMRealOGT, x, lo, x, fc(LLVMTypeOf(x), lo));
}

/* [x] limited to [lo, hi], NaN to lo. */
static LLVMValueRef clamp(LLVMBuilderRef b, LLVMValueRef x, double lo, double hi) {
  x = at_least(b, x, lo);
  return pick(b, LLVMRealOLT, x, hi, x, fc(LLVMTypeOf(x), hi));
}

LLVMValueRef cg_math_exp(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  LLVMValueRef y = exp_core(b, mod, clamp(b, x, -104.0, 88.72283935546875), true);
  y = pick(b, LLVMRealOGT, x, 88.72283935546875, fc(f32, INFINITY), y);
  y = pick(b, LLVMRealOLT, x, -104.0, fc(f32, 0.0), y);
  return pick(b, LLVMRealUNO, x, 0.0, x, y);
}

/* tanh and sigmoid need e^-|..| only where it changes a float result: their
 * argument to exp_core is clamped to [-87, 88] (one factor 2^n; beyond, 1 + e
 * rounds to 1 or the quotient is below FLT_MIN either way), and a NaN
 * argument is picked at the end: 25 fewer vector instructions per
 * sigmoid-times-tanh of a gate than through cg_math_exp's limits. */
LLVMValueRef cg_math_tanh(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  LLVMValueRef a = intrinsic(b, mod, "llvm.fabs", x);
  LLVMValueRef e = exp_core(b, mod, at_least(b, LLVMBuildFMul(b, a, fc(f32, -2.0), ""), -87.0),
                            false); /* -2|x| <= 0 */
  LLVMValueRef t = quotient(b, LLVMBuildFSub(b, fc(f32, 1.0), e, ""),
                            LLVMBuildFAdd(b, fc(f32, 1.0), e, ""));
  LLVMValueRef big = copysign_of(b, mod, t, x);
  static const double s[] = {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315};
  LLVMValueRef small = LLVMBuildFMul(b, x, horner(b, mod, LLVMBuildFMul(b, x, x, ""), s, 4), "");
  return pick(b, LLVMRealOLT, a, 0.0625, small, pick(b, LLVMRealUNO, x, 0.0, x, big));
}

LLVMValueRef cg_math_sigmoid(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  /* -x at most 88 keeps exp(-x) and 1 + exp(-x) finite (quotient); the
   * sigmoid there is below 7e-39 */
  LLVMValueRef e = exp_core(b, mod, clamp(b, LLVMBuildFNeg(b, x, ""), -87.0, 88.0), false);
  LLVMValueRef s = quotient(b, fc(f32, 1.0), LLVMBuildFAdd(b, fc(f32, 1.0), e, ""));
  return pick(b, LLVMRealUNO, x, 0.0, x, s);
}
