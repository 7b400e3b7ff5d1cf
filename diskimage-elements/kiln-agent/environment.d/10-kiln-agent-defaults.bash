# Where the static kiln-agent binary comes from on the build host. DIB_ names survive DIB's
# environment filtering; KILN_AGENT_BINARY is accepted too.
export DIB_KILN_AGENT_BINARY=${DIB_KILN_AGENT_BINARY:-${KILN_AGENT_BINARY:-}}
