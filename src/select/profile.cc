#include "select/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/mapped_file.h"

namespace smartgen::select {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "smartgen-profile";

// Reads an array of floats of exactly `n` entries.
Status ReadFloats(const json& j, const char* what, std::size_t n, std::vector<float>* out) {
  if (!j.is_array() || j.size() != n) {
    return InvalidArgument("profile: '{}' must be an array of {} numbers", what, n);
  }
  out->clear();
  for (const json& v : j) {
    if (!v.is_number()) return InvalidArgument("profile: '{}' holds a non-number", what);
    out->push_back(v.get<float>());
  }
  return Status::Ok();
}

}  // namespace

bool Profile::IsDense(int layer) const {
  return std::binary_search(dense_layers.begin(), dense_layers.end(), layer);
}

float Profile::Prior(int layer, int head, std::int32_t block, std::int32_t n_blocks) const {
  const HeadProfile& h = layers[layer].heads[head];
  if (block < kProfileEdgeBlocks) return h.first_freq[block];
  const std::int32_t from_end = n_blocks - 1 - block;
  if (from_end < kProfileEdgeBlocks) return h.last_freq[from_end];
  const int k = static_cast<int>(std::int64_t{block} * n_position_buckets / n_blocks);
  return h.position_freq[std::clamp(k, 0, n_position_buckets - 1)];
}

Status Profile::Validate(const model::ModelConfig& config, std::uint64_t model_fingerprint,
                         int kv_block_tokens) const {
  if (fingerprint != model_fingerprint) {
    return FailedPrecondition(
        "profile was made for model '{}' (fingerprint {:016x}), not this one ({:016x}); run "
        "`smartgen profile` for this model",
        model_name, fingerprint, model_fingerprint);
  }
  if (n_layers != config.n_layers || n_heads != config.n_heads || n_kv_heads != config.n_kv_heads ||
      head_dim != config.head_dim) {
    return FailedPrecondition(
        "profile shape (layers {}, heads {}, kv heads {}, head_dim {}) does not match the model "
        "(layers {}, heads {}, kv heads {}, head_dim {})",
        n_layers, n_heads, n_kv_heads, head_dim, config.n_layers, config.n_heads, config.n_kv_heads,
        config.head_dim);
  }
  if (block_tokens != kv_block_tokens) {
    return FailedPrecondition("profile was measured with {}-token blocks, the KV cache uses {}",
                              block_tokens, kv_block_tokens);
  }
  return Status::Ok();
}

std::string ProfileToJson(const Profile& p) {
  json j;
  j["format"] = kFormat;
  j["version"] = p.version;
  j["model"] = {
      {"name", p.model_name},       {"fingerprint", fmt::format("{:016x}", p.fingerprint)},
      {"n_layers", p.n_layers},     {"n_heads", p.n_heads},
      {"n_kv_heads", p.n_kv_heads}, {"head_dim", p.head_dim}};
  j["block_tokens"] = p.block_tokens;
  j["bucket"] = {{"min_prompt_tokens", p.min_prompt_tokens},
                 {"max_prompt_tokens", p.max_prompt_tokens}};
  j["calibration"] = {{"n_prompts", p.n_prompts},
                      {"decode_steps", p.decode_steps},
                      {"top_blocks", p.top_blocks},
                      {"top_fraction", p.top_fraction},
                      {"sink_blocks", p.sink_blocks},
                      {"local_blocks", p.local_blocks},
                      {"n_position_buckets", p.n_position_buckets}};
  j["recall_budgets"] = p.recall_budgets;
  j["dense_layers"] = p.dense_layers;
  json layers = json::array();
  for (std::size_t l = 0; l < p.layers.size(); ++l) {
    const LayerProfile& lp = p.layers[l];
    json heads = json::array();
    for (const HeadProfile& h : lp.heads) {
      heads.push_back({{"position_freq", h.position_freq},
                       {"first_freq", h.first_freq},
                       {"last_freq", h.last_freq},
                       {"streaming_score", h.streaming_score}});
    }
    layers.push_back({{"layer", l},
                      {"oracle_recall", lp.oracle_recall},
                      {"quest_recall", lp.quest_recall},
                      {"mean_streaming_score", lp.mean_streaming_score},
                      {"heads", heads}});
  }
  j["layers"] = layers;
  return j.dump(1);
}

