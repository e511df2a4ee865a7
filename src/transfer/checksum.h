// The payload checksum of the wire format: xxh3-64 (seed 0) of a frame's payload, computed
// over the list of spans it is gathered from or scattered into. Every frame is hashed once by
// its sender and once by its receiver, so the function is on the data path: it is compiled for
// SSE2, AVX2 and AVX-512 and picked at run time (core::GetCpuFeatures, SMARTGEN_ISA caps it).
// All versions return the same value. Thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "transfer/types.h"

namespace smartgen::transfer {

// xxh3-64 of the concatenation of `parts`.
std::uint64_t Checksum(std::span<const ConstBytes> parts);
std::uint64_t Checksum(ConstBytes bytes);

// The per-ISA versions, for tests; the AVX ones may only run where the CPU has them.
enum class ChecksumIsa { kBaseline, kAvx2, kAvx512 };
std::uint64_t ChecksumWith(ChecksumIsa isa, std::span<const ConstBytes> parts);
// The version Checksum() uses on this CPU.
ChecksumIsa SelectedChecksumIsa();

namespace internal {
std::uint64_t ChecksumBaseline(std::span<const ConstBytes> parts);
std::uint64_t ChecksumAvx2(std::span<const ConstBytes> parts);
std::uint64_t ChecksumAvx512(std::span<const ConstBytes> parts);
}  // namespace internal

}  // namespace smartgen::transfer
