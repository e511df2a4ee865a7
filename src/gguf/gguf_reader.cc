#include "gguf/gguf_reader.h"

#include <cstring>
#include <limits>
#include <unordered_set>

namespace smartgen::gguf {
namespace {

constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr std::uint64_t kDefaultAlignment = 32;

std::uint64_t AlignUp(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

std::string_view ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kUint8: return "UINT8";
    case ValueType::kInt8: return "INT8";
    case ValueType::kUint16: return "UINT16";
    case ValueType::kInt16: return "INT16";
    case ValueType::kUint32: return "UINT32";
    case ValueType::kInt32: return "INT32";
    case ValueType::kFloat32: return "FLOAT32";
    case ValueType::kBool: return "BOOL";
    case ValueType::kString: return "STRING";
    case ValueType::kArray: return "ARRAY";
    case ValueType::kUint64: return "UINT64";
    case ValueType::kInt64: return "INT64";
    case ValueType::kFloat64: return "FLOAT64";
  }
  return "UNKNOWN";
}

// ---- Value -------------------------------------------------------------------------------

bool Value::is_integer() const {
  switch (type_) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

Result<std::int64_t> Value::AsInt() const {
  if (const auto* u = std::get_if<std::uint64_t>(&storage_)) {
    if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return InvalidArgument("value {} does not fit in int64", *u);
    }
    return static_cast<std::int64_t>(*u);
  }
  if (const auto* i = std::get_if<std::int64_t>(&storage_)) return *i;
  return InvalidArgument("expected an integer, found {}", ValueTypeName(type_));
}

Result<std::uint64_t> Value::AsUint() const {
  if (const auto* u = std::get_if<std::uint64_t>(&storage_)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&storage_)) {
    if (*i < 0) return InvalidArgument("value {} is negative", *i);
    return static_cast<std::uint64_t>(*i);
  }
  return InvalidArgument("expected an unsigned integer, found {}", ValueTypeName(type_));
}

Result<double> Value::AsFloat() const {
  if (const auto* d = std::get_if<double>(&storage_)) return *d;
  if (const auto* u = std::get_if<std::uint64_t>(&storage_)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<std::int64_t>(&storage_)) return static_cast<double>(*i);
  return InvalidArgument("expected a number, found {}", ValueTypeName(type_));
}

Result<bool> Value::AsBool() const {
  if (const auto* b = std::get_if<bool>(&storage_)) return *b;
  return InvalidArgument("expected BOOL, found {}", ValueTypeName(type_));
}

Result<std::string_view> Value::AsString() const {
  if (const auto* s = std::get_if<std::string>(&storage_)) return std::string_view(*s);
  return InvalidArgument("expected STRING, found {}", ValueTypeName(type_));
}

Result<std::span<const Value>> Value::AsArray() const {
  if (const auto* a = std::get_if<Array>(&storage_)) return std::span<const Value>(*a);
  return InvalidArgument("expected ARRAY, found {}", ValueTypeName(type_));
}

std::string Value::ToString() const {
  return std::visit(
      [&](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::string>) {
          return fmt::format("\"{}\"", v.size() > 60 ? v.substr(0, 60) + "..." : v);
        } else if constexpr (std::is_same_v<V, Array>) {
          std::string s = fmt::format("[{} x {}]", v.size(), ValueTypeName(array_type_));
          return s;
        } else {
          return fmt::format("{}", v);
        }
      },
      storage_);
}

// ---- parsing -----------------------------------------------------------------------------

// Bounds-checked little-endian cursor over the mapped bytes. Every read checks the bytes left.
class GgufParser {
 public:
  GgufParser(std::span<const std::byte> bytes, const ParseLimits& limits)
      : bytes_(bytes), limits_(limits) {}

  Status Parse(GgufFile* file);

