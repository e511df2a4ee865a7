// Element-wise kernels (elementwise.h, rope.h) written once against the Simd vocabulary of
// simd_<isa>.h, compiled once per ISA: the including file defines SMARTGEN_SIMD_NS and
// includes the matching simd header first. Tails use masked loads/stores.
#ifndef SMARTGEN_SIMD_NS
#error "define SMARTGEN_SIMD_NS and include kernels/simd_<isa>.h before this file"
#endif

namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS {
namespace {
using S = Simd;
constexpr int L = S::kLanes;
}  // namespace

void RmsNorm(const float* x, const float* weight, std::int64_t n, float eps, float* out) {
  // Squares in f32, summed in double (like the reference and ggml), in L partial sums.
  double part[L] = {};
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int j = 0; j < L; ++j) part[j] += static_cast<double>(x[i + j] * x[i + j]);
  }
  for (; i < n; ++i) part[0] += static_cast<double>(x[i] * x[i]);
  double sum = 0.0;
  for (int j = 0; j < L; ++j) sum += part[j];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const S::V scale = S::Set1(1.0f / __builtin_sqrtf(mean + eps));
  for (i = 0; i + L <= n; i += L) {
    S::Store(out + i, S::Mul(S::Mul(S::Load(x + i), scale), S::Load(weight + i)));
  }
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::StoreN(out + i, S::Mul(S::Mul(S::LoadN(x + i, r), scale), S::LoadN(weight + i, r)), r);
  }
}

namespace {
S::V Silu(S::V g) {
  return S::Div(g, S::Add(S::Set1(1.0f), S::Exp(S::Sub(S::Zero(), g))));
}
}  // namespace

void SwiGlu(const float* gate, const float* up, std::int64_t n, float* out) {
  std::int64_t i = 0;
  for (; i + L <= n; i += L) S::Store(out + i, S::Mul(Silu(S::Load(gate + i)), S::Load(up + i)));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::StoreN(out + i, S::Mul(Silu(S::LoadN(gate + i, r)), S::LoadN(up + i, r)), r);
  }
}

namespace {
// gelu(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2 / pi) x (1 + 0.044715 x^2).
S::V Gelu(S::V x) {
  const S::V u = S::Mul(S::Mul(S::Set1(0.79788456080286535587989211986876f), x),
                        S::Fma(S::Mul(S::Set1(0.044715f), x), x, S::Set1(1.0f)));
  return S::Div(x, S::Add(S::Set1(1.0f), S::Exp(S::Mul(S::Set1(-2.0f), u))));
}
}  // namespace

void GeGlu(const float* gate, const float* up, std::int64_t n, float* out) {
  std::int64_t i = 0;
  for (; i + L <= n; i += L) S::Store(out + i, S::Mul(Gelu(S::Load(gate + i)), S::Load(up + i)));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::StoreN(out + i, S::Mul(Gelu(S::LoadN(gate + i, r)), S::LoadN(up + i, r)), r);
  }
}

float Softmax(float* x, std::int64_t n) {
  if (n <= 0) return -__builtin_inff();
  const float neg_inf = -__builtin_inff();
  S::V vmax = S::Set1(neg_inf);
  std::int64_t i = 0;
  for (; i + L <= n; i += L) vmax = S::Max(vmax, S::Load(x + i));
  float max = S::ReduceMax(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  if (max == neg_inf) {
    for (i = 0; i < n; ++i) x[i] = 0.0f;
    return neg_inf;
  }
  const S::V m = S::Set1(max);
  double part[L] = {};
  for (i = 0; i + L <= n; i += L) {
    const S::V e = S::Exp(S::Sub(S::Load(x + i), m));
    S::Store(x + i, e);
    for (int j = 0; j < L; ++j) part[j] += static_cast<double>(x[i + j]);
  }
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::StoreN(x + i, S::Exp(S::Sub(S::LoadN(x + i, r), m)), r);
    for (int j = 0; j < r; ++j) part[j] += static_cast<double>(x[i + j]);
  }
  double sum = 0.0;
  for (int j = 0; j < L; ++j) sum += part[j];
  const S::V inv = S::Set1(static_cast<float>(1.0 / sum));
  for (i = 0; i + L <= n; i += L) S::Store(x + i, S::Mul(S::Load(x + i), inv));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::StoreN(x + i, S::Mul(S::LoadN(x + i, r), inv), r);
  }
  return max + static_cast<float>(__builtin_log(sum));
}

void AddInPlace(float* y, const float* x, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + L <= n; i += L) S::Store(y + i, S::Add(S::Load(y + i), S::Load(x + i)));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    S::StoreN(y + i, S::Add(S::LoadN(y + i, r), S::LoadN(x + i, r)), r);
  }
}

void F32ToF16Row(const float* x, std::uint16_t* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    const S::V v = S::Load(x + i);
    if (!S::AnyNan(v)) {
      S::StoreF16(y + i, v);
      continue;
    }
    for (int j = 0; j < L; ++j) y[i + j] = F32ToF16(x[i + j]);  // F32ToF16's NaN, not the CPU's
  }
  for (; i < n; ++i) y[i] = F32ToF16(x[i]);
}

void RopeApply(const RopeConfig& c, const float* cos_t, const float* sin_t, float* x, int n_heads) {
  const int half = c.n_rot / 2;
  if (c.style == RopeStyle::kNorm) {
    // Per lane j of a pair run: out[j] = x[j] * cos + x[j ^ 1] * (j even ? -sin : +sin).
    alignas(64) float ce[1024], se[1024];
    for (int i = 0; i < half; ++i) {
      ce[2 * i] = ce[2 * i + 1] = cos_t[i];
      se[2 * i] = -sin_t[i];
      se[2 * i + 1] = sin_t[i];
    }
    for (int h = 0; h < n_heads; ++h) {
      float* xh = x + static_cast<std::int64_t>(h) * c.head_dim;
      int j = 0;
      for (; j + L <= c.n_rot; j += L) {
        const S::V v = S::Load(xh + j);
        S::Store(xh + j, S::Fma(S::SwapPairs(v), S::Load(se + j), S::Mul(v, S::Load(ce + j))));
      }
      if (j < c.n_rot) {
        const int r = c.n_rot - j;
        const S::V v = S::LoadN(xh + j, r);
        S::StoreN(xh + j,
                  S::Fma(S::SwapPairs(v), S::LoadN(se + j, r), S::Mul(v, S::LoadN(ce + j, r))), r);
      }
    }
    return;
  }
  for (int h = 0; h < n_heads; ++h) {
    float* x0 = x + static_cast<std::int64_t>(h) * c.head_dim;
    float* x1 = x0 + half;
    int i = 0;
    for (; i + L <= half; i += L) {
      const S::V a = S::Load(x0 + i), b = S::Load(x1 + i);
      const S::V co = S::Load(cos_t + i), si = S::Load(sin_t + i);
      S::Store(x0 + i, S::Fnma(b, si, S::Mul(a, co)));
      S::Store(x1 + i, S::Fma(b, co, S::Mul(a, si)));
    }
    if (i < half) {
      const int r = half - i;
      const S::V a = S::LoadN(x0 + i, r), b = S::LoadN(x1 + i, r);
      const S::V co = S::LoadN(cos_t + i, r), si = S::LoadN(sin_t + i, r);
      S::StoreN(x0 + i, S::Fnma(b, si, S::Mul(a, co)), r);
      S::StoreN(x1 + i, S::Fma(b, co, S::Mul(a, si)), r);
    }
  }
}

}  // namespace smartgen::kernels::internal::SMARTGEN_SIMD_NS
