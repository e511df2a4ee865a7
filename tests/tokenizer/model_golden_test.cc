// The tokenizer side of the model goldens in ../shared/golden (README.md there): prompt ids
// (llama_tokenize with add_special = the vocabulary's add_bos, parse_special = false), the
// token pieces, and the greedy continuation's text (llama_detokenize(remove_special = false,
// unparse_special = false), compared byte for byte through `text_hex`).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_data.h"

namespace smartgen::tokenizer {
namespace {

using testing::Hex;
using testing::SharedPath;
using testing::SharedTokenizer;

struct GoldenCase {
  std::string json;  // relative to the shared dir
  std::string gguf;
};

// Parses a golden JSON; nlohmann::json throws, so this converts to a test failure.
bool LoadJson(const std::string& rel, nlohmann::json* out) {
  std::ifstream in(SharedPath(rel));
  if (!in) {
    ADD_FAILURE() << "cannot open " << rel;
    return false;
  }
  try {
    *out = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    ADD_FAILURE() << rel << ": " << e.what();
    return false;
  }
  return true;
}

void PrintTo(const GoldenCase& c, std::ostream* os) {
  *os << c.json;
}

class ModelGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ModelGoldenTest, PromptTokensPiecesAndGreedyText) {
  const GoldenCase& c = GetParam();
  nlohmann::json golden;
  ASSERT_TRUE(LoadJson(c.json, &golden));
  const Tokenizer* tok = SharedTokenizer(c.gguf);
  ASSERT_NE(tok, nullptr);
  // tiny-qwen3's goldens come from a float64 reference, not llama.cpp (its README says so);
  // its prompt ids are llama.cpp's, its greedy text/pieces are not.
  const bool from_llama_cpp = !golden.contains("NOT_FROM_LLAMA_CPP");

  try {
    const auto& model = golden.at("model");
    EXPECT_EQ(tok->n_vocab(), model.at("n_vocab").get<int>());
    EXPECT_EQ(tok->add_bos(), model.at("add_bos").get<bool>());
    EXPECT_EQ(tok->bos_id(), model.at("bos_id").get<int>());
    EXPECT_EQ(tok->eos_id(), model.at("eos_id").get<int>());
    EXPECT_EQ(tok->type() == VocabType::kSpm ? 1 : 2, model.at("vocab_type").get<int>());

    for (const auto& prompt : golden.at("prompts")) {
      const std::string text = prompt.at("prompt").get<std::string>();
      const auto expected = prompt.at("tokens").get<std::vector<TokenId>>();
      const std::vector<TokenId> ids = tok->Encode(text, tok->add_bos(), false);
      EXPECT_EQ(ids, expected) << c.json << " prompt '" << text.substr(0, 40) << "'";

      if (prompt.contains("token_pieces")) {
        const auto pieces = prompt.at("token_pieces").get<std::vector<std::string>>();
        ASSERT_EQ(pieces.size(), expected.size());
        for (std::size_t i = 0; i < pieces.size(); ++i) {
          EXPECT_EQ(tok->TokenToPiece(expected[i]), pieces[i]) << c.json << " token " << i;
        }
      }
      if (!from_llama_cpp) continue;  // its greedy text was not made by llama_detokenize
      const auto& greedy = prompt.at("greedy");
      const auto generated = greedy.at("tokens").get<std::vector<TokenId>>();
      EXPECT_EQ(Hex(tok->Decode(generated)), greedy.at("text_hex").get<std::string>())
          << c.json << " greedy text of '" << text.substr(0, 40) << "'";
      const auto pieces = greedy.at("pieces").get<std::vector<std::string>>();
      for (std::size_t i = 0; i < pieces.size() && i < generated.size(); ++i) {
        // Pieces of partial UTF-8 characters were stored with U+FFFD; compare the valid ones.
        if (pieces[i].find("\xEF\xBF\xBD") != std::string::npos) continue;
        EXPECT_EQ(tok->TokenToPiece(generated[i]), pieces[i]) << c.json << " greedy " << i;
      }
    }
  } catch (const std::exception& e) {
    FAIL() << c.json << ": malformed golden JSON: " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, ModelGoldenTest,
    ::testing::Values(
        GoldenCase{"golden/stories260K.json", "models/stories260K.gguf"},
        GoldenCase{"golden/tiny-llama-spm.json", "golden/tiny-llama-spm.gguf"},
        GoldenCase{"golden/tiny-llama-bpe.json", "golden/tiny-llama-bpe.gguf"},
        GoldenCase{"golden/tiny-qwen2.json", "golden/tiny-qwen2.gguf"},
        GoldenCase{"golden/tiny-qwen3.json", "golden/tiny-qwen3.gguf"},
        GoldenCase{"golden/quant/tiny-llama-q-f32.json", "golden/quant/tiny-llama-q-f32.gguf"},
        GoldenCase{"golden/quant/tiny-llama-q-f16.json", "golden/quant/tiny-llama-q-f16.gguf"},
        GoldenCase{"golden/quant/tiny-llama-q-bf16.json", "golden/quant/tiny-llama-q-bf16.gguf"},
        GoldenCase{"golden/quant/tiny-llama-q-q8_0.json", "golden/quant/tiny-llama-q-q8_0.gguf"}),
    [](const auto& info) {
      std::string name = info.param.json.substr(info.param.json.rfind('/') + 1);
      name = name.substr(0, name.size() - 5);
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace smartgen::tokenizer
