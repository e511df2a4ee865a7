#include "node/common/smartgen_messages.h"

#include <cstring>

namespace smartgen::node {
namespace {

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  std::vector<std::byte> out;
};

class Reader {
 public:
  explicit Reader(std::span<const std::byte> in) : in_(in) {}
  template <typename T>
  Status Get(T* v) {
    if (in_.size() - at_ < sizeof(T)) return DataLoss("control message truncated at byte {}", at_);
    std::memcpy(v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return Status::Ok();
  }
  std::span<const std::byte> Rest() const { return in_.subspan(at_); }
  std::size_t left() const { return in_.size() - at_; }

 private:
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
};

}  // namespace

std::vector<std::byte> EncodeSummaries(std::uint64_t request_id, std::span<const std::byte> summaries) {
  Writer w;
  w.Put(request_id);
  w.out.insert(w.out.end(), summaries.begin(), summaries.end());
  return std::move(w.out);
}

Result<std::uint64_t> DecodeSummaries(std::span<const std::byte> message,
                                      std::span<const std::byte>* summaries) {
  Reader r(message);
  std::uint64_t id = 0;
  SG_RETURN_IF_ERROR(r.Get(&id));
  *summaries = r.Rest();
  return id;
}

std::vector<std::byte> EncodeManifest(std::uint64_t request_id, int layer,
                                      std::span<const select::BlockKey> blocks) {
  Writer w;
  w.Put(request_id);
  w.Put(static_cast<std::uint32_t>(layer));
  w.Put(static_cast<std::uint32_t>(blocks.size()));
  for (const auto& k : blocks) {
    w.Put(static_cast<std::uint32_t>(k.head));
    w.Put(static_cast<std::uint32_t>(k.block));
  }
  return std::move(w.out);
}

Status DecodeManifest(std::span<const std::byte> message, std::uint64_t* request_id, int* layer,
                      std::vector<select::BlockKey>* blocks) {
  Reader r(message);
  std::uint32_t l = 0, n = 0;
  SG_RETURN_IF_ERROR(r.Get(request_id));
  SG_RETURN_IF_ERROR(r.Get(&l));
  SG_RETURN_IF_ERROR(r.Get(&n));
  if (r.left() != std::size_t{n} * 8) return DataLoss("manifest of {} blocks has {} bytes", n, r.left());
  *layer = static_cast<int>(l);
  blocks->clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t h = 0, b = 0;
    SG_RETURN_IF_ERROR(r.Get(&h));
    SG_RETURN_IF_ERROR(r.Get(&b));
    blocks->push_back({static_cast<std::int32_t>(l), static_cast<std::int32_t>(h), static_cast<std::int32_t>(b)});
  }
  return Status::Ok();
}

std::vector<std::byte> EncodeRequested(std::uint64_t request_id,
                                       std::span<const select::BlockKey> blocks) {
  Writer w;
  w.Put(request_id);
  w.Put(static_cast<std::uint32_t>(blocks.size()));
  for (const auto& k : blocks) {
    w.Put(static_cast<std::uint32_t>(k.layer));
    w.Put(static_cast<std::uint32_t>(k.head));
    w.Put(static_cast<std::uint32_t>(k.block));
  }
  return std::move(w.out);
}

Status DecodeRequested(std::span<const std::byte> message, std::uint64_t* request_id,
                       std::vector<select::BlockKey>* blocks) {
  Reader r(message);
  std::uint32_t n = 0;
  SG_RETURN_IF_ERROR(r.Get(request_id));
  SG_RETURN_IF_ERROR(r.Get(&n));
  if (r.left() != std::size_t{n} * 12) return DataLoss("request list of {} blocks has {} bytes", n, r.left());
  blocks->clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t l = 0, h = 0, b = 0;
    SG_RETURN_IF_ERROR(r.Get(&l));
    SG_RETURN_IF_ERROR(r.Get(&h));
    SG_RETURN_IF_ERROR(r.Get(&b));
    blocks->push_back({static_cast<std::int32_t>(l), static_cast<std::int32_t>(h), static_cast<std::int32_t>(b)});
  }
  return Status::Ok();
}

}  // namespace smartgen::node
