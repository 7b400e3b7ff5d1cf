// Command metal3_gophercloud replays the part of Metal3's baremetal-operator (BMO) flow that
// Debian's gophercloud 0.12 (golang-github-gophercloud-gophercloud-dev) can express, against a
// running kiln-server, and decodes every answer into typed Go structs. That is the point: BMO
// uses gophercloud, and gophercloud fails a whole call when one JSON value has the wrong type
// (a number where a string is expected, a string where an object is).
//
// Calls through gophercloud 0.12's packages: apiversions List/Get, drivers.ListDrivers,
// nodes Create/Get/List/Update/Validate/ChangeProvisionState/ChangePowerState/SetRAIDConfig/
// Delete, ports Create/List. Calls 0.12 lacks but BMO makes through gophercloud v2.13
// (maintenance, inventory, BIOS, firmware, service steps, the two fields firmware_interface and
// disable_power_off) go through the same ServiceClient (the same headers, authentication and
// success codes as v2.13's functions), decoded into types written after v2.13's. The query
// strings use v2.13's form: list fields joined with commas, then encoded (fields=a%2Cb).
//
// Build (offline, GOPATH mode) and run:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$(mktemp -d) go build -o metal3_gophercloud .
//	./metal3_gophercloud -endpoint http://127.0.0.1:6385/v1/ [-user U -password P] \
//	    [-min-version 1.89] [-keep-going] [-image-url URL -image-checksum SHA256]
//
// Every step prints one line "RESULT <step> PASS|FAIL|SKIP|BLOCKED <detail>"; the exit status
// is 1 when a step failed. tests/compat/metal3_flow_test.py builds and runs it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud"
	"github.com/gophercloud/gophercloud/openstack/baremetal/apiversions"
	"github.com/gophercloud/gophercloud/openstack/baremetal/httpbasic"
	"github.com/gophercloud/gophercloud/openstack/baremetal/noauth"
	"github.com/gophercloud/gophercloud/openstack/baremetal/v1/drivers"
	"github.com/gophercloud/gophercloud/openstack/baremetal/v1/nodes"
	"github.com/gophercloud/gophercloud/openstack/baremetal/v1/ports"
	"github.com/gophercloud/gophercloud/pagination"
)

// BMO's microversion policy (pkg/provisioner/ironic/clients/features.go).
const bmoBaseline = 89

var bmoMicroversions = []int{110, 109, 95, 93, 89}

// Microversions of the features used below (Ironic's versions.py names).
const (
	vBuildConfigdrive   = 56
	vNodeNetworkData    = 66
	vBiosRegistry       = 74
	vNodeInventory      = 81
	vFirmwareInterface  = 86
	vService            = 87
	vDisablePowerOff    = 95
	softPowerOffTimeout = 180
	nodeName            = "metal3~go-host"
	bootMAC             = "52:54:00:6d:33:21"
)

// ----- types after gophercloud v2.13 (what BMO decodes into) ----------------------------------

type link struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
}

type bmoNode struct {
	UUID                 string                 `json:"uuid"`
	Name                 string                 `json:"name"`
	PowerState           string                 `json:"power_state"`
	TargetPowerState     string                 `json:"target_power_state"`
	ProvisionState       string                 `json:"provision_state"`
	TargetProvisionState string                 `json:"target_provision_state"`
	Maintenance          bool                   `json:"maintenance"`
	MaintenanceReason    string                 `json:"maintenance_reason"`
	Fault                string                 `json:"fault"`
	Health               string                 `json:"health"`
	LastError            string                 `json:"last_error"`
	Reservation          string                 `json:"reservation"`
	Driver               string                 `json:"driver"`
	DriverInfo           map[string]interface{} `json:"driver_info"`
	DriverInternalInfo   map[string]interface{} `json:"driver_internal_info"`
	Properties           map[string]interface{} `json:"properties"`
	InstanceInfo         map[string]interface{} `json:"instance_info"`
	InstanceUUID         string                 `json:"instance_uuid"`
	ChassisUUID          string                 `json:"chassis_uuid"`
	Extra                map[string]interface{} `json:"extra"`
	ConsoleEnabled       bool                   `json:"console_enabled"`
	RAIDConfig           map[string]interface{} `json:"raid_config"`
	TargetRAIDConfig     map[string]interface{} `json:"target_raid_config"`
	CleanStep            map[string]interface{} `json:"clean_step"`
	DeployStep           map[string]interface{} `json:"deploy_step"`
	ServiceStep          map[string]interface{} `json:"service_step"`
	Links                []link                 `json:"links"`
	Ports                []link                 `json:"ports"`
	PortGroups           []link                 `json:"portgroups"`
	States               []link                 `json:"states"`
	Volume               []link                 `json:"volume"`
	ResourceClass        string                 `json:"resource_class"`
	BIOSInterface        string                 `json:"bios_interface"`
	BootInterface        string                 `json:"boot_interface"`
	ConsoleInterface     string                 `json:"console_interface"`
	DeployInterface      string                 `json:"deploy_interface"`
	FirmwareInterface    string                 `json:"firmware_interface"`
	InspectInterface     string                 `json:"inspect_interface"`
	ManagementInterface  string                 `json:"management_interface"`
	NetworkInterface     string                 `json:"network_interface"`
	PowerInterface       string                 `json:"power_interface"`
	RAIDInterface        string                 `json:"raid_interface"`
	RescueInterface      string                 `json:"rescue_interface"`
	StorageInterface     string                 `json:"storage_interface"`
	VendorInterface      string                 `json:"vendor_interface"`
	Traits               []string               `json:"traits"`
	ConductorGroup       string                 `json:"conductor_group"`
	ParentNode           string                 `json:"parent_node"`
	Protected            bool                   `json:"protected"`
	ProtectedReason      string                 `json:"protected_reason"`
	Owner                string                 `json:"owner"`
	Lessee               string                 `json:"lessee"`
	Shard                string                 `json:"shard"`
	Description          string                 `json:"description"`
	Conductor            string                 `json:"conductor"`
	AllocationUUID       string                 `json:"allocation_uuid"`
	Retired              bool                   `json:"retired"`
	RetiredReason        string                 `json:"retired_reason"`
	NetworkData          map[string]interface{} `json:"network_data"`
	AutomatedClean       *bool                  `json:"automated_clean"`
	DisablePowerOff      bool                   `json:"disable_power_off"`
	ProvisionUpdatedAt   time.Time              `json:"provision_updated_at"`
	InspectionStartedAt  *time.Time             `json:"inspection_started_at"`
	InspectionFinishedAt *time.Time             `json:"inspection_finished_at"`
	CreatedAt            time.Time              `json:"created_at"`
	UpdatedAt            time.Time              `json:"updated_at"`
}

