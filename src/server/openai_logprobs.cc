#include "server/openai_logprobs.h"

#include <fmt/format.h>

#include <string>

#include "tokenizer/utf8.h"

namespace smartgen::server {
namespace {

using nlohmann::json;

// A token's text as a JSON string: the piece itself when it is valid UTF-8, else OpenAI's
// "bytes:\\xNN..." spelling, so that distinct partial characters stay distinct keys.
std::string PieceText(std::string_view piece) {
  if (tokenizer::IsValidUtf8(piece)) return std::string(piece);
  std::string out = "bytes:";
  for (unsigned char ch : piece) out += fmt::format("\\x{:02x}", ch);
  return out;
}

json Bytes(std::string_view piece) {
  json out = json::array();
  for (unsigned char ch : piece) out.push_back(static_cast<int>(ch));
  return out;
}

json ChatTokenJson(std::string_view piece, float logprob) {
  return {{"token", PieceText(piece)}, {"logprob", logprob}, {"bytes", Bytes(piece)}};
}

}  // namespace

json CompletionLogprobsJson(const tokenizer::Tokenizer& tok, std::span<const LogprobEntry> entries,
                            std::int64_t* text_offset) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(),
       offsets = json::array();
  for (const LogprobEntry& e : entries) {
    tokens.push_back(PieceText(tok.TokenToPiece(e.token)));
    token_logprobs.push_back(e.logprobs.logprob);
    json alternatives = json::object();
    for (const auto& [id, lp] : e.logprobs.top) {
      alternatives[PieceText(tok.TokenToPiece(id))] = lp;
    }
    alternatives[PieceText(tok.TokenToPiece(e.token))] = e.logprobs.logprob;
    top.push_back(std::move(alternatives));
    offsets.push_back(*text_offset);
    *text_offset += static_cast<std::int64_t>(tok.TokenToPiece(e.token, /*special=*/false).size());
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

json ChatLogprobsJson(const tokenizer::Tokenizer& tok, std::span<const LogprobEntry> entries) {
  json content = json::array();
  for (const LogprobEntry& e : entries) {
    json item = ChatTokenJson(tok.TokenToPiece(e.token), e.logprobs.logprob);
    json alternatives = json::array();
    for (const auto& [id, lp] : e.logprobs.top) {
      alternatives.push_back(ChatTokenJson(tok.TokenToPiece(id), lp));
    }
    item["top_logprobs"] = std::move(alternatives);
    content.push_back(std::move(item));
  }
  return {{"content", std::move(content)}};
}

}  // namespace smartgen::server
