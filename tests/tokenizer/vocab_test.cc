// Hand-made vocabularies: the merge rules on small inputs, and malformed metadata, which must
// give a clear error naming the key, never a crash.
#include "tokenizer/vocab.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_data.h"
#include "tokenizer/byte_unicode.h"

namespace smartgen::tokenizer {
namespace {

using testing::TokenizerFromWriter;
using Strings = std::vector<std::string>;

// A tiny SPM vocabulary: <unk>, <s>, </s>, a few pieces with scores, no byte tokens.
gguf::GgufWriter TinySpm() {
  gguf::GgufWriter w;
  w.AddString("tokenizer.ggml.model", "llama");
  const Strings tokens = {"<unk>",
                          "<s>",
                          "</s>",
                          "\xE2\x96\x81",
                          "a",
                          "b",
                          "c",
                          "\xE2\x96\x81"
                          "a",
                          "ab",
                          "bc",
                          "\xE2\x96\x81"
                          "ab"};
  const std::vector<float> scores = {0, 0, 0, -1, -2, -2, -2, -5, -3, -1, -4};
  const std::vector<std::int32_t> types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  w.AddStringArray("tokenizer.ggml.tokens", tokens);
  w.AddFloat32Array("tokenizer.ggml.scores", scores);
  w.AddInt32Array("tokenizer.ggml.token_type", types);
  return w;
}

// A tiny byte-level BPE vocabulary over "a", "b", "c", "Ġ" with merges in a chosen order.
gguf::GgufWriter TinyBpe(const Strings& merges, std::string_view pre = "gpt-2") {
  gguf::GgufWriter w;
  w.AddString("tokenizer.ggml.model", "gpt2");
  w.AddString("tokenizer.ggml.pre", pre);
  const Strings tokens = {"a",
                          "b",
                          "c",
                          "\xC4\xA0",
                          "ab",
                          "bc",
                          "abc",
                          "\xC4\xA0"
                          "a",
                          "<|endoftext|>"};
  w.AddStringArray("tokenizer.ggml.tokens", tokens);
  w.AddStringArray("tokenizer.ggml.merges", merges);
  w.AddUint32("tokenizer.ggml.bos_token_id", 8);
  w.AddUint32("tokenizer.ggml.eos_token_id", 8);
  return w;
}

std::vector<TokenId> Ids(std::initializer_list<TokenId> ids) {
  return ids;
}

TEST(Vocab, SpmMergesTheHighestScoringPairFirst) {
  auto tok = TokenizerFromWriter(TinySpm(), "tiny_spm");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  // "▁abc": "bc" (-1) beats "ab" (-3) and "▁a" (-5); then "▁a" merges; "▁abc" is no token.
  // (Merging by order of appearance would give "▁ab" + "c" instead.)
  EXPECT_EQ((*tok)->Encode("abc", false, false), Ids({7, 9}));
  // No byte tokens: a character outside the vocabulary becomes <unk>, once per byte.
  EXPECT_EQ((*tok)->Encode("a\xC3\xA9", false, false), Ids({7, 0, 0}));
  EXPECT_EQ((*tok)->unk_id(), 0);
}

TEST(Vocab, BpeMergesByRank) {
  auto first_ab = TokenizerFromWriter(TinyBpe({"a b", "b c", "ab c"}), "bpe_ab");
  ASSERT_TRUE(first_ab.ok()) << first_ab.status().ToString();
  EXPECT_EQ((*first_ab)->Encode("abc", false, false), Ids({6}));
  auto first_bc = TokenizerFromWriter(TinyBpe({"b c", "a b", "ab c"}), "bpe_bc");
  ASSERT_TRUE(first_bc.ok());
  EXPECT_EQ((*first_bc)->Encode("abc", false, false), Ids({0, 5}));
  // " a" pre-tokenizes to "Ġa", which is not merged (no "Ġ a" merge): two tokens.
  EXPECT_EQ((*first_bc)->Encode(" a", false, false), Ids({3, 0}));
  // A byte without a token is dropped, as in llama.cpp.
  EXPECT_EQ((*first_bc)->Encode("az", false, false), Ids({0}));
}

TEST(Vocab, IgnoresSpecialIdsPastTheVocabulary) {
  gguf::GgufWriter w = TinySpm();
  w.AddUint32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
  w.AddUint32("tokenizer.ggml.seperator_token_id", 0xFFFFFFFFu);
  auto tok = TokenizerFromWriter(w, "spm_bad_ids");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->pad_id(), kNoToken);
  EXPECT_EQ((*tok)->bos_id(), 1);
}

TEST(Vocab, DetectsEndOfGenerationTokensByText) {
  auto tok = TokenizerFromWriter(TinyBpe({"a b"}), "bpe_eog");
  ASSERT_TRUE(tok.ok());
  // "<|endoftext|>" is NORMAL in this file; llama.cpp forces it to CONTROL and EOG.
  EXPECT_TRUE((*tok)->IsControl(8));
  EXPECT_TRUE((*tok)->IsEog(8));
  EXPECT_EQ((*tok)->eot_id(), 8);
  EXPECT_FALSE((*tok)->IsEog(0));
}

struct BadCase {
  const char* name;
  StatusCode code;
  const char* message_part;
  gguf::GgufWriter writer;
};

std::vector<BadCase> BadCases() {
  std::vector<BadCase> cases;
  const Strings three = {"a", "b", "c"};
  {
    gguf::GgufWriter w;
    w.AddStringArray("tokenizer.ggml.tokens", three);
    cases.push_back({"no_model", StatusCode::kNotFound, "tokenizer.ggml.model", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "wordpiece9");
    w.AddStringArray("tokenizer.ggml.tokens", three);
    cases.push_back({"unknown_model", StatusCode::kInvalidArgument, "wordpiece9", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "t5");
    cases.push_back({"t5", StatusCode::kUnimplemented, "t5", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddUint32("tokenizer.ggml.model", 3);
    cases.push_back(
        {"model_not_string", StatusCode::kInvalidArgument, "tokenizer.ggml.model", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "llama");
    cases.push_back({"no_tokens", StatusCode::kNotFound, "tokenizer.ggml.tokens", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "llama");
    const std::vector<std::int32_t> ints = {1, 2, 3};
    w.AddInt32Array("tokenizer.ggml.tokens", ints);
    cases.push_back({"tokens_not_strings", StatusCode::kInvalidArgument, "tokenizer.ggml.tokens[0]",
                     std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "llama");
    w.AddStringArray("tokenizer.ggml.tokens", Strings{});
    cases.push_back({"empty_tokens", StatusCode::kInvalidArgument, "empty", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "llama");
    w.AddStringArray("tokenizer.ggml.tokens", three);
    const std::vector<float> scores = {0.0f, 1.0f};
    w.AddFloat32Array("tokenizer.ggml.scores", scores);
    cases.push_back(
        {"scores_length", StatusCode::kInvalidArgument, "tokenizer.ggml.scores", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "llama");
    w.AddStringArray("tokenizer.ggml.tokens", three);
    const std::vector<std::int32_t> types = {1, 1, 1, 1};
    w.AddInt32Array("tokenizer.ggml.token_type", types);
    cases.push_back(
        {"types_length", StatusCode::kInvalidArgument, "tokenizer.ggml.token_type", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "llama");
    w.AddStringArray("tokenizer.ggml.tokens", three);
    w.AddStringArray("tokenizer.ggml.scores", three);
    cases.push_back({"scores_not_numbers", StatusCode::kInvalidArgument, "tokenizer.ggml.scores[0]",
                     std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "llama");
    w.AddStringArray("tokenizer.ggml.tokens", Strings{"a", "b", "a"});
    cases.push_back({"duplicate_token", StatusCode::kInvalidArgument, "twice", std::move(w)});
  }
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "gpt2");
    w.AddString("tokenizer.ggml.pre", "gpt-2");
    w.AddStringArray("tokenizer.ggml.tokens", three);
    cases.push_back({"no_merges", StatusCode::kNotFound, "tokenizer.ggml.merges", std::move(w)});
  }
  cases.push_back({"bad_merge", StatusCode::kInvalidArgument, "tokenizer.ggml.merges[1]",
                   TinyBpe({"a b", "abc"})});
  cases.push_back({"merge_trailing_space", StatusCode::kInvalidArgument, "tokenizer.ggml.merges[0]",
                   TinyBpe({"a "})});
  cases.push_back({"unknown_pre", StatusCode::kInvalidArgument, "gpt-5", TinyBpe({}, "gpt-5")});
  cases.push_back({"unsupported_pre", StatusCode::kUnimplemented, "deepseek-coder",
                   TinyBpe({}, "deepseek-coder")});
  {
    gguf::GgufWriter w;
    w.AddString("tokenizer.ggml.model", "gpt2");
    w.AddString("tokenizer.ggml.pre", "gpt-2");
    w.AddStringArray("tokenizer.ggml.tokens", three);
    w.AddStringArray("tokenizer.ggml.merges", Strings{});
    w.AddBool("tokenizer.ggml.add_bos_token", true);  // default BOS id 11 is past the end
    cases.push_back({"add_bos_without_bos", StatusCode::kInvalidArgument, "BOS", std::move(w)});
  }
  {
    gguf::GgufWriter w = TinySpm();
    w.AddString("tokenizer.ggml.add_bos_token", "yes");
    cases.push_back({"add_bos_not_bool", StatusCode::kInvalidArgument,
                     "tokenizer.ggml.add_bos_token", std::move(w)});
  }
  {
    gguf::GgufWriter w = TinySpm();
    w.AddString("tokenizer.ggml.eos_token_id", "2");
    cases.push_back(
        {"eos_not_int", StatusCode::kInvalidArgument, "tokenizer.ggml.eos_token_id", std::move(w)});
  }
  return cases;
}

TEST(Vocab, MalformedMetadataGivesClearErrors) {
  for (BadCase& c : BadCases()) {
    auto tok = TokenizerFromWriter(c.writer, std::string("bad_") + c.name);
    ASSERT_FALSE(tok.ok()) << c.name;
    EXPECT_EQ(tok.status().code(), c.code) << c.name << ": " << tok.status().ToString();
    EXPECT_NE(tok.status().message().find(c.message_part), std::string_view::npos)
        << c.name << ": " << tok.status().ToString();
  }
}

}  // namespace
}  // namespace smartgen::tokenizer
