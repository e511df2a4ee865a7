#include "tokenizer/regex.h"

#include <algorithm>
#include <memory>
#include <utility>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/utf8.h"

namespace smartgen::tokenizer {
namespace {

std::string PcreErrorMessage(int code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(code, buffer, sizeof(buffer));
  if (n < 0) return "PCRE2 error " + std::to_string(code);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};

}  // namespace

Result<Regex> Regex::Compile(std::string_view pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  const std::uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return InvalidArgument("regex '{}' does not compile at offset {}: {}", pattern, error_offset,
                           PcreErrorMessage(error_code));
  }
  Regex regex;
  regex.code_ = code;
  regex.pattern_ = std::string(pattern);
  // JIT is an optimisation only: without it (unsupported CPU or build) matching still works.
  regex.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return regex;
}

Regex::Regex(Regex&& other) noexcept
    : code_(std::exchange(other.code_, nullptr)),
      jit_(other.jit_),
      pattern_(std::move(other.pattern_)) {}

Regex& Regex::operator=(Regex&& other) noexcept {
  if (this != &other) {
    if (code_ != nullptr) pcre2_code_free(code_);
    code_ = std::exchange(other.code_, nullptr);
    jit_ = other.jit_;
    pattern_ = std::move(other.pattern_);
  }
  return *this;
}

Regex::~Regex() {
  if (code_ != nullptr) pcre2_code_free(code_);
}

Status Regex::FindAll(std::string_view subject, std::vector<ByteSpan>* matches) const {
  if (code_ == nullptr) return FailedPrecondition("regex used after move");
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match_data(
      pcre2_match_data_create_from_pattern(code_, nullptr));
  if (!match_data) return ResourceExhausted("cannot allocate PCRE2 match data");

  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  std::size_t start = 0;
  std::uint32_t match_options = 0;
  while (start < subject.size()) {
    int rc =
        pcre2_match(code_, data, subject.size(), start, match_options, match_data.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && (match_options & PCRE2_NO_JIT) == 0) {
      // The JIT's machine stack is small; the interpreter uses the heap. Retry there.
      match_options |= PCRE2_NO_JIT;
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return ResourceExhausted("regex '{}' failed at offset {}: {}", pattern_, start,
                               PcreErrorMessage(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match_data.get());
    const std::size_t begin = ovector[0];
    const std::size_t end = ovector[1];
    if (end <= begin) {
      if (begin >= subject.size()) break;
      // An empty match: step over one (possibly malformed) character and search again.
      start = begin + std::min(Utf8SequenceLength(static_cast<unsigned char>(subject[begin])),
                               subject.size() - begin);
      continue;
    }
    matches->push_back({begin, end});
    start = end;
  }
  return Status::Ok();
}

}  // namespace smartgen::tokenizer