type bmoPort struct {
	UUID                string                 `json:"uuid"`
	Address             string                 `json:"address"`
	NodeUUID            string                 `json:"node_uuid"`
	PortGroupUUID       string                 `json:"portgroup_uuid"`
	LocalLinkConnection map[string]interface{} `json:"local_link_connection"`
	PXEEnabled          bool                   `json:"pxe_enabled"`
	PhysicalNetwork     string                 `json:"physical_network"`
	InternalInfo        map[string]interface{} `json:"internal_info"`
	Extra               map[string]interface{} `json:"extra"`
	CreatedAt           time.Time              `json:"created_at"`
	UpdatedAt           time.Time              `json:"updated_at"`
	Links               []interface{}          `json:"links"`
	IsSmartNIC          bool                   `json:"is_smartnic"`
}

type bmoDriver struct {
	Name                     string        `json:"name"`
	Hosts                    []string      `json:"hosts"`
	Type                     string        `json:"type"`
	DefaultFirmwareInterface string        `json:"default_firmware_interface"`
	EnabledFirmwareInterface []string      `json:"enabled_firmware_interfaces"`
	Links                    []interface{} `json:"links"`
	Properties               []interface{} `json:"properties"`
}

type validation struct {
	Result bool   `json:"result"`
	Reason string `json:"reason"`
}

type nodeValidation struct {
	BIOS       validation `json:"bios"`
	Boot       validation `json:"boot"`
	Console    validation `json:"console"`
	Deploy     validation `json:"deploy"`
	Firmware   validation `json:"firmware"`
	Inspect    validation `json:"inspect"`
	Management validation `json:"management"`
	Network    validation `json:"network"`
	Power      validation `json:"power"`
	RAID       validation `json:"raid"`
	Rescue     validation `json:"rescue"`
	Storage    validation `json:"storage"`
}

type biosSetting struct {
	Name            string   `json:"name"`
	Value           string   `json:"value"`
	AttributeType   string   `json:"attribute_type"`
	AllowableValues []string `json:"allowable_values"`
	LowerBound      *int     `json:"lower_bound"`
	UpperBound      *int     `json:"upper_bound"`
	MinLength       *int     `json:"min_length"`
	MaxLength       *int     `json:"max_length"`
	ReadOnly        *bool    `json:"read_only"`
	ResetRequired   *bool    `json:"reset_required"`
	Unique          *bool    `json:"unique"`
}

type firmwareComponent struct {
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          *time.Time `json:"updated_at"`
	Component          string     `json:"component"`
	InitialVersion     string     `json:"initial_version"`
	CurrentVersion     string     `json:"current_version"`
	LastVersionFlashed string     `json:"last_version_flashed"`
}

// The inventory fields BMO reads (hardwaredetails.go), with gophercloud's inventory types.
type inventoryData struct {
	Inventory struct {
		BmcAddress string `json:"bmc_address"`
		Boot       struct {
			CurrentBootMode string `json:"current_boot_mode"`
			PXEInterface    string `json:"pxe_interface"`
		} `json:"boot"`
		CPU struct {
			Architecture string   `json:"architecture"`
			Count        int      `json:"count"`
			Flags        []string `json:"flags"`
			Frequency    string   `json:"frequency"`
			ModelName    string   `json:"model_name"`
		} `json:"cpu"`
		Disks []struct {
			Hctl               string `json:"hctl"`
			Model              string `json:"model"`
			Name               string `json:"name"`
			ByPath             string `json:"by_path"`
			Rotational         bool   `json:"rotational"`
			Serial             string `json:"serial"`
			Size               int64  `json:"size"`
			Vendor             string `json:"vendor"`
			Wwn                string `json:"wwn"`
			WwnVendorExtension string `json:"wwn_vendor_extension"`
			WwnWithExtension   string `json:"wwn_with_extension"`
		} `json:"disks"`
		Interfaces []struct {
			BIOSDevName string `json:"biosdevname"`
			ClientID    string `json:"client_id"`
			HasCarrier  bool   `json:"has_carrier"`
			IPV4Address string `json:"ipv4_address"`
			IPV6Address string `json:"ipv6_address"`
			MACAddress  string `json:"mac_address"`
			Name        string `json:"name"`
			Product     string `json:"product"`
			SpeedMbps   int    `json:"speed_mbps"`
			Vendor      string `json:"vendor"`
		} `json:"interfaces"`
		Memory struct {
			PhysicalMb int `json:"physical_mb"`
			Total      int `json:"total"`
		} `json:"memory"`
		SystemVendor struct {
			Manufacturer string `json:"manufacturer"`
			ProductName  string `json:"product_name"`
			SerialNumber string `json:"serial_number"`
			Firmware     struct {
				Version   string `json:"version"`
				BuildDate string `json:"build_date"`
				Vendor    string `json:"vendor"`
			} `json:"firmware"`
		} `json:"system_vendor"`
		Hostname string `json:"hostname"`
	} `json:"inventory"`
	PluginData json.RawMessage `json:"plugin_data"`
}

