// Helpers shared by the kernels tests: the kernel tables this CPU can run, and random data.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace smartgen::kernels::testing {

// Every table this CPU runs (scalar first).
inline std::vector<const internal::KernelTable*> AvailableTables() {
  std::vector<const internal::KernelTable*> out;
  for (int i = 0; i < internal::kNumIsas; ++i) {
    if (const auto* t = internal::GetKernelTable(static_cast<internal::Isa>(i))) out.push_back(t);
  }
  return out;
}

inline std::vector<float> RandomVector(std::mt19937& rng, std::size_t n, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// max |a - b| / max(1, |b|) style error: relative for large values, absolute near zero.
inline double MaxRelError(const float* a, const float* b, std::size_t n, double floor = 1.0) {
  double worst = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    worst = std::max(worst, d / std::max(floor, std::fabs(static_cast<double>(b[i]))));
  }
  return worst;
}

// A random matrix of `type` and the view of it.
struct Weights {
  std::vector<std::byte> bytes;
  WeightView view;
};

inline Weights MakeWeights(std::mt19937& rng, gguf::GgmlType type, std::int64_t rows, std::int64_t cols) {
  Weights w;
  const std::size_t rb = gguf::RowBytes(type, cols);
  w.bytes.resize(rb * rows);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<float> row = RandomVector(rng, cols);
    EXPECT_TRUE(QuantizeRow(type, row.data(), w.bytes.data() + r * rb, cols));
  }
  w.view = WeightView{type, w.bytes.data(), rows, cols};
  return w;
}

}  // namespace smartgen::kernels::testing
