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
 * sigmoid(x) = 1 / (1 + exp(-x)), with x at least -88.72 (below, the true
 * value is under 3e-39 and so is the result: 0 or sigmoid(-88.72)). Below
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

LLVMValueRef cg_math_exp(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x), i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(f32));
  LLVMValueRef cx = pick(b, LLVMRealOGT, x, 88.72283935546875, fc(f32, 88.72283935546875), x);
  cx = pick(b, LLVMRealOLT, cx, -104.0, fc(f32, -104.0), cx);
  LLVMValueRef n = intrinsic(b, mod, "llvm.floor",
                             cg_math_fmuladd(b, mod, cx, fc(f32, M_LOG2E), fc(f32, 0.5)));
  LLVMValueRef nn = LLVMBuildFNeg(b, n, "");
  LLVMValueRef r = cg_math_fmuladd(b, mod, nn, fc(f32, 0.693359375), cx);
  r = cg_math_fmuladd(b, mod, nn, fc(f32, -2.12194440e-4), r);
  static const double p[] = {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2,
                             8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4};
  LLVMValueRef y = cg_math_fmuladd(b, mod, horner(b, mod, r, p, 6), LLVMBuildFMul(b, r, r, ""), r);
  y = LLVMBuildFAdd(b, y, fc(f32, 1.0), "");
  /* 2^n as 2^h * 2^(n - h), h = n >> 1: both factors normal for n in [-150, 128],
   * so results in the denormal range underflow gradually */
  LLVMValueRef ni = LLVMBuildFPToSI(b, n, i32, "");
  LLVMValueRef h = LLVMBuildAShr(b, ni, LLVMConstInt(i32, 1, 0), "");
  LLVMValueRef parts[2] = {h, LLVMBuildSub(b, ni, h, "")};
  for (int k = 0; k < 2; k++) {
    LLVMValueRef bits = LLVMBuildShl(b, LLVMBuildAdd(b, parts[k], LLVMConstInt(i32, 127, 0), ""),
                                     LLVMConstInt(i32, 23, 0), "");
    y = LLVMBuildFMul(b, y, LLVMBuildBitCast(b, bits, f32, ""), "");
  }
  y = pick(b, LLVMRealOGT, x, 88.72283935546875, fc(f32, INFINITY), y);
  y = pick(b, LLVMRealOLT, x, -104.0, fc(f32, 0.0), y);
  return pick(b, LLVMRealUNO, x, 0.0, x, y); /* the arms above are poison for NaN */
}

LLVMValueRef cg_math_tanh(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  LLVMValueRef a = intrinsic(b, mod, "llvm.fabs", x);
  LLVMValueRef e = cg_math_exp(b, mod, LLVMBuildFMul(b, a, fc(f32, -2.0), ""));
  LLVMValueRef t = quotient(b, LLVMBuildFSub(b, fc(f32, 1.0), e, ""),
                            LLVMBuildFAdd(b, fc(f32, 1.0), e, ""));
  LLVMValueRef big = copysign_of(b, mod, t, x);
  static const double s[] = {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315};
  LLVMValueRef small = LLVMBuildFMul(b, x, horner(b, mod, LLVMBuildFMul(b, x, x, ""), s, 4), "");
  return pick(b, LLVMRealOLT, a, 0.0625, small, big); /* NaN: big is NaN */
}

LLVMValueRef cg_math_sigmoid(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef x) {
  LLVMTypeRef f32 = LLVMTypeOf(x);
  /* -x at most 88.72 keeps exp(-x) and 1 + exp(-x) finite (quotient); the
   * sigmoid there is below 3e-39 */
  LLVMValueRef nx = pick(b, LLVMRealOLT, x, -88.72, fc(f32, 88.72), LLVMBuildFNeg(b, x, ""));
  LLVMValueRef e = cg_math_exp(b, mod, nx);
  return quotient(b, fc(f32, 1.0), LLVMBuildFAdd(b, fc(f32, 1.0), e, ""));
}
