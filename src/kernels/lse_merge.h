// Exact merge of two attention results over disjoint key sets A and B (DESIGN.md 4.2):
//   m = max(s_a, s_b);  o = (e^(s_a-m) o_a + e^(s_b-m) o_b) / (e^(s_a-m) + e^(s_b-m));
//   s = m + log(e^(s_a-m) + e^(s_b-m)).
// A side with lse = -inf (no keys) contributes nothing; merging two empty sides gives o = 0,
// s = -inf. The merge is associative and commutative up to float rounding.
#pragma once

namespace smartgen::kernels {

// Merges (o_b, lse_b) into (o_a, lse_a) in place; o has head_dim floats.
void LseMergeInto(int head_dim, float* o_a, float* lse_a, const float* o_b, float lse_b);

}  // namespace smartgen::kernels
