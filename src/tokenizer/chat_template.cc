#include "tokenizer/chat_template.h"

#include <cctype>
#include <utility>

namespace smartgen::tokenizer {
namespace {

using Kind = ChatTemplateKind;

constexpr std::pair<std::string_view, Kind> kNames[] = {
    {"chatml", Kind::kChatMl},
    {"llama3", Kind::kLlama3},
    {"phi3", Kind::kPhi3},
    {"phi4", Kind::kPhi4},
    {"llama2", Kind::kLlama2},
    {"llama2-sys", Kind::kLlama2Sys},
    {"llama2-sys-bos", Kind::kLlama2SysBos},
    {"llama2-sys-strip", Kind::kLlama2SysStrip},
    {"mistral-v1", Kind::kMistralV1},
    {"mistral-v3", Kind::kMistralV3},
    {"mistral-v3-tekken", Kind::kMistralV3Tekken},
    {"mistral-v7", Kind::kMistralV7},
    {"gemma", Kind::kGemma},
    {"deepseek", Kind::kDeepSeek},
    {"deepseek2", Kind::kDeepSeek2},
    {"deepseek3", Kind::kDeepSeek3},
    {"zephyr", Kind::kZephyr},
    {"plain", Kind::kPlain},
};

// DeepSeek's full-width markers (U+FF5C, U+2581).
constexpr std::string_view kDsUser = "<\uff5cUser\uff5c>";
constexpr std::string_view kDsAssistant = "<\uff5cAssistant\uff5c>";
constexpr std::string_view kDsEos = "<\uff5cend\u2581of\u2581sentence\uff5c>";

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

void FormatLlama2(Kind kind, std::span<const ChatMessage> messages, std::string& out) {
  const bool system_supported = kind != Kind::kLlama2;
  const bool bos_inside = kind == Kind::kLlama2SysBos;
  const bool strip = kind == Kind::kLlama2SysStrip;
  bool inside_turn = true;  // the first [INST] follows the BOS the tokenizer adds
  out += "[INST] ";
  for (const ChatMessage& m : messages) {
    const std::string_view content = strip ? Trim(m.content) : std::string_view(m.content);
    if (!inside_turn) {
      inside_turn = true;
      out += bos_inside ? "<s>[INST] " : "[INST] ";
    }
    if (m.role == "system") {
      if (system_supported) {
        out += "<<SYS>>\n";
        out += content;
        out += "\n<</SYS>>\n\n";
      } else {
        out += content;  // no <<SYS>>: the system text starts the first user turn
        out += "\n";
      }
    } else if (m.role == "user") {
      out += content;
      out += " [/INST]";
    } else {
      out += content;
      out += "</s>";
      inside_turn = false;
    }
  }
}

void FormatMistral(Kind kind, std::span<const ChatMessage> messages, std::string& out) {
  if (kind == Kind::kMistralV7) {
    for (const ChatMessage& m : messages) {
      if (m.role == "system") {
        out += "[SYSTEM_PROMPT] " + m.content + "[/SYSTEM_PROMPT]";
      } else if (m.role == "user") {
        out += "[INST] " + m.content + "[/INST]";
      } else {
        out += " " + m.content + "</s>";
      }
    }
    return;
  }
  const std::string leading = kind == Kind::kMistralV1 ? " " : "";
  const std::string trailing = kind == Kind::kMistralV3Tekken ? "" : " ";
  const bool trim_assistant = kind == Kind::kMistralV3;
  bool inside_turn = false;
  for (const ChatMessage& m : messages) {
    if (!inside_turn) {
      out += leading + "[INST]" + trailing;
      inside_turn = true;
    }
    if (m.role == "system") {
      out += m.content + "\n\n";
    } else if (m.role == "user") {
      out += m.content + leading + "[/INST]";
    } else {
      out += trailing;
      out += trim_assistant ? Trim(m.content) : std::string_view(m.content);
      out += "</s>";
      inside_turn = false;
    }
  }
}

void FormatGemma(std::span<const ChatMessage> messages, bool add_generation_prompt,
                 std::string& out) {
  std::string system;  // Gemma has no system turn: it is prepended to the next user turn
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      system += Trim(m.content);
      continue;
    }
    const std::string role = m.role == "assistant" ? "model" : m.role;
    out += "<start_of_turn>" + role + "\n";
    if (!system.empty() && role != "model") {
      out += system + "\n\n";
      system.clear();
    }
    out += Trim(m.content);
    out += "<end_of_turn>\n";
  }
  if (add_generation_prompt) out += "<start_of_turn>model\n";
}

void FormatDeepSeek(Kind kind, std::span<const ChatMessage> messages, bool add_generation_prompt,
                    std::string& out) {
  for (const ChatMessage& m : messages) {
    const bool system = m.role == "system", user = m.role == "user";
    switch (kind) {
      case Kind::kDeepSeek:
        if (system) out += m.content;
        else if (user) out += "### Instruction:\n" + m.content + "\n";
        else out += "### Response:\n" + m.content + "\n<|EOT|>\n";
        break;
      case Kind::kDeepSeek2:
        if (system) out += m.content + "\n\n";
        else if (user) out += "User: " + m.content + "\n\n";
        else out += "Assistant: " + m.content + std::string(kDsEos);
        break;
      default:  // kDeepSeek3
        if (system) out += m.content + "\n\n";
        else if (user) out += std::string(kDsUser) + m.content;
        else out += std::string(kDsAssistant) + m.content + std::string(kDsEos);
        break;
    }
  }
  if (!add_generation_prompt) return;
  out += kind == Kind::kDeepSeek    ? "### Response:\n"
         : kind == Kind::kDeepSeek2 ? "Assistant:"
                                    : std::string(kDsAssistant);
}

