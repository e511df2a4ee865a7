// JsonFields: typed, non-throwing access to the fields of a JSON object a peer sent.
//
//   JsonFields f(j, "decode call");
//   SG_RETURN_IF_ERROR(f.Check());                       // an object at all?
//   SG_RETURN_IF_ERROR(f.Required("max_tokens", &n));    // present and an integer
//   SG_RETURN_IF_ERROR(f.Optional("options", &opts));    // absent or null leaves `opts` as is
//
// Every failure is kInvalidArgument naming `what` and the field.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace smartgen::node {

class JsonFields {
 public:
  JsonFields(const nlohmann::json& j, const char* what) : j_(j), what_(what) {}

  Status Check() const {
    if (!j_.is_object()) return InvalidArgument("{}: expected a JSON object", what_);
    return Status::Ok();
  }
  template <typename T>
  Status Required(const char* key, T* out) const {
    if (!j_.contains(key)) return InvalidArgument("{}: field '{}' is missing", what_, key);
    return Get(key, out);
  }
  template <typename T>
  Status Optional(const char* key, T* out) const {
    if (!j_.contains(key) || j_.at(key).is_null()) return Status::Ok();
    return Get(key, out);
  }

 private:
  template <typename T>
  Status Get(const char* key, T* out) const {
    const nlohmann::json& v = j_.at(key);
    bool ok;
    if constexpr (std::is_same_v<T, bool>) {
      ok = v.is_boolean();
    } else if constexpr (std::is_integral_v<T>) {
      ok = v.is_number_integer();
    } else if constexpr (std::is_floating_point_v<T>) {
      ok = v.is_number();
    } else if constexpr (std::is_same_v<T, std::string>) {
      ok = v.is_string();
    } else if constexpr (std::is_same_v<T, std::vector<std::int32_t>>) {
      ok = v.is_array();
      if (ok) {
        for (const nlohmann::json& e : v) {
          ok = ok && e.is_number_integer() && e.get<std::int64_t>() >= INT32_MIN &&
               e.get<std::int64_t>() <= INT32_MAX;
        }
      }
    } else {
      ok = true;  // nlohmann::json: anything
    }
    if (!ok) return InvalidArgument("{}: field '{}' has the wrong type", what_, key);
    *out = v.get<T>();
    return Status::Ok();
  }

  const nlohmann::json& j_;
  const char* what_;
};

}  // namespace smartgen::node
