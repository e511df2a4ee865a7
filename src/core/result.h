// Result<T>: a value or a non-OK Status (like absl::StatusOr). [[nodiscard]].
//
//   Result<Model> LoadModel(path);
//   SG_ASSIGN_OR_RETURN(auto model, LoadModel(path));
//
// Accessing value() of an error Result is a programmer error and aborts with the status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

#include "core/status.h"

namespace smartgen {

template <typename T>
class [[nodiscard]] Result {
 public:
  // Implicit from a value or from a non-OK status, so `return value;` and
  // `return InvalidArgument(...)` both work.
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Internal("Result constructed from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & { CheckOk(); return *value_; }
  const T& value() const& { CheckOk(); return *value_; }
  T&& value() && { CheckOk(); return std::move(*value_); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The value, or `fallback` on error.
  T value_or(T fallback) const& { return ok() ? *value_ : std::move(fallback); }

 private:
  void CheckOk() const {
    if (!value_) {
      std::fprintf(stderr, "smartgen: value() of an error Result: %s\n",
                   status_.ToString().c_str());
      std::abort();
    }
  }

  std::optional<T> value_;
  Status status_;  // OK when value_ is set.
};

}  // namespace smartgen

#define SG_CONCAT_INNER_(a, b) a##b
#define SG_CONCAT_(a, b) SG_CONCAT_INNER_(a, b)
#define SG_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// Evaluates `expr` (a Result<T>); on error returns its status, else assigns the value to `lhs`
// (which may be a declaration: `SG_ASSIGN_OR_RETURN(auto x, F());`).
#define SG_ASSIGN_OR_RETURN(lhs, expr) \
  SG_ASSIGN_OR_RETURN_IMPL_(SG_CONCAT_(sg_result_, __LINE__), lhs, expr)
