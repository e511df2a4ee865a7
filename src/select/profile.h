// Profile: the offline attention statistics of one model for one prompt-length bucket
// (DESIGN.md section 4.1), written by `smartgen profile` (profile_builder.h) and read by the
// proactive and on-demand policies.
//
// Per (layer, KV head), from calibration prompts decoded with exact attention:
//   position_freq[k] - how often a prompt block whose relative position (block / n_blocks)
//                      falls in bucket k was among the exact top-`top_blocks` blocks by
//                      attention mass (mass averaged over the group's query heads), per block
//                      and decode step: an estimate of P(block in top | relative position);
//   first_freq[i], last_freq[i] - the same for the i-th block from the start (sinks) and from
//                      the end (i = 0: the last prompt block; recency), absolute positions;
//   streaming_score  - mean attention mass on the sink blocks, the last `local_blocks` prompt
//                      blocks and the generated tail: near 1 for a streaming head, near 0 for a
//                      retrieval head.
// Per layer: recall-vs-budget (the mean share of exact prompt attention mass covered by the
// sinks + local window + the top-k other blocks, for k in recall_budgets, chosen exactly
// (oracle) or by summary scores (quest)), and whether the layer needs dense KV.
//
// File: JSON, {"format": "smartgen-profile", "version": 1, ...} (profile.cc has the schema).
// One file holds one bucket [min_prompt_tokens, max_prompt_tokens]; PickProfile chooses among
// several. Loading checks the format and version and every array's size; Validate checks the
// profile against a model. Immutable after loading; share freely between threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "model/model_config.h"

namespace smartgen::select {

inline constexpr int kProfileVersion = 1;
inline constexpr int kProfileEdgeBlocks = 4;  // first_freq / last_freq entries

struct HeadProfile {
  std::vector<float> position_freq;  // [n_position_buckets], each in [0, 1]
  std::vector<float> first_freq;     // [kProfileEdgeBlocks]
  std::vector<float> last_freq;      // [kProfileEdgeBlocks]
  float streaming_score = 0;         // [0, 1]
};

struct LayerProfile {
  std::vector<HeadProfile> heads;    // [n_kv_heads]
  std::vector<float> oracle_recall;  // [recall_budgets.size()]
  std::vector<float> quest_recall;   // [recall_budgets.size()]
  float mean_streaming_score = 0;
};

struct Profile {
  int version = kProfileVersion;
  // The model: fingerprint (model::Model::fingerprint) and shape.
  std::string model_name;
  std::uint64_t fingerprint = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_tokens = 0;
  // The prompt-length bucket this profile describes, and how it was measured.
  std::int64_t min_prompt_tokens = 0;
  std::int64_t max_prompt_tokens = 0;
  int n_prompts = 0;
  int decode_steps = 0;    // recorded steps per prompt (replayed prompt tokens + decode)
  int top_blocks = 0;      // position_freq's "top": this many blocks per KV head, or when 0
  float top_fraction = 0;  // this share of the prompt's blocks (at least one)
  int sink_blocks = 1;
  int local_blocks = 2;
  int n_position_buckets = 0;
  std::vector<int> recall_budgets;   // k values of recall-vs-budget (blocks per KV head)
  std::vector<int> dense_layers;     // ascending
  std::vector<LayerProfile> layers;  // [n_layers]

  bool IsDense(int layer) const;
  // Prior importance of block `block` of `n_blocks` in (layer, head): the edge counters for
  // the first/last kProfileEdgeBlocks blocks, else position_freq of its relative position.
  float Prior(int layer, int head, std::int32_t block, std::int32_t n_blocks) const;
  // Whether n prompt tokens fall in this profile's bucket.
  bool Covers(std::int64_t n_prompt_tokens) const {
    return n_prompt_tokens >= min_prompt_tokens && n_prompt_tokens <= max_prompt_tokens;
  }
  // kFailedPrecondition naming the first mismatch (fingerprint, layers, heads, head_dim,
  // block size) when this profile was not made for `config` / `fingerprint` / `block_tokens`.
  Status Validate(const model::ModelConfig& config, std::uint64_t fingerprint,
                  int block_tokens) const;
};

std::string ProfileToJson(const Profile& profile);
// kInvalidArgument for malformed JSON, a wrong format tag or inconsistent array sizes;
// kUnimplemented for another version.
Result<Profile> ProfileFromJson(std::string_view json);
Status SaveProfile(const Profile& profile, const std::string& path);
Result<Profile> LoadProfile(const std::string& path);

// The profile whose bucket covers n prompt tokens; else the one with the nearest bucket;
// nullptr when `profiles` is empty.
const Profile* PickProfile(std::span<const Profile> profiles, std::int64_t n_prompt_tokens);

// The bucket a prompt length falls in: (2^(k-1), 2^k] tokens, at least (0, 256].
// Profiles are built and chosen per bucket.
std::pair<std::int64_t, std::int64_t> PromptLengthBucket(std::int64_t n_prompt_tokens);

// The line a policy logs about where its priors come from: "profile <file/bucket>" or the
// fallback "no profile: sinks + recent + request-specific scores".
inline constexpr const char* kNoProfileNote =
    "no profile: sinks + recent + request-specific scores";

}  // namespace smartgen::select
