#include "kv/residency.h"

#include <algorithm>

namespace smartgen::kv {

Residency::Residency(int n_layers, int n_kv_heads, std::int64_t n_blocks)
    : n_layers_(n_layers),
      n_kv_heads_(n_kv_heads),
      n_blocks_(n_blocks),
      states_(new std::atomic<std::uint8_t>[static_cast<std::size_t>(n_layers) * n_kv_heads * n_blocks]),
      layer_present_(new std::atomic<std::int64_t>[static_cast<std::size_t>(n_layers)]),
      first_needed_(static_cast<std::size_t>(n_layers), 0),
      needed_total_(n_blocks * n_layers * n_kv_heads) {
  for (std::int64_t i = 0; i < total_blocks(); ++i) states_[i].store(0, std::memory_order_relaxed);
  for (int l = 0; l < n_layers; ++l) layer_present_[l].store(0, std::memory_order_relaxed);
}

void Residency::RestrictToNeeded(std::span<const std::int64_t> first_needed) {
  needed_total_ = 0;
  for (int l = 0; l < n_layers_; ++l) {
    const std::int64_t f = l < std::ssize(first_needed) ? first_needed[l] : 0;
    first_needed_[l] = std::clamp<std::int64_t>(f, 0, n_blocks_);
    needed_total_ += needed_in_layer(l);
  }
}

bool Residency::MarkRequested(int layer, int head, std::int64_t block) {
  std::uint8_t expected = static_cast<std::uint8_t>(BlockState::kAbsent);
  return At(layer, head, block)
      .compare_exchange_strong(expected, static_cast<std::uint8_t>(BlockState::kRequested),
                               std::memory_order_acq_rel);
}

bool Residency::MarkPresent(int layer, int head, std::int64_t block, BlockState* previous) {
  const std::uint8_t prev = At(layer, head, block).exchange(
      static_cast<std::uint8_t>(BlockState::kPresent), std::memory_order_acq_rel);
  if (previous) *previous = static_cast<BlockState>(prev);
  if (prev == static_cast<std::uint8_t>(BlockState::kPresent)) return false;
  if (!needed(layer, block)) return true;  // kept, never counted
  const bool counted = prev == static_cast<std::uint8_t>(BlockState::kApproximate);
  if (counted) {
    total_approximate_.fetch_sub(1, std::memory_order_acq_rel);
  } else {
    layer_present_[layer].fetch_add(1, std::memory_order_acq_rel);
    total_present_.fetch_add(1, std::memory_order_acq_rel);
  }
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
  return !counted;
}

bool Residency::MarkApproximate(int layer, int head, std::int64_t block, BlockState* previous) {
  std::atomic<std::uint8_t>& s = At(layer, head, block);
  std::uint8_t prev = s.load(std::memory_order_acquire);
  do {
    if (prev == static_cast<std::uint8_t>(BlockState::kPresent) ||
        prev == static_cast<std::uint8_t>(BlockState::kApproximate)) {
      if (previous) *previous = static_cast<BlockState>(prev);
      return false;
    }
  } while (!s.compare_exchange_weak(prev, static_cast<std::uint8_t>(BlockState::kApproximate),
                                    std::memory_order_acq_rel));
  if (previous) *previous = static_cast<BlockState>(prev);
  if (!needed(layer, block)) return true;  // kept, never counted
  layer_present_[layer].fetch_add(1, std::memory_order_acq_rel);
  total_present_.fetch_add(1, std::memory_order_acq_rel);
  total_approximate_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_.notify_all();
  return true;
}

void Residency::MarkAbsent(int layer, int head, std::int64_t block) {
  const std::uint8_t prev = At(layer, head, block).exchange(
      static_cast<std::uint8_t>(BlockState::kAbsent), std::memory_order_acq_rel);
  if ((prev == static_cast<std::uint8_t>(BlockState::kPresent) ||
       prev == static_cast<std::uint8_t>(BlockState::kApproximate)) &&
      needed(layer, block)) {
    layer_present_[layer].fetch_sub(1, std::memory_order_acq_rel);
    total_present_.fetch_sub(1, std::memory_order_acq_rel);
  }
  if (prev == static_cast<std::uint8_t>(BlockState::kApproximate) && needed(layer, block)) {
    total_approximate_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void Residency::MarkAllPresent() {
  for (int l = 0; l < n_layers_; ++l) {
    for (int h = 0; h < n_kv_heads_; ++h) {
      for (std::int64_t b = 0; b < n_blocks_; ++b) MarkPresent(l, h, b);
    }
  }
}

void Residency::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  cv_.notify_all();
}

void Residency::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  cv_.notify_all();
}

}  // namespace smartgen::kv
