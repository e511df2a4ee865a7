#include "node/common/control_tls.h"

#include <fmt/format.h>
#include <openssl/ssl.h>

#include <fstream>

#include "transfer/socket.h"

namespace smartgen::node {
namespace {

Status Readable(const std::string& path, const char* what) {
  if (path.empty())
    return InvalidArgument("control TLS: {} is missing (give cert, key and CA together)", what);
  std::ifstream in(path);
  if (!in) return InvalidArgument("control TLS: cannot read {} '{}'", what, path);
  return Status::Ok();
}

}  // namespace

Status ControlTls::Validate() const {
  if (!enabled()) return Status::Ok();
  SG_RETURN_IF_ERROR(Readable(cert_file, "the certificate (--control-tls-cert)"));
  SG_RETURN_IF_ERROR(Readable(key_file, "the key (--control-tls-key)"));
  return Readable(ca_file, "the CA (--control-tls-ca)");
}

std::string ControlTls::ToString() const {
  if (!enabled()) return "off";
  return fmt::format("cert={} key={} ca={}", cert_file, key_file, ca_file);
}

Result<std::unique_ptr<httplib::Server>> MakeControlServer(const ControlTls& tls) {
  if (!tls.enabled()) return std::make_unique<httplib::Server>();
  SG_RETURN_IF_ERROR(tls.Validate());
  // The CA file makes httplib require and verify a client certificate (SSL_VERIFY_PEER |
  // SSL_VERIFY_FAIL_IF_NO_PEER_CERT).
  auto server = std::make_unique<httplib::SSLServer>(tls.cert_file.c_str(), tls.key_file.c_str(),
                                                     tls.ca_file.c_str());
  if (!server->is_valid()) {
    return InvalidArgument(
        "control TLS: cannot load certificate '{}' with key '{}' and CA '{}' "
        "(not PEM, or the key does not match)",
        tls.cert_file, tls.key_file, tls.ca_file);
  }
  SSL_CTX_set_min_proto_version(server->ssl_context(), TLS1_2_VERSION);
  return std::unique_ptr<httplib::Server>(std::move(server));
}

std::unique_ptr<httplib::Client> MakeControlClient(const std::string& host, int port,
                                                   const ControlTls* tls) {
  if (tls == nullptr || !tls->enabled()) return std::make_unique<httplib::Client>(host, port);
  auto client = std::make_unique<httplib::Client>(
      "https://" + transfer::FormatHostPort(host, static_cast<std::uint16_t>(port)), tls->cert_file,
      tls->key_file);
  client->set_ca_cert_path(tls->ca_file.c_str());
  client->enable_server_certificate_verification(true);
  return client;
}

}  // namespace smartgen::node
