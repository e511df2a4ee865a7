// Linked into every test binary: gives each test process its own temporary directory.
// CTest runs every TEST as a separate process, two at a time; files the tests write under
// ::testing::TempDir() (models, vocabularies, request bodies) would otherwise collide between
// concurrent processes. GoogleTest's TempDir() honours TEST_TMPDIR, which this sets before
// main() to a fresh mkdtemp directory, removed again when the process exits.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

class UniqueTempDir {
 public:
  UniqueTempDir() {
    // A test's child process (tests re-exec themselves) shares its parent's directory.
    if (std::getenv("SMARTGEN_TEST_TMPDIR_SET") != nullptr) return;
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/smartgen-test-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) {
      path_ = pattern;
      setenv("TEST_TMPDIR", (path_ + "/").c_str(), /*overwrite=*/1);
      setenv("SMARTGEN_TEST_TMPDIR_SET", "1", /*overwrite=*/1);
    }
  }
  ~UniqueTempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);  // best effort
  }

 private:
  std::string path_;
};

const UniqueTempDir unique_temp_dir;

}  // namespace
