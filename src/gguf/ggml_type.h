// Tensor element types of the GGUF format (numbering of ggml's `enum ggml_type`) and their
// storage geometry. A row of n elements of a block-quantized type holds n / block_size blocks
// of type_size bytes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace smartgen::gguf {

enum class GgmlType : std::uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

struct GgmlTypeInfo {
  std::string_view name;   // "f32", "q8_0", ...
  std::int64_t block_size;  // elements per block (1 for plain types)
  std::size_t type_size;    // bytes per block
  bool known;               // false for ids this build does not know
};

// Geometry of `type`; known == false for unknown ids (the name is then "unknown").
GgmlTypeInfo GetTypeInfo(GgmlType type);
inline GgmlTypeInfo GetTypeInfo(std::uint32_t id) { return GetTypeInfo(static_cast<GgmlType>(id)); }

// Whether smartgen's kernels can compute with weights of this type.
bool IsSupportedWeightType(GgmlType type);

// Bytes of a row of n elements; n must be a multiple of the block size.
inline std::size_t RowBytes(GgmlType type, std::int64_t n) {
  const GgmlTypeInfo info = GetTypeInfo(type);
  return static_cast<std::size_t>(n / info.block_size) * info.type_size;
}

// Parses "f32", "f16", "bf16", "q8_0", ... (case-insensitive); returns false if unknown.
bool ParseGgmlType(std::string_view name, GgmlType* type);

}  // namespace smartgen::gguf
