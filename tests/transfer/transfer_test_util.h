// Shared helpers of the transfer tests: a small KV geometry, endpoint configs with short
// timeouts, a connected prefill/decode endpoint pair over any transport, and a forked child
// process that is always killed and reaped.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "transfer/endpoint.h"
#include "transfer/memory_block_store.h"
#include "transfer/transport.h"

namespace smartgen::transfer::testing {

// Whether this build runs under AddressSanitizer (slower: timing bounds widen, sizes shrink).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// 4 layers x 2 KV heads, head_dim 64, 16-token blocks in f16: 4 KiB blocks.
KvGeometry TestGeometry();
HandshakeParams TestHandshake();
// Short timeouts so that failure tests end quickly.
EndpointConfig TestConfig(std::string name);
// "127.0.0.1:0" for network transports, "" (any name) for in-process ones.
std::string AnyAddress(const Transport& transport);

// A prefill endpoint (listens, source = filled store) connected to a decode endpoint
// (connects, sink = empty store). Request `request_id` with `n_blocks` per (layer, head) exists
// on both sides.
struct EndpointPair {
  std::unique_ptr<MemoryBlockStore> prefill_store;
  std::unique_ptr<MemoryBlockStore> decode_store;
  std::unique_ptr<Endpoint> prefill;
  std::unique_ptr<Endpoint> decode;
  PeerId decode_peer;   // the decode endpoint, as seen by prefill
  PeerId prefill_peer;  // the prefill endpoint, as seen by decode
};
Result<EndpointPair> MakePair(std::shared_ptr<Transport> prefill_transport,
                              std::shared_ptr<Transport> decode_transport,
                              EndpointConfig prefill_config, EndpointConfig decode_config,
                              std::uint64_t request_id, std::uint32_t n_blocks,
                              EndpointCallbacks prefill_callbacks = {},
                              EndpointCallbacks decode_callbacks = {});

// Every block of a request: one range per (layer, head).
std::vector<BlockRange> AllRanges(const KvGeometry& g, std::uint64_t request_id,
                                  std::uint32_t n_blocks);

// Runs the current test again in a new process (fork + exec of this test binary, filtered to
// this test) with SMARTGEN_TEST_CHILD=`role` and `env` set. The test body checks ChildRole()
// first and, in the child, does the child's part and _exit()s. Exec gives the child a clean,
// single-threaded process (no inherited UCX or engine threads). The destructor kills the child
// (SIGKILL) if it still runs and reaps it.
class ChildProcess {
 public:
  explicit ChildProcess(const std::string& role,
                        const std::vector<std::pair<std::string, std::string>>& env = {});
  ~ChildProcess();
  pid_t pid() const { return pid_; }
  // Reads a line the child wrote with WriteLine(ChildOutFd(), ...). Empty on timeout or EOF.
  std::string ReadLine(core::Nanos timeout);
  void Kill();
  // Waits for the exit code; -1 on timeout or abnormal exit.
  int Wait(core::Nanos timeout);

 private:
  pid_t pid_ = -1;
  int read_fd_ = -1;
  bool reaped_ = false;
};

// In a child started by ChildProcess: its role; "" in the parent.
std::string ChildRole();
// In a child: the fd whose lines the parent reads.
int ChildOutFd();
// In a child: an env value passed by the parent ("" if unset).
std::string ChildEnv(const std::string& key);
// Writes a line to a ChildProcess pipe.
void WriteLine(int fd, const std::string& line);

}  // namespace smartgen::transfer::testing
