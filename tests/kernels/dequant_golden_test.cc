// Exact dequantization against ggml itself: every tensor of the quantized golden files
// (../shared/golden/quant), dequantized one block at a time, must hash to the sha256 of ggml's
// own dequantize_row_* output recorded in checks/dequant_check.json (see its README). The
// SIMD GEMM's dequantizing panel packer is checked for exactness against the same rows.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "gguf/gguf_reader.h"
#include "kernel_test_util.h"
#include "kernels/kernel_table.h"
#include "kernels/quant.h"
#include "sha256.h"

namespace smartgen::kernels {
namespace {

using gguf::GgmlType;

std::string QuantDir() { return std::string(SMARTGEN_SHARED_DIR) + "/golden/quant/"; }
std::string Quant2Dir() { return std::string(SMARTGEN_SHARED_DIR) + "/golden/quant2/"; }

// The tensor's values, dequantized block by block.
std::vector<float> DequantizeByBlocks(const gguf::TensorInfo& t) {
  const gguf::GgmlTypeInfo info = gguf::GetTypeInfo(t.type);
  const std::int64_t n = t.n_elements();
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t b = 0; b < n / info.block_size; ++b) {
    EXPECT_TRUE(DequantizeRow(t.type, t.data.data() + b * info.type_size,
                              out.data() + b * info.block_size, info.block_size))
        << t.name;
  }
  return out;
}

// Every tensor listed in `dir`/checks/dequant_check.json hashes to ggml's output; returns the
// types seen (as the check names them). Files missing from `dir` are looked up in ../quant.
std::set<std::string> CheckDequantization(const std::string& dir) {
  std::set<std::string> types_seen;
  auto text = core::ReadFileToString(dir + "checks/dequant_check.json");
  EXPECT_TRUE(text.ok()) << text.status().ToString() << " (is ../shared present?)";
  if (!text.ok()) return types_seen;
  const nlohmann::json check = nlohmann::json::parse(*text);
  for (const nlohmann::json& file : check["files"]) {
    const std::string name = file["file"].get<std::string>();
    auto gguf = gguf::GgufFile::Open(dir + name);
    if (!gguf.ok()) gguf = gguf::GgufFile::Open(QuantDir() + name);
    EXPECT_TRUE(gguf.ok()) << gguf.status().ToString();
    if (!gguf.ok()) continue;
    for (const nlohmann::json& want : file["tensors"]) {
      const std::string tensor = want["name"].get<std::string>();
      const gguf::TensorInfo* t = gguf->FindTensor(tensor);
      EXPECT_NE(t, nullptr) << name << ": " << tensor;
      if (t == nullptr) continue;
      EXPECT_EQ(t->n_elements(), want["n_elements"].get<std::int64_t>());
      const std::vector<float> values = DequantizeByBlocks(*t);
      testing::Sha256 sha;
      sha.Update(std::as_bytes(std::span(values)));
      EXPECT_EQ(sha.HexDigest(), want["ggml_to_float_sha256"].get<std::string>())
          << name << ": " << tensor << " (" << want["type"].get<std::string>() << ")";
      types_seen.insert(want["type"].get<std::string>());
    }
  }
  return types_seen;
}

TEST(DequantizeGolden, EveryTensorIsBitIdenticalToGgml) {
  const std::set<std::string> all = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"};
  EXPECT_EQ(CheckDequantization(QuantDir()), all);
}

// quant2: Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K, IQ4_NL, IQ4_XS (and the older types again).
TEST(DequantizeGolden, MoreTypesAreBitIdenticalToGgml) {
  const std::set<std::string> all = {"f32",  "iq4_nl", "iq4_xs", "q2_K", "q3_K", "q4_0", "q4_1",
                                     "q4_K", "q5_0",   "q5_1",   "q5_K", "q6_K", "q8_0"};
  EXPECT_EQ(CheckDequantization(Quant2Dir()), all);
}

TEST(DequantizeGolden, Sha256MatchesKnownDigests) {
  testing::Sha256 empty;
  EXPECT_EQ(empty.HexDigest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  testing::Sha256 abc;
  const char text[] = "abc";
  abc.Update(std::as_bytes(std::span(text, 3)));
  EXPECT_EQ(abc.HexDigest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// A GEMM against identity tokens (x[t] = e_t) returns the weights as its packer dequantized
// them: every SIMD table must reproduce ggml's values bit for bit.
TEST(DequantizeGolden, GemmPanelsDequantizeExactly) {
  for (const std::string& file :
       {QuantDir() + "tiny-llama-q-q4_0.gguf", QuantDir() + "tiny-llama-q-q4_k_m.gguf",
        QuantDir() + "tiny-llama-q-q6_k.gguf", QuantDir() + "tiny-llama-q-q8_0.gguf",
        Quant2Dir() + "tiny-llama-q-q4_1.gguf", Quant2Dir() + "tiny-llama-q-q5_0.gguf",
        Quant2Dir() + "tiny-llama-q-q5_1.gguf", Quant2Dir() + "tiny-llama-q-q2_k.gguf",
        Quant2Dir() + "tiny-llama-q-q3_k_m.gguf", Quant2Dir() + "tiny-llama-q-q5_k_s.gguf",
        Quant2Dir() + "tiny-llama-q-iq4_nl.gguf", Quant2Dir() + "tiny-llama-q-iq4_xs.gguf"}) {
    auto gguf = gguf::GgufFile::Open(file);
    ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
    std::map<GgmlType, int> checked;
    for (const gguf::TensorInfo& t : gguf->tensors()) {
      if (t.ne.size() != 2 || t.type == GgmlType::kF32 || checked[t.type]++ > 0) continue;
      const std::int64_t rows = std::min<std::int64_t>(t.rows(), 40), cols = t.cols();
      std::vector<float> want(static_cast<std::size_t>(rows * cols));
      ASSERT_TRUE(DequantizeRow(t.type, t.data.data(), want.data(), rows * cols));
      std::vector<float> eye(static_cast<std::size_t>(cols * cols), 0.0f);
      for (std::int64_t k = 0; k < cols; ++k) eye[k * cols + k] = 1.0f;
      for (const auto* table : testing::AvailableTables()) {
        std::vector<float> got(static_cast<std::size_t>(cols * rows));  // [token k][row r]
        ASSERT_TRUE(internal::MatMulWith(*table, t.type, t.data.data(), rows, cols, eye.data(),
                                         cols, got.data(), nullptr));
        int mismatches = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t k = 0; k < cols; ++k) {
            mismatches += got[k * rows + r] != want[r * cols + k];
          }
        }
        EXPECT_EQ(mismatches, 0) << file << " " << t.name << " " << internal::IsaName(table->isa);
      }
    }
  }
}

}  // namespace
}  // namespace smartgen::kernels
