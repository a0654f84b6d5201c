"""Writes the python-engine launcher, the one executable a run file names and pins.

    /usr/bin/python3 build.py [OUT]

OUT defaults to bin/python-engine at the repository root. Run it with the
interpreter that has Debian's python3-grpcio, python3-grpc-tools and
python3-protobuf (/usr/bin/python3 on Debian; a python3 earlier on PATH,
such as a pyenv one, usually lacks them): the launcher names that
interpreter by absolute path.

Two steps:
1. Generate the Python code of the protocol files under plugin/proto into
   build/gen with grpc_tools.protoc. plugin/proto/grpc/health is compiled as
   grpc_health/v1/health.proto, so that the generated package is
   grpc_health (as grpcio's own health package names it), not a "grpc" that
   would hide grpcio. The code is generated here rather than committed
   because it must match the protobuf runtime it runs on: Debian's
   grpc_tools and protobuf come together.
2. Write the launcher: the "#!" line, the constants launcher.py needs, and
   launcher.py itself. It pins every file under src/ and build/gen/ and the
   installed grpc and google.protobuf packages (see launcher.py).

The launcher names this directory and the interpreter by absolute path, so
build it where it runs, then pin it (obversa plugin lock). Rebuild and
re-pin after any change to the code, the protocol files or the Debian
packages.
"""

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(ROOT)))
PROTO_DIR = os.path.join(REPO, "plugin", "proto")
SRC = os.path.join(ROOT, "src")
GEN = os.path.join(ROOT, "build", "gen")

# The protocol files, as compiled (the name decides the generated module)
# and as vendored under plugin/proto.
PROTOS = (
    ("obversa/plugin/v1/plugin.proto", "obversa/plugin/v1/plugin.proto"),
    ("grpc_health/v1/health.proto", "grpc/health/v1/health.proto"),
    ("goplugin/grpc_controller.proto", "goplugin/grpc_controller.proto"),
    ("goplugin/grpc_stdio.proto", "goplugin/grpc_stdio.proto"),
    ("google/rpc/status.proto", "google/rpc/status.proto"),
)

# The installed packages the plugin imports (Debian's python3-grpcio and
# python3-protobuf).
DEPENDENCIES = ("grpc", "google.protobuf")


class BuildError(Exception):
    pass


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def walk(top, key):
    """Yields (manifest key, digest) for every regular file under top,
    without byte-code caches; key(path) names the file in the manifest."""
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path) and not name.endswith(".pyc"):
                yield key(path), sha256(path)


def generate():
    """Generates the protocol's Python code into GEN. A build whose output
    equals what GEN holds leaves GEN alone, so that a launcher built before
    keeps working while another build runs."""
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError as e:
        raise BuildError("%s cannot import grpc_tools (%s): run build.py with the python3 of Debian's "
                         "python3-grpc-tools, usually /usr/bin/python3" % (sys.executable, e))
    tmp = "%s.tmp-%d" % (GEN, os.getpid())
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        args = ["grpc_tools.protoc", "-I" + PROTO_DIR,
                "-Igrpc_health=" + os.path.join(PROTO_DIR, "grpc", "health"),
                "-I" + os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"),
                "--python_out=" + tmp, "--grpc_python_out=" + tmp] + [name for name, _ in PROTOS]
        if protoc.main(args) != 0:
            raise BuildError("grpc_tools.protoc failed on the files under %s (its message is above)" % PROTO_DIR)
        key = lambda top: lambda p: os.path.relpath(p, top)  # noqa: E731
        if os.path.isdir(GEN) and dict(walk(GEN, key(GEN))) == dict(walk(tmp, key(tmp))):
            return
        shutil.rmtree(GEN, ignore_errors=True)
        os.rename(tmp, GEN)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def packages_and_manifest():
    """Returns PACKAGES (top-level name -> directories it is imported from)
    and MANIFEST (file -> SHA-256): files of the plugin's directory by
    relative path, the installed dependencies by absolute path."""
    packages = {}
    manifest = {}
    for top in (SRC, GEN):
        for name in sorted(os.listdir(top)):
            if name != "__pycache__":
                packages.setdefault(name.split(".")[0], []).append(top)
        manifest.update(walk(top, lambda p: os.path.relpath(p, ROOT).replace(os.sep, "/")))
    for dep in DEPENDENCIES:
        spec = importlib.util.find_spec(dep)
        if spec is None or not spec.submodule_search_locations:
            raise BuildError("%s cannot import %s: install Debian's python3-grpcio and python3-protobuf "
                             "(apt-get install python3-grpcio python3-protobuf)" % (sys.executable, dep))
        pkg_dir = os.path.realpath(list(spec.submodule_search_locations)[0])
        root = pkg_dir
        for _ in dep.split("."):
            root = os.path.dirname(root)
        roots = packages.setdefault(dep.split(".")[0], [])
        if root not in roots:
            roots.append(root)
        manifest.update(walk(pkg_dir, os.path.abspath))
    clash = sorted(set(packages) & set(sys.stdlib_module_names))
    if clash:
        raise BuildError("top-level names %s are standard-library modules; rename them" % ", ".join(clash))
    return packages, dict(sorted(manifest.items()))


def build(out):
    generate()
    packages, manifest = packages_and_manifest()
    with open(os.path.join(ROOT, "launcher.py")) as f:
        body = f.read()
    text = "\n".join([
        "#!%s -IS" % sys.executable,
        "# The python-engine launcher, written by examples/plugins/python-engine/build.py; do not edit.",
        "ROOT = %s" % json.dumps(ROOT),
        "PYTHON = %s" % json.dumps(list(sys.version_info[:2])),
        "PACKAGES = %s" % json.dumps(packages, indent=1, sort_keys=True),
        "MANIFEST = %s" % json.dumps(manifest, indent=1),
        body,
    ])
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = "%s.tmp-%d" % (out, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.rename(tmp, out)
    smoke(out)
    return len(manifest), sha256(out)


def smoke(out):
    """Starts the launcher as a program that was not started by the host:
    every module loads through the pinned finder, and the plugin refuses
    with its message. Anything else is a broken build."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    p = subprocess.run([out], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    if p.returncode != 1 or p.stdout or b"It is not meant to be run by hand" not in p.stderr:
        raise BuildError("the launcher %s does not start cleanly (exit %d, stdout %r):\n%s"
                         % (out, p.returncode, p.stdout, p.stderr.decode(errors="replace")))


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "bin", "python-engine"))
    try:
        files, digest = build(out)
    except BuildError as e:
        sys.stderr.write("build: %s\n" % e)
        sys.exit(1)
    sys.stdout.write("wrote %s\nsha256 %s, covering %d files\n" % (out, digest, files))


if __name__ == "__main__":
    main()
