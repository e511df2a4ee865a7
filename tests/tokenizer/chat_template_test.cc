#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace smartgen::tokenizer {
namespace {

using testing::SharedTokenizer;

const std::vector<ChatMessage>& Conversation() {
  static const std::vector<ChatMessage> messages = {
      {"system", "You are terse."},
      {"user", "  Hi there \n"},
      {"assistant", "Hello."},
      {"user", "Count to 3"},
  };
  return messages;
}

// Shortened real templates: Qwen2.5 (ChatML), Llama 3.1 and SmolLM2.
constexpr std::string_view kQwenTemplate =
    "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + "
    "message.content + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}{%- endif %}";
constexpr std::string_view kLlama3Template =
    "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";

TEST(ChatTemplate, FormatsChatMl) {
  EXPECT_EQ(FormatChat(ChatTemplateKind::kChatMl, Conversation(), true),
            "<|im_start|>system\nYou are terse.<|im_end|>\n"
            "<|im_start|>user\n  Hi there \n<|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>user\nCount to 3<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(FormatChat(ChatTemplateKind::kChatMl, std::span(Conversation()).first(1), false),
            "<|im_start|>system\nYou are terse.<|im_end|>\n");
}

TEST(ChatTemplate, FormatsLlama3WithTrimmedContent) {
  EXPECT_EQ(FormatChat(ChatTemplateKind::kLlama3, Conversation(), true),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nCount to 3<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, FormatsPhi3) {
  EXPECT_EQ(FormatChat(ChatTemplateKind::kPhi3, std::span(Conversation()).subspan(2), true),
            "<|assistant|>\nHello.<|end|>\n<|user|>\nCount to 3<|end|>\n<|assistant|>\n");
}

TEST(ChatTemplate, DetectsFamiliesByNameAndMarkers) {
  EXPECT_EQ(*DetectChatTemplate("chatml"), ChatTemplateKind::kChatMl);
  EXPECT_EQ(*DetectChatTemplate("llama3"), ChatTemplateKind::kLlama3);
  EXPECT_EQ(*DetectChatTemplate("phi3"), ChatTemplateKind::kPhi3);
  EXPECT_EQ(*DetectChatTemplate(kQwenTemplate), ChatTemplateKind::kChatMl);
  EXPECT_EQ(*DetectChatTemplate(kLlama3Template), ChatTemplateKind::kLlama3);
}

TEST(ChatTemplate, RejectsUnknownTemplates) {
  auto unknown = DetectChatTemplate("{{ messages | tojson }}");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("unknown template"), std::string_view::npos);
  EXPECT_NE(unknown.status().message().find("mistral-v7"), std::string_view::npos);
  EXPECT_FALSE(DetectChatTemplate("").ok());
  EXPECT_FALSE(DetectChatTemplate("ChatML").ok());  // names are exact
}

TEST(ChatTemplate, TokenizerUsesTheModelsTemplate) {
  // Phi-3's GGUF carries its Jinja template; it is detected as phi3.
  const Tokenizer* phi3 = SharedTokenizer("vocab/ggml-vocab-phi-3.gguf");
  ASSERT_NE(phi3, nullptr);
  ASSERT_FALSE(phi3->chat_template().empty());
  auto prompt = phi3->ApplyChatTemplate(std::span(Conversation()).subspan(3), true);
  ASSERT_TRUE(prompt.ok()) << prompt.status().ToString();
  EXPECT_EQ(*prompt, "<|user|>\nCount to 3<|end|>\n<|assistant|>\n");
  const std::vector<TokenId> ids = phi3->Encode(*prompt, true, true);
  EXPECT_EQ(ids.front(), phi3->bos_id());
  EXPECT_EQ(ids[1], phi3->FindToken("<|user|>"));

  // An explicit name overrides it; a model without a template gets a plain completion prompt.
  auto llama3 = phi3->ApplyChatTemplate(Conversation(), false, "llama3");
  ASSERT_TRUE(llama3.ok());
  EXPECT_EQ(llama3->rfind("<|start_header_id|>", 0), 0u);
  const Tokenizer* gpt2 = SharedTokenizer("vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_NE(gpt2, nullptr);
  ASSERT_TRUE(gpt2->chat_template().empty());
  auto plain = gpt2->ApplyChatTemplate(Conversation(), true);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "You are terse.\n  Hi there \n\nHello.\nCount to 3\n");
  EXPECT_FALSE(gpt2->ApplyChatTemplate(Conversation(), true, "vicuna").ok());
}

}  // namespace
}  // namespace smartgen::tokenizer
