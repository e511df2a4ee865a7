// Tokenizer behaviour on the shared vocabularies: round trips, special tokens, BOS/EOS,
// detokenization options, malformed input and concurrent use.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_data.h"
#include "tokenizer/utf8.h"

namespace smartgen::tokenizer {
namespace {

using testing::SharedTokenizer;

constexpr const char* kSpm = "vocab/ggml-vocab-llama-spm.gguf";
constexpr const char* kPhi3 = "vocab/ggml-vocab-phi-3.gguf";
constexpr const char* kGpt2 = "vocab/ggml-vocab-gpt-2.gguf";
constexpr const char* kStarCoder = "vocab/ggml-vocab-starcoder.gguf";

std::vector<TokenId> Concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<std::string>& PlainTexts() {
  static const std::vector<std::string> texts = {
      "Hello world",
      "The quick brown fox jumps over the lazy dog",
      "  leading and trailing spaces  ",
      "tabs\tand\nnewlines\n\n",
      "numbers 0 12 345 6789 and 3.14159",
      "Grüße aus München, ça va? Привет мир",
      "日本語のテキストと中文",
      "emoji 🚀🦙 and ZWJ 👩‍💻",
      "it's we're they've I'll I'd",
  };
  return texts;
}

TEST(Tokenizer, SpmRoundTripsPlainText) {
  for (const char* vocab : {kSpm, kPhi3}) {
    const Tokenizer* tok = SharedTokenizer(vocab);
    ASSERT_NE(tok, nullptr);
    for (const std::string& text : PlainTexts()) {
      EXPECT_EQ(tok->Decode(tok->Encode(text, false, false)), text) << vocab;
    }
  }
}

TEST(Tokenizer, BpeRoundTripsPlainText) {
  for (const char* vocab : {kGpt2, kStarCoder}) {
    const Tokenizer* tok = SharedTokenizer(vocab);
    ASSERT_NE(tok, nullptr);
    for (const std::string& text : PlainTexts()) {
      EXPECT_EQ(tok->Decode(tok->Encode(text, false, false)), text) << vocab;
    }
  }
}

TEST(Tokenizer, RandomUtf8RoundTrips) {
  std::mt19937 rng(11);
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges = {
      {0x20, 0x7E},     {0x09, 0x0A},       {0xA0, 0x24F},   {0x400, 0x4FF},
      {0x4E00, 0x9FFF}, {0x1F300, 0x1F6FF}, {0x1780, 0x17FF}};
  for (const char* vocab : {kSpm, kPhi3, kGpt2, kStarCoder}) {
    const Tokenizer* tok = SharedTokenizer(vocab);
    ASSERT_NE(tok, nullptr);
    for (int round = 0; round < 20; ++round) {
      std::string text;
      for (int i = 0; i < 40; ++i) {
        const auto& [lo, hi] = ranges[rng() % ranges.size()];
        AppendUtf8(lo + rng() % (hi - lo + 1), &text);
      }
      std::string pieces;
      for (TokenId id : tok->Encode(text, false, false)) pieces += tok->TokenToPiece(id);
      EXPECT_EQ(pieces, tok->type() == VocabType::kSpm ? " " + text : text) << vocab;
    }
  }
}

TEST(Tokenizer, ArbitraryBytesSurviveAByteCompleteVocabulary) {
  // GPT-2 has a token for each of the 256 bytes, so even malformed UTF-8 comes back exactly.
  // (StarCoder2 lacks the bytes that never occur in UTF-8, and llama.cpp drops those; SPM
  // splits malformed input at bogus lead bytes, which can cut a "▁" in two.)
  std::mt19937 rng(7);
  const Tokenizer* tok = SharedTokenizer(kGpt2);
  ASSERT_NE(tok, nullptr);
  for (int round = 0; round < 20; ++round) {
    std::string text;
    for (int i = 0; i < 64; ++i) text.push_back(static_cast<char>(rng() & 0xFF));
    std::string pieces;
    for (TokenId id : tok->Encode(text, false, false)) pieces += tok->TokenToPiece(id);
    EXPECT_EQ(pieces, text);
  }
  for (const char* vocab : {kSpm, kStarCoder}) {
    const Tokenizer* other = SharedTokenizer(vocab);
    ASSERT_NE(other, nullptr);
    const std::vector<TokenId> ids = other->Encode("\xff\xfe a \xc0\x80 \xe2\x96", true, true);
    EXPECT_FALSE(ids.empty());
    for (TokenId id : ids) EXPECT_TRUE(id >= 0 && id < other->n_vocab());
  }
}

TEST(Tokenizer, AddsBosOnlyWhenTheVocabularySaysSo) {
  const Tokenizer* spm = SharedTokenizer(kSpm);
  const Tokenizer* gpt2 = SharedTokenizer(kGpt2);
  ASSERT_NE(spm, nullptr);
  ASSERT_NE(gpt2, nullptr);
  EXPECT_TRUE(spm->add_bos());
  EXPECT_EQ(spm->bos_id(), 1);
  const std::vector<TokenId> with = spm->Encode("Hello", true, false);
  EXPECT_EQ(with, Concat({1}, spm->Encode("Hello", false, false)));
  EXPECT_EQ(spm->Encode("", true, false), std::vector<TokenId>{1});
  EXPECT_TRUE(spm->Encode("", false, false).empty());

  EXPECT_FALSE(gpt2->add_bos());  // llama.cpp's default for pre-tokenizer gpt-2
  EXPECT_EQ(gpt2->Encode("Hello", true, false), gpt2->Encode("Hello", false, false));
}

TEST(Tokenizer, ParsesControlTokensOnlyWhenAsked) {
  const Tokenizer* tok = SharedTokenizer(kGpt2);
  ASSERT_NE(tok, nullptr);
  const TokenId eot = tok->FindToken("<|endoftext|>");
  ASSERT_EQ(eot, 50256);
  EXPECT_TRUE(tok->IsControl(eot));
  EXPECT_TRUE(tok->IsEog(eot));

  const std::vector<TokenId> parsed = tok->Encode("Hi<|endoftext|>there", false, true);
  EXPECT_EQ(parsed, Concat(Concat(tok->Encode("Hi", false, false), {eot}),
                           tok->Encode("there", false, false)));
  const std::vector<TokenId> plain = tok->Encode("Hi<|endoftext|>there", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
  EXPECT_GT(plain.size(), 3u);
}

TEST(Tokenizer, SplitsAdjacentAndRepeatedSpecialTokens) {
  const Tokenizer* tok = SharedTokenizer(kStarCoder);
  ASSERT_NE(tok, nullptr);
  const TokenId pre = tok->FindToken("<fim_prefix>");
  const TokenId suf = tok->FindToken("<fim_suffix>");
  const TokenId mid = tok->FindToken("<fim_middle>");
  ASSERT_NE(pre, kNoToken);
  const std::vector<TokenId> ids =
      tok->Encode("<fim_prefix>def f():<fim_suffix><fim_suffix>\n<fim_middle>", false, true);
  std::vector<TokenId> expected = {pre};
  expected = Concat(expected, tok->Encode("def f():", false, false));
  expected = Concat(expected, {suf, suf});
  expected = Concat(expected, tok->Encode("\n", false, false));
  expected.push_back(mid);
  EXPECT_EQ(ids, expected);
}

TEST(Tokenizer, SpmAddsTheDummyPrefixAfterEachSpecialToken) {
  const Tokenizer* tok = SharedTokenizer(kSpm);
  ASSERT_NE(tok, nullptr);
  // "</s>" is CONTROL in Llama 2's vocabulary.
  const std::vector<TokenId> ids = tok->Encode("a</s>b", false, true);
  EXPECT_EQ(ids,
            Concat(Concat(tok->Encode("a", false, false), {2}), tok->Encode("b", false, false)));
}

TEST(Tokenizer, UserDefinedTokensSplitEvenWithoutParseSpecial) {
  // Phi-3's "</s>" is USER_DEFINED and, as llama.cpp sets for Phi-3, eats spaces after it.
  const Tokenizer* tok = SharedTokenizer(kPhi3);
  ASSERT_NE(tok, nullptr);
  ASSERT_EQ(tok->FindToken("</s>"), 2);
  EXPECT_TRUE(tok->TokenAttrs(2) & token_attr::kUserDefined);
  EXPECT_TRUE(tok->TokenAttrs(2) & token_attr::kRstrip);
  const std::vector<TokenId> ids = tok->Encode("a</s>   b", false, false);
  EXPECT_EQ(ids,
            Concat(Concat(tok->Encode("a", false, false), {2}), tok->Encode("b", false, false)));
}

TEST(Tokenizer, DecodeHidesControlTokensUnlessUnparsed) {
  const Tokenizer* tok = SharedTokenizer(kGpt2);
  ASSERT_NE(tok, nullptr);
  const std::vector<TokenId> ids = tok->Encode("Hi<|endoftext|>", false, true);
  EXPECT_EQ(tok->Decode(ids), "Hi");
  EXPECT_EQ(tok->Decode(ids, {.remove_special = false, .unparse_special = true}),
            "Hi<|endoftext|>");
  EXPECT_EQ(tok->TokenToPiece(50256, /*special=*/false), "");
  EXPECT_EQ(tok->TokenToPiece(50256, /*special=*/true), "<|endoftext|>");
}

TEST(Tokenizer, SpmDecodeStripsOnlyTheFirstDummySpace) {
  const Tokenizer* tok = SharedTokenizer(kSpm);
  ASSERT_NE(tok, nullptr);
  const std::vector<TokenId> ids = tok->Encode("Hello world", true, false);
  ASSERT_EQ(ids.front(), 1);
  // As llama_detokenize: the (invisible) BOS takes the first-token slot, so the space stays;
  // removing BOS as special keeps it too.
  EXPECT_EQ(tok->Decode(ids), " Hello world");
  EXPECT_EQ(tok->Decode(ids, {.remove_special = true}), " Hello world");
  EXPECT_EQ(tok->Decode(std::span(ids).subspan(1)), "Hello world");
  EXPECT_EQ(tok->TokenToPiece(tok->FindToken("<0x0A>")), "\n");
}

TEST(Tokenizer, BpeDecodeCleansSpacesLikeLlamaCpp) {
  const Tokenizer* tok = SharedTokenizer(kGpt2);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Decode(tok->Encode("Hello , world ! It 's", false, false)), "Hello, world! It's");
  EXPECT_EQ(tok->Decode(tok->Encode("don 't", false, false)), "don 't");
}

TEST(Tokenizer, IgnoresOutOfRangeIds) {
  const Tokenizer* tok = SharedTokenizer(kGpt2);
  ASSERT_NE(tok, nullptr);
  const std::vector<TokenId> ids = {15496, -1, 1 << 30, 995};
  EXPECT_EQ(tok->Decode(ids), "Hello world");
  EXPECT_EQ(tok->TokenToPiece(-5), "");
  EXPECT_EQ(tok->TokenText(tok->n_vocab()), "");
  EXPECT_FALSE(tok->IsEog(-1));
}

TEST(Tokenizer, StarCoderSplitsDigitsOneByOne) {
  const Tokenizer* tok = SharedTokenizer(kStarCoder);
  ASSERT_NE(tok, nullptr);
  const std::vector<TokenId> ids = tok->Encode("12345", false, false);
  ASSERT_EQ(ids.size(), 5u);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(tok->TokenToPiece(ids[i]), std::string(1, static_cast<char>('1' + i)));
  }
}

TEST(Tokenizer, ConcurrentEncodeDecodeMatchesSequential) {
  const Tokenizer* tok = SharedTokenizer(kGpt2);
  const Tokenizer* spm = SharedTokenizer(kSpm);
  ASSERT_NE(tok, nullptr);
  ASSERT_NE(spm, nullptr);
  std::vector<std::vector<TokenId>> expected;
  for (const std::string& text : PlainTexts()) expected.push_back(tok->Encode(text, false, true));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (std::size_t i = 0; i < PlainTexts().size(); ++i) {
          if (tok->Encode(PlainTexts()[i], false, true) != expected[i]) ++mismatches[t];
          if (tok->Decode(expected[i]) != PlainTexts()[i]) ++mismatches[t];
          if (spm->Decode(spm->Encode(PlainTexts()[i], false, false)) != PlainTexts()[i]) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(Tokenizer, ManySpecialTokensStayFast) {
  // A long text full of '<' must not try every special token at every position.
  const Tokenizer* tok = SharedTokenizer(kStarCoder);
  ASSERT_NE(tok, nullptr);
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "<a> <|x|> <fim_pad> ";
  const std::vector<TokenId> ids = tok->Encode(text, false, true);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok->FindToken("<fim_pad>")), 2000);
}

}  // namespace
}  // namespace smartgen::tokenizer
