// GgufFile: a memory-mapped GGUF v2/v3 file: metadata key/values and tensor views.
//
// Open() validates the whole header before returning: magic, version, counts, every string
// and array length against the bytes left, every value type, every tensor's dims, type,
// alignment and extent. A malformed file gives kDataLoss (truncated, corrupt) or
// kInvalidArgument / kUnimplemented (unknown type) with a message naming the key or tensor;
// never a crash or an out-of-bounds read. Tensor data is not copied: views point into the
// mapping and live as long as the GgufFile.
//
// Thread-safety: a GgufFile is immutable after Open(); concurrent reads are safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/mapped_file.h"
#include "core/result.h"
#include "gguf/ggml_type.h"

namespace smartgen::gguf {

// GGUF metadata value types (the file's numbering).
enum class ValueType : std::uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view ValueTypeName(ValueType type);

// A metadata value. Scalars are held widened (integers as int64/uint64, floats as double)
// with their declared type kept; arrays hold their elements' type and values.
class Value {
 public:
  using Array = std::vector<Value>;
  using Storage = std::variant<std::uint64_t, std::int64_t, double, bool, std::string, Array>;

  Value() = default;
  Value(ValueType type, Storage storage) : type_(type), storage_(std::move(storage)) {}

  ValueType type() const { return type_; }
  // For arrays: the declared element type (kUint8 for an empty array of unknown type).
  ValueType array_type() const { return array_type_; }
  void set_array_type(ValueType t) { array_type_ = t; }

  bool is_integer() const;
  bool is_float() const { return type_ == ValueType::kFloat32 || type_ == ValueType::kFloat64; }
  bool is_string() const { return type_ == ValueType::kString; }
  bool is_array() const { return type_ == ValueType::kArray; }
  bool is_bool() const { return type_ == ValueType::kBool; }

  // Typed accessors; a wrong type or an out-of-range integer gives kInvalidArgument.
  Result<std::int64_t> AsInt() const;
  Result<std::uint64_t> AsUint() const;
  Result<double> AsFloat() const;  // integers convert too
  Result<bool> AsBool() const;
  Result<std::string_view> AsString() const;
  Result<std::span<const Value>> AsArray() const;

  std::string ToString() const;  // short human-readable form (arrays abbreviated)

 private:
  ValueType type_ = ValueType::kUint8;
  ValueType array_type_ = ValueType::kUint8;
  Storage storage_;
};

// One tensor: its name, shape in ggml order (ne[0] is the row length, fastest varying), type,
// and its bytes inside the mapping.
struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> ne;
  GgmlType type = GgmlType::kF32;
  std::uint64_t offset = 0;  // from the start of the tensor data section
  std::span<const std::byte> data;

  std::int64_t n_elements() const;
  std::int64_t rows() const { return ne.empty() ? 0 : n_elements() / ne[0]; }
  std::int64_t cols() const { return ne.empty() ? 0 : ne[0]; }
};

struct ParseLimits {
  std::uint64_t max_tensors = 1u << 20;
  std::uint64_t max_kv = 1u << 20;
  std::uint64_t max_string_bytes = 1u << 30;
  std::uint64_t max_array_elements = 1u << 28;
  std::uint32_t max_dims = 4;
};

class GgufFile {
 public:
  // Maps (or reads into huge pages: core::FilePlacement) and validates `path`.
  static Result<GgufFile> Open(const std::string& path, const ParseLimits& limits = {},
                               core::FilePlacement placement = core::FilePlacement::kMapped);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;

  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  const std::string& path() const { return file_.path(); }
  std::size_t file_size() const { return file_.size(); }
  core::FilePlacement placement() const { return file_.placement(); }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  // The value of `key`, or nullptr.
  const Value* Find(std::string_view key) const;
  // Typed lookups: kNotFound if absent, kInvalidArgument on a type mismatch.
  Result<std::int64_t> GetInt(std::string_view key) const;
  Result<double> GetFloat(std::string_view key) const;
  Result<std::string_view> GetString(std::string_view key) const;
  Result<bool> GetBool(std::string_view key) const;
  Result<std::span<const Value>> GetArray(std::string_view key) const;
  // With a default when the key is absent (type mismatches are still errors).
  Result<std::int64_t> GetIntOr(std::string_view key, std::int64_t fallback) const;
  Result<double> GetFloatOr(std::string_view key, double fallback) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // The writable address of `p`, a byte of this file's data, when the file was read into a
  // private copy (core::FilePlacement::kHugePages), so that a loader may rearrange tensor bytes
  // in place; nullptr for a shared mapping.
  std::byte* PrivateAddress(const void* p);
  // The tensor called `name`, or nullptr.
  const TensorInfo* FindTensor(std::string_view name) const;

 private:
  GgufFile() = default;
  friend class GgufParser;

  core::MappedFile file_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> kv_;
  std::map<std::string, std::size_t, std::less<>> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t, std::less<>> tensor_index_;
};

}  // namespace smartgen::gguf
