#include "tokenizer/chat_template.h"

#include <cctype>

namespace smartgen::tokenizer {
namespace {

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Trims ASCII whitespace at both ends (llama.cpp's trim, via isspace).
std::string_view Trim(std::string_view s) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view ChatTemplateName(ChatTemplateKind kind) {
  switch (kind) {
    case ChatTemplateKind::kChatMl:
      return "chatml";
    case ChatTemplateKind::kLlama3:
      return "llama3";
    case ChatTemplateKind::kPhi3:
      return "phi3";
  }
  return "unknown";
}

Result<ChatTemplateKind> DetectChatTemplate(std::string_view t) {
  if (t == "chatml") return ChatTemplateKind::kChatMl;
  if (t == "llama3") return ChatTemplateKind::kLlama3;
  if (t == "phi3") return ChatTemplateKind::kPhi3;
  if (t.empty()) return InvalidArgument("chat template: empty template");

  // The checks, and their order, follow llama.cpp's llm_chat_detect_template so that a
  // template is recognised as the same family there and here.
  const auto unsupported = [](std::string_view family) -> Status {
    return InvalidArgument(
        "chat template: the model's template looks like '{}', which is not supported "
        "(supported: chatml, llama3, phi3)",
        family);
  };
  if (Contains(t, "<|im_start|>")) {
    if (Contains(t, "<|im_sep|>")) return unsupported("phi4");
    return ChatTemplateKind::kChatMl;
  }
  if (t.substr(0, 7) == "mistral" || Contains(t, "[INST]")) return unsupported("llama2/mistral");
  if (Contains(t, "<|assistant|>") && Contains(t, "<|end|>")) return ChatTemplateKind::kPhi3;
  if (Contains(t, "<|start_header_id|>") && Contains(t, "<|end_header_id|>")) {
    return ChatTemplateKind::kLlama3;
  }
  constexpr std::size_t kShown = 60;
  return InvalidArgument(
      "chat template: unknown template '{}{}' (supported names: chatml, llama3, phi3)",
      t.substr(0, kShown), t.size() > kShown ? "..." : "");
}

std::string FormatChat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                       bool add_generation_prompt) {
  std::string out;
  switch (kind) {
    case ChatTemplateKind::kChatMl:
      for (const ChatMessage& m : messages) {
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    case ChatTemplateKind::kLlama3:
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out += Trim(m.content);
        out += "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case ChatTemplateKind::kPhi3:
      for (const ChatMessage& m : messages) {
        out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      }
      if (add_generation_prompt) out += "<|assistant|>\n";
      break;
  }
  return out;
}

}  // namespace smartgen::tokenizer
