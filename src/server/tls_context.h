// TlsContext: the server side of TLS for the public HTTP API (OpenSSL), built from a PEM
// certificate chain and a PEM private key. TLS 1.2 or newer only; the key must match the
// certificate. It only holds the configuration; each connection makes its own SSL object from
// it (http_connection.h drives the handshake and the records without blocking).
//
// Errors: kInvalidArgument naming the file and OpenSSL's reason when a file is missing,
// unreadable, not PEM, or the key does not match the certificate.
// Thread-safety: immutable after Load(); NewSession() may be called from any thread.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace smartgen::server {

class TlsContext {
 public:
  static Result<std::shared_ptr<TlsContext>> Load(const std::string& cert_path,
                                                  const std::string& key_path);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new server-side SSL session for a connection (the caller owns it: SSL_free), or null
  // when OpenSSL is out of memory.
  SSL* NewSession() const;

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

}  // namespace smartgen::server
