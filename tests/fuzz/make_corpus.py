#!/usr/bin/python3
"""Writes the fuzzers' seed corpora, tests/fuzz/corpus/<target>/ (docs/fuzzing.md).

    tests/fuzz/make_corpus.py BUILD_DIR [--out tests/fuzz/corpus]

The seeds are what the tests send and read:
  - json_body, json_patch, ini_config, agent_answers: BUILD_DIR/tests/kiln_server_tests runs
    with KILN_FUZZ_DUMP (tests/fuzz/corpus_dump.h), which records every API request of the
    in-process tests, each configuration, and each test's answers to lookup and heartbeat
    requests. Resource names and UUIDs are rewritten to those of the fuzz fixture
    (tests/fuzz/fuzz_server.h) and agent tokens to "@TOKEN@"; one or two requests per
    (method, route) are kept. Also etc/kiln.conf.sample and the protocol's golden files.
  - http_request: some of those requests framed as HTTP/1.1 wire bytes (Content-Length,
    chunked, pipelined), and the framing and truncation cases of
    tests/integration/malformed_http_test.py.
  - agent_tool_output: the recorded mdadm and sgdisk output of tests/data/commands/, the fake
    /sys and /proc trees of tests/data/sysfs/, kernel command lines and device names of the
    agent tests, and two MBR sectors.
Files are named by the SHA-1 of their content, as libFuzzer names them; existing files of a
target are replaced.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NODE = "11111111-1111-4111-8111-111111111111"
PORT = "22222222-2222-4222-8222-222222222222"
PORTGROUP = "33333333-3333-4333-8333-333333333333"
CHASSIS = "44444444-4444-4444-8444-444444444444"
TEMPLATE = "55555555-5555-4555-8555-555555555555"
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

# (collection, replacement for a UUID, replacement for a name)
COLLECTIONS = {
    "nodes": (NODE, "fuzz-node"),
    "ports": (PORT, PORT),
    "portgroups": (PORTGROUP, "fuzz-pg"),
    "chassis": (CHASSIS, CHASSIS),
    "deploy_templates": (TEMPLATE, "CUSTOM_FUZZ"),
    "heartbeat": (NODE, NODE),
}
BODY_KEYS = {"node_uuid": NODE, "node_id": NODE, "chassis_uuid": CHASSIS,
             "portgroup_uuid": PORTGROUP}
MAX_SEED = 4096  # bytes; larger requests are limit tests, not useful seeds


def write(out, target, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def dump(build):
    """Runs the server tests with KILN_FUZZ_DUMP; returns the dump directory."""
    d = tempfile.mkdtemp(prefix="kiln-fuzz-dump-")
    binary = os.path.join(build, "tests", "kiln_server_tests")
    subprocess.run([binary], env=dict(os.environ, KILN_FUZZ_DUMP=d), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return d


def read_dir(path):
    if not os.path.isdir(path):
        return []
    out = []
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            out.append(f.read())
    return out


def rewrite_path(path):
    parts = path.split("/")
    for i in range(len(parts) - 1):
        if parts[i] in COLLECTIONS and parts[i + 1]:
            uuid, name = COLLECTIONS[parts[i]]
            parts[i + 1] = uuid if UUID.fullmatch(parts[i + 1]) else name
        if parts[i] == "boot" and i + 1 < len(parts) and UUID.fullmatch(parts[i + 1]):
            parts[i + 1] = NODE
    return "/".join(parts)


def rewrite_body(body):
    for key, value in BODY_KEYS.items():
        body = re.sub(r'("%s"\s*:\s*")[^"]*(")' % key, r"\g<1>%s\g<2>" % value, body)
    return re.sub(r'("agent_token"\s*:\s*")[^"]*(")', r"\g<1>@TOKEN@\g<2>", body)


def requests(dumped):
    """The recorded requests, rewritten for the fuzz fixture: [(method, target, headers, body)]."""
    out = []
    for raw in read_dir(os.path.join(dumped, "request")):
        text = raw.decode("utf-8", "surrogateescape")
        head, _, body = text.partition("\n\n")
        lines = head.split("\n")
        method, _, target = lines[0].partition(" ")
        path, q, query = target.partition("?")
        query = re.sub(r"(node_uuid=)[^&]*", r"\g<1>" + NODE, query)
        target = rewrite_path(path) + q + query
        headers = [tuple(h.split(": ", 1)) for h in lines[1:] if ": " in h]
        headers = [(k, v) for k, v in headers if k != "authorization"]  # the fixture has no auth
        out.append((method, target, headers, rewrite_body(body)))
    return out


def route(r):
    return (r[0], r[1].split("?")[0])


def pick(reqs, per_route):
    """Up to `per_route` requests per (method, path): the largest, the smallest and a middle
    one (by body, then query)."""
    groups = {}
    for r in reqs:
        if len(r[3]) <= MAX_SEED:
            groups.setdefault(route(r), {})[(r[1], r[3])] = r
    chosen = []
    for key in sorted(groups):
        ordered = sorted(groups[key].values(), key=lambda r: (len(r[3]) + len(r[1]), r[1], r[3]))
        for i in sorted({len(ordered) - 1, 0, len(ordered) // 2})[-per_route:]:
            chosen.append(ordered[i])
    return chosen


def request_text(r):
    method, target, headers, body = r
    return "%s %s\n%s\n%s" % (method, target, "".join("%s: %s\n" % h for h in headers), body)


def wire(r, chunked=False, close=False):
    method, target, headers, body = r
    body = body.encode("utf-8", "surrogateescape")
    head = "%s %s HTTP/1.1\r\n" % (method, target)
    head += "".join("%s: %s\r\n" % h for h in headers)
    if body or method in ("POST", "PUT", "PATCH"):
        head += "Content-Type: application/json\r\n"
        if chunked:
            head += "Transfer-Encoding: chunked\r\n"
        else:
            head += "Content-Length: %d\r\n" % len(body)
    if close:
        head += "Connection: close\r\n"
    data = head.encode("utf-8", "surrogateescape") + b"\r\n"
    if chunked and body:
        half = len(body) // 2
        for part in (body[:half], body[half:]):
            if part:
                data += b"%x\r\n" % len(part) + part + b"\r\n"
        data += b"0\r\n\r\n"
    elif chunked:
        data += b"0\r\n\r\n"
    else:
        data += body
    return data


def api_seeds(dumped, out):
    reqs = requests(dumped)
    chosen = pick(reqs, per_route=1)
    # The routes the tests use most get two more.
    counts = {}
    for r in reqs:
        counts[route(r)] = counts.get(route(r), 0) + 1
    busy = [r for r in pick(reqs, per_route=3) if counts[route(r)] >= 10]
    seen = set()
    for r in chosen + busy:
        text = request_text(r)
        if text not in seen:
            seen.add(text)
            write(out, "json_body", text)

    # json_patch: the PATCH bodies that are JSON.
    patches = set()
    for method, _, _, body in reqs:
        if method == "PATCH" and len(body) <= MAX_SEED:
            try:
                json.loads(body)
            except ValueError:
                continue
            patches.add(body)
    for body in sorted(patches, key=lambda b: (len(b), b))[::max(1, len(patches) // 40)]:
        write(out, "json_patch", body)

    # http_request: a first byte (body limit and how the wire is cut: see the target) and the
    # wire. Every fourth request chunked, a few pipelined in threes.
    wires = []
    for i, r in enumerate(chosen[::3]):
        wires.append(wire(r, chunked=(i % 4 == 3)))
    for i in range(0, min(len(chosen), 12), 3):
        wires.append(b"".join(wire(r, close=(k == 2)) for k, r in enumerate(chosen[i:i + 3])))
    for i, data in enumerate(wires):
        write(out, "http_request", bytes([(i * 4 + 4) & 0xFC]) + data)

    # agent_answers: each test's answers to lookup and heartbeat, rewritten.
    for raw in read_dir(os.path.join(dumped, "agent_answers")):
        text = rewrite_body(raw.decode("utf-8", "surrogateescape"))
        if len(text) <= 16384:
            write(out, "agent_answers", text)

    # ini_config: each distinct configuration of the tests.
    for raw in read_dir(os.path.join(dumped, "config")):
        write(out, "ini_config", raw)


def malformed_http_seeds(out):
    sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
    import malformed_http_test as m  # noqa: E402 (framing_cases and truncated_cases)
    cases = [segments for _, segments, _ in m.framing_cases(b"")] + m.truncated_cases(b"")
    for i, segments in enumerate(cases):
        data = b"".join(segments).replace(b"/victim", b"/fuzz-node")
        if len(data) > 16384:
            data = data[:1024]  # the 80 KiB and body-limit cases: the fuzzer grows them again
        # Odd cases with the 1 KiB body limit (bits 0-1 = 1).
        write(out, "http_request", bytes([((i * 4) & 0xFC) | (i & 1)]) + data)


def stdout_of(path):
    """The stdout part of a recorded command (tests/support/replay_command_runner.cpp)."""
    text = open(path, "rb").read()
    marker = b"==> stdout <==\n"
    if marker not in text:
        return None
    text = text.split(marker, 1)[1]
    return text.split(b"==> stderr <==", 1)[0]


def sysfs_records(tree):
    records = []
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            full = os.path.join(dirpath, name)
            path = "/" + os.path.relpath(full, tree)
            if os.path.islink(full):
                records.append(b"@" + path.encode() + b"\n" + os.readlink(full).encode())
            else:
                records.append(path.encode() + b"\n" + open(full, "rb").read())
    return b"\0".join(sorted(records))


def mbr(entries):
    """A 512-byte MBR with (type, first LBA, sectors) entries and the 0x55AA signature."""
    sector = bytearray(512)
    for i, (kind, first, count) in enumerate(entries):
        e = 446 + 16 * i
        sector[e + 4] = kind
        sector[e + 8:e + 12] = first.to_bytes(4, "little")
        sector[e + 12:e + 16] = count.to_bytes(4, "little")
    sector[510:512] = b"\x55\xaa"
    return bytes(sector)


def agent_seeds(out):
    commands = os.path.join(SRC, "tests", "data", "commands")
    for tool, prefix, mode in (("mdadm", "detail", b"0"), ("mdadm", "examine", b"1"),
                               ("sgdisk", "print", b"3")):
        for name in sorted(os.listdir(os.path.join(commands, tool))):
            if name.startswith(prefix):
                text = stdout_of(os.path.join(commands, tool, name))
                if text:
                    write(out, "agent_tool_output", mode + text)
    sysfs = os.path.join(SRC, "tests", "data", "sysfs")
    for tree in sorted(os.listdir(sysfs)):
        mdstat = os.path.join(sysfs, tree, "proc", "mdstat")
        if os.path.exists(mdstat):
            write(out, "agent_tool_output", b"2" + open(mdstat, "rb").read())
        write(out, "agent_tool_output", b"5" + sysfs_records(os.path.join(sysfs, tree)))
    write(out, "agent_tool_output", b"4" + mbr([(0x83, 2048, 2097152)]))
    write(out, "agent_tool_output", b"4" + mbr([(0xEE, 1, 0xFFFFFFFF)]))
    for cmdline in ("BOOT_IMAGE=/vmlinuz console=ttyS0 kiln.api_url=http://10.0.2.2:6385 quiet\n",
                    "kiln.api_url=https://10.0.2.2:6385 kiln.insecure=1 ipa-api-url=http://x",
                    "initrd=agent.initramfs ipa-api-url=http://192.0.2.1:6385 "
                    "BOOTIF=01-52-54-00-12-34-56 nofb nomodeset"):
        write(out, "agent_tool_output", b"6" + cmdline.encode())
    for name in ("sda", "nvme0n1", "nvme0n1p1", "md127", "mmcblk0", "loop0", "dm-0", "sr0"):
        write(out, "agent_tool_output", b"7" + name.encode())
    write(out, "agent_tool_output",
          b"8BootCurrent: 0001\nBootOrder: 0003,0001\nBoot0001* UEFI PXEv4\tPciRoot(0x0)\n"
          b"Boot0003* debian (vda)\tHD(2,GPT,x,0x800,0x113000)/File(\\EFI\\debian\\shimx64.efi)\n")
    csv = "shimx64.efi,debian,,This is the boot entry for debian\n".encode("utf-16")
    write(out, "agent_tool_output", b"9" + b"\0".join([
        b"/EFI/debian/BOOTX64.CSV\n" + csv, b"/EFI/debian/shimx64.efi\nMZ",
        b"/EFI/debian/grubx64.efi\nMZ", b"/EFI/BOOT/BOOTX64.EFI\nMZ"]))


def static_seeds(out):
    write(out, "ini_config", open(os.path.join(SRC, "etc", "kiln.conf.sample"), "rb").read())
    # The option table's kinds at their edges (server/config.cpp, configOptions()).
    write(out, "ini_config", b"[DEFAULT]\nlog_level = WARN\ndebug = yes\n[api]\nport = +0\n"
                             b"[deploy]\ndefault_boot_mode = BIOS\nerase_devices_priority = 0\n"
                             b"[ipmi]\ncommand_timeout = 3600\n")
    write(out, "ini_config", b"[DEFAULT]\nlog_level = verbose\n")
    # The user file of tests/server/api/auth_test.cpp (parseHtpasswd reads the same bytes).
    write(out, "ini_config", b"admin:$2y$04$yNagjehOdvxOluZFDAQywegpKCB1ps1nWXjNykcOaEKe6JrnNyI.W\n"
                             b"viewer:$2y$04$Ut1kUByzwUQqb1kDwemubuDPq4.nQ6YTJBQlQW.7NJxJy1CZssEoi\n"
                             b"u:$apr1$abc$def\n")
    protocol = os.path.join(SRC, "tests", "data", "protocol")
    lookup = open(os.path.join(protocol, "lookup_response.json"), "rb").read()
    heartbeat = open(os.path.join(protocol, "heartbeat_response.json"), "rb").read()
    write(out, "agent_answers", lookup + b"\n@@\n" + heartbeat)


def small_parser_seeds(out):
    """small_parsers: the edge cases of the unit tests (tests/shared/net, strings_test.cpp,
    tests/server/model/capabilities_test.cpp), one selector byte each."""
    for mac in ("52:54:00:AB:cd:ef", "52-54-00-ab-cd-ef", "52:54-00:ab-cd:ef", "52:54:00:ab:cd",
                "zz:54:00:ab:cd:ef", "525400abcdef"):
        write(out, "small_parsers", "m" + mac)
    for ip in ("10.0.0.1", "fd00::1", "::ffff:10.0.0.1", "fe80::1%eth0", "010.0.0.1",
               "10.0.0.7/24", "10.0.0.0/255.255.0.0", "fd00::/64", "fd00::/ffff::", "0.0.0.0/0",
               "10.0.0.0/0024", "255.255.255.0", "255.0.255.0", "ffff:ffff::"):
        write(out, "small_parsers", "i" + ip)
    for key, value, caps in (("boot_mode", "uefi", "boot_mode:bios,a:1"),
                             ("boot_mode", "uefi", " boot_mode : uefi ,x:y,,bad,c:3:4"),
                             ("k", "v", ",a:1,,k:1,k:2"), ("", "x", ":x,a:1")):
        write(out, "small_parsers", "c%s\n%s\n%s" % (key, value, caps))
    for number in ("0", "-0", "+5", " \t-12", "+-5", "65535", "65536", "2147483647",
                   "-2147483649", "18446744073709551616", "007", "1e3", ""):
        write(out, "small_parsers", "n" + number)
    for sep, text in ((",", " a ,, ,b,"), (",", ""), (";", "a;\tb ;c"), (".", "a..b.")):
        write(out, "small_parsers", "s" + sep + text)
    # Redfish sensor resources (server/drivers/redfish/redfish_sensors.h).
    for resource in redfish_sensor_seeds():
        write(out, "small_parsers", "r" + resource)
    # A ramdisk log bundle (tar.gz), as bytes and as the agent's base64, and a bare tar.
    for bundle in log_bundle_seeds():
        write(out, "small_parsers", b"l" + bundle)
    # A ramdisk deployment's instance_info (server/drivers/ramdisk/ramdisk_deploy.h).
    for info in ('{"kernel":"http://x/k","ramdisk":"/srv/r","ramdisk_kernel_arguments":"ip=dhcp",'
                 '"ironic_ramdisk_deploy":true}',
                 '{"boot_iso":"https://x/live.iso","kernel_append_params":"%default% quiet"}'):
        write(out, "small_parsers", "k" + info)


def redfish_sensor_seeds():
    status = '"Status": {"State": "Enabled", "Health": "OK"}'
    return [
        '{"Id": "Thermal", "Temperatures": [{"MemberId": "0", "PhysicalContext": "CPU", '
        '"ReadingCelsius": 62, "MaxReadingRangeTemp": 120.0, "SensorNumber": 1, %s}], '
        '"Fans": [{"MemberId": "0", "Reading": 6000, "ReadingUnits": "RPM", %s}]}' % (status, status),
        '{"Id": "Power", "PowerSupplies": [{"MemberId": "0", "PowerCapacityWatts": 1450, '
        '"LastPowerOutputWatts": 650, "SerialNumber": "SN1", %s}]}' % status,
        '{"Id": "1", "Name": "Disk 0", "Model": "M", "CapacityBytes": 3750000000, '
        '"Status": {"Health": "Critical"}}',
        '{"Id": "1", "Devices": [{"Name": "Backplane"}, {"Name": "SSD", "CapacityBytes": 1, %s}]}'
        % status,
        '{"Manufacturer": "Kiln", "Model": "X", "UUID": "u", "Temperatures": [{"PhysicalContext": '
        '"Odd Name\\n", "ReadingCelsius": 1e308, "Status": {"State": "enabled"}}, null, 3]}',
    ]


def log_bundle_seeds():
    import base64
    import gzip
    import io
    import tarfile
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, text in (("agent.log", b"INFO  agent: looked up\n"), ("mdstat", b"")):
            info = tarfile.TarInfo(name)
            info.size = len(text)
            info.mtime = 1700000000
            tar.addfile(info, io.BytesIO(text))
    packed = gzip.compress(raw.getvalue(), mtime=0)
    return [packed, base64.b64encode(packed), raw.getvalue()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build", help="the normal build tree (its tests/kiln_server_tests runs)")
    parser.add_argument("--out", default=os.path.join(SRC, "tests", "fuzz", "corpus"))
    args = parser.parse_args()
    for target in ("json_body", "json_patch", "ini_config", "agent_tool_output", "agent_answers",
                   "http_request", "small_parsers"):
        shutil.rmtree(os.path.join(args.out, target), ignore_errors=True)
    dumped = dump(args.build)
    try:
        api_seeds(dumped, args.out)
    finally:
        shutil.rmtree(dumped, ignore_errors=True)
    malformed_http_seeds(args.out)
    agent_seeds(args.out)
    static_seeds(args.out)
    small_parser_seeds(args.out)
    for target in sorted(os.listdir(args.out)):
        files = os.listdir(os.path.join(args.out, target))
        size = sum(os.path.getsize(os.path.join(args.out, target, f)) for f in files)
        print("%-18s %3d files %7d bytes" % (target, len(files), size))


if __name__ == "__main__":
    main()