Result<Profile> ProfileFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("profile: not a JSON object");
  if (j.value("format", std::string()) != kFormat) {
    return InvalidArgument("profile: 'format' is not \"{}\"", kFormat);
  }
  if (!j.contains("version") || !j["version"].is_number_integer()) {
    return InvalidArgument("profile: no integer 'version'");
  }
  Profile p;
  p.version = j["version"].get<int>();
  if (p.version != kProfileVersion) {
    return Unimplemented(
        "profile version {} (this build reads version {}); re-run `smartgen "
        "profile`",
        p.version, kProfileVersion);
  }
  try {
    const json& m = j.at("model");
    p.model_name = m.at("name").get<std::string>();
    const std::string fp = m.at("fingerprint").get<std::string>();
    char* end = nullptr;
    p.fingerprint = std::strtoull(fp.c_str(), &end, 16);
    if (fp.empty() || *end != '\0') return InvalidArgument("profile: bad fingerprint '{}'", fp);
    p.n_layers = m.at("n_layers").get<int>();
    p.n_heads = m.at("n_heads").get<int>();
    p.n_kv_heads = m.at("n_kv_heads").get<int>();
    p.head_dim = m.at("head_dim").get<int>();
    p.block_tokens = j.at("block_tokens").get<int>();
    p.min_prompt_tokens = j.at("bucket").at("min_prompt_tokens").get<std::int64_t>();
    p.max_prompt_tokens = j.at("bucket").at("max_prompt_tokens").get<std::int64_t>();
    const json& c = j.at("calibration");
    p.n_prompts = c.at("n_prompts").get<int>();
    p.decode_steps = c.at("decode_steps").get<int>();
    p.top_blocks = c.at("top_blocks").get<int>();
    p.top_fraction = c.at("top_fraction").get<float>();
    p.sink_blocks = c.at("sink_blocks").get<int>();
    p.local_blocks = c.at("local_blocks").get<int>();
    p.n_position_buckets = c.at("n_position_buckets").get<int>();
    p.recall_budgets = j.at("recall_budgets").get<std::vector<int>>();
    p.dense_layers = j.at("dense_layers").get<std::vector<int>>();
    if (p.n_layers <= 0 || p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0 || p.head_dim <= 0 ||
        p.block_tokens <= 0 || p.n_position_buckets <= 0 || p.n_position_buckets > 4096 ||
        p.min_prompt_tokens > p.max_prompt_tokens) {
      return InvalidArgument("profile: inconsistent shape or bucket");
    }
    std::sort(p.dense_layers.begin(), p.dense_layers.end());
    for (int l : p.dense_layers) {
      if (l < 0 || l >= p.n_layers)
        return InvalidArgument("profile: dense layer {} out of range", l);
    }
    const json& layers = j.at("layers");
    if (!layers.is_array() || static_cast<int>(layers.size()) != p.n_layers) {
      return InvalidArgument("profile: 'layers' must list {} layers", p.n_layers);
    }
    const std::size_t nb = p.recall_budgets.size();
    for (const json& lj : layers) {
      LayerProfile lp;
      SG_RETURN_IF_ERROR(
          ReadFloats(lj.at("oracle_recall"), "oracle_recall", nb, &lp.oracle_recall));
      SG_RETURN_IF_ERROR(ReadFloats(lj.at("quest_recall"), "quest_recall", nb, &lp.quest_recall));
      lp.mean_streaming_score = lj.at("mean_streaming_score").get<float>();
      const json& heads = lj.at("heads");
      if (!heads.is_array() || static_cast<int>(heads.size()) != p.n_kv_heads) {
        return InvalidArgument("profile: each layer must list {} KV heads", p.n_kv_heads);
      }
      for (const json& hj : heads) {
        HeadProfile h;
        SG_RETURN_IF_ERROR(ReadFloats(hj.at("position_freq"), "position_freq",
                                      static_cast<std::size_t>(p.n_position_buckets),
                                      &h.position_freq));
        SG_RETURN_IF_ERROR(
            ReadFloats(hj.at("first_freq"), "first_freq", kProfileEdgeBlocks, &h.first_freq));
        SG_RETURN_IF_ERROR(
            ReadFloats(hj.at("last_freq"), "last_freq", kProfileEdgeBlocks, &h.last_freq));
        h.streaming_score = hj.at("streaming_score").get<float>();
        lp.heads.push_back(std::move(h));
      }
      p.layers.push_back(std::move(lp));
    }
  } catch (const json::exception& e) {
    return InvalidArgument("profile: {}", e.what());
  }
  return p;
}

Status SaveProfile(const Profile& profile, const std::string& path) {
  return core::WriteStringToFile(path, ProfileToJson(profile) + "\n");
}

Result<Profile> LoadProfile(const std::string& path) {
  SG_ASSIGN_OR_RETURN(const std::string text, core::ReadFileToString(path));
  Result<Profile> p = ProfileFromJson(text);
  if (!p.ok()) return p.status().WithContext(path);
  return p;
}

const Profile* PickProfile(std::span<const Profile> profiles, std::int64_t n) {
  const Profile* best = nullptr;
  std::int64_t best_gap = 0;
  for (const Profile& p : profiles) {
    const std::int64_t gap = p.Covers(n)               ? 0
                             : n < p.min_prompt_tokens ? p.min_prompt_tokens - n
                                                       : n - p.max_prompt_tokens;
    if (best == nullptr || gap < best_gap) {
      best = &p;
      best_gap = gap;
    }
  }
  return best;
}

std::pair<std::int64_t, std::int64_t> PromptLengthBucket(std::int64_t n) {
  std::int64_t hi = 256;
  while (hi < n) hi *= 2;
  return {hi == 256 ? 1 : hi / 2 + 1, hi};
}

}  // namespace smartgen::select
