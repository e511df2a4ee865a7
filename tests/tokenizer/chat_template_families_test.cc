// The chat-template families beyond ChatML / Llama 3 / Phi-3: each is detected from (shortened)
// real templates of its models and formats a conversation as llama.cpp's
// llm_chat_apply_template does (the renderings below follow each reference template).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/chat_template.h"

namespace smartgen::tokenizer {
namespace {

const std::vector<ChatMessage>& Chat() {
  static const std::vector<ChatMessage> messages = {
      {"system", "You are terse."},
      {"user", "  Hi there \n"},
      {"assistant", "Hello."},
      {"user", "Count to 3"},
  };
  return messages;
}

std::string Format(ChatTemplateKind kind) { return FormatChat(kind, Chat(), true); }

TEST(ChatTemplateFamilies, Llama2Variants) {
  EXPECT_EQ(Format(ChatTemplateKind::kLlama2SysStrip),
            "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi there [/INST]Hello.</s>"
            "[INST] Count to 3 [/INST]");
  EXPECT_EQ(Format(ChatTemplateKind::kLlama2SysBos),
            "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\n  Hi there \n [/INST]Hello.</s>"
            "<s>[INST] Count to 3 [/INST]");
  EXPECT_EQ(Format(ChatTemplateKind::kLlama2),
            "[INST] You are terse.\n  Hi there \n [/INST]Hello.</s>[INST] Count to 3 [/INST]");
}

TEST(ChatTemplateFamilies, MistralVariants) {
  EXPECT_EQ(Format(ChatTemplateKind::kMistralV7),
            "[SYSTEM_PROMPT] You are terse.[/SYSTEM_PROMPT][INST]   Hi there \n[/INST] Hello.</s>"
            "[INST] Count to 3[/INST]");
  EXPECT_EQ(Format(ChatTemplateKind::kMistralV1),
            " [INST] You are terse.\n\n  Hi there \n [/INST] Hello.</s> [INST] Count to 3 [/INST]");
  EXPECT_EQ(Format(ChatTemplateKind::kMistralV3),
            "[INST] You are terse.\n\n  Hi there \n[/INST] Hello.</s>[INST] Count to 3[/INST]");
  EXPECT_EQ(Format(ChatTemplateKind::kMistralV3Tekken),
            "[INST]You are terse.\n\n  Hi there \n[/INST]Hello.</s>[INST]Count to 3[/INST]");
}

TEST(ChatTemplateFamilies, GemmaMergesTheSystemIntoTheFirstUserTurn) {
  EXPECT_EQ(Format(ChatTemplateKind::kGemma),
            "<start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n"
            "<start_of_turn>model\nHello.<end_of_turn>\n"
            "<start_of_turn>user\nCount to 3<end_of_turn>\n<start_of_turn>model\n");
  EXPECT_EQ(FormatChat(ChatTemplateKind::kGemma, std::span(Chat()).subspan(3), false),
            "<start_of_turn>user\nCount to 3<end_of_turn>\n");
}

TEST(ChatTemplateFamilies, Phi4AndZephyr) {
  EXPECT_EQ(Format(ChatTemplateKind::kPhi4),
            "<|im_start|>system<|im_sep|>You are terse.<|im_end|>"
            "<|im_start|>user<|im_sep|>  Hi there \n<|im_end|>"
            "<|im_start|>assistant<|im_sep|>Hello.<|im_end|>"
            "<|im_start|>user<|im_sep|>Count to 3<|im_end|><|im_start|>assistant<|im_sep|>");
  EXPECT_EQ(Format(ChatTemplateKind::kZephyr),
            "<|system|>\nYou are terse.<|endoftext|>\n<|user|>\n  Hi there \n<|endoftext|>\n"
            "<|assistant|>\nHello.<|endoftext|>\n<|user|>\nCount to 3<|endoftext|>\n"
            "<|assistant|>\n");
}

TEST(ChatTemplateFamilies, DeepSeekVariants) {
  EXPECT_EQ(Format(ChatTemplateKind::kDeepSeek3),
            "You are terse.\n\n<\uff5cUser\uff5c>  Hi there \n<\uff5cAssistant\uff5c>Hello."
            "<\uff5cend\u2581of\u2581sentence\uff5c><\uff5cUser\uff5c>Count to 3"
            "<\uff5cAssistant\uff5c>");
  EXPECT_EQ(Format(ChatTemplateKind::kDeepSeek2),
            "You are terse.\n\nUser:   Hi there \n\n\nAssistant: Hello."
            "<\uff5cend\u2581of\u2581sentence\uff5c>User: Count to 3\n\nAssistant:");
  EXPECT_EQ(Format(ChatTemplateKind::kDeepSeek),
            "You are terse.### Instruction:\n  Hi there \n\n### Response:\nHello.\n<|EOT|>\n"
            "### Instruction:\nCount to 3\n### Response:\n");
}

TEST(ChatTemplateFamilies, DetectedFromTheirTemplates) {
  struct Case {
    const char* model;
    std::string_view text;
    ChatTemplateKind want;
  };
  const Case cases[] = {
      {"Llama-2-chat",
       "{% if messages[0]['role'] == 'system' %}{% set content = '<<SYS>>\\n' + system_message + "
       "'\\n<</SYS>>\\n\\n' + message['content'] %}{{ bos_token + '[INST] ' + content.strip() + "
       "' [/INST]' }}",
       ChatTemplateKind::kLlama2SysStrip},
      {"Mistral-7B-Instruct-v0.1",
       "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' "
       "+ message['content'] + ' [/INST]' }}{% else %}{{ message['content'] + eos_token + ' ' }}",
       ChatTemplateKind::kLlama2},
      {"Mistral-Small-24B (v7)",
       "{%- if system_message is defined %}{{- '[SYSTEM_PROMPT]' + system_message + "
       "'[/SYSTEM_PROMPT]' }}{%- endif %}{{- '[INST]' + message['content'] + '[/INST]' }}",
       ChatTemplateKind::kMistralV7},
      {"gemma-3-it",
       "{{ bos_token }}{%- for message in loop_messages -%}{{ '<start_of_turn>' + role + '\\n' + "
       "(first_user_prefix if loop.first else \"\") }}{{ '<end_of_turn>\\n' }}{%- endfor -%}{%- if "
       "add_generation_prompt -%}{{'<start_of_turn>model\\n'}}{%- endif -%}",
       ChatTemplateKind::kGemma},
      {"phi-4",
       "{% for message in messages %}{{'<|im_start|>' + message['role'] + '<|im_sep|>' + "
       "message['content'] + '<|im_end|>'}}{% endfor %}{% if add_generation_prompt %}{{ "
       "'<|im_start|>assistant<|im_sep|>' }}{% endif %}",
       ChatTemplateKind::kPhi4},
      {"DeepSeek-R1",
       "{{'<\uff5cUser\uff5c>' + message['content']}}{{'<\uff5cAssistant\uff5c>' + content + "
       "'<\uff5cend\u2581of\u2581sentence\uff5c>'}}",
       ChatTemplateKind::kDeepSeek3},
      {"DeepSeek-V2-Lite-Chat",
       "{{ 'User: ' + message['content'] + '\\n\\n' }}{% elif message['role'] == 'assistant' %}{{ "
       "'Assistant: ' + message['content'] + eos_token }}",
       ChatTemplateKind::kDeepSeek2},
      {"deepseek-coder-instruct",
       "{{'### Instruction:\\n' + message['content'] + '\\n'}}{{'### Response:\\n' + "
       "message['content'] + '\\n<|EOT|>\\n'}}",
       ChatTemplateKind::kDeepSeek},
      {"zephyr-7b-beta",
       "{% for message in messages %}\\n{% if message['role'] == 'user' %}\\n{{ '<|user|>\\n' + "
       "message['content'] + eos_token }}\\n{% elif message['role'] == 'assistant' %}\\n{{ "
       "'<|assistant|>\\n'  + message['content'] + eos_token }}",
       ChatTemplateKind::kZephyr},
  };
  for (const Case& c : cases) {
    auto got = DetectChatTemplate(c.text);
    ASSERT_TRUE(got.ok()) << c.model << ": " << got.status().ToString();
    EXPECT_EQ(ChatTemplateName(*got), ChatTemplateName(c.want)) << c.model;
  }
}

TEST(ChatTemplateFamilies, EveryNameRoundTrips) {
  const std::string names = ChatTemplateNames();
  std::size_t start = 0, count = 0;
  while (start < names.size()) {
    const std::size_t end = std::min(names.find(", ", start), names.size());
    const std::string name = names.substr(start, end - start);
    auto kind = DetectChatTemplate(name);
    ASSERT_TRUE(kind.ok()) << name;
    EXPECT_EQ(ChatTemplateName(*kind), name);
    start = end + 2;
    ++count;
  }
  EXPECT_EQ(count, 18u);
}

TEST(ChatTemplateFamilies, ResolveOverridesAndFallsBackToPlain) {
  bool fell_back = true;
  auto over = ResolveChatTemplate("gemma", "<|im_start|>", &fell_back);
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(*over, ChatTemplateKind::kGemma);
  EXPECT_FALSE(fell_back);
  auto model = ResolveChatTemplate("", "<|im_start|>", &fell_back);
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(*model, ChatTemplateKind::kChatMl);
  EXPECT_FALSE(fell_back);
  auto none = ResolveChatTemplate("", "", &fell_back);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, ChatTemplateKind::kPlain);
  EXPECT_TRUE(fell_back);
  EXPECT_FALSE(ResolveChatTemplate("vicuna", "", &fell_back).ok());
}

}  // namespace
}  // namespace smartgen::tokenizer