type pluginData struct {
	AllInterfaces map[string]struct {
		PXEEnabled bool `json:"pxe_enabled"`
	} `json:"all_interfaces"`
	ParsedLLDP map[string]map[string]interface{} `json:"parsed_lldp"`
}

// ----- request builders for what 0.12's option structs cannot say -----------------------------

// createOpts is BMO's enrollNode body: 0.12's CreateOpts plus firmware_interface (1.86) and
// disable_power_off (1.95, a *bool that is always sent).
type createOpts struct {
	nodes.CreateOpts
	FirmwareInterface string
	DisablePowerOff   *bool
}

func (o createOpts) ToNodeCreateMap() (map[string]interface{}, error) {
	m, err := o.CreateOpts.ToNodeCreateMap()
	if err != nil {
		return nil, err
	}
	if o.FirmwareInterface != "" {
		m["firmware_interface"] = o.FirmwareInterface
	}
	if o.DisablePowerOff != nil {
		m["disable_power_off"] = *o.DisablePowerOff
	}
	return m, nil
}

// stepsOpts adds v2.13's service_steps (1.87) to a provision state change.
type stepsOpts struct {
	nodes.ProvisionStateOpts
	ServiceSteps []nodes.CleanStep
}

func (o stepsOpts) ToProvisionStateMap() (map[string]interface{}, error) {
	m, err := o.ProvisionStateOpts.ToProvisionStateMap()
	if err != nil {
		return nil, err
	}
	if len(o.ServiceSteps) > 0 {
		m["service_steps"] = o.ServiceSteps
	}
	return m, nil
}

// query is v2.13's BuildQueryString for `format:"comma-separated"` lists: keys sorted, lists
// joined with commas, then query-escaped.
type query map[string][]string

func (q query) encode() string {
	v := url.Values{}
	for k, list := range q {
		v.Set(k, strings.Join(list, ","))
	}
	return "?" + v.Encode()
}

func (q query) ToPortListQuery() (string, error)       { return q.encode(), nil }
func (q query) ToPortListDetailQuery() (string, error) { return q.encode(), nil }
func (q query) ToNodeListQuery() (string, error)       { return q.encode(), nil }
func (q query) ToNodeListDetailQuery() (string, error) { return q.encode(), nil }

// ----- the run ---------------------------------------------------------------------------------

type skipError struct{ msg string }

func (e skipError) Error() string { return e.msg }

type blockedError struct{ msg string }

func (e blockedError) Error() string { return e.msg }

type runner struct {
	endpoint   string
	user, pass string
	minVersion int
	keepGoing  bool
	timeout    time.Duration
	poll       time.Duration
	imageURL   string
	imageSum   string

	client    *gophercloud.ServiceClient // with auth and the microversion
	serverMax int
	minor     int
	bmoMode   bool
	uuid      string
	notes     []string
	failed    bool
}

