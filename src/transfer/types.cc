#include "transfer/types.h"

#include <fmt/format.h>

#include "transfer/block_io.h"

namespace smartgen::transfer {

std::string ToString(const BlockKey& k) {
  return fmt::format("req {} layer {} head {} block {}", k.request_id, k.layer, k.kv_head, k.block);
}

std::string ToString(const BlockRange& r) {
  return fmt::format("req {} layer {} head {} blocks [{}, {})", r.request_id, r.layer, r.kv_head,
                     r.first_block, r.end_block());
}

std::vector<BlockRange> RangesOf(std::uint64_t request_id, std::span<const kv::BlockKey> keys) {
  std::vector<BlockRange> ranges;
  for (const kv::BlockRange& run : kv::ToRuns(keys)) ranges.emplace_back(request_id, run);
  return ranges;
}

std::size_t DTypeSize(KvDType dtype) {
  switch (dtype) {
    case KvDType::kF32: return 4;
    case KvDType::kF16: return 2;
    case KvDType::kBF16: return 2;
    case KvDType::kI8: return 1;
  }
  return 0;
}

std::string_view DTypeName(KvDType dtype) {
  switch (dtype) {
    case KvDType::kF32: return "f32";
    case KvDType::kF16: return "f16";
    case KvDType::kBF16: return "bf16";
    case KvDType::kI8: return "i8";
  }
  return "unknown";
}

std::string_view PriorityName(Priority priority) {
  switch (priority) {
    case Priority::kOnDemand: return "on_demand";
    case Priority::kProactive: return "proactive";
    case Priority::kSpeculative: return "speculative";
  }
  return "unknown";
}

std::string_view TransferStateName(TransferState state) {
  switch (state) {
    case TransferState::kInProgress: return "IN_PROGRESS";
    case TransferState::kDone: return "DONE";
    case TransferState::kFailed: return "FAILED";
    case TransferState::kCancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

std::string_view ReleaseReasonName(ReleaseReason reason) {
  switch (reason) {
    case ReleaseReason::kCompleted: return "completed";
    case ReleaseReason::kCancelled: return "cancelled";
    case ReleaseReason::kExpired: return "expired";
  }
  return "unknown";
}

}  // namespace smartgen::transfer
