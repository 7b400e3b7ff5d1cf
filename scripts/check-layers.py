#!/usr/bin/env python3
"""Fails on an #include edge the layer table does not allow (CMake does not check includes:
this stands in for Envoy's per-library `deps`, see DEVELOPERS.md "Layers").

Each source file belongs to the layer of its directory (the longest prefix in LAYERS). A file
may include its own layer and the layers listed for it; system headers (<...>) are not checked.
An exception is written down in EXCEPTIONS with the reason, where a reviewer sees it.

Usage: scripts/check-layers.py [REPO_ROOT]     (exit 1 and a list of offending lines)
       scripts/check-layers.py --self-test     (the check finds edges planted in a tree)
"""
import os
import re
import sys
import tempfile

# Layer -> the layers its files may include (besides their own). Bottom-up.
LAYERS = {
    "shared": [],
    "agent": ["shared"],
    "server/schema": ["shared"],
    "server/model": ["server/schema", "shared"],
    "server/config": ["server/model", "server/schema", "shared"],
    "server/storage": ["server/config", "server/model", "server/schema", "shared"],
    "server/inspection": ["server/model", "server/schema", "shared"],
    "server/drivers": ["server/config", "server/model", "server/schema", "shared"],
    "server/conductor": ["server/drivers", "server/inspection", "server/storage", "server/config",
                         "server/model", "server/schema", "shared"],
    "server/api": ["server/conductor", "server/drivers", "server/inspection", "server/storage",
                   "server/config", "server/model", "server/schema", "shared"],
    "server/app": ["server/api", "server/conductor", "server/drivers", "server/inspection",
                   "server/storage", "server/config", "server/model", "server/schema", "shared"],
}

# Files outside a layer directory, by path, and the layer they belong to.
FILES = {
    "server/config.h": "server/config",
    "server/config.cpp": "server/config",
    "server/local_files.h": "server/config",
    "server/local_files.cpp": "server/config",
    "server/server_app.h": "server/app",
    "server/server_app.cpp": "server/app",
    "server/main.cpp": "server/app",
}

# (including file, included file) -> why the edge is allowed anyway.
EXCEPTIONS = {}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    if path in FILES:
        return FILES[path]
    best = None
    for layer in LAYERS:
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(best):
                best = layer
    return best


def check(root):
    problems = []
    for top in ("shared", "agent", "server"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp", ".inc")):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                src = layer_of(rel)
                if src is None:
                    problems.append("%s: in no layer (add it to LAYERS or FILES)" % rel)
                    continue
                with open(full, errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if "/" not in target:
                            continue  # a header beside the file, or a generated one
                        dst = layer_of(target)
                        if dst is None or dst == src or dst in LAYERS[src]:
                            continue
                        if (rel, target) in EXCEPTIONS:
                            continue
                        problems.append("%s:%d: %s (layer %s) may not include %s (layer %s)"
                                        % (rel, number, rel, src, target, dst))
    return problems


def self_test():
    """Plants two forbidden edges and one allowed one in a temporary tree: the check must
    report exactly the two forbidden ones (so the ctest `layers` can fail)."""
    planted = {
        "server/model/planted.h": '#include "server/storage/storage.h"\n',       # upward
        "agent/planted.cpp": '#include "server/api/api_service.h"\n',            # across
        "server/storage/planted.cpp": '#include "server/model/planted.h"\n',     # allowed
        "server/api/planted.cpp": '#include <vector>\n#include "planted.h"\n',  # not checked
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in planted.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        problems = check(root)
    expected = ["server/model/planted.h:1:", "agent/planted.cpp:1:"]
    found = sorted(p.split(" ")[0] for p in problems)
    if found != sorted(expected):
        print("self-test: expected %s, the check reported %s" % (expected, problems))
        return 1
    print("self-test: the check reports the planted edges")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print("%d include edge(s) outside the layer table (scripts/check-layers.py)" % len(problems))
        return 1
    print("layers: every include edge is allowed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