func (r *runner) step(name string, fn func() error) bool {
	r.notes = nil
	err := fn()
	status, detail := "PASS", strings.Join(r.notes, "; ")
	var skip skipError
	var blocked blockedError
	switch {
	case err == nil:
	case errors.As(err, &skip):
		status, detail = "SKIP", err.Error()
	case errors.As(err, &blocked):
		status, detail = "BLOCKED", err.Error()
		r.failed = true
	default:
		status, detail = "FAIL", err.Error()
		r.failed = true
	}
	fmt.Printf("RESULT %s %s %s\n", name, status, oneLine(detail))
	if status == "FAIL" && len(detail) > 200 {
		fmt.Printf("  details: %s\n", detail)
	}
	return status == "PASS" || status == "SKIP" || r.keepGoing
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

func (r *runner) has(minor int) bool { return r.minor >= minor }

// sends: something BMO always sends; left out (and noted) only below BMO's baseline.
func (r *runner) sends(minor int, what string) bool {
	if r.bmoMode || r.has(minor) {
		return true
	}
	r.notes = append(r.notes, fmt.Sprintf("%s: not yet available (needs 1.%d, server max 1.%d)", what, minor, r.serverMax))
	return false
}

func (r *runner) require(minor int, what string) error {
	if r.has(minor) {
		return nil
	}
	return skipError{fmt.Sprintf("%s: not yet available (needs 1.%d, server max 1.%d)", what, minor, r.serverMax)}
}

func statusOf(err error) int {
	var se gophercloud.StatusCodeError
	if errors.As(err, &se) {
		return se.GetStatusCode()
	}
	return 0
}

// busy retries a call while it answers 409, as BMO does ("busy, retry in 3 s").
func (r *runner) busy(call func() error) error {
	deadline := time.Now().Add(r.timeout)
	for {
		err := call()
		if statusOf(err) == 409 && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		return err
	}
}

func (r *runner) getNode(id string) (*bmoNode, error) {
	res := nodes.Get(r.client, id)
	if res.Err != nil {
		return nil, res.Err
	}
	if _, err := res.Extract(); err != nil { // 0.12's own types
		return nil, fmt.Errorf("gophercloud 0.12 nodes.Node: %w", err)
	}
	var n bmoNode
	if err := res.ExtractInto(&n); err != nil {
		return nil, fmt.Errorf("gophercloud v2.13 nodes.Node types: %w", err)
	}
	return &n, nil
}

func (r *runner) waitState(id string, done []string, waiting []string) (*bmoNode, error) {
	deadline := time.Now().Add(r.timeout)
	var seen []string
	for {
		n, err := r.getNode(id)
		if err != nil {
			return nil, err
		}
		if len(seen) == 0 || seen[len(seen)-1] != n.ProvisionState {
			seen = append(seen, n.ProvisionState)
		}
		if contains(done, n.ProvisionState) {
			return n, nil
		}
		if !contains(waiting, n.ProvisionState) {
			return n, fmt.Errorf("node went to %q (target %q, last_error %q) while waiting for %v; seen %v",
				n.ProvisionState, n.TargetProvisionState, n.LastError, done, seen)
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("node still %q after %v (waiting for %v); seen %v", n.ProvisionState, r.timeout, done, seen)
		}
		time.Sleep(r.poll)
	}
}

func (r *runner) stable(n *bmoNode, state string) error {
	if n.ProvisionState != state || n.TargetProvisionState != "" || n.LastError != "" {
		return fmt.Errorf("expected %s with no target and no last_error, got %q target %q last_error %q",
			state, n.ProvisionState, n.TargetProvisionState, n.LastError)
	}
	return nil
}

func (r *runner) changeState(id string, opts nodes.ProvisionStateOptsBuilder, done []string, waiting []string) (*bmoNode, error) {
	err := r.busy(func() error { return nodes.ChangeProvisionState(r.client, id, opts).ExtractErr() })
	if err != nil {
		return nil, err
	}
	n, err := r.waitState(id, done, waiting)
	if err != nil {
		return n, err
	}
	return n, r.stable(n, done[0])
}

var transient = []string{"verifying", "inspecting", "inspect wait", "cleaning", "clean wait", "deploying",
	"wait call-back", "deleting", "adopting", "servicing", "service wait"}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *runner) update(id string, ops ...nodes.UpdateOperation) (*bmoNode, error) {
	opts := nodes.UpdateOpts{}
	for _, op := range ops {
		opts = append(opts, op)
	}
	var res nodes.UpdateResult
	err := r.busy(func() error {
		res = nodes.Update(r.client, id, opts)
		return res.Err
	})
	if err != nil {
		return nil, err
	}
	var n bmoNode
	if err := res.ExtractInto(&n); err != nil {
		return nil, fmt.Errorf("PATCH answer, v2.13 nodes.Node types: %w", err)
	}
	return &n, nil
}

func add(path string, value interface{}) nodes.UpdateOperation {
	return nodes.UpdateOperation{Op: nodes.AddOp, Path: path, Value: value}
}

func (r *runner) getTyped(path string, into interface{}) error {
	var body interface{}
	_, err := r.client.Get(r.client.ServiceURL(path), &body, &gophercloud.RequestOpts{OkCodes: []int{200}})
	if err != nil {
		return err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

// ----- steps -----------------------------------------------------------------------------------

var versionRe = regexp.MustCompile(`^1\.(\d+)$`)

type versionDoc struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	Version    string `json:"version"`
	MaxVersion string `json:"max_version"`
	MinVersion string `json:"min_version"`
}

// discovery is v2.13's utils.GetSupportedMicroversions (0.12 has none): GET <endpoint> through
// a client without credentials or microversion, 200 or 300, a {"version": {...}} document or a
// {"versions": [exactly one]} one, min and max present; then BMO's baseline and choice.
func (r *runner) discovery() error {
	public, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: r.endpoint})
	if err != nil {
		return err
	}
	var doc struct {
		Version  *versionDoc  `json:"version"`
		Versions []versionDoc `json:"versions"`
	}
	if _, err := public.Get(public.Endpoint, &doc, &gophercloud.RequestOpts{OkCodes: []int{200, 300}}); err != nil {
		return fmt.Errorf("GET %s: %w", public.Endpoint, err)
	}
	var versions []versionDoc
	if doc.Version != nil {
		versions = []versionDoc{*doc.Version}
	} else {
		versions = doc.Versions
	}
	if len(versions) != 1 {
		return fmt.Errorf("GET %s: %d versions; gophercloud wants exactly one", public.Endpoint, len(versions))
	}
	max := versions[0].Version
	if max == "" {
		max = versions[0].MaxVersion
	}
	if max == "" || versions[0].MinVersion == "" {
		return fmt.Errorf("GET %s: no min_version or version: %+v", public.Endpoint, versions[0])
	}
	m := versionRe.FindStringSubmatch(max)
	if m == nil {
		return fmt.Errorf("maximum %q is not 1.x", max)
	}
	r.serverMax, _ = strconv.Atoi(m[1])
	// The root document through 0.12's apiversions, on a client for the root URL.
	root, err := noauth.NewBareMetalNoAuth(noauth.EndpointOpts{
		IronicEndpoint: strings.TrimSuffix(strings.TrimSuffix(r.endpoint, "/"), "/v1") + "/"})
	if err != nil {
		return err
	}
	all, err := apiversions.List(root).Extract()
	if err != nil {
		return fmt.Errorf("apiversions.List (GET /): %w", err)
	}
	if len(all.Versions) != 1 || all.Versions[0].Version != max {
		return fmt.Errorf("GET /: versions %+v disagree with GET /v1/ (%s)", all.Versions, max)
	}
	v1, err := apiversions.Get(root, "v1").Extract()
	if err != nil {
		return fmt.Errorf("apiversions.Get (GET /v1): %w", err)
	}
	if v1.Version != max || v1.MinVersion != "1.1" || v1.ID != "v1" {
		return fmt.Errorf("GET /v1: %+v", *v1)
	}
	if r.serverMax >= bmoBaseline {
		for _, v := range bmoMicroversions {
			if r.serverMax >= v {
				r.minor = v
				break
			}
		}
		r.bmoMode = true
	} else if r.serverMax >= r.minVersion {
		r.minor = r.serverMax
		r.notes = append(r.notes, fmt.Sprintf("server max 1.%d is below BMO's baseline 1.89: running at it", r.serverMax))
	} else {
		return fmt.Errorf("the server's maximum is 1.%d: BMO stops with \"ironic API 1.89 or newer is required\"", r.serverMax)
	}
	if r.user != "" {
		r.client, err = httpbasic.NewBareMetalHTTPBasic(httpbasic.EndpointOpts{
			IronicEndpoint: r.endpoint, IronicUser: r.user, IronicUserPassword: r.pass})
	} else {
		r.client, err = noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: r.endpoint})
	}
	if err != nil {
		return err
	}
	r.client.Microversion = fmt.Sprintf("1.%d", r.minor)
	return nil
}

