#include "tokenizer/synthetic_vocab.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace smartgen::tokenizer {
namespace {

using testing::TokenizerFromWriter;

std::unique_ptr<Tokenizer> Synthetic(std::int32_t n_vocab) {
  gguf::GgufWriter writer;
  const Status status = WriteSyntheticByteVocab(writer, n_vocab);
  EXPECT_TRUE(status.ok()) << status.ToString();
  auto tok = TokenizerFromWriter(writer, "synthetic_" + std::to_string(n_vocab));
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(*tok) : nullptr;
}

TEST(SyntheticVocab, LoadsWithTheDocumentedLayout) {
  auto tok = Synthetic(49152);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 49152);
  EXPECT_EQ(tok->type(), VocabType::kBpe);
  EXPECT_EQ(tok->bos_id(), kSyntheticEndOfText);
  EXPECT_EQ(tok->eos_id(), kSyntheticImEnd);
  EXPECT_FALSE(tok->add_bos());
  EXPECT_TRUE(tok->IsEog(kSyntheticImEnd));
  EXPECT_TRUE(tok->IsEog(kSyntheticEndOfText));
  EXPECT_FALSE(tok->IsEog(kSyntheticImStart));
  EXPECT_EQ(tok->TokenText(kSyntheticImStart), "<|im_start|>");
  EXPECT_EQ(tok->TokenText(259), "<|pad_0|>");
  EXPECT_EQ(tok->TokenText(49151), "<|pad_48892|>");
  EXPECT_EQ(tok->TokenToPiece(49151), "");  // padding decodes to nothing
  EXPECT_EQ(tok->nl_id(), '\n');
}

TEST(SyntheticVocab, EveryTextRoundTripsAsBytes) {
  auto tok = Synthetic(kSyntheticMinVocab);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("Hi!", false, false), (std::vector<TokenId>{'H', 'i', '!'}));
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  for (const std::string& text : {std::string("Hello , world . It 's 12345"),
                                  std::string("Grüße 🚀 中文\n\t end  "), all_bytes}) {
    const std::vector<TokenId> ids = tok->Encode(text, false, false);
    EXPECT_EQ(ids.size(), text.size());  // no merges: one token per byte
    EXPECT_EQ(tok->Decode(ids), text);   // smollm pre-tokenizer: no space clean-up
  }
}

TEST(SyntheticVocab, ChatTemplateIsChatMl) {
  auto tok = Synthetic(1000);
  ASSERT_NE(tok, nullptr);
  const std::vector<ChatMessage> messages = {{"user", "hi"}};
  auto prompt = tok->ApplyChatTemplate(messages, true);
  ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
  EXPECT_EQ(*prompt, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  const std::vector<TokenId> ids = tok->Encode(*prompt, true, true);
  const std::vector<TokenId> expected = {kSyntheticImStart,
                                         'u',
                                         's',
                                         'e',
                                         'r',
                                         '\n',
                                         'h',
                                         'i',
                                         kSyntheticImEnd,
                                         '\n',
                                         kSyntheticImStart,
                                         'a',
                                         's',
                                         's',
                                         'i',
                                         's',
                                         't',
                                         'a',
                                         'n',
                                         't',
                                         '\n'};
  EXPECT_EQ(ids, expected);
  // Padding tokens are never parsed out of text.
  EXPECT_EQ(tok->Encode("<|pad_3|>", false, true).size(), 9u);
}

TEST(SyntheticVocab, LargeVocabLoads) {
  auto tok = Synthetic(151936);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 151936);
}

TEST(SyntheticVocab, RejectsTooSmallVocab) {
  gguf::GgufWriter writer;
  EXPECT_EQ(WriteSyntheticByteVocab(writer, 100).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace smartgen::tokenizer
