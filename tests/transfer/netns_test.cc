// Two network namespaces joined by a veth pair shaped with `tc tbf` (issue 4.5): the engine
// must saturate a real shaped link (>= 90% of its rate). Needs root and iproute2; otherwise it
// is skipped with the reason. The namespaces are always deleted.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "transfer/tcp/tcp_transport.h"
#include "transfer_test_util.h"

namespace smartgen::transfer::testing {
namespace {

constexpr double kRateMbit = 200;
constexpr std::uint32_t kBlocks = 1536;  // 8 rows x 1536 x 4 KiB = 50 MB: ~2 s at 200 Mbit/s

int Shell(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

class Namespaces {
 public:
  Namespaces() {
    const std::string id = std::to_string(getpid() % 100000);
    a_ = "sgtA" + id;
    b_ = "sgtB" + id;
    va_ = "sgva" + id;
    vb_ = "sgvb" + id;
  }
  ~Namespaces() {
    Shell("ip netns del " + a_);
    Shell("ip netns del " + b_);
  }
  // Empty on success, else why not.
  std::string Create() {
    const std::string steps[] = {
        "ip netns add " + a_,
        "ip netns add " + b_,
        "ip link add " + va_ + " type veth peer name " + vb_,
        "ip link set " + va_ + " netns " + a_,
        "ip link set " + vb_ + " netns " + b_,
        "ip -n " + a_ + " addr add 10.231.7.1/24 dev " + va_,
        "ip -n " + b_ + " addr add 10.231.7.2/24 dev " + vb_,
        "ip -n " + a_ + " link set " + va_ + " mtu 9000 up",
        "ip -n " + b_ + " link set " + vb_ + " mtu 9000 up",
        "ip -n " + a_ + " link set lo up",
        "ip -n " + b_ + " link set lo up",
        // Shape what the prefill side (in A) sends.
        "tc -n " + a_ + " qdisc add dev " + va_ + " root tbf rate " +
            std::to_string(static_cast<int>(kRateMbit)) + "mbit burst 256kb latency 50ms",
    };
    for (const std::string& step : steps) {
      if (Shell(step) != 0) return "'" + step + "' failed";
    }
    return "";
  }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }

 private:
  std::string a_, b_, va_, vb_;
};

bool EnterNamespace(const std::string& name) {
  const int fd = open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

int Prefill(const std::string& ns, int out) {
  if (!EnterNamespace(ns)) return 20;
  MemoryBlockStore store(TestGeometry());
  if (!store.AddRequest(1, kBlocks, true).ok()) return 21;
  auto ep = Endpoint::Create(TestConfig("prefill"), std::make_shared<TcpTransport>(), &store,
                             nullptr);
  if (!ep.ok()) return 22;
  auto address = (*ep)->Listen("10.231.7.1:0");
  if (!address.ok()) return 23;
  WriteLine(out, *address);
  auto peer = (*ep)->Accept(Deadline::After(core::Seconds(20)));
  if (!peer.ok()) return 24;
  const Deadline limit = Deadline::After(core::Seconds(60));
  while ((*ep)->IsConnected(*peer) && !limit.Expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return 0;
}

int Decode(const std::string& ns, const std::string& address, int out) {
  if (!EnterNamespace(ns)) return 30;
  MemoryBlockStore store(TestGeometry());
  if (!store.AddRequest(1, kBlocks, false).ok()) return 31;
  auto ep = Endpoint::Create(TestConfig("decode"), std::make_shared<TcpTransport>(), nullptr,
                             &store);
  if (!ep.ok()) return 32;
  auto peer = (*ep)->Connect(address, Deadline::After(core::Seconds(10)));
  if (!peer.ok()) return 33;
  core::Stopwatch watch;
  auto h = (*ep)->Post(*peer, {Direction::kPull, Priority::kSpeculative,
                               AllRanges(TestGeometry(), 1, kBlocks)});
  if (!h.ok() || !(*ep)->Wait(*h, Deadline::After(core::Seconds(60))).ok()) return 34;
  const double seconds = watch.ElapsedSeconds();
  if (!store.VerifyRequest(1).ok()) return 35;
  WriteLine(out, std::to_string(8.0 * 4096 * kBlocks * 8 / seconds));
  (*ep)->Disconnect(*peer);
  return 0;
}

TEST(TransferNetNamespaces, SaturatesAShapedVethLink) {
  // Children: enter their namespace first thing, in a fresh process.
  if (ChildRole() == "prefill") _exit(Prefill(ChildEnv("SG_NETNS"), ChildOutFd()));
  if (ChildRole() == "decode") {
    _exit(Decode(ChildEnv("SG_NETNS"), ChildEnv("SG_ADDRESS"), ChildOutFd()));
  }
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces (CI has it)";
  if (Shell("ip netns list") != 0) GTEST_SKIP() << "`ip netns` is unavailable (install iproute2)";
  Namespaces ns;
  const std::string why = ns.Create();
  if (!why.empty()) GTEST_SKIP() << "cannot build the veth/tbf link: " << why;

  // Prefill in namespace A, decode in B.
  ChildProcess prefill("prefill", {{"SG_NETNS", ns.a()}});
  const std::string address = prefill.ReadLine(core::Seconds(20));
  ASSERT_FALSE(address.empty()) << "prefill did not start";
  ChildProcess decode("decode", {{"SG_NETNS", ns.b()}, {"SG_ADDRESS", address}});
  const std::string goodput = decode.ReadLine(core::Seconds(60));
  EXPECT_EQ(decode.Wait(core::Seconds(20)), 0);
  ASSERT_FALSE(goodput.empty()) << "the transfer did not finish";
  const double bps = std::stod(goodput);
  std::printf("shaped veth: %.1f Mbit/s goodput on a %.0f Mbit/s tbf link (%.1f%%)\n", bps / 1e6,
              kRateMbit, 100 * bps / (kRateMbit * 1e6));
  EXPECT_GE(bps, 0.90 * kRateMbit * 1e6);
  EXPECT_LE(bps, 1.05 * kRateMbit * 1e6);
  EXPECT_EQ(prefill.Wait(core::Seconds(20)), 0);
}

}  // namespace
}  // namespace smartgen::transfer::testing
