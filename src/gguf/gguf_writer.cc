#include "gguf/gguf_writer.h"

#include <cstring>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include <unistd.h>

namespace smartgen::gguf {
namespace {

template <typename T>
void Put(std::vector<std::byte>* out, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

void PutString(std::vector<std::byte>* out, std::string_view s) {
  Put<std::uint64_t>(out, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out->insert(out->end(), p, p + s.size());
}

}  // namespace

GgufWriter::GgufWriter(std::uint64_t alignment) : alignment_(alignment) {
  if (alignment_ != 32) AddUint32("general.alignment", static_cast<std::uint32_t>(alignment_));
}

void GgufWriter::PutKey(std::string_view key, ValueType type) {
  PutString(&kv_bytes_, key);
  Put<std::uint32_t>(&kv_bytes_, static_cast<std::uint32_t>(type));
  ++n_kv_;
}

void GgufWriter::AddUint32(std::string_view key, std::uint32_t v) {
  PutKey(key, ValueType::kUint32);
  Put(&kv_bytes_, v);
}
void GgufWriter::AddInt32(std::string_view key, std::int32_t v) {
  PutKey(key, ValueType::kInt32);
  Put(&kv_bytes_, v);
}
void GgufWriter::AddUint64(std::string_view key, std::uint64_t v) {
  PutKey(key, ValueType::kUint64);
  Put(&kv_bytes_, v);
}
void GgufWriter::AddFloat32(std::string_view key, float v) {
  PutKey(key, ValueType::kFloat32);
  Put(&kv_bytes_, v);
}
void GgufWriter::AddBool(std::string_view key, bool v) {
  PutKey(key, ValueType::kBool);
  Put<std::uint8_t>(&kv_bytes_, v ? 1 : 0);
}
void GgufWriter::AddString(std::string_view key, std::string_view v) {
  PutKey(key, ValueType::kString);
  PutString(&kv_bytes_, v);
}
void GgufWriter::AddStringArray(std::string_view key, std::span<const std::string> v) {
  PutKey(key, ValueType::kArray);
  Put<std::uint32_t>(&kv_bytes_, static_cast<std::uint32_t>(ValueType::kString));
  Put<std::uint64_t>(&kv_bytes_, v.size());
  for (const auto& s : v) PutString(&kv_bytes_, s);
}
void GgufWriter::AddFloat32Array(std::string_view key, std::span<const float> v) {
  PutKey(key, ValueType::kArray);
  Put<std::uint32_t>(&kv_bytes_, static_cast<std::uint32_t>(ValueType::kFloat32));
  Put<std::uint64_t>(&kv_bytes_, v.size());
  for (float f : v) Put(&kv_bytes_, f);
}
void GgufWriter::AddInt32Array(std::string_view key, std::span<const std::int32_t> v) {
  PutKey(key, ValueType::kArray);
  Put<std::uint32_t>(&kv_bytes_, static_cast<std::uint32_t>(ValueType::kInt32));
  Put<std::uint64_t>(&kv_bytes_, v.size());
  for (std::int32_t i : v) Put(&kv_bytes_, i);
}

Status GgufWriter::AddTensor(std::string_view name, std::span<const std::int64_t> ne,
                             GgmlType type, std::span<const std::byte> data) {
  const GgmlTypeInfo info = GetTypeInfo(type);
  if (!info.known) return InvalidArgument("tensor '{}': unknown type", name);
  if (ne.empty() || ne.size() > 4) return InvalidArgument("tensor '{}': {} dims", name, ne.size());
  std::int64_t rows = 1;
  for (std::size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  if (ne[0] % info.block_size != 0) {
    return InvalidArgument("tensor '{}': row length {} not a multiple of {}", name, ne[0],
                           info.block_size);
  }
  const std::size_t expected = RowBytes(type, ne[0]) * static_cast<std::size_t>(rows);
  if (data.size() != expected) {
    return InvalidArgument("tensor '{}': {} bytes given, {} expected", name, data.size(),
                           expected);
  }
  tensors_.push_back({std::string(name), std::vector<std::int64_t>(ne.begin(), ne.end()), type,
                      std::vector<std::byte>(data.begin(), data.end())});
  return Status::Ok();
}

std::vector<std::byte> GgufWriter::SerializeHeader(std::vector<std::uint64_t>* offsets) const {
  std::vector<std::byte> out;
  Put<std::uint32_t>(&out, 0x46554747);
  Put<std::uint32_t>(&out, 3);
  Put<std::uint64_t>(&out, tensors_.size());
  Put<std::uint64_t>(&out, n_kv_);
  out.insert(out.end(), kv_bytes_.begin(), kv_bytes_.end());
  std::uint64_t offset = 0;
  for (const auto& t : tensors_) {
    PutString(&out, t.name);
    Put<std::uint32_t>(&out, static_cast<std::uint32_t>(t.ne.size()));
    for (std::int64_t d : t.ne) Put<std::int64_t>(&out, d);
    Put<std::uint32_t>(&out, static_cast<std::uint32_t>(t.type));
    Put<std::uint64_t>(&out, offset);
    offsets->push_back(offset);
    offset = (offset + t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  out.resize((out.size() + alignment_ - 1) / alignment_ * alignment_, std::byte{0});
  return out;
}

std::vector<std::byte> GgufWriter::Serialize() const {
  std::vector<std::uint64_t> offsets;
  std::vector<std::byte> out = SerializeHeader(&offsets);
  const std::size_t data_start = out.size();
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(data_start + offsets[i], std::byte{0});
    out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
  }
  return out;
}

Status GgufWriter::WriteFile(const std::string& path) const {
  // Streams the tensors instead of building the whole file in memory (models are GBs).
  std::vector<std::uint64_t> offsets;
  const std::vector<std::byte> header = SerializeHeader(&offsets);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return ErrnoStatus(errno, fmt::format("create '{}'", tmp));
  out.write(reinterpret_cast<const char*>(header.data()), static_cast<std::streamsize>(header.size()));
  std::uint64_t written = 0;
  static const char kZeros[256] = {};
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    while (written < offsets[i]) {
      const std::uint64_t n = std::min<std::uint64_t>(sizeof(kZeros), offsets[i] - written);
      out.write(kZeros, static_cast<std::streamsize>(n));
      written += n;
    }
    out.write(reinterpret_cast<const char*>(tensors_[i].data.data()),
              static_cast<std::streamsize>(tensors_[i].data.size()));
    written += tensors_[i].data.size();
  }
  out.close();
  if (!out) return ErrnoStatus(errno, fmt::format("write '{}'", tmp));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(errno, fmt::format("rename '{}' -> '{}'", tmp, path));
  }
  return Status::Ok();
}

}  // namespace smartgen::gguf
