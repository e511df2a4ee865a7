#include "tokenizer/synthetic_vocab.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/vocab.h"

namespace smartgen::tokenizer {
namespace {

constexpr std::int32_t kMaxSyntheticVocab = 1 << 24;

constexpr std::string_view kChatMlTemplate =
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

}  // namespace

Status WriteSyntheticByteVocab(gguf::GgufWriter& writer, std::int32_t n_vocab) {
  if (n_vocab < kSyntheticMinVocab || n_vocab > kMaxSyntheticVocab) {
    return InvalidArgument("synthetic vocabulary: n_vocab {} outside [{}, {}]", n_vocab,
                           kSyntheticMinVocab, kMaxSyntheticVocab);
  }
  std::vector<std::string> tokens;
  std::vector<std::int32_t> types;
  tokens.reserve(static_cast<std::size_t>(n_vocab));
  types.reserve(static_cast<std::size_t>(n_vocab));
  for (int b = 0; b < 256; ++b) {
    tokens.emplace_back(ByteToUnicode(static_cast<std::uint8_t>(b)));
    types.push_back(static_cast<std::int32_t>(TokenType::kNormal));
  }
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    tokens.emplace_back(special);
    types.push_back(static_cast<std::int32_t>(TokenType::kControl));
  }
  for (std::int32_t i = 0; static_cast<std::int32_t>(tokens.size()) < n_vocab; ++i) {
    tokens.push_back(fmt::format("<|pad_{}|>", i));
    types.push_back(static_cast<std::int32_t>(TokenType::kUnused));
  }

  writer.AddString("tokenizer.ggml.model", "gpt2");
  writer.AddString("tokenizer.ggml.pre", "smollm");
  writer.AddStringArray("tokenizer.ggml.tokens", tokens);
  writer.AddInt32Array("tokenizer.ggml.token_type", types);
  writer.AddStringArray("tokenizer.ggml.merges", std::vector<std::string>{});
  writer.AddUint32("tokenizer.ggml.bos_token_id", kSyntheticEndOfText);
  writer.AddUint32("tokenizer.ggml.eos_token_id", kSyntheticImEnd);
  writer.AddUint32("tokenizer.ggml.padding_token_id", kSyntheticEndOfText);
  writer.AddBool("tokenizer.ggml.add_bos_token", false);
  writer.AddBool("tokenizer.ggml.add_eos_token", false);
  writer.AddString("tokenizer.chat_template", kChatMlTemplate);
  return Status::Ok();
}

}  // namespace smartgen::tokenizer
