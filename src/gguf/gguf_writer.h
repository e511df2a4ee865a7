// GgufWriter: builds a GGUF v3 file in memory and writes it out (for `smartgen make-model`,
// and for tests that need hand-made or deliberately malformed files).
//
// Metadata keys keep insertion order; tensor data is laid out in insertion order, each tensor
// aligned to `alignment` (written as general.alignment when not 32). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf_reader.h"

namespace smartgen::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(std::uint64_t alignment = 32);

  void AddUint32(std::string_view key, std::uint32_t v);
  void AddInt32(std::string_view key, std::int32_t v);
  void AddUint64(std::string_view key, std::uint64_t v);
  void AddFloat32(std::string_view key, float v);
  void AddBool(std::string_view key, bool v);
  void AddString(std::string_view key, std::string_view v);
  void AddStringArray(std::string_view key, std::span<const std::string> v);
  void AddFloat32Array(std::string_view key, std::span<const float> v);
  void AddInt32Array(std::string_view key, std::span<const std::int32_t> v);

  // Adds a tensor with ggml shape `ne` (ne[0] = row length) whose bytes are `data`
  // (RowBytes(type, ne[0]) x rows). The bytes are copied.
  Status AddTensor(std::string_view name, std::span<const std::int64_t> ne, GgmlType type,
                   std::span<const std::byte> data);

  // The whole file, in memory (small files and tests).
  std::vector<std::byte> Serialize() const;
  // Streams the file to `path` (via a temp file + rename).
  Status WriteFile(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::vector<std::int64_t> ne;
    GgmlType type;
    std::vector<std::byte> data;
  };
  void PutKey(std::string_view key, ValueType type);
  // Header, metadata and tensor infos, padded to the alignment; fills each tensor's offset.
  std::vector<std::byte> SerializeHeader(std::vector<std::uint64_t>* offsets) const;

  std::uint64_t alignment_;
  std::uint64_t n_kv_ = 0;
  std::vector<std::byte> kv_bytes_;  // serialised key/value records
  std::vector<PendingTensor> tensors_;
};

}  // namespace smartgen::gguf