func (r *runner) drivers() error {
	page, err := drivers.ListDrivers(r.client, drivers.ListDriversOpts{}).AllPages()
	if err != nil {
		return err
	}
	list, err := drivers.ExtractDrivers(page)
	if err != nil {
		return fmt.Errorf("gophercloud 0.12 drivers.Driver: %w", err)
	}
	var mine []bmoDriver
	if err := drivers.ExtractDriversInto(page, &mine); err != nil {
		return fmt.Errorf("v2.13 drivers.Driver types: %w", err)
	}
	if len(list) == 0 {
		return errors.New("no drivers loaded in ironic")
	}
	return nil
}

func (r *runner) listPorts(q query) ([]bmoPort, error) {
	page, err := ports.List(r.client, q).AllPages()
	if err != nil {
		return nil, err
	}
	if _, err := ports.ExtractPorts(page); err != nil {
		return nil, fmt.Errorf("gophercloud 0.12 ports.Port: %w", err)
	}
	var list []bmoPort
	if err := ports.ExtractPortsInto(page, &list); err != nil {
		return nil, fmt.Errorf("v2.13 ports.Port types: %w", err)
	}
	return list, nil
}

func (r *runner) register() error {
	res := nodes.Get(r.client, nodeName)
	if statusOf(res.Err) != 404 {
		return fmt.Errorf("GET node %s before registration: expected 404, got %v", nodeName, res.Err)
	}
	fields := []string{"node_uuid", "uuid", "address"}
	existing, err := r.listPorts(query{"address": {bootMAC}, "fields": fields})
	if err != nil {
		return fmt.Errorf("ports by address: %w", err)
	}
	if len(existing) != 0 {
		return fmt.Errorf("port %s exists before registration", bootMAC)
	}
	off := false
	opts := createOpts{CreateOpts: nodes.CreateOpts{
		Driver: "fake-hardware", Name: nodeName,
		DriverInfo:       map[string]interface{}{"fake_username": "admin", "fake_password": "secret"},
		BootInterface:    "fake",
		InspectInterface: "fake",
		RAIDInterface:    "fake",
		Properties:       map[string]interface{}{"capabilities": "boot_mode:uefi", "cpu_arch": ""},
	}}
	if r.sends(vFirmwareInterface, "firmware_interface") {
		opts.FirmwareInterface = "fake"
	}
	if r.sends(vDisablePowerOff, "disable_power_off") {
		opts.DisablePowerOff = &off
	}
	var created nodes.CreateResult
	err = r.busy(func() error {
		created = nodes.Create(r.client, opts)
		return created.Err
	})
	if err != nil {
		return fmt.Errorf("nodes.Create: %w", err)
	}
	if _, err := created.Extract(); err != nil {
		return fmt.Errorf("gophercloud 0.12 nodes.Node: %w", err)
	}
	var n bmoNode
	if err := created.ExtractInto(&n); err != nil {
		return fmt.Errorf("v2.13 nodes.Node types: %w", err)
	}
	r.uuid = n.UUID
	if n.ProvisionState != "enroll" || n.Name != nodeName {
		return fmt.Errorf("created node: %q %q", n.Name, n.ProvisionState)
	}
	if cpu, ok := n.Properties["cpu_arch"]; !ok || cpu != "" {
		return fmt.Errorf("properties.cpu_arch is %v, sent \"\"", n.Properties["cpu_arch"])
	}
	t := true
	port, err := ports.Create(r.client, ports.CreateOpts{NodeUUID: n.UUID, Address: bootMAC, PXEEnabled: &t}).Extract()
	if err != nil {
		return fmt.Errorf("ports.Create: %w", err)
	}
	if !port.PXEEnabled {
		return errors.New("port pxe_enabled false after creating it with true")
	}
	mine, err := r.listPorts(query{"node_uuid": {n.UUID}, "fields": fields})
	if err != nil {
		return fmt.Errorf("ports by node: %w", err)
	}
	if len(mine) != 1 || mine[0].Address != bootMAC {
		return fmt.Errorf("ports of the node: %+v", mine)
	}
	if r.sends(vNodeNetworkData, "add /network_data") {
		nd := map[string]interface{}{"links": []interface{}{}, "networks": []interface{}{}, "services": []interface{}{}}
		if _, err := r.update(n.UUID, add("/network_data", nd)); err != nil {
			return fmt.Errorf("add /network_data: %w", err)
		}
	}
	return nil
}

