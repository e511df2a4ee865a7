// Helpers shared by the tokenizer tests: paths into ../shared, cached tokenizers of the shared
// GGUF files, and tokenizers built from GgufWriter metadata.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "gguf/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace smartgen::tokenizer::testing {

// SMARTGEN_SHARED_DIR + "/" + rel.
std::string SharedPath(const std::string& rel);

// The tokenizer of the GGUF at SharedPath(rel), loaded once per process. Fails the current
// test (and returns nullptr) when it does not load.
const Tokenizer* SharedTokenizer(const std::string& rel);

// Writes `writer` to a temporary file named `name` and loads its tokenizer.
Result<std::unique_ptr<Tokenizer>> TokenizerFromWriter(const gguf::GgufWriter& writer,
                                                       const std::string& name);

// "68 65 6c" style lowercase hex without separators ("68656c").
std::string Hex(std::string_view bytes);

}  // namespace smartgen::tokenizer::testing