 private:
  template <typename T>
  Status Read(T* out, std::string_view what) {
    if (bytes_.size() - pos_ < sizeof(T)) {
      return DataLoss("truncated file: {} at byte {} needs {} bytes, {} left", what, pos_,
                      sizeof(T), bytes_.size() - pos_);
    }
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status ReadString(std::string* out, std::string_view what);
  Status ReadValue(ValueType type, std::string_view key, int depth, Value* out);

  std::span<const std::byte> bytes_;
  ParseLimits limits_;
  std::size_t pos_ = 0;
};

Status GgufParser::ReadString(std::string* out, std::string_view what) {
  std::uint64_t len = 0;
  SG_RETURN_IF_ERROR(Read(&len, what));
  if (len > limits_.max_string_bytes) {
    return DataLoss("{}: string length {} exceeds the limit {}", what, len,
                    limits_.max_string_bytes);
  }
  if (len > bytes_.size() - pos_) {
    return DataLoss("truncated file: {} string of {} bytes at byte {}, {} left", what, len, pos_,
                    bytes_.size() - pos_);
  }
  out->assign(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return Status::Ok();
}

Status GgufParser::ReadValue(ValueType type, std::string_view key, int depth, Value* out) {
  auto read_scalar = [&](auto tag, auto widen) -> Status {
    decltype(tag) raw{};
    SG_RETURN_IF_ERROR(Read(&raw, key));
    *out = Value(type, widen(raw));
    return Status::Ok();
  };
  auto as_u = [](auto v) { return Value::Storage(static_cast<std::uint64_t>(v)); };
  auto as_i = [](auto v) { return Value::Storage(static_cast<std::int64_t>(v)); };
  auto as_f = [](auto v) { return Value::Storage(static_cast<double>(v)); };
  switch (type) {
    case ValueType::kUint8: return read_scalar(std::uint8_t{}, as_u);
    case ValueType::kInt8: return read_scalar(std::int8_t{}, as_i);
    case ValueType::kUint16: return read_scalar(std::uint16_t{}, as_u);
    case ValueType::kInt16: return read_scalar(std::int16_t{}, as_i);
    case ValueType::kUint32: return read_scalar(std::uint32_t{}, as_u);
    case ValueType::kInt32: return read_scalar(std::int32_t{}, as_i);
    case ValueType::kUint64: return read_scalar(std::uint64_t{}, as_u);
    case ValueType::kInt64: return read_scalar(std::int64_t{}, as_i);
    case ValueType::kFloat32: return read_scalar(float{}, as_f);
    case ValueType::kFloat64: return read_scalar(double{}, as_f);
    case ValueType::kBool: {
      std::uint8_t raw = 0;
      SG_RETURN_IF_ERROR(Read(&raw, key));
      if (raw > 1) return DataLoss("key '{}': BOOL value {} is neither 0 nor 1", key, raw);
      *out = Value(type, raw != 0);
      return Status::Ok();
    }
    case ValueType::kString: {
      std::string s;
      SG_RETURN_IF_ERROR(ReadString(&s, key));
      *out = Value(type, std::move(s));
      return Status::Ok();
    }
    case ValueType::kArray: {
      if (depth > 0) return Unimplemented("key '{}': nested arrays are not supported", key);
      std::uint32_t elem_raw = 0;
      std::uint64_t count = 0;
      SG_RETURN_IF_ERROR(Read(&elem_raw, key));
      SG_RETURN_IF_ERROR(Read(&count, key));
      if (elem_raw > static_cast<std::uint32_t>(ValueType::kFloat64)) {
        return DataLoss("key '{}': unknown array element type {}", key, elem_raw);
      }
      const auto elem = static_cast<ValueType>(elem_raw);
      if (count > limits_.max_array_elements) {
        return DataLoss("key '{}': array of {} elements exceeds the limit {}", key, count,
                        limits_.max_array_elements);
      }
      // Each element takes at least one byte (a string at least 8), so a count larger than the
      // bytes left is corrupt; checking before reserving avoids a huge allocation.
      const std::uint64_t min_size = elem == ValueType::kString ? 8 : 1;
      if (count > (bytes_.size() - pos_) / min_size) {
        return DataLoss("truncated file: key '{}' declares {} array elements but only {} bytes "
                        "are left", key, count, bytes_.size() - pos_);
      }
      Value::Array items;
      items.reserve(count);
      for (std::uint64_t i = 0; i < count; ++i) {
        Value v;
        SG_RETURN_IF_ERROR(ReadValue(elem, key, depth + 1, &v));
        items.push_back(std::move(v));
      }
      *out = Value(type, std::move(items));
      out->set_array_type(elem);
      return Status::Ok();
    }
  }
  return DataLoss("key '{}': unknown value type {}", key, static_cast<std::uint32_t>(type));
}

Status GgufParser::Parse(GgufFile* file) {
  std::uint32_t magic = 0;
  SG_RETURN_IF_ERROR(Read(&magic, "magic"));
  if (magic != kMagic) {
    return InvalidArgument("bad magic 0x{:08x}: not a GGUF file (expected \"GGUF\")", magic);
  }
  SG_RETURN_IF_ERROR(Read(&file->version_, "version"));
  if (file->version_ != 2 && file->version_ != 3) {
    return Unimplemented("GGUF version {} is not supported (2 and 3 are)", file->version_);
  }
  std::uint64_t n_tensors = 0, n_kv = 0;
  SG_RETURN_IF_ERROR(Read(&n_tensors, "tensor count"));
  SG_RETURN_IF_ERROR(Read(&n_kv, "metadata count"));
  if (n_tensors > limits_.max_tensors) {
    return DataLoss("tensor count {} exceeds the limit {}", n_tensors, limits_.max_tensors);
  }
  if (n_kv > limits_.max_kv) {
    return DataLoss("metadata count {} exceeds the limit {}", n_kv, limits_.max_kv);
  }

  file->kv_.reserve(n_kv);
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key;
    SG_RETURN_IF_ERROR(ReadString(&key, fmt::format("metadata key #{}", i)));
    std::uint32_t type_raw = 0;
    SG_RETURN_IF_ERROR(Read(&type_raw, key));
    if (type_raw > static_cast<std::uint32_t>(ValueType::kFloat64)) {
      return DataLoss("key '{}': unknown value type {}", key, type_raw);
    }
    Value value;
    SG_RETURN_IF_ERROR(ReadValue(static_cast<ValueType>(type_raw), key, 0, &value));
    if (file->kv_index_.count(key)) return DataLoss("duplicate metadata key '{}'", key);
    file->kv_index_.emplace(key, file->kv_.size());
    file->kv_.emplace_back(std::move(key), std::move(value));
  }

  file->alignment_ = kDefaultAlignment;
  if (const Value* a = file->Find("general.alignment")) {
    auto align = a->AsUint();
    if (!align.ok() || *align == 0 || (*align & (*align - 1)) != 0 || *align > (1u << 20)) {
      return DataLoss("general.alignment {} is not a power of two up to 1 MiB", a->ToString());
    }
    file->alignment_ = *align;
  }

  file->tensors_.reserve(n_tensors);
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    SG_RETURN_IF_ERROR(ReadString(&t.name, fmt::format("tensor #{} name", i)));
    std::uint32_t n_dims = 0;
    SG_RETURN_IF_ERROR(Read(&n_dims, t.name));
    if (n_dims == 0 || n_dims > limits_.max_dims) {
      return DataLoss("tensor '{}': {} dimensions (1..{} allowed)", t.name, n_dims,
                      limits_.max_dims);
    }
    std::int64_t n_elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      std::int64_t ne = 0;
      SG_RETURN_IF_ERROR(Read(&ne, t.name));
      if (ne <= 0 || ne > (std::int64_t{1} << 40)) {
        return DataLoss("tensor '{}': dimension {} is {} (must be 1..2^40)", t.name, d, ne);
      }
      if (n_elements > (std::numeric_limits<std::int64_t>::max() >> 1) / ne) {
        return DataLoss("tensor '{}': element count overflows", t.name);
      }
      n_elements *= ne;
      t.ne.push_back(ne);
    }
    std::uint32_t type_raw = 0;
    SG_RETURN_IF_ERROR(Read(&type_raw, t.name));
    const GgmlTypeInfo info = GetTypeInfo(type_raw);
    if (!info.known) return Unimplemented("tensor '{}': unknown ggml type {}", t.name, type_raw);
    t.type = static_cast<GgmlType>(type_raw);
    if (t.ne[0] % info.block_size != 0) {
      return DataLoss("tensor '{}': row length {} is not a multiple of the {} block size {}",
                      t.name, t.ne[0], info.name, info.block_size);
    }
    SG_RETURN_IF_ERROR(Read(&t.offset, t.name));
    if (t.offset % file->alignment_ != 0) {
      return DataLoss("tensor '{}': offset {} is not aligned to {}", t.name, t.offset,
                      file->alignment_);
    }
    if (file->tensor_index_.count(t.name)) return DataLoss("duplicate tensor '{}'", t.name);
    file->tensor_index_.emplace(t.name, file->tensors_.size());
    file->tensors_.push_back(std::move(t));
  }

  const std::uint64_t data_start = AlignUp(pos_, file->alignment_);
  if (n_tensors > 0 && data_start > bytes_.size()) {
    return DataLoss("truncated file: tensor data would start at byte {} of {}", data_start,
                    bytes_.size());
  }
  const std::uint64_t data_size = bytes_.size() > data_start ? bytes_.size() - data_start : 0;
  for (TensorInfo& t : file->tensors_) {
    const std::uint64_t nbytes = static_cast<std::uint64_t>(t.n_elements() / GetTypeInfo(t.type).block_size) *
                                 GetTypeInfo(t.type).type_size;
    if (t.offset > data_size || nbytes > data_size - t.offset) {
      return DataLoss("tensor '{}' ({} bytes at data offset {}) runs past the end of the file "
                      "({} data bytes)", t.name, nbytes, t.offset, data_size);
    }
    t.data = bytes_.subspan(data_start + t.offset, nbytes);
  }
  return Status::Ok();
}

