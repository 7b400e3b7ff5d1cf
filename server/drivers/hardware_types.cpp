#include "server/drivers/hardware_types.h"

namespace kiln::server {
namespace {

using IT = InterfaceType;

constexpr PropertyDef kIpmiProperties[] = {
    {"ipmi_address", "IP address or hostname of the node's BMC. Required.", true},
    {"ipmi_username", "BMC user name; default is the NULL user. Optional.", false},
    {"ipmi_password", "BMC password. Optional.", false},
    {"ipmi_port", "Remote IPMI RMCP port. Optional.", false},
    {"ipmi_priv_level",
     "Privilege level; default is ADMINISTRATOR. One of ADMINISTRATOR, CALLBACK, OPERATOR, "
     "USER. Optional.",
     false},
    {"ipmi_protocol_version",
     "The version of the IPMI protocol; default is \"2.0\". One of \"1.5\", \"2.0\". Optional.",
     false},
    {"ipmi_cipher_suite",
     "The IPMI 2.0 cipher suite ipmitool uses (-C), e.g. 3 (AES-128, SHA1) or 17 (AES-128, "
     "SHA256). Optional; default: ipmitool's choice. Not with IPMI 1.5.",
     false},
};

constexpr PropertyDef kRedfishProperties[] = {
    {"redfish_address",
     "The URL address to the Redfish controller. It must include the authority portion of the "
     "URL, and can optionally include the scheme. If the scheme is missing, https is assumed. "
     "For example: https://mgmt.vendor.com. Required",
     true},
    {"redfish_system_id",
     "The canonical path to the ComputerSystem resource that the driver will interact with, "
     "for example /redfish/v1/Systems/1. Only required if the BMC manages more than one "
     "ComputerSystem. Optional",
     false},
    {"redfish_username", "User account with admin/server-profile access privilege. Optional",
     false},
    {"redfish_password", "User account password. Optional", false},
    {"redfish_verify_ca",
     "Either a Boolean value or a path to a CA_BUNDLE file. If true (the default) the BMC's "
     "certificate is verified; if false it is not. Optional",
     false},
    {"redfish_auth_type",
     "Redfish HTTP client authentication method: \"basic\", \"session\" or \"auto\" (default). "
     "Optional",
     false},
};

// The agent images' properties, shared by the network boot and virtual media interfaces.
constexpr PropertyDef kDeployKernelProperty{
    "deploy_kernel",
    "URL or local path of the agent kernel. Required unless the server sets "
    "[conductor] deploy_kernel.",
    false};
constexpr PropertyDef kDeployRamdiskProperty{
    "deploy_ramdisk",
    "URL or local path of the agent initramfs. Required unless the server sets "
    "[conductor] deploy_ramdisk.",
    false};
constexpr PropertyDef kKernelAppendParamsProperty{
    "kernel_append_params",
    "Kernel command line arguments for the agent ramdisk, replacing [pxe] "
    "kernel_append_params for this node; %default% stands for the configured value. "
    "Optional.",
    false};

constexpr PropertyDef kNetbootProperties[] = {kDeployKernelProperty, kDeployRamdiskProperty,
                                              kKernelAppendParamsProperty};

// Ironic's fake vendor interface (the one fake-hardware uses by default) advertises two
// placeholder properties, so that fake-hardware's property list is not empty; Kiln's does the
// same, with the same names and texts.
// Ironic's redfish-virtual-media properties that Kiln honours.
constexpr PropertyDef kVirtualMediaProperties[] = {
    kDeployKernelProperty,
    kDeployRamdiskProperty,
    {"deploy_iso",
     "URL or local path of a bootable ISO of the agent, used instead of one built from "
     "deploy_kernel and deploy_ramdisk. Optional.",
     false},
    kKernelAppendParamsProperty,
};

constexpr PropertyDef kFakeVendorProperties[] = {
    {"B1", "B1 description. Required.", true},
    {"B2", "B2 description. Required.", true},
};

// Aliases (the idrac hardware type): Ironic's iDRAC implementations are Dell-specific
// subclasses of the Redfish ones; Kiln has no iDRAC-specific code, so each name is the generic
// implementation under another name (see docs/compatibility.md, "Redfish RAID and iDRAC").
constexpr ImplementationDef kImplementations[] = {
    {IT::Bios, "fake", {}},
    {IT::Bios, "idrac-redfish", kRedfishProperties, false, "redfish"},
    {IT::Bios, "no-bios", {}, true},
    {IT::Bios, "redfish", kRedfishProperties},
    {IT::Boot, "fake", {}},
    {IT::Boot, "idrac-redfish-virtual-media", kVirtualMediaProperties, false,
     "redfish-virtual-media"},
    // UEFI HTTP boot (docs/provisioning-network.md); Ironic does not enable them by default.
    {IT::Boot, "http", kNetbootProperties, false, {}, true},
    {IT::Boot, "http-ipxe", kNetbootProperties, false, {}, true},
    {IT::Boot, "ipxe", kNetbootProperties},
    {IT::Boot, "pxe", kNetbootProperties},
    {IT::Boot, "redfish-virtual-media", kVirtualMediaProperties},
    {IT::Console, "fake", {}},
    {IT::Console, "no-console", {}, true},
    {IT::Deploy, "autodetect", {}},
    {IT::Deploy, "direct", {}},
    {IT::Deploy, "fake", {}},
    {IT::Deploy, "ramdisk", {}},
    {IT::Firmware, "fake", {}},
    {IT::Firmware, "no-firmware", {}, true},
    {IT::Firmware, "redfish", kRedfishProperties},
    {IT::Inspect, "agent", {}},
    {IT::Inspect, "fake", {}},
    // Ironic's idrac-redfish inspection is its out-of-band Redfish inspection plus Dell
    // specifics; here it is the generic one.
    {IT::Inspect, "idrac-redfish", kRedfishProperties, false, "redfish"},
    {IT::Inspect, "no-inspect", {}, true},
    {IT::Inspect, "redfish", kRedfishProperties},
    {IT::Management, "fake", {}},
    {IT::Management, "idrac-redfish", kRedfishProperties, false, "redfish"},
    {IT::Management, "ipmitool", kIpmiProperties},
    {IT::Management, "noop", {}},
    {IT::Management, "redfish", kRedfishProperties},
    {IT::Network, "flat", {}},
    {IT::Network, "noop", {}},
    {IT::Power, "fake", {}},
    {IT::Power, "idrac-redfish", kRedfishProperties, false, "redfish"},
    {IT::Power, "ipmitool", kIpmiProperties},
    {IT::Power, "redfish", kRedfishProperties},
    {IT::Raid, "agent", {}},
    {IT::Raid, "fake", {}},
    {IT::Raid, "idrac-redfish", kRedfishProperties, false, "redfish"},
    {IT::Raid, "no-raid", {}, true},
    {IT::Raid, "redfish", kRedfishProperties},
    {IT::Rescue, "fake", {}},
    {IT::Rescue, "no-rescue", {}, true},
    {IT::Storage, "fake", {}},
    {IT::Storage, "noop", {}},
    {IT::Vendor, "fake", kFakeVendorProperties},
    {IT::Vendor, "idrac-redfish", kRedfishProperties, false, "redfish"},
    {IT::Vendor, "no-vendor", {}, true},
    // eject_vmedia and the EventService subscriptions (redfish_vendor.h).
    {IT::Vendor, "redfish", kRedfishProperties},
};

/// The interfaces every generic hardware type shares (Ironic's GenericHardware): no-op first
/// where the feature is optional, so enabling a hardware type never turns on more than asked.
HardwareTypeDef generic(std::string_view name, std::vector<std::string_view> power,
                        std::vector<std::string_view> management) {
  HardwareTypeDef hw{name, {}};
  auto set = [&](IT t, std::vector<std::string_view> v) { hw.supported[static_cast<size_t>(t)] = v; };
  set(IT::Bios, {"no-bios"});
  set(IT::Boot, {"ipxe", "pxe", "http-ipxe", "http"});
  set(IT::Console, {"no-console"});
  // Ironic lists autodetect first (its default for new nodes); direct stays first here, so that
  // new nodes keep Kiln's default; ramdisk and autodetect are there for nodes that name them
  // (Metal3 names ramdisk for its live ISOs).
  set(IT::Deploy, {"direct", "ramdisk", "autodetect"});
  set(IT::Firmware, {"no-firmware"});
  set(IT::Inspect, {"no-inspect", "agent"});
  set(IT::Management, std::move(management));
  set(IT::Network, {"flat", "noop"});
  set(IT::Power, std::move(power));
  set(IT::Raid, {"no-raid", "agent"});
  set(IT::Rescue, {"no-rescue"});
  set(IT::Storage, {"noop"});
  set(IT::Vendor, {"no-vendor"});
  return hw;
}

const std::vector<HardwareTypeDef>& hardwareTypes() {
  static const std::vector<HardwareTypeDef> types = [] {
    std::vector<HardwareTypeDef> v;
    v.push_back(generic("ipmi", {"ipmitool"}, {"ipmitool"}));
    // Ironic's redfish hardware type also has the redfish bios interface (after no-bios here,
    // so new nodes keep no-bios unless they ask for it).
    HardwareTypeDef redfish = generic("redfish", {"redfish"}, {"redfish"});
    redfish.supported[static_cast<size_t>(IT::Bios)] = {"no-bios", "redfish"};
    redfish.supported[static_cast<size_t>(IT::Boot)] = {"ipxe", "pxe", "http-ipxe", "http",
                                                         "redfish-virtual-media"};
    // Ironic's order: the redfish firmware interface first (Metal3 names it on every node).
    redfish.supported[static_cast<size_t>(IT::Firmware)] = {"redfish", "no-firmware"};
    // Ironic lists redfish, no-raid, agent (so its default is redfish, which its default
    // enabled_raid_interfaces enable); no-raid first here, so that new nodes keep no-raid unless
    // they ask for RAID (Metal3 always names its raid_interface).
    redfish.supported[static_cast<size_t>(IT::Raid)] = {"no-raid", "redfish", "agent"};
    // Ironic's order: the redfish vendor interface (event subscriptions, which Metal3 uses) first.
    redfish.supported[static_cast<size_t>(IT::Vendor)] = {"redfish", "no-vendor"};
    // Ironic lists redfish first; no-inspect stays first here (the default, unchanged), and
    // Metal3 names its inspect_interface (agent, or redfish for its fast inspection).
    redfish.supported[static_cast<size_t>(IT::Inspect)] = {"no-inspect", "agent", "redfish"};
    v.push_back(redfish);
    // Ironic's idrac hardware type: Dell's names for the Redfish implementations (aliases, see
    // kImplementations), with the same choices as the redfish type. Not enabled by default, as
    // in Ironic ([DEFAULT] enabled_hardware_types = ipmi, redfish).
    HardwareTypeDef idrac = generic("idrac", {"idrac-redfish", "redfish"}, {"idrac-redfish"});
    idrac.supported[static_cast<size_t>(IT::Bios)] = {"no-bios", "idrac-redfish", "redfish"};
    idrac.supported[static_cast<size_t>(IT::Boot)].push_back("idrac-redfish-virtual-media");
    idrac.supported[static_cast<size_t>(IT::Firmware)] = {"redfish", "no-firmware"};
    idrac.supported[static_cast<size_t>(IT::Inspect)].push_back("idrac-redfish");
    idrac.supported[static_cast<size_t>(IT::Raid)] = {"no-raid", "idrac-redfish", "agent"};
    idrac.supported[static_cast<size_t>(IT::Vendor)] = {"idrac-redfish", "redfish", "no-vendor"};
    v.push_back(idrac);
    // Power is switched by hand: Ironic's manual-management uses the fake power interface.
    v.push_back(generic("manual-management", {"fake"}, {"noop"}));
    HardwareTypeDef fake{"fake-hardware", {}};
    auto set = [&](IT t, std::vector<std::string_view> s) { fake.supported[static_cast<size_t>(t)] = s; };
    set(IT::Bios, {"fake", "no-bios"});
    set(IT::Boot, {"fake", "ipxe", "pxe", "http-ipxe", "http"});
    set(IT::Console, {"fake", "no-console"});
    set(IT::Deploy, {"fake", "direct", "ramdisk", "autodetect"});
    // no-firmware first: new nodes get Ironic's default (its enabled_firmware_interfaces is
    // only no-firmware); the fake one is there for nodes that ask for it.
    set(IT::Firmware, {"no-firmware", "fake"});
    set(IT::Inspect, {"fake", "no-inspect", "agent"});
    set(IT::Management, {"fake", "noop"});
    set(IT::Network, {"flat", "noop"});
    set(IT::Power, {"fake"});
    set(IT::Raid, {"fake", "no-raid", "agent"});
    set(IT::Rescue, {"fake", "no-rescue"});
    set(IT::Storage, {"fake", "noop"});
    set(IT::Vendor, {"fake", "no-vendor"});
    v.push_back(fake);
    return v;
  }();
  return types;
}

}  // namespace

std::span<const ImplementationDef> builtinImplementations() { return kImplementations; }

std::span<const HardwareTypeDef> builtinHardwareTypes() { return hardwareTypes(); }

const ImplementationDef* findImplementation(InterfaceType type, std::string_view name) {
  for (const auto& impl : kImplementations) {
    if (impl.type == type && impl.name == name) {
      return &impl;
    }
  }
  return nullptr;
}

}  // namespace kiln::server
