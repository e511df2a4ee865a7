// NeededBlocks: which prompt blocks a decode that starts after the prompt needs, per layer
// (sliding-window-aware transfer, issue 12).
//
// A sliding-window layer's query at position p attends keys at (p - window, p], and decode
// positions only move forward, so the decode of a prompt of n tokens needs, in such a layer,
// only the blocks that intersect the window of its first position n: blocks
// [LayerKvStart(l, n) / B, n_blocks) (model_config.h). A global layer needs every block.
//
// Window-aware (the default), each sliding layer whose window leaves out at least the prompt's
// first block is a *window layer* (a window that reaches back to block 0 drops nothing, and the
// layer is treated as a global one for that prompt): its needed blocks are
// required - full and layerwise send exactly those, SmartGen pushes them first and never
// selects among them (its selection, first step and speculative order run over the other
// layers) - and its blocks before them are never sent, awaited or attended. Not window-aware
// (the ablation), every layer needs every block, as in a model without sliding layers; the
// attention still masks what is outside a window, so both give the same tokens.
//
// Plain data; thread-safe to read.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "kv/block_key.h"

namespace smartgen::select {

struct NeededBlocks {
  kv::BlockGrid grid;                          // the prompt's blocks
  std::vector<std::int32_t> first_block;   // [n_layers] first needed block of each layer
  std::vector<std::uint8_t> window_layer;  // [n_layers] 1: a window layer (above)

  // Every block of `grid` needed, no window layer.
  static NeededBlocks Every(const kv::BlockGrid& grid);

  bool IsWindowLayer(int layer) const { return window_layer[layer] != 0; }
  bool AnyWindowLayer() const;
  std::int32_t FirstBlock(int layer) const { return first_block[layer]; }
  bool Needed(const kv::BlockKey& k) const { return k.block >= first_block[k.layer]; }
  // Needed blocks of one layer (all heads), and of all layers.
  std::int64_t InLayer(int layer) const {
    return std::int64_t{grid.n_kv_heads} * (grid.n_blocks - first_block[layer]);
  }
  std::int64_t Total() const;
  // first_block widened, for kv::Residency::RestrictToNeeded.
  std::vector<std::int64_t> FirstBlocks() const;
};

// The needs of a prompt of n_prompt tokens (> 0) in blocks of block_tokens under `config`'s
// layers; every block when !window_aware or no layer slides.
NeededBlocks PromptNeededBlocks(const model::ModelConfig& config, int block_tokens,
                                std::int64_t n_prompt, bool window_aware);

}  // namespace smartgen::select
