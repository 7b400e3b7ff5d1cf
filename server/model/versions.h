// File: server/model/versions.h
//
// Every microversion of Ironic's API that Kiln serves, by name (refactor 2 of the 2026-11 review;
// the names follow Ironic's ironic/api/controllers/v1/versions.py). The route table, the FieldSpec
// tables, the provision verbs and the handlers use these names instead of bare numbers, so that
// `grep k87Service` finds every place a version rule lives. docs/compatibility.md says what each
// one adds and how Kiln differs.
#pragma once

namespace kiln::server::ver {

inline constexpr int k1InitialVersion = 1;
inline constexpr int k2AvailableState = 2;
inline constexpr int k3DriverInternalInfo = 3;
inline constexpr int k4ManageableState = 4;
inline constexpr int k5NodeName = 5;
inline constexpr int k6InspectState = 6;
inline constexpr int k7NodeClean = 7;
inline constexpr int k8FetchingSubsetOfFields = 8;
inline constexpr int k9ProvisionStateFilter = 9;
inline constexpr int k10UnrestrictedNodeName = 10;
inline constexpr int k11EnrollState = 11;
inline constexpr int k12RaidConfig = 12;
inline constexpr int k13AbortVerb = 13;
inline constexpr int k14LinksNodestatesDriverproperties = 14;
inline constexpr int k15ManualClean = 15;
inline constexpr int k16DriverFilter = 16;
inline constexpr int k17AdoptVerb = 17;
inline constexpr int k18PortInternalInfo = 18;
inline constexpr int k19PortAdvancedNetFields = 19;
inline constexpr int k20NetworkInterface = 20;
inline constexpr int k21ResourceClass = 21;
inline constexpr int k22LookupHeartbeat = 22;
inline constexpr int k23Portgroups = 23;
inline constexpr int k24PortgroupsSubcontrollers = 24;
inline constexpr int k25UnsetChassisUuid = 25;
inline constexpr int k26PortgroupModeProperties = 26;
inline constexpr int k27SoftPowerOff = 27;
inline constexpr int k28VifsSubcontroller = 28;
inline constexpr int k29InjectNmi = 29;
inline constexpr int k30DynamicDrivers = 30;
inline constexpr int k31DynamicInterfaces = 31;
inline constexpr int k32Volume = 32;
inline constexpr int k33StorageInterface = 33;
inline constexpr int k34PortPhysicalNetwork = 34;
inline constexpr int k35RebuildConfigDrive = 35;
inline constexpr int k36AgentVersionHeartbeat = 36;
inline constexpr int k37NodeTraits = 37;
inline constexpr int k38RescueInterface = 38;
inline constexpr int k39InspectWait = 39;
inline constexpr int k40BiosInterface = 40;
inline constexpr int k41InspectionAbort = 41;
inline constexpr int k42Fault = 42;
inline constexpr int k43EnableDetailQuery = 43;
inline constexpr int k44NodeDeployStep = 44;
inline constexpr int k45ResetInterfaces = 45;
inline constexpr int k46NodeConductorGroup = 46;
inline constexpr int k47NodeAutomatedClean = 47;
inline constexpr int k48NodeProtected = 48;
inline constexpr int k49Conductors = 49;
inline constexpr int k50NodeOwner = 50;
inline constexpr int k51NodeDescription = 51;
inline constexpr int k52Allocation = 52;
inline constexpr int k53PortSmartnic = 53;
inline constexpr int k54Events = 54;
inline constexpr int k55DeployTemplates = 55;
inline constexpr int k56BuildConfigdrive = 56;
inline constexpr int k57AllocationUpdate = 57;
inline constexpr int k58AllocationBackfill = 58;
inline constexpr int k59ConfigdriveVendorData = 59;
inline constexpr int k60AllocationOwner = 60;
inline constexpr int k61NodeRetired = 61;
inline constexpr int k62AgentToken = 62;
inline constexpr int k63Indicators = 63;
inline constexpr int k64LocalLinkConnectionNetworkType = 64;
inline constexpr int k65NodeLessee = 65;
inline constexpr int k66NodeNetworkData = 66;
inline constexpr int k67NodeVifAttachPort = 67;
inline constexpr int k68HeartbeatVerifyCa = 68;
inline constexpr int k69DeploySteps = 69;
inline constexpr int k70CleanDisableRamdisk = 70;
inline constexpr int k71RbacScopes = 71;
inline constexpr int k72HeartbeatStatus = 72;
inline constexpr int k73DeployUndeployVerbs = 73;
inline constexpr int k74BiosRegistry = 74;
inline constexpr int k75NodeBootMode = 75;
inline constexpr int k76NodeChangeBootMode = 76;
inline constexpr int k77DriverFieldsSelector = 77;
inline constexpr int k78NodeHistory = 78;
inline constexpr int k79AllocationNodeName = 79;
inline constexpr int k80ProjectCreateDeleteNode = 80;
inline constexpr int k81NodeInventory = 81;
inline constexpr int k82NodeShard = 82;
inline constexpr int k83ParentChildNodes = 83;
inline constexpr int k84ContinueInspection = 84;
inline constexpr int k85UnholdVerb = 85;
inline constexpr int k86FirmwareInterface = 86;
inline constexpr int k87Service = 87;
inline constexpr int k88PortName = 88;
inline constexpr int k89AttachDetachVmedia = 89;
inline constexpr int k90OvnVtep = 90;
inline constexpr int k91DotJson = 91;
inline constexpr int k92Runbooks = 92;
inline constexpr int k93GetVmedia = 93;
inline constexpr int k94PortNodename = 94;
inline constexpr int k95DisablePowerOff = 95;
inline constexpr int k96InspectionRules = 96;
inline constexpr int k97PortDescription = 97;
inline constexpr int k98SupportSpecialCharInAttributes = 98;
inline constexpr int k99PortPortgroupConductorGroupFilter = 99;
inline constexpr int k100PortVendor = 100;
inline constexpr int k101PortCategory = 101;
inline constexpr int k102PortgroupPhysicalNetwork = 102;
inline constexpr int k103PortgroupCategory = 103;
inline constexpr int k104NodeInstanceName = 104;
inline constexpr int k105RemoveOvnVtep = 105;
inline constexpr int k106PortgroupShard = 106;
inline constexpr int k107XOpenstackRequestId = 107;
inline constexpr int k108ServiceDisableRamdisk = 108;
inline constexpr int k109NodeHealth = 109;
inline constexpr int k110DeploywaitAbort = 110;
inline constexpr int k111DynamicPortgroup = 111;
inline constexpr int k112RunbookTraits = 112;
inline constexpr int k113NodeHistoryProject = 113;
inline constexpr int k114FirmwareIdentity = 114;
inline constexpr int k115NodeHistoryFields = 115;

/// The lowest and the highest microversion Kiln serves.
inline constexpr int kMin = k1InitialVersion;
inline constexpr int kMax = k115NodeHistoryFields;

}  // namespace kiln::server::ver
