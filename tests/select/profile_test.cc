// Profile: JSON round trip, validation against the model, malformed files, bucket choice,
// priors; ProfileBuilder on a synthetic model.
#include "select/profile.h"

#include <gtest/gtest.h>

#include "core/mapped_file.h"
#include "model/forward.h"
#include "select/profile_builder.h"
#include "test_util.h"

namespace smartgen::select {
namespace {

Profile Sample() {
  Profile p;
  p.model_name = "tiny";
  p.fingerprint = 0xfedcba9876543210ull;
  p.n_layers = 2;
  p.n_heads = 4;
  p.n_kv_heads = 2;
  p.head_dim = 16;
  p.block_tokens = 16;
  p.min_prompt_tokens = 257;
  p.max_prompt_tokens = 512;
  p.n_prompts = 3;
  p.decode_steps = 8;
  p.n_position_buckets = 4;
  p.recall_budgets = {1, 4};
  p.dense_layers = {0};
  for (int l = 0; l < 2; ++l) {
    LayerProfile lp;
    lp.oracle_recall = {0.5f, 0.9f};
    lp.quest_recall = {0.4f, 0.8f};
    lp.mean_streaming_score = 0.25f * l;
    for (int h = 0; h < 2; ++h) {
      HeadProfile hp;
      hp.position_freq = {0.1f * h, 0.2f, 0.3f, 0.75f};
      hp.first_freq = {1.0f, 0.5f, 0.25f, 0.125f};
      hp.last_freq = {0.9f, 0.8f, 0.7f, 0.6f};
      hp.streaming_score = 0.25f * l;
      lp.heads.push_back(hp);
    }
    p.layers.push_back(lp);
  }
  return p;
}

void ExpectSame(const Profile& a, const Profile& b) {
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  EXPECT_EQ(a.model_name, b.model_name);
  EXPECT_EQ(a.dense_layers, b.dense_layers);
  EXPECT_EQ(a.recall_budgets, b.recall_budgets);
  EXPECT_EQ(a.max_prompt_tokens, b.max_prompt_tokens);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    EXPECT_EQ(a.layers[l].quest_recall, b.layers[l].quest_recall);
    for (std::size_t h = 0; h < a.layers[l].heads.size(); ++h) {
      EXPECT_EQ(a.layers[l].heads[h].position_freq, b.layers[l].heads[h].position_freq);
      EXPECT_EQ(a.layers[l].heads[h].last_freq, b.layers[l].heads[h].last_freq);
      EXPECT_EQ(a.layers[l].heads[h].streaming_score, b.layers[l].heads[h].streaming_score);
    }
  }
}

TEST(Profile, JsonAndFileRoundTrip) {
  const Profile p = Sample();
  auto back = ProfileFromJson(ProfileToJson(p));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSame(p, *back);
  const std::string path = ::testing::TempDir() + "/select_profile.json";
  ASSERT_TRUE(SaveProfile(p, path).ok());
  auto loaded = LoadProfile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ExpectSame(p, *loaded);
}

TEST(Profile, ValidateNamesTheMismatch) {
  const Profile p = Sample();
  model::ModelConfig c;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  EXPECT_TRUE(p.Validate(c, p.fingerprint, 16).ok());
  Status s = p.Validate(c, 1, 16);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.ToString().find("fingerprint"), std::string::npos) << s.ToString();
  c.n_layers = 3;
  s = p.Validate(c, p.fingerprint, 16);
  EXPECT_NE(s.ToString().find("layers 2"), std::string::npos) << s.ToString();
  c.n_layers = 2;
  s = p.Validate(c, p.fingerprint, 32);
  EXPECT_NE(s.ToString().find("16-token blocks"), std::string::npos) << s.ToString();
}

