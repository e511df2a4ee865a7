#include "test_data.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <mutex>

namespace smartgen::tokenizer::testing {

std::string SharedPath(const std::string& rel) {
  return std::string(SMARTGEN_SHARED_DIR) + "/" + rel;
}

const Tokenizer* SharedTokenizer(const std::string& rel) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(rel);
  if (it != cache.end()) return it->second.get();
  auto file = gguf::GgufFile::Open(SharedPath(rel));
  if (!file.ok()) {
    ADD_FAILURE() << rel << ": " << file.status().ToString();
    return nullptr;
  }
  auto tok = Tokenizer::FromGguf(*file);
  if (!tok.ok()) {
    ADD_FAILURE() << rel << ": " << tok.status().ToString();
    return nullptr;
  }
  return cache.emplace(rel, std::move(*tok)).first->second.get();
}

Result<std::unique_ptr<Tokenizer>> TokenizerFromWriter(const gguf::GgufWriter& writer,
                                                       const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + ".gguf";
  SG_RETURN_IF_ERROR(writer.WriteFile(path));
  SG_ASSIGN_OR_RETURN(gguf::GgufFile file, gguf::GgufFile::Open(path));
  return Tokenizer::FromGguf(file);
}

std::string Hex(std::string_view bytes) {
  std::string out;
  for (char c : bytes) out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  return out;
}

}  // namespace smartgen::tokenizer::testing
