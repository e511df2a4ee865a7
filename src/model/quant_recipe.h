// llama-quantize's mixed-precision recipes (Q3_K_M, Q4_K_M, Q5_K_M): which ggml type each
// weight matrix gets, by llama.cpp's default rules (llama_tensor_get_type, no --pure, no
// imatrix), including its shape fallbacks for rows that do not split into 256-wide
// super-blocks (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K / Q3_K -> Q4_0). Used by
// `smartgen make-model` and checked against the files llama.cpp itself made
// (../shared/golden/quant2).
#pragma once

#include <cstdint>
#include <string_view>

#include "gguf/ggml_type.h"

namespace smartgen::model {

enum class QuantRecipe { kNone, kQ3_K_M, kQ4_K_M, kQ5_K_M };

// The type of the matrix `name` ("token_embd.weight", "output.weight", "blk.3.attn_v.weight",
// ...) with rows of `cols` elements in a model of `n_layers` layers; `tied` when there is no
// output.weight (token_embd is then quantized as the output). kNone gives `plain`.
gguf::GgmlType RecipeTensorType(QuantRecipe recipe, gguf::GgmlType plain, std::string_view name,
                                int n_layers, std::int64_t cols, bool tied);

// general.file_type (llama_ftype) of a recipe (12, 15, 17), or of a model whose matrices are
// all `plain` for kNone.
std::uint32_t RecipeFileType(QuantRecipe recipe, gguf::GgmlType plain);

}  // namespace smartgen::model