TEST(Profile, MalformedFilesAreRejectedWithTheReason) {
  auto expect = [](const std::string& text, StatusCode code, const char* needle) {
    auto r = ProfileFromJson(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().ToString();
    EXPECT_NE(r.status().ToString().find(needle), std::string::npos) << r.status().ToString();
  };
  expect("not json", StatusCode::kInvalidArgument, "not a JSON object");
  expect(R"({"format": "other", "version": 1})", StatusCode::kInvalidArgument, "format");
  expect(R"({"format": "smartgen-profile", "version": 7})", StatusCode::kUnimplemented,
         "version 7");
  std::string json = ProfileToJson(Sample());
  std::string broken = json;
  broken.replace(broken.find("\"quest_recall\""), 14, "\"quest_recal_\"");
  expect(broken, StatusCode::kInvalidArgument, "quest_recall");
  const Profile p = Sample();
  Profile bad = p;
  bad.layers[1].heads[0].position_freq.pop_back();
  expect(ProfileToJson(bad), StatusCode::kInvalidArgument, "position_freq");
  bad = p;
  bad.layers.pop_back();
  expect(ProfileToJson(bad), StatusCode::kInvalidArgument, "list 2 layers");
  bad = p;
  bad.dense_layers = {5};
  expect(ProfileToJson(bad), StatusCode::kInvalidArgument, "dense layer 5");
  auto missing = LoadProfile(::testing::TempDir() + "/no_such_profile.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(Profile, PriorUsesEdgeCountersThenPositionBuckets) {
  const Profile p = Sample();
  EXPECT_FLOAT_EQ(p.Prior(0, 0, 0, 100), 1.0f);  // first block
  EXPECT_FLOAT_EQ(p.Prior(0, 0, 2, 100), 0.25f);
  EXPECT_FLOAT_EQ(p.Prior(0, 0, 99, 100), 0.9f);  // last block
  EXPECT_FLOAT_EQ(p.Prior(0, 0, 96, 100), 0.6f);
  EXPECT_FLOAT_EQ(p.Prior(0, 1, 10, 100), 0.1f);   // bucket 0 of head 1
  EXPECT_FLOAT_EQ(p.Prior(0, 0, 80, 100), 0.75f);  // bucket 3
  EXPECT_TRUE(p.IsDense(0));
  EXPECT_FALSE(p.IsDense(1));
}

TEST(Profile, BucketsAndPicking) {
  EXPECT_EQ(PromptLengthBucket(1), (std::pair<std::int64_t, std::int64_t>{1, 256}));
  EXPECT_EQ(PromptLengthBucket(256), (std::pair<std::int64_t, std::int64_t>{1, 256}));
  EXPECT_EQ(PromptLengthBucket(257), (std::pair<std::int64_t, std::int64_t>{257, 512}));
  EXPECT_EQ(PromptLengthBucket(4096), (std::pair<std::int64_t, std::int64_t>{2049, 4096}));
  std::vector<Profile> ps(2, Sample());
  ps[1].min_prompt_tokens = 1025;
  ps[1].max_prompt_tokens = 2048;
  EXPECT_EQ(PickProfile(ps, 300), &ps[0]);
  EXPECT_EQ(PickProfile(ps, 1500), &ps[1]);
  EXPECT_EQ(PickProfile(ps, 900), &ps[1]);  // nearest
  EXPECT_EQ(PickProfile(ps, 100), &ps[0]);
  EXPECT_EQ(PickProfile({}, 100), nullptr);
}

TEST(ProfileBuilder, MeasuresASyntheticModel) {
  auto model = testing::SyntheticModel("small");  // 4 layers
  ASSERT_NE(model, nullptr);
  core::ThreadPool pool(1);
  model::Forward forward(*model, &pool);
  kv::BlockPool blocks(forward.KvGeometryFor(kv::KvDType::kF32, 16), 1 << 12);
  ProfileOptions o;
  o.decode_steps = 4;
  o.n_position_buckets = 4;
  ProfileBuilder b(forward, blocks, o);
  EXPECT_EQ(b.Finish().status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(b.AddPrompt(std::vector<std::int32_t>(20, 5)).code(), StatusCode::kInvalidArgument);
  for (int p = 0; p < 2; ++p) {
    std::vector<std::int32_t> prompt(130 + 40 * p);
    for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = 3 + (i * 31 + p * 7) % 250;
    ASSERT_TRUE(b.AddPrompt(prompt).ok());
  }
  auto prof = b.Finish();
  ASSERT_TRUE(prof.ok()) << prof.status().ToString();
  EXPECT_TRUE(prof->Validate(model->config(), model->fingerprint(), 16).ok());
  EXPECT_EQ(prof->n_prompts, 2);
  EXPECT_EQ(prof->min_prompt_tokens, 1);
  EXPECT_EQ(prof->max_prompt_tokens, 256);
  ASSERT_FALSE(prof->dense_layers.empty());
  EXPECT_EQ(prof->dense_layers[0], 0);       // 4 layers: the first is always dense
  EXPECT_EQ(prof->dense_layers.size(), 1u);  // and at most a quarter of the layers are
  for (const LayerProfile& l : prof->layers) {
    for (std::size_t k = 1; k < l.oracle_recall.size(); ++k) {
      EXPECT_GE(l.oracle_recall[k], l.oracle_recall[k - 1] - 1e-6f);
      EXPECT_GE(l.oracle_recall[k] + 1e-5f, l.quest_recall[k]);  // exact choice covers most
    }
    EXPECT_NEAR(l.oracle_recall.back(), 1.0f, 1e-5f);  // 32 blocks: everything
    for (const HeadProfile& h : l.heads) {
      for (float f : h.position_freq) EXPECT_TRUE(f >= 0 && f <= 1);
      EXPECT_GT(h.streaming_score, 0.0f);
      EXPECT_LE(h.streaming_score, 1.0f + 1e-5f);
    }
  }
  // What it wrote reads back.
  auto again = ProfileFromJson(ProfileToJson(*prof));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

}  // namespace
}  // namespace smartgen::select