func (r *runner) needNode() error {
	if r.uuid == "" {
		return blockedError{"the node was never registered"}
	}
	return nil
}

func (r *runner) manage() error {
	if err := r.needNode(); err != nil {
		return err
	}
	_, err := r.changeState(r.uuid, nodes.ProvisionStateOpts{Target: nodes.TargetManage},
		[]string{"manageable"}, []string{"enroll", "verifying"})
	if err != nil {
		return err
	}
	n, err := r.update(r.uuid,
		add("/driver_info/deploy_kernel", r.imageURL+".kernel"),
		add("/driver_info/deploy_ramdisk", r.imageURL+".initramfs"),
		add("/automated_clean", true),
		add("/properties/cpu_arch", "x86_64"))
	if err != nil {
		return fmt.Errorf("configureNode PATCH: %w", err)
	}
	if n.AutomatedClean == nil || !*n.AutomatedClean || n.Properties["cpu_arch"] != "x86_64" {
		return fmt.Errorf("configureNode PATCH not stored: automated_clean %v cpu_arch %v", n.AutomatedClean, n.Properties["cpu_arch"])
	}
	return nil
}

func (r *runner) inspect() error {
	if err := r.needNode(); err != nil {
		return err
	}
	_, err := r.changeState(r.uuid, nodes.ProvisionStateOpts{Target: nodes.TargetInspect},
		[]string{"manageable"}, []string{"manageable", "inspecting", "inspect wait"})
	if err != nil {
		return err
	}
	if !r.sends(vNodeInventory, "GET inventory") {
		return nil
	}
	var inv inventoryData
	if err := r.getTyped("nodes/"+r.uuid+"/inventory", &inv); err != nil {
		return fmt.Errorf("GetInventory into v2.13 inventory types: %w", err)
	}
	if len(inv.PluginData) > 0 && string(inv.PluginData) != "null" {
		var pd pluginData
		if err := json.Unmarshal(inv.PluginData, &pd); err != nil {
			r.notes = append(r.notes, "plugin_data would only be logged: "+err.Error())
		}
	}
	return nil
}

func (r *runner) firmwareRead() error {
	if err := r.needNode(); err != nil {
		return err
	}
	if err := r.require(vBiosRegistry, "GET bios?detail=true"); err != nil {
		return err
	}
	var bios struct {
		Settings []biosSetting `json:"bios"`
	}
	if err := r.getTyped("nodes/"+r.uuid+"/bios?detail=true", &bios); err != nil {
		return fmt.Errorf("ListBIOSSettings into v2.13 BIOSSetting: %w", err)
	}
	if r.sends(vFirmwareInterface, "GET firmware") {
		var fw struct {
			Components []firmwareComponent `json:"firmware"`
		}
		if err := r.getTyped("nodes/"+r.uuid+"/firmware", &fw); err != nil {
			return fmt.Errorf("ListFirmware into v2.13 FirmwareComponent: %w", err)
		}
	}
	return nil
}

func (r *runner) prepare() error {
	if err := r.needNode(); err != nil {
		return err
	}
	root := true
	disks := []nodes.LogicalDisk{
		// SizeGB nil: 0.12, like v2.13, sends "MAX".
		{RAIDLevel: nodes.RAID1, VolumeName: "root", IsRootVolume: &root, Controller: "RAID.Integrated.1-1",
			PhysicalDisks: []interface{}{"Disk.Bay.0", "Disk.Bay.1"}, DiskType: nodes.SSD, NumberOfPhysicalDisks: 2},
	}
	err := r.busy(func() error {
		return nodes.SetRAIDConfig(r.client, r.uuid, nodes.RAIDConfigOpts{LogicalDisks: disks}).ExtractErr()
	})
	if err != nil {
		return fmt.Errorf("SetRAIDConfig: %w", err)
	}
	steps := []nodes.CleanStep{
		{Interface: "raid", Step: "delete_configuration"},
		{Interface: "raid", Step: "create_configuration"},
		{Interface: "bios", Step: "apply_configuration", Args: map[string]interface{}{
			"settings": []map[string]interface{}{{"name": "LogicalProc", "value": "Enabled"}}}},
	}
	if r.sends(vFirmwareInterface, "firmware.update clean step") {
		steps = append(steps, nodes.CleanStep{Interface: "firmware", Step: "update", Args: map[string]interface{}{
			"settings": []map[string]interface{}{{"component": "bmc", "url": r.imageURL + ".bmc"}}}})
	}
	_, err = r.changeState(r.uuid, nodes.ProvisionStateOpts{Target: nodes.TargetClean, CleanSteps: steps},
		[]string{"manageable"}, append([]string{"manageable"}, transient...))
	return err
}

func (r *runner) provide() error {
	if err := r.needNode(); err != nil {
		return err
	}
	_, err := r.changeState(r.uuid, nodes.ProvisionStateOpts{Target: nodes.TargetProvide},
		[]string{"available"}, append([]string{"manageable"}, transient...))
	return err
}

