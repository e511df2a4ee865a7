#include "select/auto_mode.h"

namespace smartgen::select {

std::string_view AutoChoiceName(AutoChoice c) {
  return c == AutoChoice::kLayerwise ? "layerwise" : "smartgen";
}

AutoDecision ChooseAutoMode(double kv_bytes, double link_bytes_per_s, double prefill_ms) {
  AutoDecision d;
  d.kv_link_ms = link_bytes_per_s > 0 ? kv_bytes / link_bytes_per_s * 1e3 : 0.0;
  d.choice = d.kv_link_ms <= prefill_ms ? AutoChoice::kLayerwise : AutoChoice::kSmartgen;
  return d;
}

}  // namespace smartgen::select
