#include "model/quant_recipe.h"

#include <string>

namespace smartgen::model {
namespace {

using gguf::GgmlType;

// llama.cpp's use_more_bits(): the first and last eighth of the layers and every third between.
bool UseMoreBits(int layer, int n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// llama.cpp's tensor_type_fallback for rows that are not a multiple of 256 wide.
GgmlType Fallback(GgmlType t, std::int64_t cols) {
  if (cols % 256 == 0) return t;
  switch (t) {
    case GgmlType::kQ4_K: return GgmlType::kQ5_0;
    case GgmlType::kQ5_K: return GgmlType::kQ5_1;
    case GgmlType::kQ6_K: return GgmlType::kQ8_0;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K: return GgmlType::kQ4_0;
    case GgmlType::kIQ4_XS: return GgmlType::kIQ4_NL;
    default: return t;
  }
}

}  // namespace

GgmlType RecipeTensorType(QuantRecipe recipe, GgmlType plain, std::string_view name, int n_layers,
                          std::int64_t cols, bool tied) {
  if (recipe == QuantRecipe::kNone) return plain;
  const GgmlType base = recipe == QuantRecipe::kQ3_K_M   ? GgmlType::kQ3_K
                        : recipe == QuantRecipe::kQ4_K_M ? GgmlType::kQ4_K
                                                         : GgmlType::kQ5_K;
  // "blk.<layer>.<role>.weight" or "<role>.weight".
  int layer = -1;
  std::string_view role = name.substr(0, name.find('.'));
  if (name.starts_with("blk.")) {
    const std::size_t a = name.find('.'), b = name.find('.', a + 1);
    layer = std::stoi(std::string(name.substr(a + 1, b - a - 1)));
    role = name.substr(b + 1, name.find('.', b + 1) - b - 1);
  }
  GgmlType t = base;
  if (role == "output" || (role == "token_embd" && tied)) {
    t = GgmlType::kQ6_K;
  } else if (role == "attn_v") {
    // The layer index is the count of attn_v tensors before this one (one per layer here).
    if (recipe == QuantRecipe::kQ3_K_M) {
      t = layer < 2 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
    } else if (UseMoreBits(layer, n_layers)) {
      t = GgmlType::kQ6_K;
    }
  } else if (role == "ffn_down") {
    if (recipe == QuantRecipe::kQ3_K_M) {
      t = layer < n_layers / 16 ? GgmlType::kQ5_K : GgmlType::kQ4_K;  // non-Falcon
    } else if (UseMoreBits(layer, n_layers)) {
      t = GgmlType::kQ6_K;
    }
  } else if (role == "attn_qkv") {
    t = recipe == QuantRecipe::kQ3_K_M   ? GgmlType::kQ4_K
        : recipe == QuantRecipe::kQ4_K_M ? GgmlType::kQ5_K
                                         : GgmlType::kQ6_K;
  } else if (role == "attn_output" && recipe == QuantRecipe::kQ3_K_M) {
    t = GgmlType::kQ4_K;
  }
  return Fallback(t, cols);
}

std::uint32_t RecipeFileType(QuantRecipe recipe, GgmlType plain) {
  switch (recipe) {
    case QuantRecipe::kQ3_K_M: return 12;
    case QuantRecipe::kQ4_K_M: return 15;
    case QuantRecipe::kQ5_K_M: return 17;
    case QuantRecipe::kNone: break;
  }
  switch (plain) {
    case GgmlType::kF32: return 0;
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ4_1: return 3;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kQ5_0: return 8;
    case GgmlType::kQ5_1: return 9;
    case GgmlType::kQ2_K: return 10;
    case GgmlType::kQ3_K: return 11;   // Q3_K_S: every matrix Q3_K
    case GgmlType::kQ4_K: return 14;   // Q4_K_S
    case GgmlType::kQ5_K: return 16;   // Q5_K_S
    case GgmlType::kQ6_K: return 18;
    case GgmlType::kIQ4_NL: return 25;
    case GgmlType::kIQ4_XS: return 30;
    case GgmlType::kBF16: return 32;
    default: return 0;
  }
}

}  // namespace smartgen::model
