#include "gguf/gguf_reader.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/gguf_writer.h"

namespace smartgen::gguf {
namespace {

std::string SharedPath(const std::string& rel) { return std::string(SMARTGEN_SHARED_DIR) + "/" + rel; }

std::string TempPath(const std::string& name) { return ::testing::TempDir() + "/" + name; }

Status WriteBytes(const std::string& path, const std::vector<std::byte>& bytes) {
  return core::WriteStringToFile(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// A small valid file: a few keys of every kind and two tensors.
GgufWriter SmallWriter() {
  GgufWriter w;
  w.AddString("general.architecture", "llama");
  w.AddUint32("llama.block_count", 2);
  w.AddFloat32("llama.rope.freq_base", 10000.0f);
  w.AddBool("tokenizer.ggml.add_bos_token", true);
  w.AddInt32("some.signed", -7);
  w.AddUint64("some.big", 1ull << 40);
  const std::vector<std::string> tokens = {"<unk>", "<s>", "hello"};
  w.AddStringArray("tokenizer.ggml.tokens", tokens);
  const std::vector<float> scores = {0.0f, -1.5f, 2.25f};
  w.AddFloat32Array("tokenizer.ggml.scores", scores);
  std::vector<float> a(4 * 3);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
  const std::int64_t ne_a[] = {4, 3};
  EXPECT_TRUE(w.AddTensor("a", ne_a, GgmlType::kF32, std::as_bytes(std::span(a))).ok());
  std::vector<std::byte> q(34 * 2, std::byte{1});
  const std::int64_t ne_q[] = {64};
  EXPECT_TRUE(w.AddTensor("q", ne_q, GgmlType::kQ8_0, q).ok());
  return w;
}

TEST(GgufReader, WriterRoundTripsEveryValueKind) {
  const std::string path = TempPath("roundtrip.gguf");
  ASSERT_TRUE(SmallWriter().WriteFile(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(*f->GetString("general.architecture"), "llama");
  EXPECT_EQ(*f->GetInt("llama.block_count"), 2);
  EXPECT_EQ(*f->GetFloat("llama.rope.freq_base"), 10000.0);
  EXPECT_TRUE(*f->GetBool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(*f->GetInt("some.signed"), -7);
  EXPECT_EQ(*f->GetInt("some.big"), 1ll << 40);
  auto tokens = f->GetArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_EQ(*(*tokens)[2].AsString(), "hello");
  EXPECT_EQ(*(*f->GetArray("tokenizer.ggml.scores"))[1].AsFloat(), -1.5);
  EXPECT_EQ(f->GetInt("missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(f->GetInt("general.architecture").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*f->GetIntOr("missing", 9), 9);

  const TensorInfo* a = f->FindTensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->cols(), 4);
  EXPECT_EQ(a->rows(), 3);
  ASSERT_EQ(a->data.size(), 48u);
  float v;
  std::memcpy(&v, a->data.data() + 7 * 4, 4);
  EXPECT_EQ(v, 7.0f);
  const TensorInfo* q = f->FindTensor("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, GgmlType::kQ8_0);
  EXPECT_EQ(q->data.size(), 68u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q->data.data()) % 32, 0u);
}

TEST(GgufReader, ReadsStories260KMetadataAndTensors) {
  auto f = GgufFile::Open(SharedPath("models/stories260K.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString() << " (is ../shared present?)";
  EXPECT_EQ(*f->GetString("general.architecture"), "llama");
  EXPECT_EQ(*f->GetInt("llama.block_count"), 5);
  EXPECT_EQ(*f->GetInt("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*f->GetInt("tokenizer.ggml.seperator_token_id"), 4294967295);
  EXPECT_NEAR(*f->GetFloat("llama.attention.layer_norm_rms_epsilon"), 1e-5, 1e-9);
  EXPECT_EQ(f->GetArray("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(f->tensors().size(), 48u);
  const TensorInfo* k = f->FindTensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->ne, (std::vector<std::int64_t>{64, 32}));
  EXPECT_EQ(k->data.size(), 8192u);
}

TEST(GgufReader, ReadsEveryGoldenModelAndVocab) {
  for (const char* rel :
       {"golden/tiny-llama-spm.gguf", "golden/tiny-llama-bpe.gguf", "golden/tiny-qwen2.gguf",
        "golden/tiny-qwen3.gguf", "golden/quant/tiny-llama-q-q8_0.gguf",
        "golden/quant/tiny-llama-q-q4_k_m.gguf", "golden/quant2/tiny-llama-q-iq4_xs.gguf",
        "golden/quant2/tiny-llama-q-q2_k.gguf", "golden/quant2/tiny-llama-w192-q5_k_m.gguf",
        "golden/arch/tiny-llama3.gguf", "golden/arch/tiny-phi3.gguf",
        "golden/arch/tiny-gemma2.gguf", "golden/arch/tiny-gemma3.gguf",
        "vocab/ggml-vocab-gpt-2.gguf",
        "vocab/ggml-vocab-starcoder.gguf", "vocab/ggml-vocab-phi-3.gguf"}) {
    auto f = GgufFile::Open(SharedPath(rel));
    EXPECT_TRUE(f.ok()) << rel << ": " << f.status().ToString();
  }
}

// The geometry of every weight type smartgen computes with: ggml's block sizes and bytes.
TEST(GgmlType, GeometryOfTheWeightTypesMatchesGgml) {
  struct Want {
    const char* name;
    std::int64_t block;
    std::size_t bytes;
  };
  for (const Want& w : {Want{"q4_1", 32, 20}, Want{"q5_0", 32, 22}, Want{"q5_1", 32, 24},
                        Want{"q2_k", 256, 84}, Want{"q3_k", 256, 110}, Want{"q5_k", 256, 176},
                        Want{"iq4_nl", 32, 18}, Want{"iq4_xs", 256, 136}}) {
    GgmlType t;
    ASSERT_TRUE(ParseGgmlType(w.name, &t)) << w.name;
    const GgmlTypeInfo info = GetTypeInfo(t);
    EXPECT_TRUE(info.known) << w.name;
    EXPECT_EQ(info.block_size, w.block) << w.name;
    EXPECT_EQ(info.type_size, w.bytes) << w.name;
    EXPECT_TRUE(IsSupportedWeightType(t)) << w.name;
  }
  GgmlType t;
  ASSERT_TRUE(ParseGgmlType("IQ4_XS", &t));
  EXPECT_EQ(static_cast<std::uint32_t>(t), 23u);  // ggml's enum value
  ASSERT_TRUE(ParseGgmlType("iq4_nl", &t));
  EXPECT_EQ(static_cast<std::uint32_t>(t), 20u);
  EXPECT_FALSE(IsSupportedWeightType(GgmlType::kQ8_K));  // activations only
}

// ---- malformed files: each gives a clear error naming the problem, never a crash -----------

class MalformedGguf : public ::testing::Test {
 protected:
  void SetUp() override { good_ = SmallWriter().Serialize(); }

  Status OpenBytes(const std::vector<std::byte>& bytes) {
    const std::string path = TempPath("malformed.gguf");
    EXPECT_TRUE(WriteBytes(path, bytes).ok());
    auto f = GgufFile::Open(path);
    return f.ok() ? Status::Ok() : f.status();
  }

  // Offset of the first tensor info record (name length of tensor "a").
  std::size_t TensorInfoOffset() const {
    const char name[] = {1, 0, 0, 0, 0, 0, 0, 0, 'a'};
    for (std::size_t i = 0; i + sizeof(name) <= good_.size(); ++i) {
      if (std::memcmp(good_.data() + i, name, sizeof(name)) == 0) return i;
    }
    ADD_FAILURE() << "tensor info not found";
    return 0;
  }

  template <typename T>
  void Poke(std::vector<std::byte>* bytes, std::size_t at, T v) {
    std::memcpy(bytes->data() + at, &v, sizeof(T));
  }

  std::vector<std::byte> good_;
};

TEST_F(MalformedGguf, EveryTruncationIsDataLossOrFine) {
  // Cutting the file anywhere must give an error (never a crash); the only prefix that may
  // parse is the whole file.
  for (std::size_t len = 0; len < good_.size(); len += (len < 400 ? 1 : 7)) {
    std::vector<std::byte> cut(good_.begin(), good_.begin() + len);
    const Status s = OpenBytes(cut);
    EXPECT_FALSE(s.ok()) << "prefix of " << len << " bytes parsed";
    if (len >= 4) {
      EXPECT_EQ(s.code(), StatusCode::kDataLoss) << len << ": " << s.ToString();
    }
  }
  EXPECT_TRUE(OpenBytes(good_).ok());
}

TEST_F(MalformedGguf, BadMagic) {
  auto bytes = good_;
  bytes[0] = std::byte{'X'};
  const Status s = OpenBytes(bytes);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bad magic"), std::string_view::npos) << s.ToString();
}

TEST_F(MalformedGguf, UnsupportedVersion) {
  auto bytes = good_;
  Poke<std::uint32_t>(&bytes, 4, 1);
  EXPECT_EQ(OpenBytes(bytes).code(), StatusCode::kUnimplemented);
}

TEST_F(MalformedGguf, AbsurdTensorAndKeyCounts) {
  auto bytes = good_;
  Poke<std::uint64_t>(&bytes, 8, 1ull << 60);
  Status s = OpenBytes(bytes);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("tensor count"), std::string_view::npos) << s.ToString();
  bytes = good_;
  Poke<std::uint64_t>(&bytes, 16, 1ull << 60);
  s = OpenBytes(bytes);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("metadata count"), std::string_view::npos) << s.ToString();
}

TEST_F(MalformedGguf, AbsurdStringAndArrayLengths) {
  // First key's length.
  auto bytes = good_;
  Poke<std::uint64_t>(&bytes, 24, 1ull << 50);
  EXPECT_EQ(OpenBytes(bytes).code(), StatusCode::kDataLoss);
  // The tokens array count: find the key, then type (4) + elem type (4) + count (8).
  const std::string key = "tokenizer.ggml.tokens";
  std::size_t at = 0;
  for (std::size_t i = 0; i + key.size() <= good_.size(); ++i) {
    if (std::memcmp(good_.data() + i, key.data(), key.size()) == 0) at = i + key.size();
  }
  ASSERT_GT(at, 0u);
  bytes = good_;
  Poke<std::uint64_t>(&bytes, at + 8, 1ull << 40);
  const Status s = OpenBytes(bytes);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("tokenizer.ggml.tokens"), std::string_view::npos) << s.ToString();
}

TEST_F(MalformedGguf, UnknownValueType) {
  // The first key is "general.architecture"; its value type follows the 8+20 byte string.
  auto bytes = good_;
  Poke<std::uint32_t>(&bytes, 24 + 8 + 20, 77);
  const Status s = OpenBytes(bytes);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("general.architecture"), std::string_view::npos) << s.ToString();
}

TEST_F(MalformedGguf, UnknownTensorType) {
  auto bytes = good_;
  const std::size_t info = TensorInfoOffset();
  // name (8+1), n_dims (4), ne (2x8), then type.
  Poke<std::uint32_t>(&bytes, info + 9 + 4 + 16, 99);
  const Status s = OpenBytes(bytes);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("tensor 'a'"), std::string_view::npos) << s.ToString();
}

TEST_F(MalformedGguf, AbsurdDimensions) {
  auto bytes = good_;
  const std::size_t info = TensorInfoOffset();
  Poke<std::uint32_t>(&bytes, info + 9, 9);  // n_dims
  EXPECT_EQ(OpenBytes(bytes).code(), StatusCode::kDataLoss);
  bytes = good_;
  Poke<std::int64_t>(&bytes, info + 13, -4);  // ne[0]
  EXPECT_EQ(OpenBytes(bytes).code(), StatusCode::kDataLoss);
  bytes = good_;
  Poke<std::int64_t>(&bytes, info + 21, 1ll << 39);  // ne[1]: fine alone, but past the end
  const Status s = OpenBytes(bytes);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("past the end"), std::string_view::npos) << s.ToString();
}

TEST_F(MalformedGguf, TensorPastTheEnd) {
  auto bytes = good_;
  const std::size_t info = TensorInfoOffset();
  Poke<std::uint64_t>(&bytes, info + 9 + 4 + 16 + 4, 1ull << 20);  // offset (aligned)
  const Status s = OpenBytes(bytes);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("tensor 'a'"), std::string_view::npos) << s.ToString();
  bytes = good_;
  Poke<std::uint64_t>(&bytes, info + 9 + 4 + 16 + 4, 3);  // misaligned
  EXPECT_NE(OpenBytes(bytes).message().find("not aligned"), std::string_view::npos);
}

TEST_F(MalformedGguf, DuplicateKeysAndBadAlignment) {
  GgufWriter w;
  w.AddUint32("x", 1);
  w.AddUint32("x", 2);
  EXPECT_EQ(OpenBytes(w.Serialize()).code(), StatusCode::kDataLoss);
  GgufWriter a;
  a.AddUint32("general.alignment", 24);
  const Status s = OpenBytes(a.Serialize());
  EXPECT_NE(s.message().find("general.alignment"), std::string_view::npos) << s.ToString();
}

TEST_F(MalformedGguf, RandomCorruptionNeverCrashes) {
  // Deterministic byte flips over the header region: any outcome but a crash is acceptable.
  std::uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 300; ++trial) {
    auto bytes = good_;
    for (int k = 0; k < 3; ++k) {
      bytes[next() % 400] = static_cast<std::byte>(next() & 0xff);
    }
    const Status s = OpenBytes(bytes);
    EXPECT_TRUE(s.ok() || !s.message().empty()) << "an error must say what is wrong";
  }
}

}  // namespace
}  // namespace smartgen::gguf
