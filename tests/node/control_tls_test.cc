// TLS on the control plane (issue 11): a deployment - two nodes and a router - whose /internal/*
// calls run over mutual TLS with certificates made here by the openssl command from a
// throwaway CA, answering with colocated's tokens; a node refuses plain HTTP, a client without
// a certificate and one whose certificate another CA signed; a router that cannot verify the
// nodes' certificates sees no node up; the signature is still required over TLS.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "control_test_util.h"
#include "node/decode/decode_node.h"
#include "node/prefill/prefill_node.h"
#include "node/router/router.h"
#include "node_test_util.h"

namespace smartgen::node {
namespace {

constexpr std::uint64_t kTlsModelSeed = 79;
constexpr const char* kTlsToken = "control-tls-test-token";

struct Pki {
  std::string dir;
  std::string Path(const std::string& name) const { return dir + name; }
};

// Runs one openssl command in `dir` (stderr kept for a failure message).
bool Openssl(const std::string& dir, const std::string& args) {
  const std::string cmd = "cd '" + dir + "' && openssl " + args + " >/dev/null 2>>openssl.log";
  return std::system(cmd.c_str()) == 0;
}

// A CA and, signed by it, a certificate for `name` valid for 127.0.0.1 (server and client).
bool MakeCa(const std::string& dir, const std::string& ca) {
  return Openssl(
      dir, "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=" +
               ca + " -keyout " + ca + ".key -out " + ca + ".crt");
}
bool MakeCert(const std::string& dir, const std::string& ca, const std::string& name) {
  std::ofstream(dir + name + ".ext") << "subjectAltName=IP:127.0.0.1\n"
                                        "extendedKeyUsage=serverAuth,clientAuth\n";
  return Openssl(dir, "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" +
                          name + " -keyout " + name + ".key -out " + name + ".csr") &&
         Openssl(dir, "x509 -req -in " + name + ".csr -CA " + ca + ".crt -CAkey " + ca +
                          ".key -CAcreateserial -days 1 -extfile " + name + ".ext -out " + name +
                          ".crt");
}

// Once per process: ca signs node and router; rogue-ca signs rogue.
const Pki& TestPki() {
  static const Pki pki = [] {
    Pki p{::testing::TempDir() + "control_tls_pki/"};
    EXPECT_EQ(std::system(("mkdir -p '" + p.dir + "'").c_str()), 0);
    const bool ok = MakeCa(p.dir, "ca") && MakeCert(p.dir, "ca", "node") &&
                    MakeCert(p.dir, "ca", "router") && MakeCa(p.dir, "rogue-ca") &&
                    MakeCert(p.dir, "rogue-ca", "rogue");
    EXPECT_TRUE(ok) << "openssl (package openssl) failed; see " << p.dir << "openssl.log";
    return p;
  }();
  return pki;
}

ControlTls TlsOf(const std::string& name, const std::string& ca = "ca") {
  const Pki& p = TestPki();
  return {p.Path(name + ".crt"), p.Path(name + ".key"), p.Path(ca + ".crt")};
}

NodeConfig TlsNodeConfig(const std::string& name) {
  NodeConfig c = testing::SmallNodeConfig(name, kTlsModelSeed);
  c.token = kTlsToken;
  c.warmup_tokens = 0;
  c.control_tls = TlsOf("node");
  return c;
}

// GET /internal/info over HTTPS presenting `client` (empty: no certificate); the HTTP status,
// or -1 when the TLS handshake or the connection failed.
int HttpsInfo(int port, const std::string& client, bool sign) {
  const Pki& p = TestPki();
  std::unique_ptr<httplib::SSLClient> c =
      client.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", port)
                     : std::make_unique<httplib::SSLClient>(
                           "127.0.0.1", port, p.Path(client + ".crt"), p.Path(client + ".key"));
  c->set_ca_cert_path(p.Path("ca.crt").c_str());
  c->enable_server_certificate_verification(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(5, 0);
  auto r =
      c->Get("/internal/info", sign ? SignHeaders(kTlsToken, "GET", "/internal/info", "", "probe")
                                    : httplib::Headers{});
  return r ? r->status : -1;
}

class ControlTlsDeployment : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = PrefillNode::Create(TlsNodeConfig("prefill"));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    prefill_ = std::move(*p);
    ASSERT_TRUE(prefill_->Start().ok());
    auto d = DecodeNode::Create(TlsNodeConfig("decode"));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    decode_ = std::move(*d);
    ASSERT_TRUE(decode_->Start().ok());
  }
  RouterConfig Config(ControlTls tls) const {
    RouterConfig rc;
    rc.model_path = TlsNodeConfig("x").model_path;
    rc.token = kTlsToken;
    rc.name = "router-tls";
    rc.control_tls = std::move(tls);
    rc.prefill_nodes = {"127.0.0.1:" + std::to_string(prefill_->http_port())};
    rc.decode_nodes = {"127.0.0.1:" + std::to_string(decode_->http_port())};
    return rc;
  }
  std::unique_ptr<PrefillNode> prefill_;
  std::unique_ptr<DecodeNode> decode_;
};

TEST_F(ControlTlsDeployment, EveryModeAnswersWithColocatedTokensOverMutualTls) {
  auto router = Router::Create(Config(TlsOf("router")));
  ASSERT_TRUE(router.ok()) << router.status().ToString();
  ASSERT_TRUE((*router)->Health().ok()) << (*router)->HealthReport().dump();
  const std::vector<std::int32_t> prompt = {7, 3, 9, 1, 4, 4, 8, 2, 6, 5,
                                            1, 9, 3, 7, 2, 8, 5, 5, 6, 1};
  const auto want = testing::ReferenceTokens(TlsNodeConfig("x").model_path, prompt, 10);
  for (const char* mode : {"colocated", "full", "layerwise"}) {
    std::vector<std::int32_t> got;
    auto r = testing::GenerateTokens(**router, testing::TestRequest(mode, prompt, 10), &got);
    ASSERT_TRUE(r.ok()) << mode << ": " << r.status().ToString();
    EXPECT_EQ(got, want) << mode;
    EXPECT_FALSE(r->stats.value("fallback", true)) << mode;
  }
}

TEST_F(ControlTlsDeployment, NodesRefusePlainHttpStrangersAndUnsignedCalls) {
  const int port = decode_->http_port();
  {  // Plain HTTP on the TLS port gets no HTTP answer.
    httplib::Client plain("127.0.0.1", port);
    plain.set_connection_timeout(5, 0);
    plain.set_read_timeout(5, 0);
    auto r = plain.Get("/health");
    EXPECT_FALSE(r && r->status == 200);
  }
  EXPECT_EQ(HttpsInfo(port, "", true), -1) << "no client certificate";
  EXPECT_EQ(HttpsInfo(port, "rogue", true), -1) << "a certificate of another CA";
  EXPECT_EQ(HttpsInfo(port, "router", false), 401) << "TLS does not replace the token";
  EXPECT_EQ(HttpsInfo(port, "router", true), 200);
  EXPECT_EQ(HttpsInfo(prefill_->http_port(), "router", true), 200);
}

TEST_F(ControlTlsDeployment, ARouterThatCannotVerifyTheNodesSeesNoneUp) {
  RouterConfig rc = Config(TlsOf("rogue", "rogue-ca"));  // trusts only the rogue CA
  rc.startup_wait = core::Millis(500);
  auto router = Router::Create(rc);
  ASSERT_TRUE(router.ok()) << router.status().ToString();
  EXPECT_FALSE((*router)->Health().ok()) << (*router)->HealthReport().dump();
  // Half a configuration is a clear error, at once.
  RouterConfig half = Config({TestPki().Path("router.crt"), "", ""});
  EXPECT_EQ(Router::Create(half).status().code(), StatusCode::kInvalidArgument);
  NodeConfig bad = TlsNodeConfig("bad");
  bad.control_tls.key_file = TestPki().Path("missing.key");
  auto node = DecodeNode::Create(bad);
  ASSERT_TRUE(node.ok());
  const Status st = (*node)->Start();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
}

}  // namespace
}  // namespace smartgen::node