func (r *runner) provision() error {
	if err := r.needNode(); err != nil {
		return err
	}
	uid := "6a1c3a2e-4d3b-4bb5-9f55-0d1f7e2c9a10"
	hints := map[string]string{"name": "s== /dev/sda", "size": ">= 10", "rotational": "false"}
	n, err := r.update(r.uuid,
		add("/instance_uuid", uid),
		add("/instance_info/capabilities", map[string]interface{}{}),
		add("/instance_info/root_device", hints),
		add("/instance_info/image_source", r.imageURL),
		add("/instance_info/image_checksum", r.imageSum),
		add("/driver_info/force_persistent_boot_device", "Default"))
	if err != nil {
		return fmt.Errorf("instance_info PATCH: %w", err)
	}
	rd, _ := json.Marshal(n.InstanceInfo["root_device"])
	want, _ := json.Marshal(hints)
	if string(rd) != string(want) {
		return fmt.Errorf("instance_info.root_device stored as %s, sent %s", rd, want)
	}
	if caps, ok := n.InstanceInfo["capabilities"].(map[string]interface{}); !ok || len(caps) != 0 {
		return fmt.Errorf("instance_info.capabilities stored as %v, sent {}", n.InstanceInfo["capabilities"])
	}
	res := nodes.Validate(r.client, r.uuid)
	if res.Err != nil {
		return fmt.Errorf("nodes.Validate: %w", res.Err)
	}
	if _, err := res.Extract(); err != nil {
		return fmt.Errorf("gophercloud 0.12 NodeValidation: %w", err)
	}
	var v nodeValidation
	if err := res.ExtractInto(&v); err != nil {
		return fmt.Errorf("v2.13 NodeValidation: %w", err)
	}
	if !v.Boot.Result || !v.Deploy.Result {
		return fmt.Errorf("host validation error: boot %+v deploy %+v", v.Boot, v.Deploy)
	}
	opts := nodes.ProvisionStateOpts{Target: nodes.TargetActive}
	if r.sends(vBuildConfigdrive, "JSON configdrive") {
		opts.ConfigDrive = nodes.ConfigDrive{
			MetaData: map[string]interface{}{"uuid": uid, "metal3-namespace": "metal3", "metal3-name": "go-host",
				"local-hostname": "go-host", "local_hostname": "go-host", "name": "go-host"},
			UserData: "#cloud-config\nhostname: go-host\n",
			NetworkData: map[string]interface{}{
				"links":    []interface{}{map[string]interface{}{"id": "eth0", "type": "phy", "ethernet_mac_address": bootMAC}},
				"networks": []interface{}{map[string]interface{}{"id": "n0", "type": "ipv4_dhcp", "link": "eth0", "network_id": "n0"}},
				"services": []interface{}{}},
		}
	}
	_, err = r.changeState(r.uuid, opts, []string{"active"}, append([]string{"available"}, transient...))
	return err
}

func (r *runner) power(target nodes.TargetPowerState) error {
	opts := nodes.PowerStateOpts{Target: target}
	if target == nodes.SoftPowerOff {
		opts.Timeout = softPowerOffTimeout
	}
	err := r.busy(func() error { return nodes.ChangePowerState(r.client, r.uuid, opts).ExtractErr() })
	if statusOf(err) == 400 && target == nodes.SoftPowerOff {
		r.notes = append(r.notes, "soft power off is 400; fell back to power off")
		target = nodes.PowerOff
		err = r.busy(func() error {
			return nodes.ChangePowerState(r.client, r.uuid, nodes.PowerStateOpts{Target: target}).ExtractErr()
		})
	}
	if err != nil {
		return fmt.Errorf("ChangePowerState %s: %w", target, err)
	}
	want := "power on"
	if target == nodes.PowerOff || target == nodes.SoftPowerOff {
		want = "power off"
	}
	deadline := time.Now().Add(r.timeout)
	for {
		n, err := r.getNode(r.uuid)
		if err != nil {
			return err
		}
		if n.TargetPowerState == "" && n.PowerState == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("power_state %q target %q last_error %q, wanted %q", n.PowerState, n.TargetPowerState, n.LastError, want)
		}
		time.Sleep(r.poll)
	}
}

func (r *runner) powerSteps() error {
	if err := r.needNode(); err != nil {
		return err
	}
	for _, t := range []nodes.TargetPowerState{nodes.SoftPowerOff, nodes.PowerOn, nodes.Rebooting} {
		if err := r.power(t); err != nil {
			return err
		}
	}
	return nil
}

// maintenance is v2.13's SetMaintenance/UnsetMaintenance (PUT/DELETE .../maintenance, 202).
func (r *runner) maintenance() error {
	if err := r.needNode(); err != nil {
		return err
	}
	u := r.client.ServiceURL("nodes", r.uuid, "maintenance")
	err := r.busy(func() error {
		_, err := r.client.Put(u, map[string]interface{}{"reason": "set by hand"}, nil,
			&gophercloud.RequestOpts{OkCodes: []int{202}})
		return err
	})
	if err != nil {
		return fmt.Errorf("SetMaintenance: %w", err)
	}
	n, err := r.getNode(r.uuid)
	if err != nil {
		return err
	}
	if !n.Maintenance || n.MaintenanceReason != "set by hand" {
		return fmt.Errorf("maintenance %v reason %q", n.Maintenance, n.MaintenanceReason)
	}
	err = r.busy(func() error {
		_, err := r.client.Delete(u, &gophercloud.RequestOpts{OkCodes: []int{202}})
		return err
	})
	if err != nil {
		return fmt.Errorf("UnsetMaintenance: %w", err)
	}
	return nil
}

