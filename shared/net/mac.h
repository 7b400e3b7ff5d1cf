// File: shared/net/mac.h
//
// Ethernet MAC addresses as text: the one parser and the spellings Kiln writes.
//
//   canonical  "52:54:00:ab:cd:ef": six pairs of hexadecimal digits, lower case, joined by
//              ':'. Ports, port groups, lookups and the agent's network data store and compare
//              this form (Ironic's utils.validate_and_normalize_mac).
//   pxe        "01-52-54-00-ab-cd-ef": the ARP type 1 (Ethernet) and the address joined by '-',
//              as pxelinux and GRUB name a MAC's configuration file and as the kernel's
//              BOOTIF= carries it.
//
// parseMac accepts exactly six pairs and five separators, either case. Which separators it
// takes is the caller's choice: the API takes ':' only (Ironic's validate_and_normalize_mac);
// the network-boot script names (iPXE's ${mac:hexhyp}) and Redfish inspection (oslo's
// is_valid_mac) also take '-', each separator either way. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kiln::net {

/// Which separators parseMac accepts between the pairs.
enum class MacSeparators {
  Colon,        ///< "aa:bb:cc:dd:ee:ff" only
  ColonOrDash,  ///< also "aa-bb-cc-dd-ee-ff" (and a mix of the two)
};

/// The canonical form of `text`; nullopt when it is not a MAC address in an accepted form.
std::optional<std::string> parseMac(std::string_view text,
                                    MacSeparators accepted = MacSeparators::Colon);

/// "01-" followed by `mac` lower-cased with its ':' as '-' ("01-52-54-00-ab-cd-ef" for
/// "52:54:00:AB:CD:EF"). `mac` should be canonical (or parseMac's input); other text is
/// transformed the same way, character by character.
std::string pxeMac(std::string_view mac);

}  // namespace kiln::net