// ---- GgufFile ----------------------------------------------------------------------------

std::int64_t TensorInfo::n_elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : ne) n *= d;
  return ne.empty() ? 0 : n;
}

Result<GgufFile> GgufFile::Open(const std::string& path, const ParseLimits& limits,
                                core::FilePlacement placement) {
  SG_ASSIGN_OR_RETURN(core::MappedFile mapped, core::MappedFile::Open(path, placement));
  GgufFile file;
  file.file_ = std::move(mapped);
  GgufParser parser(file.file_.bytes(), limits);
  SG_RETURN_IF_ERROR(parser.Parse(&file).WithContext(fmt::format("GGUF '{}'", path)));
  return file;
}

const Value* GgufFile::Find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

std::byte* GgufFile::PrivateAddress(const void* p) {
  std::byte* copy = file_.private_data();
  const auto begin = reinterpret_cast<std::uintptr_t>(file_.bytes().data());
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  if (copy == nullptr || at < begin || at >= begin + file_.size()) return nullptr;
  return copy + (at - begin);
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {
template <typename T>
Result<T> Typed(const GgufFile& f, std::string_view key, Result<T> (Value::*get)() const) {
  const Value* v = f.Find(key);
  if (v == nullptr) return NotFound("metadata key '{}' is missing", key);
  Result<T> r = (v->*get)();
  if (!r.ok()) return r.status().WithContext(fmt::format("metadata key '{}'", key));
  return r;
}
}  // namespace

Result<std::int64_t> GgufFile::GetInt(std::string_view key) const {
  return Typed(*this, key, &Value::AsInt);
}
Result<double> GgufFile::GetFloat(std::string_view key) const {
  return Typed(*this, key, &Value::AsFloat);
}
Result<std::string_view> GgufFile::GetString(std::string_view key) const {
  return Typed(*this, key, &Value::AsString);
}
Result<bool> GgufFile::GetBool(std::string_view key) const {
  return Typed(*this, key, &Value::AsBool);
}
Result<std::span<const Value>> GgufFile::GetArray(std::string_view key) const {
  return Typed(*this, key, &Value::AsArray);
}
Result<std::int64_t> GgufFile::GetIntOr(std::string_view key, std::int64_t fallback) const {
  if (Find(key) == nullptr) return fallback;
  return GetInt(key);
}
Result<double> GgufFile::GetFloatOr(std::string_view key, double fallback) const {
  if (Find(key) == nullptr) return fallback;
  return GetFloat(key);
}

}  // namespace smartgen::gguf
