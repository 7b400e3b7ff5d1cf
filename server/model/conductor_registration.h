// File: server/model/conductor_registration.h
//
// The conductors table (API 1.49's GET /v1/conductors; several kiln-servers on one database):
// one row per kiln-server, written by its ConductorRegistry (server/conductor/
// conductor_registry.h) when it starts, on every heartbeat and when it stops.
#pragma once

#include "server/schema/record.h"

namespace kiln::server {

/// Order must match kConductorFields in conductor_registration.cpp.
enum ConductorField : size_t {
  kCondId,
  kCondHostname,
  kCondGroup,
  kCondDrivers,  ///< JSON array of the hardware types the conductor enables
  kCondOnline,   ///< false once it stopped cleanly
  kCondCreatedAt,
  kCondUpdatedAt  ///< its last heartbeat
};

const Schema& conductorSchema();

}  // namespace kiln::server