func (r *runner) service() error {
	if err := r.needNode(); err != nil {
		return err
	}
	if err := r.require(vService, "servicing"); err != nil {
		return err
	}
	steps := []nodes.CleanStep{{Interface: "bios", Step: "apply_configuration", Args: map[string]interface{}{
		"settings": []map[string]interface{}{{"name": "LogicalProc", "value": "Disabled"}}}}}
	if r.sends(vFirmwareInterface, "firmware.update service step") {
		steps = append(steps, nodes.CleanStep{Interface: "firmware", Step: "update", Args: map[string]interface{}{
			"settings": []map[string]interface{}{{"component": "bmc", "url": r.imageURL + ".bmc2"}}}})
	}
	_, err := r.changeState(r.uuid, stepsOpts{ProvisionStateOpts: nodes.ProvisionStateOpts{Target: "service"},
		ServiceSteps: steps}, []string{"active"}, []string{"active", "servicing", "service wait"})
	return err
}

func (r *runner) deprovision() error {
	if err := r.needNode(); err != nil {
		return err
	}
	n, err := r.changeState(r.uuid, nodes.ProvisionStateOpts{Target: nodes.TargetDeleted},
		[]string{"available"}, append([]string{"active"}, transient...))
	if err != nil {
		return err
	}
	if n.InstanceUUID != "" {
		return fmt.Errorf("instance_uuid %q after tear-down", n.InstanceUUID)
	}
	return nil
}

func (r *runner) capacity() error {
	pager := nodes.List(r.client, query{"fields": {"uuid", "name", "provision_state", "boot_interface"}})
	count := 0
	err := pager.EachPage(func(p pagination.Page) (bool, error) {
		if _, err := nodes.ExtractNodes(p); err != nil {
			return false, fmt.Errorf("gophercloud 0.12 nodes.Node: %w", err)
		}
		var list []bmoNode
		if err := nodes.ExtractNodesInto(p, &list); err != nil {
			return false, fmt.Errorf("v2.13 nodes.Node types: %w", err)
		}
		for _, n := range list {
			if n.UUID == "" || n.ProvisionState == "" {
				return false, fmt.Errorf("fields=uuid%%2C...: entry without uuid or provision_state: %+v", n)
			}
			if n.Driver != "" {
				return false, errors.New("fields=uuid%2Cname%2Cprovision_state%2Cboot_interface returned driver too")
			}
		}
		count += len(list)
		return true, nil
	})
	if err != nil {
		return err
	}
	if count == 0 {
		return errors.New("nodes list with fields is empty")
	}
	return nil
}

func (r *runner) delete() error {
	if err := r.needNode(); err != nil {
		return err
	}
	if err := r.power(nodes.PowerOff); err != nil {
		return err
	}
	err := r.busy(func() error { return nodes.Delete(r.client, r.uuid).ExtractErr() })
	if err != nil && statusOf(err) != 404 {
		return fmt.Errorf("nodes.Delete: %w", err)
	}
	if res := nodes.Get(r.client, r.uuid); statusOf(res.Err) != 404 {
		return fmt.Errorf("GET after delete: expected 404, got %v", res.Err)
	}
	left, err := r.listPorts(query{"address": {bootMAC}, "fields": {"node_uuid", "uuid", "address"}})
	if err != nil {
		return err
	}
	if len(left) != 0 {
		return fmt.Errorf("port %s survived the node", bootMAC)
	}
	r.uuid = ""
	return nil
}

func main() {
	var r runner
	var minVersion string
	var timeout, poll float64
	flag.StringVar(&r.endpoint, "endpoint", "", "kiln-server's endpoint, e.g. http://127.0.0.1:6385/v1/")
	flag.StringVar(&r.user, "user", "", "HTTP basic user (empty: noauth)")
	flag.StringVar(&r.pass, "password", "", "HTTP basic password")
	flag.StringVar(&minVersion, "min-version", "1.89", "lowest acceptable server maximum")
	flag.BoolVar(&r.keepGoing, "keep-going", false, "go on after a failed step")
	flag.Float64Var(&timeout, "timeout", 120, "seconds per wait")
	flag.Float64Var(&poll, "poll", 0.3, "seconds between polls")
	flag.StringVar(&r.imageURL, "image-url", "http://127.0.0.1/host.qcow2", "instance image URL")
	flag.StringVar(&r.imageSum, "image-checksum", strings.Repeat("0", 64), "instance image sha256")
	flag.Parse()
	m := versionRe.FindStringSubmatch(minVersion)
	if r.endpoint == "" || m == nil {
		flag.Usage()
		os.Exit(2)
	}
	r.minVersion, _ = strconv.Atoi(m[1])
	r.timeout = time.Duration(timeout * float64(time.Second))
	r.poll = time.Duration(poll * float64(time.Second))
	if !strings.HasSuffix(r.endpoint, "/") {
		r.endpoint += "/"
	}

	steps := []struct {
		name string
		fn   func() error
	}{
		{"discovery", r.discovery},
		{"drivers", r.drivers},
		{"register", r.register},
		{"capacity", r.capacity},
		{"manage", r.manage},
		{"inspect", r.inspect},
		{"firmware-read", r.firmwareRead},
		{"prepare", r.prepare},
		{"provide", r.provide},
		{"provision", r.provision},
		{"power", r.powerSteps},
		{"maintenance", r.maintenance},
		{"service", r.service},
		{"deprovision", r.deprovision},
		{"delete", r.delete},
	}
	for i, s := range steps {
		if i > 0 && r.client == nil {
			fmt.Printf("RESULT %s BLOCKED no microversion was negotiated\n", s.name)
			r.failed = true
			continue
		}
		if !r.step(s.name, s.fn) {
			for _, rest := range steps[i+1:] {
				fmt.Printf("RESULT %s BLOCKED stopped after %s failed\n", rest.name, s.name)
			}
			break
		}
	}
	if r.failed {
		os.Exit(1)
	}
}
