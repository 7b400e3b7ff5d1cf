# Where the static kiln-agent binary comes from on the build host. DIB_ names survive DIB's
# environment filtering; KILN_AGENT_BINARY is accepted too.
export DIB_KILN_AGENT_BINARY=${DIB_KILN_AGENT_BINARY:-${KILN_AGENT_BINARY:-}}
# Optional: the CA that signs kiln-server's certificate, installed as /etc/kiln/ca.pem.
export DIB_KILN_AGENT_CA_FILE=${DIB_KILN_AGENT_CA_FILE:-}
