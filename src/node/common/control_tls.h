// ControlTls: optional TLS for the control plane (/internal/* HTTP between the router and the
// nodes), OpenSSL through cpp-httplib. With it on, every node serves HTTPS with its certificate
// and accepts only clients whose certificate the CA signed (mutual TLS); the router presents its
// certificate and checks each node's against the same CA, host name or IP included (the
// certificate's subjectAltName must name the address the router dials). The HMAC signature of
// control_auth.h stays on top: TLS adds confidentiality and certificate identities, the token
// still authorises. The KV link is not covered (docs/DEPLOYMENT.md, "What is not encrypted").
//
// Errors: kInvalidArgument naming the file when a file is missing, unreadable or not a
// matching PEM certificate/key, or when only some of the three are given.
// Thread-safety: a ControlTls is an immutable value; each client is used by one thread.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

#include "core/result.h"

namespace smartgen::node {

struct ControlTls {
  std::string cert_file;  // PEM certificate chain of this process (server and client side)
  std::string key_file;   // PEM private key of cert_file
  std::string ca_file;    // PEM CA certificate(s) every peer's certificate must chain to

  bool enabled() const { return !cert_file.empty() || !key_file.empty() || !ca_file.empty(); }
  // OK when off, or when all three files are given and readable.
  Status Validate() const;
  std::string ToString() const;  // "off" or the three paths
};

// The control-plane HTTP server of a node: plain when `tls` is off, else HTTPS that requires a
// client certificate signed by tls.ca_file (TLS 1.2 or newer).
Result<std::unique_ptr<httplib::Server>> MakeControlServer(const ControlTls& tls);

// A client for host:port: plain when `tls` is null or off, else HTTPS presenting tls's
// certificate and verifying the server's against tls.ca_file (and its name against `host`).
std::unique_ptr<httplib::Client> MakeControlClient(const std::string& host, int port,
                                                   const ControlTls* tls);

}  // namespace smartgen::node
