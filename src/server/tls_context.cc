#include "server/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace smartgen::server {
namespace {

// The reason of OpenSSL's most recent error on this thread (and clears the queue).
std::string OpenSslReason() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return buf;
}

}  // namespace

Result<std::shared_ptr<TlsContext>> TlsContext::Load(const std::string& cert_path,
                                                     const std::string& key_path) {
  if (cert_path.empty() || key_path.empty()) {
    return InvalidArgument("TLS needs both a certificate and a key file");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Internal("SSL_CTX_new failed: {}", OpenSslReason());
  std::shared_ptr<TlsContext> out(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Writes may stop midway on a non-blocking socket and resume from a moved buffer.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_path.c_str()) != 1) {
    return InvalidArgument("TLS certificate '{}' cannot be used: {}", cert_path, OpenSslReason());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
    return InvalidArgument("TLS key '{}' cannot be used: {}", key_path, OpenSslReason());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return InvalidArgument("TLS key '{}' does not match certificate '{}': {}", key_path, cert_path,
                           OpenSslReason());
  }
  return out;
}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
}

SSL* TlsContext::NewSession() const {
  return SSL_new(ctx_);
}

}  // namespace smartgen::server
