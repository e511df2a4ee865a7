// Chat templates: turning a list of chat messages into the prompt text a model was tuned on.
//
// Like llama.cpp's llm_chat_apply_template this is not a Jinja interpreter: the family is
// chosen by name or detected from markers in the GGUF `tokenizer.chat_template` text (the
// checks and their order follow llm_chat_detect_template), and each family's format is
// written out in code, as llama.cpp writes it:
//
//   chatml   (Qwen, SmolLM)    <|im_start|>{role}\n{content}<|im_end|>\n ... + <|im_start|>assistant\n
//   llama3   (Llama 3.x)       <|start_header_id|>{role}<|end_header_id|>\n\n{trimmed}<|eot_id|>
//                              ... + <|start_header_id|>assistant<|end_header_id|>\n\n
//   phi3     (Phi-3)           <|{role}|>\n{content}<|end|>\n ... + <|assistant|>\n
//   phi4     (Phi-4)           <|im_start|>{role}<|im_sep|>{content}<|im_end|> ...
//                              + <|im_start|>assistant<|im_sep|>
//   llama2   (Llama 2, Mistral "[INST]"; variants llama2-sys, llama2-sys-bos,
//             llama2-sys-strip)  [INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST]{assistant}</s>
//   mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7 (by name; v7 also by [SYSTEM_PROMPT])
//   gemma    (Gemma 1-3)       <start_of_turn>{user|model}\n{trimmed}<end_of_turn>\n ...
//                              + <start_of_turn>model\n (a system message joins the next turn)
//   deepseek  (DeepSeek Coder) ### Instruction:\n{user}\n### Response:\n{assistant}\n<|EOT|>\n
//   deepseek2 (DeepSeek V2)    User: {user}\n\nAssistant: {assistant}<｜end▁of▁sentence｜>
//   deepseek3 (DeepSeek V3/R1) <｜User｜>{user}<｜Assistant｜>{assistant}<｜end▁of▁sentence｜>
//   zephyr                     <|{role}|>\n{content}<|endoftext|>\n ... + <|assistant|>\n
//   plain    (no template)     the messages' contents, one per line: a completion prompt
//
// The output never contains the first BOS (<|begin_of_text|>, <s>): as in llama.cpp, the BOS
// comes from tokenizing the prompt with add_special = true. Tokenize the result with
// parse_special = true so the markers become their special tokens.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/result.h"

namespace smartgen::tokenizer {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ...
  std::string content;
};

enum class ChatTemplateKind {
  kChatMl,
  kLlama3,
  kPhi3,
  kPhi4,
  kLlama2,
  kLlama2Sys,
  kLlama2SysBos,
  kLlama2SysStrip,
  kMistralV1,
  kMistralV3,
  kMistralV3Tekken,
  kMistralV7,
  kGemma,
  kDeepSeek,
  kDeepSeek2,
  kDeepSeek3,
  kZephyr,
  kPlain,
};

// The family's name as --chat-template takes it ("chatml", "llama2-sys", "mistral-v7", ...).
std::string_view ChatTemplateName(ChatTemplateKind kind);
// Every name, comma-separated (for help and error texts).
std::string ChatTemplateNames();

// `name_or_template` is either a family name above or the text of a Jinja chat template.
// kInvalidArgument naming the problem when neither matches a supported family.
Result<ChatTemplateKind> DetectChatTemplate(std::string_view name_or_template);

// The template a server uses, decided once at start-up: `override_name_or_text` when given
// (--chat-template), else the model's tokenizer.chat_template, else kPlain. *fell_back is set
// when the model has no template (so the caller can warn that chat requests get a plain
// completion prompt). Errors as DetectChatTemplate's.
Result<ChatTemplateKind> ResolveChatTemplate(std::string_view override_name_or_text,
                                             std::string_view model_template,
                                             bool* fell_back = nullptr);

// Formats `messages` in the family's format; with `add_generation_prompt` appends the header
// that starts the assistant's reply.
std::string FormatChat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                       bool add_generation_prompt);

}  // namespace smartgen::tokenizer
