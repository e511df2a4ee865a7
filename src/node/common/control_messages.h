// Binary control messages of the SmartGen mode, carried on the KV link (ControlType in
// protocol.h). All little-endian; every decoder checks lengths and returns kDataLoss for a
// short or inconsistent message.
//
//   kSummaries          u64 request_id, then select::LayerSummaries::Serialize() bytes
//   kProactiveManifest  u64 request_id, u32 layer, u32 n, n x (u32 head, u32 block)
//   kRequested          u64 request_id, u32 n, n x (u32 layer, u32 head, u32 block)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "select/block_key.h"

namespace smartgen::node {

std::vector<std::byte> EncodeSummaries(std::uint64_t request_id, std::span<const std::byte> summaries);
// The request id; `summaries` points into `message`.
Result<std::uint64_t> DecodeSummaries(std::span<const std::byte> message,
                                      std::span<const std::byte>* summaries);

std::vector<std::byte> EncodeManifest(std::uint64_t request_id, int layer,
                                      std::span<const select::BlockKey> blocks);
Status DecodeManifest(std::span<const std::byte> message, std::uint64_t* request_id, int* layer,
                      std::vector<select::BlockKey>* blocks);

std::vector<std::byte> EncodeRequested(std::uint64_t request_id,
                                       std::span<const select::BlockKey> blocks);
Status DecodeRequested(std::span<const std::byte> message, std::uint64_t* request_id,
                       std::vector<select::BlockKey>* blocks);

}  // namespace smartgen::node
