#include "transfer_test_util.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

namespace smartgen::transfer::testing {

KvGeometry TestGeometry() {
  KvGeometry g;
  g.n_layers = 4;
  g.n_kv_heads = 2;
  g.head_dim = 64;
  g.block_tokens = 16;
  g.dtype = KvDType::kF16;
  return g;
}

HandshakeParams TestHandshake() {
  HandshakeParams p;
  p.model_hash = 0x5EED5EED;
  p.geometry = TestGeometry();
  return p;
}

EndpointConfig TestConfig(std::string name) {
  EndpointConfig c;
  c.name = std::move(name);
  c.handshake = TestHandshake();
  c.token = "test-token";
  c.handshake_timeout = core::Seconds(5);
  c.heartbeat_interval = core::Millis(100);
  c.heartbeat_timeout = core::Seconds(2);
  c.retransmit_timeout = core::Millis(300);
  c.default_timeout = core::Seconds(30);
  return c;
}

std::string AnyAddress(const Transport& transport) {
  return transport.caps().cross_process ? "127.0.0.1:0" : "";
}

std::vector<BlockRange> AllRanges(const KvGeometry& g, std::uint64_t request_id,
                                  std::uint32_t n_blocks) {
  std::vector<BlockRange> out;
  for (std::uint32_t l = 0; l < g.n_layers; ++l) {
    for (std::uint32_t h = 0; h < g.n_kv_heads; ++h) out.push_back({request_id, l, h, 0, n_blocks});
  }
  return out;
}

Result<EndpointPair> MakePair(std::shared_ptr<Transport> prefill_transport,
                              std::shared_ptr<Transport> decode_transport,
                              EndpointConfig prefill_config, EndpointConfig decode_config,
                              std::uint64_t request_id, std::uint32_t n_blocks,
                              EndpointCallbacks prefill_callbacks,
                              EndpointCallbacks decode_callbacks) {
  EndpointPair p;
  p.prefill_store = std::make_unique<MemoryBlockStore>(prefill_config.handshake.geometry);
  p.decode_store = std::make_unique<MemoryBlockStore>(decode_config.handshake.geometry);
  SG_RETURN_IF_ERROR(p.prefill_store->AddRequest(request_id, n_blocks, /*fill=*/true));
  SG_RETURN_IF_ERROR(p.decode_store->AddRequest(request_id, n_blocks, /*fill=*/false));
  const std::string address = AnyAddress(*prefill_transport);
  SG_ASSIGN_OR_RETURN(p.prefill, Endpoint::Create(std::move(prefill_config), prefill_transport,
                                                  p.prefill_store.get(), nullptr,
                                                  std::move(prefill_callbacks)));
  SG_ASSIGN_OR_RETURN(p.decode, Endpoint::Create(std::move(decode_config), decode_transport,
                                                 nullptr, p.decode_store.get(),
                                                 std::move(decode_callbacks)));
  SG_ASSIGN_OR_RETURN(std::string bound, p.prefill->Listen(address));
  SG_ASSIGN_OR_RETURN(p.prefill_peer, p.decode->Connect(bound, Deadline::After(core::Seconds(10))));
  SG_ASSIGN_OR_RETURN(p.decode_peer, p.prefill->Accept(Deadline::After(core::Seconds(10))));
  return p;
}

ChildProcess::ChildProcess(const std::string& role,
                           const std::vector<std::pair<std::string, std::string>>& env) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();  // the write end is inherited across exec
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string filter =
      std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  // Everything exec needs is built before fork: the child only calls async-signal-safe code.
  std::vector<std::string> vars = {"SMARTGEN_TEST_CHILD=" + role,
                                   "SMARTGEN_TEST_CHILD_FD=" + std::to_string(fds[1])};
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "SMARTGEN_TEST_CHILD", 19) != 0) vars.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string arg0 = "transfer-test-child";
  std::string quiet = "--gtest_brief=1";
  char* argv[] = {arg0.data(), const_cast<char*>(filter.c_str()), quiet.data(), nullptr};
  pid_ = fork();
  if (pid_ == 0) {
    close(fds[0]);
    execve(self.c_str(), argv, envp.data());
    _exit(127);
  }
  close(fds[1]);
  read_fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  Kill();
  if (read_fd_ >= 0) close(read_fd_);
}

std::string ChildProcess::ReadLine(core::Nanos timeout) {
  std::string line;
  const core::Deadline deadline = core::Deadline::After(timeout);
  while (!deadline.Expired()) {
    pollfd p{read_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char c;
    const ssize_t n = read(read_fd_, &c, 1);
    if (n <= 0) break;
    if (c == '\n') return line;
    line.push_back(c);
  }
  return "";
}

void ChildProcess::Kill() {
  if (reaped_ || pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  reaped_ = true;
}

int ChildProcess::Wait(core::Nanos timeout) {
  if (reaped_) return -1;
  const core::Deadline deadline = core::Deadline::After(timeout);
  while (!deadline.Expired()) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

std::string ChildRole() { return ChildEnv("SMARTGEN_TEST_CHILD"); }

int ChildOutFd() {
  const std::string fd = ChildEnv("SMARTGEN_TEST_CHILD_FD");
  return fd.empty() ? -1 : std::atoi(fd.c_str());
}

std::string ChildEnv(const std::string& key) {
  const char* value = std::getenv(key.c_str());
  return value ? value : "";
}

void WriteLine(int fd, const std::string& line) {
  const std::string text = line + "\n";
  [[maybe_unused]] const ssize_t n = write(fd, text.data(), text.size());
}

}  // namespace smartgen::transfer::testing
