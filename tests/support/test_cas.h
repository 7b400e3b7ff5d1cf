// File: tests/support/test_cas.h
//
// Two throwaway self-signed EC P-256 CAs for TLS tests (their keys were deleted: nothing can
// be signed with them), and the form kiln-server puts them in on the kernel command line.
#pragma once

#include <string>

namespace kiln::test {

inline const std::string kCaA =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBljCCATugAwIBAgIUVOWIu7kDV+PkCs8Nr/QKyTPtpSswCgYIKoZIzj0EAwIw\n"
    "HzEdMBsGA1UEAwwUS2lsbiBhZ2VudCB0ZXN0IENBIEEwIBcNMjYxMTI0MTMwNzEy\n"
    "WhgPMjEyNjEwMzExMzA3MTJaMB8xHTAbBgNVBAMMFEtpbG4gYWdlbnQgdGVzdCBD\n"
    "QSBBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEUCYBku1mUZdeTGIxobEbyauT\n"
    "169QVAuLeCdUbBV5jVtEXAHCY3aA/bAO9aWgIk/88RO3l2EKCC/R301M7ZTKjKNT\n"
    "MFEwHQYDVR0OBBYEFLltAiegCmkkWsrbZUrdskKZShx/MB8GA1UdIwQYMBaAFLlt\n"
    "AiegCmkkWsrbZUrdskKZShx/MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID\n"
    "SQAwRgIhALGhcXQl1vqERD0Z86tsmZ4mtg4koF8r8CEiTBHGKmk5AiEAurlriKQL\n"
    "XqBDgiZ8U39kevcRcSSJKEjG0vyIP7lOK1k=\n"
    "-----END CERTIFICATE-----\n";
inline const std::string kCaB =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBlTCCATugAwIBAgIUBpeUfgNJFvAwztrFr8828J4nJYkwCgYIKoZIzj0EAwIw\n"
    "HzEdMBsGA1UEAwwUS2lsbiBhZ2VudCB0ZXN0IENBIEIwIBcNMjYxMTI0MTMwNzEy\n"
    "WhgPMjEyNjEwMzExMzA3MTJaMB8xHTAbBgNVBAMMFEtpbG4gYWdlbnQgdGVzdCBD\n"
    "QSBCMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEY+Y4VDIOkt8Yf283UKkMZv+y\n"
    "XYzwuOMcD1V9/MTUCPf226HP0ev9Lk79wcWJwUfZttarZ1fTNZZBoFQKLRfRoqNT\n"
    "MFEwHQYDVR0OBBYEFOZSUCJEwrmhiyNY4+4u/Q2mn1fuMB8GA1UdIwQYMBaAFOZS\n"
    "UCJEwrmhiyNY4+4u/Q2mn1fuMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID\n"
    "SAAwRQIgVL+w24JB5kMJ1T9Rb2rg7JeVy3DVRnHh607omb9r5oECIQDJTXvl17s7\n"
    "jC4vkqVDb9OIalm/S1iCv2SaGhFoKPxW4A==\n"
    "-----END CERTIFICATE-----\n";

/// The base64 of a PEM certificate's DER: its body without the BEGIN/END lines and line breaks
/// (what kiln.api_ca= carries).
inline std::string derBase64(const std::string& pem) {
  std::string out;
  std::string line;
  for (char c : pem) {
    if (c != '\n') {
      line += c;
      continue;
    }
    if (line.rfind("-----", 0) != 0) out += line;
    line.clear();
  }
  return out;
}

}  // namespace kiln::test
