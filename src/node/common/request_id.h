// RequestId: the name of one request across the control plane, a random 128-bit value drawn by
// the router from OpenSSL's CSPRNG, so an id seen in one response says nothing about another
// and guessing a live one is hopeless (2^-128 a try). It travels in JSON as 32 lowercase hex
// digits. KvTicket is a second 128-bit random value of the same shape, a secret the router hands
// to the decode node (DecodeCall) and to the one prefill node it picked (PrefillCall) only: the
// prefill node proves it on the KV link in PrefillStarted, and that binds the request to its link.
//
// On the KV link a request is named by its 64-bit link handle, the low half of its id (frames,
// BlockKey, leases, control message headers stay 64-bit); a decode node refuses to register an
// id whose handle is already in use, so the handle is unique wherever it is used.
//
// Thread-safety: plain values; Random() may be called from any thread.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace smartgen::node {

struct Id128 {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;  // never 0 in a valid id: it is the KV link's handle

  // Fresh random bits (OpenSSL RAND_bytes; lo != 0).
  static Id128 Random();
  bool valid() const { return lo != 0; }
  std::uint64_t link_handle() const { return lo; }
  std::string ToHex() const;  // 32 lowercase hex digits, hi first
  friend auto operator<=>(const Id128&, const Id128&) = default;
};

using RequestId = Id128;
using KvTicket = Id128;

// Exactly 32 hex digits (either case) with a non-zero low half; kInvalidArgument naming
// `what` otherwise.
Result<Id128> ParseId128(std::string_view hex, const char* what);

// Compares in time independent of where they differ (for secrets such as tickets).
bool SecretEquals(const Id128& a, const Id128& b);

}  // namespace smartgen::node
