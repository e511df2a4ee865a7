// Chat templates: turning a list of chat messages into the prompt text a model was tuned on.
//
// Like llama.cpp's llm_chat_apply_template this is not a Jinja interpreter: the family is
// chosen by name or detected from markers in the GGUF `tokenizer.chat_template` text (as
// llm_chat_detect_template does), and each family's format is written out in code:
//
//   chatml  (Qwen, SmolLM, ...)  <|im_start|>{role}\n{content}<|im_end|>\n ...
//                                generation prompt: <|im_start|>assistant\n
//   llama3  (Llama 3.x)          <|start_header_id|>{role}<|end_header_id|>\n\n{trimmed content}
//                                <|eot_id|> ...  generation prompt:
//                                <|start_header_id|>assistant<|end_header_id|>\n\n
//   phi3    (Phi-3)              <|{role}|>\n{content}<|end|>\n ...  generation prompt:
//                                <|assistant|>\n
//
// The output never contains BOS (<|begin_of_text|>, <s>): as in llama.cpp, the BOS comes from
// tokenizing the prompt with add_special = true (Llama 3 vocabularies have add_bos). Tokenize
// the result with parse_special = true so the markers become their special tokens.
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

enum class ChatTemplateKind { kChatMl, kLlama3, kPhi3 };

// "chatml", "llama3", "phi3".
std::string_view ChatTemplateName(ChatTemplateKind kind);

// `name_or_template` is either a family name above or the text of a Jinja chat template.
// kInvalidArgument naming the problem when neither matches a supported family (also for
// families llama.cpp knows that we have not written, e.g. Llama 2 / Mistral "[INST]").
Result<ChatTemplateKind> DetectChatTemplate(std::string_view name_or_template);

// Formats `messages` in the family's format; with `add_generation_prompt` appends the header
// that starts the assistant's reply.
std::string FormatChat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                       bool add_generation_prompt);

}  // namespace smartgen::tokenizer