// The [INST] families, told apart as llm_chat_detect_template does.
Kind DetectInst(std::string_view t) {
  if (Contains(t, "[SYSTEM_PROMPT]")) return Kind::kMistralV7;
  if (Contains(t, "content.strip()")) return Kind::kLlama2SysStrip;
  if (Contains(t, "bos_token + '[INST]")) return Kind::kLlama2SysBos;
  if (Contains(t, "<<SYS>>")) return Kind::kLlama2Sys;
  return Kind::kLlama2;
}

}  // namespace

std::string_view ChatTemplateName(ChatTemplateKind kind) {
  for (const auto& [name, k] : kNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

std::string ChatTemplateNames() {
  std::string out;
  for (const auto& [name, k] : kNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

Result<ChatTemplateKind> DetectChatTemplate(std::string_view t) {
  for (const auto& [name, k] : kNames) {
    if (t == name) return k;
  }
  if (t.empty()) return InvalidArgument("chat template: empty template");
  // The checks, and their order, follow llama.cpp's llm_chat_detect_template so that a
  // template is recognised as the same family there and here.
  if (Contains(t, "<|im_start|>")) {
    return Contains(t, "<|im_sep|>") ? Kind::kPhi4 : Kind::kChatMl;
  }
  if (t.substr(0, 7) == "mistral" || Contains(t, "[INST]")) return DetectInst(t);
  if (Contains(t, "<|assistant|>") && Contains(t, "<|end|>")) return Kind::kPhi3;
  // Zephyr ends each turn with the EOS token, written out or as eos_token (llama.cpp checks
  // for the written-out form only, after Falcon 3 / GLM-Edge, which are not supported here).
  if (Contains(t, "<|user|>") && (Contains(t, "<|endoftext|>") || Contains(t, "eos_token"))) {
    return Kind::kZephyr;
  }
  if (Contains(t, "<start_of_turn>")) return Kind::kGemma;
  if (Contains(t, "### Instruction:") && Contains(t, "<|EOT|>")) return Kind::kDeepSeek;
  if (Contains(t, "<|start_header_id|>") && Contains(t, "<|end_header_id|>")) return Kind::kLlama3;
  if (Contains(t, "'Assistant: ' + message['content'] + eos_token")) return Kind::kDeepSeek2;
  if (Contains(t, kDsAssistant) && Contains(t, kDsUser) && Contains(t, kDsEos)) {
    return Kind::kDeepSeek3;
  }
  constexpr std::size_t kShown = 60;
  return InvalidArgument("chat template: unknown template '{}{}' (supported names: {})",
                         t.substr(0, kShown), t.size() > kShown ? "..." : "",
                         ChatTemplateNames());
}

Result<ChatTemplateKind> ResolveChatTemplate(std::string_view override_name_or_text,
                                             std::string_view model_template, bool* fell_back) {
  if (fell_back != nullptr) *fell_back = false;
  if (!override_name_or_text.empty()) return DetectChatTemplate(override_name_or_text);
  if (!model_template.empty()) return DetectChatTemplate(model_template);
  if (fell_back != nullptr) *fell_back = true;
  return ChatTemplateKind::kPlain;
}

std::string FormatChat(ChatTemplateKind kind, std::span<const ChatMessage> messages,
                       bool add_generation_prompt) {
  std::string out;
  switch (kind) {
    case Kind::kChatMl:
      for (const ChatMessage& m : messages) {
        out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    case Kind::kLlama3:
      for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out += Trim(m.content);
        out += "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    case Kind::kPhi3:
      for (const ChatMessage& m : messages) {
        out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      }
      if (add_generation_prompt) out += "<|assistant|>\n";
      break;
    case Kind::kPhi4:
      for (const ChatMessage& m : messages) {
        out += "<|im_start|>" + m.role + "<|im_sep|>" + m.content + "<|im_end|>";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant<|im_sep|>";
      break;
    case Kind::kLlama2:
    case Kind::kLlama2Sys:
    case Kind::kLlama2SysBos:
    case Kind::kLlama2SysStrip:
      FormatLlama2(kind, messages, out);  // the [/INST] ends the prompt either way
      break;
    case Kind::kMistralV1:
    case Kind::kMistralV3:
    case Kind::kMistralV3Tekken:
    case Kind::kMistralV7:
      FormatMistral(kind, messages, out);
      break;
    case Kind::kGemma:
      FormatGemma(messages, add_generation_prompt, out);
      break;
    case Kind::kDeepSeek:
    case Kind::kDeepSeek2:
    case Kind::kDeepSeek3:
      FormatDeepSeek(kind, messages, add_generation_prompt, out);
      break;
    case Kind::kZephyr:
      for (const ChatMessage& m : messages) {
        out += "<|" + m.role + "|>\n" + m.content + "<|endoftext|>\n";
      }
      if (add_generation_prompt) out += "<|assistant|>\n";
      break;
    case Kind::kPlain:
      for (const ChatMessage& m : messages) out += m.content + "\n";
      break;
  }
  return out;
}

}  // namespace smartgen::tokenizer
