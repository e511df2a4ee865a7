// TLS on the public API: a self-signed certificate made here with the openssl command, an
// HTTPS client that verifies it, plain HTTP refused on the TLS port, silent TCP connections
// that never start their handshake holding no worker, and clear errors for bad files.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <vector>

#include "raw_client.h"
#include "server/http_server.h"
#include "test_util.h"

namespace smartgen::server::testing {
namespace {

struct CertFiles {
  std::string cert, key;
};

// A P-256 self-signed certificate for 127.0.0.1, once per process.
const CertFiles& SelfSigned() {
  static const CertFiles files = [] {
    const std::string dir = ::testing::TempDir();
    CertFiles f{dir + "tls_cert.pem", dir + "tls_key.pem"};
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout '" +
        f.key + "' -out '" + f.cert + "' 2>/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << "openssl (package openssl) is needed: " << cmd;
    return f;
  }();
  return files;
}

HttpServerOptions TlsOptions() {
  HttpServerOptions o;
  o.tls_cert_file = SelfSigned().cert;
  o.tls_key_file = SelfSigned().key;
  return o;
}

std::unique_ptr<httplib::SSLClient> HttpsClient(int port) {
  auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  c->set_ca_cert_path(SelfSigned().cert.c_str());
  c->enable_server_certificate_verification(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(10, 0);
  return c;
}

TEST(Tls, ServesCompletionsAndStreamsOverHttps) {
  ScriptedServer s(TlsOptions());
  auto client = HttpsClient(s.port());
  auto health = client->Get("/health");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  Script script;
  script.tokens = TokensOf("secure");
  s.backend().SetScript(script);
  auto plain = client->Post("/v1/completions", json{{"prompt", "x"}, {"max_tokens", 6}}.dump(),
                            "application/json");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 200);
  EXPECT_EQ(json::parse(plain->body)["choices"][0]["text"], "secure");
  auto stream = client->Post("/v1/completions",
                             json{{"prompt", "x"}, {"max_tokens", 6}, {"stream", true}}.dump(),
                             "application/json");
  ASSERT_TRUE(stream);
  EXPECT_EQ(stream->status, 200);
  EXPECT_NE(stream->body.find("data: [DONE]"), std::string::npos) << stream->body;
  // A second request on the same (kept-alive) TLS connection.
  EXPECT_EQ(client->Get("/v1/models")->status, 200);
}

TEST(Tls, PlainHttpOnTheTlsPortGetsNoAnswer) {
  ScriptedServer s(TlsOptions());
  RawClient c(s.port());
  c.Send(RequestHead("GET", "/health"));
  EXPECT_TRUE(c.ReadUntilClosed(core::Seconds(5)));
  EXPECT_EQ(c.received().find("HTTP/1.1 200"), std::string::npos);
  EXPECT_TRUE(WaitFor([&] {
    return Metric(s.Metrics(), "smartgen_server_connections_closed_total{reason=\"tls_failed\"}") >=
           1;
  }));
}

TEST(Tls, ConnectionsThatNeverHandshakeHoldNoWorker) {
  HttpServerOptions options = TlsOptions();
  options.threads = 1;
  options.header_timeout = core::Millis(500);
  ScriptedServer s(options);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 20; ++i) silent.push_back(std::make_unique<RawClient>(s.port()));
  auto client = HttpsClient(s.port());
  auto r = client->Get("/health");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  // And they are dropped at the head deadline.
  EXPECT_TRUE(silent.front()->ReadUntilClosed(core::Seconds(5)));
}

TEST(Tls, MissingOrMismatchedFilesAreClearErrors) {
  ScriptedBackend backend;
  HttpServerOptions missing = TlsOptions();
  missing.tls_cert_file = ::testing::TempDir() + "no_such_cert.pem";
  const Status a = HttpServer(&backend, missing).Start();
  EXPECT_EQ(a.code(), StatusCode::kInvalidArgument) << a.ToString();
  EXPECT_NE(a.ToString().find("no_such_cert.pem"), std::string::npos) << a.ToString();

  HttpServerOptions only_cert = TlsOptions();
  only_cert.tls_key_file.clear();
  EXPECT_EQ(HttpServer(&backend, only_cert).Start().code(), StatusCode::kInvalidArgument);

  // Another key than the certificate's.
  const std::string other_key = ::testing::TempDir() + "other_key.pem";
  ASSERT_EQ(std::system(("openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:prime256v1 "
                         "-out '" +
                         other_key + "' 2>/dev/null")
                            .c_str()),
            0);
  HttpServerOptions mismatch = TlsOptions();
  mismatch.tls_key_file = other_key;
  const Status c = HttpServer(&backend, mismatch).Start();
  EXPECT_EQ(c.code(), StatusCode::kInvalidArgument) << c.ToString();
}

}  // namespace
}  // namespace smartgen::server::testing
