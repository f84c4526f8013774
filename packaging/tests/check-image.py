#!/usr/bin/env python3
"""scripts/test-package's checks of the OCI archive:
    check-image.py ARCHIVE VERSION DEB CONTAINER_WORK EXTRACT
Every blob matches its digest; the config runs the server as a non-root user on the exposed port, with a
health check; the root holds the .deb's files (those debian:12-slim keeps), the same bytes, and no Swift."""
import fnmatch
import gzip
import hashlib
import io
import json
import subprocess
import sys
import tarfile

archive, version, deb, container_work, _ = sys.argv[1:6]
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


outer = tarfile.open(archive)


def blob(digest, size=None):
    data = outer.extractfile("blobs/sha256/" + digest.removeprefix("sha256:")).read()
    check(hashlib.sha256(data).hexdigest() == digest.removeprefix("sha256:"), f"blob {digest} does not match its digest")
    if size is not None:
        check(len(data) == size, f"blob {digest} is {len(data)} bytes, the descriptor says {size}")
    return data


layout = json.loads(outer.extractfile("oci-layout").read())
check(layout == {"imageLayoutVersion": "1.0.0"}, f"oci-layout: {layout}")
index = json.loads(outer.extractfile("index.json").read())
check(len(index["manifests"]) == 1, "one manifest")
descriptor = index["manifests"][0]
check(descriptor["annotations"]["org.opencontainers.image.ref.name"] == version, "ref.name is not the version")
manifest = json.loads(blob(descriptor["digest"], descriptor["size"]))
image = json.loads(blob(manifest["config"]["digest"], manifest["config"]["size"]))
config = image["config"]
env = dict(item.split("=", 1) for item in config["Env"])

check(config["User"] == "10001:10001", f"User {config['User']}")
check(config["Entrypoint"] == ["/usr/bin/sharepipe-server"], f"Entrypoint {config['Entrypoint']}")
check(list(config["ExposedPorts"]) == ["8080/tcp"], f"ExposedPorts {config['ExposedPorts']}")
check(env.get("SHAREPIPE_SERVER_PORT") == "8080" and env.get("SHAREPIPE_SERVER_HOST") == "0.0.0.0",
      f"the server does not listen on the exposed port on every address: {env}")
check(config["Healthcheck"]["Test"] == ["CMD", "/usr/bin/sharepipe-server", "--health-check"],
      f"Healthcheck {config['Healthcheck']}")
check(config["Labels"]["org.opencontainers.image.version"] == version, "version label")
check(image["architecture"] == "amd64" and image["os"] == "linux", "platform")

(layer,) = manifest["layers"]
data = blob(layer["digest"], layer["size"])
raw = gzip.decompress(data)
check("sha256:" + hashlib.sha256(raw).hexdigest() == image["rootfs"]["diff_ids"][0], "diff_id")
root = tarfile.open(fileobj=io.BytesIO(raw))
members = {member.name.removeprefix("./"): member for member in root.getmembers()}


def resolve(path):
    """`path` in the image's root with its folders' symbolic links followed (Debian 12 has merged /usr: the .deb's
    /lib/systemd/system/… is usr/lib/systemd/system/… in the layer, /lib being a link to usr/lib)."""
    parts, done = path.strip("/").split("/"), []
    for _ in range(len(parts) + 40):
        if not parts:
            break
        candidate = "/".join(done + [parts[0]])
        member = members.get(candidate)
        if member is not None and member.issym() and len(parts) > 1:
            target = member.linkname
            base = [] if target.startswith("/") else done
            parts = target.strip("/").split("/") + parts[1:]
            done = list(base)
            continue
        part = parts.pop(0)
        if part == "..":
            done = done[:-1]
        elif part not in ("", "."):
            done.append(part)
    return "/".join(done)


def text(name):
    return root.extractfile(members[name]).read().decode()


check(any(line.startswith("sharepipe:x:10001:10001:") for line in text("etc/passwd").splitlines()),
      "no user sharepipe with uid and gid 10001 in /etc/passwd")
check(any(line.startswith("sharepipe:x:10001:") for line in text("etc/group").splitlines()), "no group 10001")
status = text("var/lib/dpkg/status")
check(f"Package: sharepipe\nStatus: install ok installed" in status, "sharepipe is not installed in the image")
check(any(block.startswith("Package: sharepipe\n") and f"\nVersion: {version}\n" in block
          for block in status.split("\n\n")), "the image's sharepipe is another version")
check(not any(name.startswith("usr/lib/swift") or "libswiftCore" in name for name in members), "Swift in the image")
for library in ("libheif.so.1", "libavif.so.15", "libwebp.so.7", "liblcms2.so.2"):
    check(any(name.endswith("/" + library) for name in members), f"{library} is not in the image")

# The same package: every file of the .deb that debian:12-slim's dpkg excludes keep, with the same bytes.
kept = lambda path: not (fnmatch.fnmatch(path, "/usr/share/man/*") or fnmatch.fnmatch(path, "/usr/share/lintian/*")
                         or (fnmatch.fnmatch(path, "/usr/share/doc/*") and not path.endswith("/copyright")))
fsys = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True, check=True).stdout
package = tarfile.open(fileobj=io.BytesIO(fsys))
count = 0
for member in package.getmembers():
    path = member.name.removeprefix(".")
    if not member.isfile() or not kept(path):
        continue
    count += 1
    inside = members.get(resolve(path))
    check(inside is not None, f"{path} of the .deb is not in the image")
    if inside is not None:
        same = root.extractfile(inside).read() == package.extractfile(member).read()
        check(same, f"{path} differs from the .deb's")
with open(f"{container_work}/image-sharepipe.list", encoding="utf-8") as handle:
    listed = {line.strip() for line in handle if line.strip()}
check(all(path in listed for path in (m.name.removeprefix(".") for m in package.getmembers() if m.isfile())
          if kept(path)), "dpkg's file list in the image lacks files of the .deb")
print(f"image: config user {config['User']}, entrypoint {config['Entrypoint']}, port {list(config['ExposedPorts'])}, "
      f"health check {config['Healthcheck']['Test'][1:]}; {count} files of the .deb in the root, same bytes; "
      f"layer {layer['size']} bytes compressed, {len(raw)} unpacked")
if failures:
    print("\n".join("FAIL: " + failure for failure in failures), file=sys.stderr)
    sys.exit(1)
print("image: all checks passed")
