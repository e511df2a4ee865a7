#include "gguf/ggml_type.h"

#include <cctype>
#include <string>

namespace smartgen::gguf {

GgmlTypeInfo GetTypeInfo(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return {"f32", 1, 4, true};
    case GgmlType::kF16: return {"f16", 1, 2, true};
    case GgmlType::kQ4_0: return {"q4_0", 32, 18, true};
    case GgmlType::kQ4_1: return {"q4_1", 32, 20, true};
    case GgmlType::kQ5_0: return {"q5_0", 32, 22, true};
    case GgmlType::kQ5_1: return {"q5_1", 32, 24, true};
    case GgmlType::kQ8_0: return {"q8_0", 32, 34, true};
    case GgmlType::kQ8_1: return {"q8_1", 32, 36, true};
    case GgmlType::kQ2_K: return {"q2_k", 256, 84, true};
    case GgmlType::kQ3_K: return {"q3_k", 256, 110, true};
    case GgmlType::kQ4_K: return {"q4_k", 256, 144, true};
    case GgmlType::kQ5_K: return {"q5_k", 256, 176, true};
    case GgmlType::kQ6_K: return {"q6_k", 256, 210, true};
    case GgmlType::kQ8_K: return {"q8_k", 256, 292, true};
    case GgmlType::kIQ4_NL: return {"iq4_nl", 32, 18, true};
    case GgmlType::kIQ4_XS: return {"iq4_xs", 256, 136, true};
    case GgmlType::kI8: return {"i8", 1, 1, true};
    case GgmlType::kI16: return {"i16", 1, 2, true};
    case GgmlType::kI32: return {"i32", 1, 4, true};
    case GgmlType::kI64: return {"i64", 1, 8, true};
    case GgmlType::kF64: return {"f64", 1, 8, true};
    case GgmlType::kBF16: return {"bf16", 1, 2, true};
  }
  return {"unknown", 1, 0, false};
}

bool IsSupportedWeightType(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_K:
    case GgmlType::kQ6_K:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ5_K:
    case GgmlType::kIQ4_NL:
    case GgmlType::kIQ4_XS:
      return true;
    default:
      return false;
  }
}

bool ParseGgmlType(std::string_view name, GgmlType* type) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::uint32_t id = 0; id <= 40; ++id) {
    const GgmlTypeInfo info = GetTypeInfo(static_cast<GgmlType>(id));
    if (info.known && info.name == lower) {
      *type = static_cast<GgmlType>(id);
      return true;
    }
  }
  return false;
}

}  // namespace smartgen::gguf
