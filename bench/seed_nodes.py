#!/usr/bin/python3
"""Create COUNT fake-hardware nodes on a running kiln-server, quickly.

Used by bench/http_load.sh. Several threads each keep one HTTP/1.1 connection open
(http.client, keep-alive) and POST /v1/nodes; the created UUIDs are written one per line
to OUT, in creation order.

  seed_nodes.py --port PORT --count 10000 --out uuids.txt [--threads 8]
"""
import argparse
import http.client
import json
import sys
import threading
import time

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json",
    "X-OpenStack-Ironic-API-Version": "1.78",
}


def worker(host, port, indices, results, errors):
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        for i in indices:
            body = json.dumps({"driver": "fake-hardware", "name": "bench-node-%05d" % i})
            conn.request("POST", "/v1/nodes", body=body, headers=HEADERS)
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 201:
                errors.append("node %d: HTTP %d %s" % (i, resp.status, data[:200]))
                return
            results[i] = json.loads(data)["uuid"]
    except Exception as e:  # noqa: BLE001 - report any failure to the caller
        errors.append("worker: %r" % (e,))
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    results = [None] * args.count
    errors = []
    start = time.monotonic()
    threads = [
        threading.Thread(
            target=worker,
            args=(args.host, args.port, range(t, args.count, args.threads), results, errors),
        )
        for t in range(args.threads)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    if errors or any(u is None for u in results):
        for e in errors[:10]:
            print("seed_nodes: " + e, file=sys.stderr)
        print("seed_nodes: failed (%d errors)" % len(errors), file=sys.stderr)
        return 1
    with open(args.out, "w") as f:
        f.write("\n".join(results) + "\n")
    print("seeded %d nodes in %.1f s (%.0f nodes/s)" % (args.count, elapsed, args.count / elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
