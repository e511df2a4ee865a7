// A Q5_0 or Q8_0 model read into huge pages on a CPU with AVX-512 VNNI regroups its matrices for
// the VNNI GEMV (kernels/q5_0_groups.h, kernels/q8_0_groups.h) and computes bit for bit what the
// mapped file computes: prefill, decode steps (one sequence: the team step) and a decode batch;
// with a tied output head too, whose regrouped rows the embedding lookup reads.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "kernels/matmul.h"
#include "kernels/q5_0_groups.h"
#include "kernels/q8_0_groups.h"
#include "kv/block_pool.h"
#include "kv/sequence_kv.h"
#include "model/forward.h"
#include "model/model.h"
#include "model/synthetic_model.h"

namespace smartgen::model {
namespace {

// Rows of 192 columns (6 blocks: a group and a part group) and 288 (9: two and a part); an
// untied output, regrouped too, or a tied one.
constexpr ModelPreset kGroupsShape = {"groups", "llama", 2,    192,      3,     1,    64,
                                      288,      384,     4096, 10000.0f, 1e-5f, false};

std::vector<std::int32_t> GroupsPrompt(int n) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = 3 + (i * 53) % 370;
  return t;
}

// Logits of a 37-token prompt, then of 6 decode steps, then of a batch of 3 steps.
std::vector<std::vector<float>> LogitsOf(const Model& model) {
  core::ThreadPool pool(2);
  Forward forward(model, &pool);
  kv::BlockPool blocks(forward.KvGeometryFor(kv::KvDType::kF32, 16), 256);
  std::vector<std::vector<float>> out;
  std::vector<std::unique_ptr<kv::SequenceKv>> seqs;
  for (int s = 0; s < 3; ++s) seqs.push_back(std::make_unique<kv::SequenceKv>(&blocks));
  std::vector<float> logits;
  EXPECT_TRUE(forward.RunOne(seqs[0].get(), GroupsPrompt(37), &logits).ok());
  out.push_back(logits);
  for (int step = 0; step < 6; ++step) {
    const std::int32_t next[1] = {static_cast<std::int32_t>(5 + 41 * step)};
    EXPECT_TRUE(forward.RunOne(seqs[0].get(), next, &logits).ok());
    out.push_back(logits);
  }
  EXPECT_TRUE(forward.RunOne(seqs[1].get(), GroupsPrompt(20), &logits).ok());
  EXPECT_TRUE(forward.RunOne(seqs[2].get(), GroupsPrompt(9), &logits).ok());
  const std::int32_t next[3] = {7, 8, 9};
  std::vector<std::vector<float>> batch_logits(3);
  std::vector<ForwardChunk> batch(3);
  for (std::size_t i = 0; i < 3; ++i) {
    batch[i].kv = seqs[i].get();
    batch[i].tokens = std::span<const std::int32_t>(&next[i], 1);
    batch[i].logits = &batch_logits[i];
  }
  EXPECT_TRUE(forward.Run(batch).ok());
  for (auto& l : batch_logits) out.push_back(std::move(l));
  return out;
}

struct GroupsCase {
  gguf::GgmlType type;
  bool tied;
};

void PrintTo(const GroupsCase& c, std::ostream* os) {
  *os << gguf::GetTypeInfo(c.type).name << (c.tied ? ", tied head" : ", untied head");
}

class GroupedWeightsModel : public ::testing::TestWithParam<GroupsCase> {};

TEST_P(GroupedWeightsModel, RegroupedWeightsGiveTheMappedFilesLogits) {
  const auto [type, tied] = GetParam();
  kernels::SetFastDot(true);
  SyntheticModelSpec spec;
  spec.preset = kGroupsShape;
  spec.preset.tied_output = tied;
  spec.type = type;
  spec.seed = 12;
  spec.out = ::testing::TempDir() + "/grouped_weights_model_test.gguf";
  ASSERT_TRUE(WriteSyntheticModel(spec).ok());
  auto mapped = Model::Load(spec.out, core::FilePlacement::kMapped);
  auto huge = Model::Load(spec.out, core::FilePlacement::kHugePages);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  ASSERT_TRUE(huge.ok()) << huge.status().ToString();
  EXPECT_EQ((*mapped)->grouped_bytes(), 0u) << "a shared mapping is read as in the file";
  EXPECT_EQ((*huge)->fingerprint(), (*mapped)->fingerprint());
  const bool pays =
      type == gguf::GgmlType::kQ5_0 ? kernels::Q5_0GroupsPay() : kernels::Q8_0GroupsPay();
  if (!pays || !core::HugePagesAvailable()) {
    EXPECT_EQ((*huge)->grouped_bytes(), 0u);
    kernels::SetFastDot(false);
    GTEST_SKIP() << "no AVX-512 VNNI or no huge pages here: nothing is regrouped";
  }
  // Every matrix: q, k, v, o, gate, up, down per layer, and the output (token_embd when tied).
  const std::size_t row192 = gguf::RowBytes(type, 192);
  const std::size_t row288 = gguf::RowBytes(type, 288);
  const std::size_t per_layer = (192 + 64 + 64 + 192 + 288 + 288) * row192 + 192 * row288;
  EXPECT_EQ((*huge)->grouped_bytes(), 2 * per_layer + 384 * row192);
  const kernels::WeightLayout want_layout = type == gguf::GgmlType::kQ5_0
                                                ? kernels::WeightLayout::kQ5_0Groups
                                                : kernels::WeightLayout::kQ8_0Groups;
  EXPECT_EQ((*huge)->layer(0).wq.layout, want_layout);
  EXPECT_EQ((*huge)->output().layout, want_layout);
  EXPECT_EQ((*huge)->token_embd().layout, tied ? want_layout : kernels::WeightLayout::kFile);
  const auto want = LogitsOf(**mapped), got = LogitsOf(**huge);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << "logits #" << i;
  kernels::SetFastDot(false);
}

INSTANTIATE_TEST_SUITE_P(Types, GroupedWeightsModel,
                         ::testing::Values(GroupsCase{gguf::GgmlType::kQ5_0, false},
                                           GroupsCase{gguf::GgmlType::kQ8_0, false},
                                           GroupsCase{gguf::GgmlType::kQ8_0, true}),
                         [](const auto& info) {
                           return std::string(gguf::GetTypeInfo(info.param.type).name) +
                                  (info.param.tied ? "_tied" : "_untied");
                         });

}  // namespace
}  // namespace smartgen::model
