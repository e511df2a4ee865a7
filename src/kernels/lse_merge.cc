#include "kernels/lse_merge.h"

#include <cmath>

namespace smartgen::kernels {

void LseMergeInto(int head_dim, float* o_a, float* lse_a, const float* o_b, float lse_b) {
  const float sa = *lse_a;
  if (lse_b == -INFINITY) return;  // B is empty: A unchanged (also covers both empty)
  if (sa == -INFINITY) {           // A is empty: take B
    for (int i = 0; i < head_dim; ++i) o_a[i] = o_b[i];
    *lse_a = lse_b;
    return;
  }
  const float m = std::fmax(sa, lse_b);
  const float wa = std::exp(sa - m);
  const float wb = std::exp(lse_b - m);
  const float sum = wa + wb;
  const float ca = wa / sum, cb = wb / sum;
  for (int i = 0; i < head_dim; ++i) o_a[i] = ca * o_a[i] + cb * o_b[i];
  *lse_a = m + std::log(sum);
}

}  // namespace smartgen::kernels
