// `smartgen make-model`: writes a GGUF of a real architecture and shape with seeded random
// weights and a synthetic byte-level vocabulary (the embedded default model).
#include <cstdio>
#include <memory>
#include <string>

#include "core/clock.h"
#include "model/synthetic_model.h"
#include "tools/commands.h"

namespace smartgen::tools {
namespace {

constexpr const char* kTypes =
    "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, "
    "or a llama.cpp mix: q3_k_m, q4_k_m, q5_k_m";

struct MakeModelOptions {
  std::string preset = "tiny";
  std::string type = "f16";
  std::uint64_t seed = 1;
  std::string out;
};

std::string PresetNames() {
  std::string names;
  for (const auto& p : model::AllPresets()) {
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  }
  return names;
}

Status MakeModel(const MakeModelOptions& o) {
  const model::ModelPreset* preset = model::FindPreset(o.preset);
  if (preset == nullptr) {
    return InvalidArgument("unknown preset '{}' (known: {})", o.preset, PresetNames());
  }
  model::SyntheticModelSpec spec;
  spec.preset = *preset;
  if (!model::ParseSyntheticType(o.type, &spec)) {
    return InvalidArgument("--type '{}' is not one of {}", o.type, kTypes);
  }
  spec.seed = o.seed;
  spec.out = o.out;
  core::Stopwatch watch;
  SG_RETURN_IF_ERROR(model::WriteSyntheticModel(spec));
  std::printf("wrote %s: preset %s, %s weights, seed %llu (%.1f s)\n", o.out.c_str(),
              o.preset.c_str(), o.type.c_str(), static_cast<unsigned long long>(o.seed),
              watch.ElapsedSeconds());
  return Status::Ok();
}

}  // namespace

void RegisterMakeModel(CLI::App& app) {
  auto opts = std::make_shared<MakeModelOptions>();
  CLI::App* cmd = app.add_subcommand(
      "make-model", "write a GGUF of a real shape with seeded random weights");
  cmd->add_option("--preset", opts->preset, "shape: " + PresetNames())->capture_default_str();
  cmd->add_option("--type", opts->type, std::string("weight type: ") + kTypes)->capture_default_str();
  cmd->add_option("--seed", opts->seed, "random seed")->capture_default_str();
  cmd->add_option("--out", opts->out, "output GGUF path")->required();
  cmd->callback([opts] {
    if (int rc = ReportStatus("make-model", MakeModel(*opts))) throw CLI::RuntimeError(rc);
  });
}

}  // namespace smartgen::tools
