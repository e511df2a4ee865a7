#include "select/needed_blocks.h"

namespace smartgen::select {

NeededBlocks NeededBlocks::Every(const kv::BlockGrid& grid) {
  NeededBlocks n;
  n.grid = grid;
  n.first_block.assign(static_cast<std::size_t>(grid.n_layers), 0);
  n.window_layer.assign(static_cast<std::size_t>(grid.n_layers), 0);
  return n;
}

bool NeededBlocks::AnyWindowLayer() const {
  for (std::uint8_t w : window_layer) {
    if (w) return true;
  }
  return false;
}

std::int64_t NeededBlocks::Total() const {
  std::int64_t n = 0;
  for (int l = 0; l < grid.n_layers; ++l) n += InLayer(l);
  return n;
}

std::vector<std::int64_t> NeededBlocks::FirstBlocks() const {
  return {first_block.begin(), first_block.end()};
}

NeededBlocks PromptNeededBlocks(const model::ModelConfig& config, int block_tokens,
                                std::int64_t n_prompt, bool window_aware) {
  const auto n_blocks = static_cast<std::int32_t>((n_prompt + block_tokens - 1) / block_tokens);
  NeededBlocks n = NeededBlocks::Every({config.n_layers, config.n_kv_heads, n_blocks});
  if (!window_aware) return n;
  for (int l = 0; l < config.n_layers; ++l) {
    if (!config.IsSlidingLayer(l)) continue;
    // The first decode position is n_prompt; later windows start later.
    const auto first = static_cast<std::int32_t>(config.LayerKvStart(l, n_prompt) / block_tokens);
    // A window that reaches back to the first block drops nothing: for this prompt the layer is
    // a global one (gemma2's 4096-token window and a shorter prompt), and SmartGen selects in it.
    if (first == 0) continue;
    n.window_layer[l] = 1;
    n.first_block[l] = first;
  }
  return n;
}

}  // namespace smartgen::select
