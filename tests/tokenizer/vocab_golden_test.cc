// The tokenizer golden files of ../shared/vocab (see FORMAT.md there): every string of each
// .inp must tokenize (add_special = false, parse_special = false) to the ids on its line of
// .out, as llama.cpp's test-tokenizer-0 checks.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "test_data.h"

namespace smartgen::tokenizer {
namespace {

using testing::SharedPath;
using testing::SharedTokenizer;

constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";

std::vector<std::string> SplitInputs(const std::string& data) {
  std::vector<std::string> inputs;
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = data.find(kSeparator, pos);
    if (hit == std::string::npos) break;
    inputs.push_back(data.substr(pos, hit - pos));
    pos = hit + kSeparator.size();
  }
  return inputs;
}

std::vector<std::vector<TokenId>> ParseOutputs(const std::string& data) {
  std::vector<std::vector<TokenId>> outputs;
  std::size_t pos = 0;
  while (pos < data.size()) {
    std::size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    std::vector<TokenId> ids;
    const std::string line = data.substr(pos, end - pos);
    std::size_t i = 0;
    while (i < line.size()) {
      if (line[i] == ' ') {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      ids.push_back(std::stoi(line.substr(i, j - i)));
      i = j;
    }
    outputs.push_back(std::move(ids));
    pos = end + 1;
  }
  return outputs;
}

std::string Show(const std::vector<TokenId>& ids) {
  return fmt::format("[{}]", fmt::join(ids, " "));
}

class VocabGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabGoldenTest, MatchesEveryCase) {
  const std::string name = GetParam();
  const Tokenizer* tok = SharedTokenizer("vocab/" + name + ".gguf");
  ASSERT_NE(tok, nullptr);
  auto inp = core::ReadFileToString(SharedPath("vocab/" + name + ".gguf.inp"));
  auto out = core::ReadFileToString(SharedPath("vocab/" + name + ".gguf.out"));
  ASSERT_TRUE(inp.ok()) << inp.status().ToString();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<std::string> inputs = SplitInputs(*inp);
  const std::vector<std::vector<TokenId>> expected = ParseOutputs(*out);
  ASSERT_EQ(inputs.size(), 46u);
  ASSERT_EQ(expected.size(), inputs.size());

  int passed = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<TokenId> ids = tok->Encode(inputs[i], false, false);
    if (ids == expected[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << name << " case " << i << " '" << inputs[i] << "'\n  expected "
                    << Show(expected[i]) << "\n  got      " << Show(ids);
    }
    // The pieces always give back the input bytes.
    std::string pieces;
    for (TokenId id : ids) pieces += tok->TokenToPiece(id);
    if (tok->type() == VocabType::kSpm) {
      // The dummy prefix adds one space (not to the empty string, which has no fragment).
      EXPECT_EQ(pieces, inputs[i].empty() ? "" : " " + inputs[i]) << name << " case " << i;
      EXPECT_EQ(tok->Decode(ids), inputs[i]) << name << " case " << i;
    } else {
      EXPECT_EQ(pieces, inputs[i]) << name << " case " << i;
    }
  }
  std::printf("%s: %d/%zu cases match\n", name.c_str(), passed, inputs.size());
  EXPECT_EQ(passed, static_cast<int>(inputs.size()));
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, VocabGoldenTest,
                         ::testing::Values("ggml-vocab-llama-spm", "ggml-vocab-phi-3",
                                           "ggml-vocab-gpt-2", "ggml-vocab-starcoder"),
                         [](const auto& info) {
                           std::string name = info.param.substr(11);
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace smartgen::tokenizer
