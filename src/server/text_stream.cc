#include "server/text_stream.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace smartgen::server {
namespace {

bool IsContinuation(unsigned char b) {
  return (b & 0xC0) == 0x80;
}

// Bytes at the end of `text` that begin a well-formed but unfinished UTF-8 sequence.
std::size_t IncompleteUtf8Tail(std::string_view text) {
  const std::size_t n = text.size();
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<unsigned char>(text[n - back]);
    if (IsContinuation(b)) continue;
    if (b < 0xC0) return 0;  // ASCII: complete
    const std::size_t need = tokenizer::Utf8SequenceLength(b);
    return need > back ? back : 0;
  }
  return 0;  // only continuation bytes: invalid, nothing to wait for
}

}  // namespace

TextStream::TextStream(std::vector<std::string> stop) : stop_(std::move(stop)) {
  std::erase_if(stop_, [](const std::string& s) { return s.empty(); });
  for (const std::string& s : stop_) max_stop_ = std::max(max_stop_, s.size());
}

bool TextStream::Append(std::string_view piece) {
  if (stopped_) return true;
  const std::size_t old_size = text_.size();
  text_ += piece;
  if (stop_.empty() || piece.empty()) return false;
  // A match must end in the new bytes, so it starts at most max_stop_ - 1 bytes before them.
  const std::size_t from = old_size > max_stop_ - 1 ? old_size - (max_stop_ - 1) : 0;
  std::size_t first = std::string::npos;
  for (const std::string& s : stop_) first = std::min(first, text_.find(s, from));
  if (first == std::string::npos) return false;
  text_.resize(first);  // taken_ <= first: a possible stop prefix is never handed out
  stopped_ = true;
  return true;
}

std::size_t TextStream::HeldBackBytes() const {
  if (stopped_) return 0;  // the text is final
  const std::string_view pending = std::string_view(text_).substr(taken_);
  std::size_t hold = 0;
  {
    // The longest pending suffix that is a proper prefix of some stop sequence.
    for (std::size_t k = std::min(pending.size(), max_stop_ ? max_stop_ - 1 : 0); k > 0; --k) {
      const std::string_view tail = pending.substr(pending.size() - k);
      const bool prefix = std::any_of(stop_.begin(), stop_.end(), [&](const std::string& s) {
        return s.size() > k && std::string_view(s).substr(0, k) == tail;
      });
      if (prefix) {
        hold = k;
        break;
      }
    }
  }
  const std::size_t utf8 = IncompleteUtf8Tail(pending.substr(0, pending.size() - hold));
  return hold + utf8;
}

std::string TextStream::TakeDelta() {
  const std::size_t end = text_.size() - HeldBackBytes();
  if (end <= taken_) return {};
  std::string delta = text_.substr(taken_, end - taken_);
  taken_ = end;
  return delta;
}

std::string TextStream::TakeRest() {
  std::string rest = text_.substr(std::min(taken_, text_.size()));
  taken_ = text_.size();
  return rest;
}

}  // namespace smartgen::server
