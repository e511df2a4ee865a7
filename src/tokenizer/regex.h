// Regex: a compiled PCRE2 pattern (move-only RAII owner of the pcre2_code).
//
// Patterns compile in UTF + UCP mode, so \p{L}, \p{N}, \s and friends use Unicode properties,
// with PCRE2_MATCH_INVALID_UTF: subjects holding malformed UTF-8 are still searched and the
// malformed bytes simply never match. JIT-compiled when the library supports it.
//
// Thread-safety: a Regex is immutable after Compile(); FindAll() may run concurrently from
// any number of threads (each call owns its match data).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

struct pcre2_real_code_8;  // pcre2.h's pcre2_code for 8-bit code units

namespace smartgen::tokenizer {

// A half-open byte range [begin, end) of a subject.
struct ByteSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
};

class Regex {
 public:
  // kInvalidArgument with PCRE2's message and offset when `pattern` does not compile.
  static Result<Regex> Compile(std::string_view pattern);

  Regex(Regex&& other) noexcept;
  Regex& operator=(Regex&& other) noexcept;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();

  // Appends to `matches` the successive leftmost, non-overlapping, non-empty matches in
  // `subject`. Lookarounds see only `subject`, never bytes around it. On a PCRE2 matching
  // error (e.g. a resource limit) returns kResourceExhausted; matches found before it stay.
  Status FindAll(std::string_view subject, std::vector<ByteSpan>* matches) const;

  const std::string& pattern() const { return pattern_; }
  bool jit() const { return jit_; }

 private:
  Regex() = default;

  pcre2_real_code_8* code_ = nullptr;
  bool jit_ = false;
  std::string pattern_;
};

}  // namespace smartgen::tokenizer
