#!/usr/bin/env python3
"""scripts/test-package's checks of what packaging/tests/in-root.sh wrote in the fresh root:
    check-outputs.py OUT HERE VERSION DEB
OUT: the root's results; HERE: the release build's outputs over TestImages made on this machine."""
import filecmp
import json
import os
import re
import subprocess
import sys

out, here, version, deb = sys.argv[1:5]
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def read(name):
    with open(os.path.join(out, name), encoding="utf-8", errors="replace") as handle:
        return handle.read()


def lines(name):
    return [json.loads(line) for line in read(name).splitlines() if line.strip()]


notes = dict(line.split(" ", 1) for line in read("notes.txt").splitlines())

# The package as apt installed it: every file of the .deb, nothing missing from ldd, no Swift runtime.
listed = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True, check=True).stdout
in_deb = {line.split()[-1].lstrip(".").rstrip("/") or "/" for line in listed.splitlines() if not line.startswith("d")}
installed = set(read("dpkg-L.txt").split())
check(in_deb <= installed, f"files of the .deb not installed: {sorted(in_deb - installed)[:5]}")
ldd = read("ldd.txt")
check("not found" not in ldd, "ldd: a library is missing:\n" + ldd)
check("libswift" not in ldd and "libFoundation" not in ldd, "a Swift runtime library is linked dynamically")
check(read("dpkg-query.txt").split()[1] == version, "dpkg-query version: " + read("dpkg-query.txt"))

# The manual pages: installed where man finds them; the server's from the same table as --help.
check(len(read("man-w.txt").split()) == 3, "man -w: " + read("man-w.txt"))
check(read("man-server.err").strip() == "", "man sharepipe-server warned: " + read("man-server.err"))
help_text, manual, defaults = read("server-help.txt"), read("man-server.txt"), read("etc-default")
flags = set(re.findall(r"^  (--[a-z-]+)", help_text, re.M))
variables = set(re.findall(r"env ([A-Z_]+)", help_text))
check(len(flags) >= 13 and len(variables) >= 13, f"--help lists {len(flags)} flags, {len(variables)} variables")
for flag in flags:
    check(flag in manual, f"sharepipe-server(8) lacks {flag}")
for variable in variables:
    check(variable in manual, f"sharepipe-server(8) lacks {variable}")
    check(f"#{variable}=" in defaults, f"/etc/default/sharepipe-server lacks {variable}")

# The CLI's pages: every flag of `sharepipe prepare --help` is in sharepipe.prepare(1); apropos lists each page.
check(read("man-prepare.err").strip() == "", "man sharepipe.prepare warned: " + read("man-prepare.err"))
prepare_flags = set(re.findall(r"^  (?:-[a-zA-Z], )?(--[a-z][a-z-]*)", read("prepare-help.txt"), re.M))
check(len(prepare_flags) >= 20, f"sharepipe prepare --help lists {len(prepare_flags)} flags")
prepare_manual = read("man-prepare.txt")
for flag in sorted(prepare_flags - {"--help"}):
    check(flag in prepare_manual, f"sharepipe.prepare(1) lacks {flag}")
apropos = read("apropos.txt")
for page in ("sharepipe (1)", "sharepipe.prepare (1)", "sharepipe.inspect (1)", "sharepipe.services (1)",
             "sharepipe.options (1)", "sharepipe-server (8)"):
    check(page in apropos, f"apropos sharepipe lacks {page}: {apropos}")

# Four inputs for two services: each output fits the service, in a format it takes, without location.
services = {profile["name"]: profile for profile in json.loads(read("services.json"))}
reports = lines("prepared.jsonl")
inspected = {os.path.relpath(entry["file"], os.path.join("/tmp/sp/out/prepared")): entry for entry in lines("inspected.jsonl")}
check(len(reports) == 8, f"{len(reports)} reports for 4 inputs × 2 services")
if os.path.exists(os.path.join(out, "prepare-failed.txt")):
    failures.append("prepare failed in the root for " + read("prepare-failed.txt").replace("\n", " ")
                    + "\n" + read("prepared.err"))
