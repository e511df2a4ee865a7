#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace smartgen::tokenizer {
namespace {

std::vector<std::string> Split(PreTokenizerType type, std::string_view text) {
  auto pre = PreTokenizer::Create(type);
  EXPECT_TRUE(pre.ok()) << pre.status().ToString();
  if (!pre.ok()) return {};
  std::vector<std::string> out;
  for (std::string_view piece : pre->Split(text)) out.emplace_back(piece);
  return out;
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Gpt2SplitsWordsNumbersPunctuationAndSpaces) {
  EXPECT_EQ(Split(PreTokenizerType::kGpt2, "Hello world's  3.14!!"),
            (Pieces{"Hello", " world", "'s", " ", " 3", ".", "14", "!!"}));
  // A run of spaces before a word leaves its last space to the word; trailing spaces stay whole.
  EXPECT_EQ(Split(PreTokenizerType::kGpt2, "a   b   "), (Pieces{"a", "  ", " b", "   "}));
  EXPECT_EQ(Split(PreTokenizerType::kGpt2, "I'M"), (Pieces{"I", "'", "M"}));  // case-sensitive
  EXPECT_EQ(Split(PreTokenizerType::kGpt2, "\n\n\thi"), (Pieces{"\n\n", "\t", "hi"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndKeepsNewlines) {
  EXPECT_EQ(Split(PreTokenizerType::kLlama3, "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(Split(PreTokenizerType::kLlama3, "I'M here\n\nnow"),
            (Pieces{"I", "'M", " here", "\n\n", "now"}));
  EXPECT_EQ(Split(PreTokenizerType::kLlama3, "(hello) x.\n"), (Pieces{"(hello", ")", " x", ".\n"}));
}

TEST(PreTokenizer, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(Split(PreTokenizerType::kQwen2, "abc 1234"), (Pieces{"abc", " ", "1", "2", "3", "4"}));
}

TEST(PreTokenizer, StarCoderSplitsDigitsThenGpt2) {
  EXPECT_EQ(Split(PreTokenizerType::kStarCoder, "x = 123;"),
            (Pieces{"x", " =", " ", "1", "2", "3", ";"}));
  // Lookaheads stop at piece boundaries: the spaces before "3" end their piece.
  EXPECT_EQ(Split(PreTokenizerType::kStarCoder, "a   3"), (Pieces{"a", "   ", "3"}));
}

TEST(PreTokenizer, UnicodeClassesFollowUnicodeProperties) {
  // Cyrillic letters, an Arabic-Indic digit and a CJK ideograph.
  EXPECT_EQ(Split(PreTokenizerType::kGpt2, "привет ٣ 中文"), (Pieces{"привет", " ٣", " 中文"}));
}

TEST(PreTokenizer, PiecesCoverAnyInputExactly) {
  std::mt19937 rng(3);
  for (PreTokenizerType type :
       {PreTokenizerType::kDefault, PreTokenizerType::kGpt2, PreTokenizerType::kLlama3,
        PreTokenizerType::kQwen2, PreTokenizerType::kStarCoder}) {
    auto pre = PreTokenizer::Create(type);
    ASSERT_TRUE(pre.ok());
    for (int round = 0; round < 50; ++round) {
      std::string text;
      for (int i = 0; i < 80; ++i) text.push_back(static_cast<char>(rng() & 0xFF));
      std::string joined;
      for (std::string_view piece : pre->Split(text)) {
        EXPECT_FALSE(piece.empty());
        joined += piece;
      }
      EXPECT_EQ(joined, text) << PreTokenizerTypeName(type);
    }
    EXPECT_TRUE(pre->Split("").empty());
  }
}

TEST(PreTokenizer, HugeWhitespaceRunDoesNotFail) {
  auto pre = PreTokenizer::Create(PreTokenizerType::kLlama3);
  ASSERT_TRUE(pre.ok());
  const std::string text = std::string(200000, ' ') + "x" + std::string(100000, '\n');
  std::size_t total = 0;
  for (std::string_view piece : pre->Split(text)) total += piece.size();
  EXPECT_EQ(total, text.size());
}

TEST(PreTokenizer, LooksUpNamesAsLlamaCpp) {
  struct Case {
    const char* name;
    PreTokenizerType type;
    bool clean_spaces;
    bool add_bos;
  };
  for (const Case& c : {Case{"gpt-2", PreTokenizerType::kGpt2, true, false},
                        Case{"llama-bpe", PreTokenizerType::kLlama3, true, true},
                        Case{"qwen2", PreTokenizerType::kQwen2, false, false},
                        Case{"smollm", PreTokenizerType::kStarCoder, false, false},
                        Case{"starcoder", PreTokenizerType::kStarCoder, true, false},
                        Case{"", PreTokenizerType::kDefault, true, false}}) {
    auto config = LookupPreTokenizer(c.name);
    ASSERT_TRUE(config.ok()) << c.name;
    EXPECT_EQ(config->type, c.type) << c.name;
    EXPECT_EQ(config->clean_spaces, c.clean_spaces) << c.name;
    EXPECT_EQ(config->add_bos, c.add_bos) << c.name;
  }
  EXPECT_EQ(LookupPreTokenizer("deepseek-llm").status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(LookupPreTokenizer("no-such-pre").status().code(), StatusCode::kInvalidArgument);
}

TEST(Regex, ReportsCompileErrors) {
  auto regex = Regex::Compile("(unclosed");
  ASSERT_FALSE(regex.ok());
  EXPECT_EQ(regex.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(regex.status().message().find("(unclosed"), std::string_view::npos);
}

}  // namespace
}  // namespace smartgen::tokenizer
