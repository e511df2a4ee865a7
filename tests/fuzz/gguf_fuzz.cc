// libFuzzer target: GgufFile::Open on arbitrary bytes, then every accessor a loader uses on
// what it accepted. Open() promises a clear error for any malformed file, never a crash or
// an out-of-bounds read (gguf_reader.h); ASan and UBSan check the promise.
#include <cstddef>
#include <cstdint>

#include "fuzz_file.h"
#include "gguf/gguf_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static smartgen::fuzz::FuzzFile file;
  const std::string path = file.Write(data, size);
  smartgen::gguf::ParseLimits limits;
  limits.max_string_bytes = 1 << 20;  // keep one input's allocations small
  limits.max_array_elements = 1 << 20;
  auto opened = smartgen::gguf::GgufFile::Open(path, limits);
  if (!opened.ok()) return 0;
  const smartgen::gguf::GgufFile& f = *opened;
  std::size_t sink = f.alignment() + f.version();
  for (const auto& [key, value] : f.metadata()) {
    sink += key.size() + value.ToString().size();
    if (f.Find(key) == nullptr) __builtin_trap();  // every listed key is found
    if (auto i = value.AsInt(); i.ok()) sink += static_cast<std::size_t>(*i);
    if (auto a = value.AsArray(); a.ok()) sink += a->size();
  }
  for (const auto& t : f.tensors()) {
    sink += t.name.size() + static_cast<std::size_t>(t.n_elements() + t.rows() + t.cols());
    if (f.FindTensor(t.name) == nullptr) __builtin_trap();
    // A view's bytes are inside the mapping: touch the first and last.
    const auto bytes = t.data;
    if (!bytes.empty()) sink += static_cast<std::size_t>(bytes.front()) + static_cast<std::size_t>(bytes.back());
  }
  return sink == 0xdeadbeef ? 1 : 0;
}