seen_formats = set()
for report in reports:
    name = f"{os.path.basename(report['input'])} → {report.get('service')}"
    check(report.get("status") == "ok", f"{name}: {report}")
    if report.get("status") != "ok":
        continue
    profile = services[report["service"]]
    relative = os.path.relpath(report["output"], "/tmp/sp/out/prepared")
    path = os.path.join(out, "prepared", relative)
    check(os.path.getsize(path) == report["bytes"], f"{name}: the file is not the reported size")
    facts = inspected.get(relative, {})
    check(facts.get("format") == report["format"], f"{name}: inspect says {facts.get('format')}")
    check(report["format"] in profile["formats"], f"{name}: {report['format']} not in {profile['formats']}")
    frames = facts.get("frames", 1)
    animation = profile.get("animation", {})
    limit = animation.get("maxBytes", profile["maxStillBytes"]) if frames > 1 else profile["maxStillBytes"]
    check(report["bytes"] <= limit, f"{name}: {report['bytes']} bytes over {limit}")
    check(not any("gps" in str(kind).lower() for kind in facts.get("metadata", [])), f"{name}: location kept")
    if "gps" in report["input"]:
        check("gps" in report["removedMetadata"], f"{name}: GPS not reported removed")
    if report["input"].endswith(("animated.webp", "loop3.gif")) and animation.get("allowed"):
        check(frames > 1, f"{name}: animation lost ({frames} frame)")
    seen_formats.add(os.path.splitext(report["input"])[1])
check(seen_formats == {".jpg", ".heic", ".webp", ".gif"}, f"inputs prepared: {seen_formats}")

# The server: it answered, counted, and stopped cleanly on SIGTERM.
for name, kind in (("post-jpeg", "a JPEG's body, service x"), ("post-heic", "a multipart HEIC, service mastodon")):
    headers = read(f"{name}-headers.txt") if os.path.exists(os.path.join(out, f"{name}-headers.txt")) else ""
    with open(os.path.join(out, f"{name}.body"), "rb") as handle:
        body = handle.read()
    answered = notes.get(f"{name}-curl-status") == "0" and headers.startswith("HTTP/1.1 200")
    check(answered and "content-type: image/jpeg" in headers.lower() and body[:3] == b"\xff\xd8\xff",
          f"POST {kind}: {headers.splitlines()[:1]} {body[:400]!r}")
check(notes.get("metrics-curl-status") == "0", "GET /metrics failed: " + read("curl.err"))
metrics = read("metrics.body")
for service in ("x", "mastodon"):
    sample = f'sharepipe_requests_total{{route="/v1/prepare",status="200",service="{service}"}} 1'
    check(sample in metrics, f"/metrics lacks {sample}")
check(notes.get("server-exit-status") == "0", f"server exit status {notes.get('server-exit-status')} after SIGTERM")
for line in read("server.log").splitlines():
    try:
        json.loads(line)
    except ValueError:
        failures.append(f"server log line is no JSON: {line}")
check("cannot connect" in read("health-after-stop.err"), "health check after stop: " + read("health-after-stop.err"))

# Without libheif (a Recommends): a HEIC is refused, the message names the library, the package stays.
check(notes.get("no-libheif-exit-status") not in (None, "0"), "a HEIC was prepared without libheif")
message = read("no-libheif.err")
check("libheif" in message and "gps-irot.heic" in message, "without libheif the message says: " + message)
check("install ok installed" in read("after-libheif-removed.txt"), "removing libheif removed sharepipe")
check(notes.get("no-libheif-jpeg-exit-status") == "0",
      "without libheif a JPEG failed: " + read("no-libheif-jpeg.err"))
jpeg_reports = lines("no-libheif-jpeg.jsonl")
check(len(jpeg_reports) == 1 and jpeg_reports[0].get("status") == "ok"
      and os.path.exists(os.path.join(out, "no-libheif", "x", "gps-orient6.jpg")),
      f"without libheif the JPEG's report: {jpeg_reports}")

# Byte for byte: the installed binary with the root's libraries against the release build here.
def files(root):
    return sorted(os.path.relpath(os.path.join(folder, name), root)
                  for folder, _, names in os.walk(root) for name in names)

installed_outputs, here_outputs = files(os.path.join(out, "all")), files(here)
check(installed_outputs == here_outputs, f"output sets differ: {set(installed_outputs) ^ set(here_outputs)}")
different = [name for name in installed_outputs if name in here_outputs
             and not filecmp.cmp(os.path.join(out, "all", name), os.path.join(here, name), shallow=False)]
check(not different, f"outputs differ from the release build's: {different}")
print(f"byte-identical outputs: {len(installed_outputs) - len(different)} of {len(installed_outputs)} "
      f"(TestImages for x; the installed binary in the root against the release build here)")
print("without libheif:", message.strip().splitlines()[0] if message.strip() else "(nothing)")

if failures:
    print("\n".join("FAIL: " + failure for failure in failures), file=sys.stderr)
    sys.exit(1)
print("outputs: all checks passed")
