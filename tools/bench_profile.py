#!/usr/bin/env python3
"""Instruction profile of the request path: bench_engine -n under callgrind,
counting only inside admission_handle (--toggle-collect), per body.

Reports instructions per call and per byte of AdmissionReview for the whole
of admission_handle and for its parts (decode_review, engine_decide,
review_encode: inclusive costs), and the functions with the most
instructions of their own for the largest body. Instruction counts do not
depend on what else the machine runs, unlike the timings.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys

PARTS = ("admission_handle", "decode_review", "engine_decide", "review_encode")
# The release build's link-time optimiser renames what it specialises or
# splits (admission_handle.constprop.0, decode_devices.lto_priv.0): the
# suffix is dropped, so the parts are found by their source names.
LINE = re.compile(r"^\s*([0-9,]+)\s+\([ 0-9.]+%\)\s+(\S+?):([A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z_]+(?:\.\d+)?)*"
                  r"('\d+)?(?:\s|$)")


def annotate(path, inclusive):
    cmd = ["callgrind_annotate", "--threshold=100"] + (["--inclusive=yes"] if inclusive else []) + [path]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    costs, files = {}, {}
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or (inclusive and m.group(4)):
            continue
        ir = int(m.group(1).replace(",", ""))
        fn = m.group(3)
        where = m.group(2)
        key = fn
        if not inclusive and not where.endswith(".h") and "/" in where and ".S" not in where:
            files.setdefault(fn, os.path.basename(where))
        # A function may be listed under two spellings of its file; and
        # recursive frames ('2) double count inclusively. Keep the largest
        # non-recursive figure for inclusive costs, add up self costs.
        if inclusive:
            costs[key] = max(costs.get(key, 0), ir)
        else:
            costs[key] = costs.get(key, 0) + ir
    if not inclusive:
        costs = {("%s:%s" % (files[fn], fn) if fn in files else fn): ir for fn, ir in costs.items()}
    return costs


def totals(path):
    with open(path) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise SystemExit("bench_profile: no totals in %s" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", required=True, help="bench_engine binary")
    ap.add_argument("--bodies", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--names", default="slice-1 slice-8 slice-32 slice-128 claim-status pod-status")
    ap.add_argument("--target-bytes", type=int, default=3000000, help="bytes of review per body under callgrind")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    rows = []
    print("%-14s %8s %6s %12s %9s %9s %9s %9s %8s" % ("body", "bytes", "calls", "instr/call", "instr/B",
                                                       "decode/B", "decide", "encode", "decide%"))
    for name in args.names.split():
        body = os.path.join(args.bodies, name + ".json")
        size = os.path.getsize(body)
        calls = max(5, math.ceil(args.target_bytes / size))
        cg = os.path.join(args.workdir, "callgrind.%s.out" % name)
        p = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=admission_handle*",
                            "--callgrind-out-file=" + cg, args.engine, "-d", args.bodies, "-n", str(calls),
                            name + ".json"], capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit("bench_profile: callgrind run failed:\n%s" % (p.stdout + p.stderr)[-3000:])
        total = totals(cg)
        if total == 0:
            raise SystemExit("bench_profile: nothing counted inside admission_handle (renamed by the compiler?)")
        inc = annotate(cg, True)
        r = {"name": name, "bytes": size, "calls": calls, "instr_total": total,
             "instr_per_call": round(total / calls), "instr_per_byte": round(total / calls / size, 2)}
        for part in PARTS[1:]:
            r[part + "_instr_per_call"] = round(inc.get(part, 0) / calls)
        r["decode_instr_per_byte"] = round(r["decode_review_instr_per_call"] / size, 2)
        r["callgrind_file"] = cg
        rows.append(r)
        print("%-14s %8d %6d %12d %9.1f %9.1f %9d %9d %7.1f%%" % (
            name, size, calls, r["instr_per_call"], r["instr_per_byte"], r["decode_instr_per_byte"],
            r["engine_decide_instr_per_call"], r["review_encode_instr_per_call"],
            100.0 * r["engine_decide_instr_per_call"] / max(r["instr_per_call"], 1)), flush=True)
    biggest = max(rows, key=lambda x: x["bytes"]) if rows else None
    hot = []
    if biggest:
        self_costs = annotate(biggest["callgrind_file"], False)
        total = biggest["instr_total"]
        for fn, ir in sorted(self_costs.items(), key=lambda kv: -kv[1])[:args.top]:
            hot.append({"function": fn, "instr_per_call": round(ir / biggest["calls"]),
                        "share_pct": round(100.0 * ir / total, 1)})
        print("\nfunctions by own instructions, %s (%d bytes):" % (biggest["name"], biggest["bytes"]))
        for h in hot:
            print("  %5.1f%%  %10d  %s" % (h["share_pct"], h["instr_per_call"], h["function"]))
    with open(args.out, "w") as f:
        json.dump({"profile": "callgrind, --toggle-collect=admission_handle", "bodies": rows,
                   "hot_functions": {"body": biggest["name"] if biggest else None, "functions": hot}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
