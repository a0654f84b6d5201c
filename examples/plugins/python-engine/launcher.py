# The body of the python-engine launcher. build.py writes the launcher: a
# "#!" line naming the interpreter the build ran with, with -I (no PYTHON*
# variables, no user site-packages, not the script's directory on the path)
# and -S (no site-packages at all, no .pth files), then the constants ROOT
# (the plugin's directory), PYTHON (the interpreter's major and minor
# version), PACKAGES (each top-level package the plugin imports beyond the
# standard library, and the directories it may come from) and MANIFEST (the
# SHA-256 of every file under src/, the generated build/gen/ and the
# installed grpcio and protobuf packages), then this text.
#
# The launcher is the one executable a run pins, so its digest covers all
# the code the plugin runs besides the interpreter and its standard library:
# a finder placed before Python's own resolves every module of a package in
# PACKAGES, and only to a file in MANIFEST. Python source is read once,
# checked and compiled from the bytes that were checked; a native extension
# module is read once, checked, and loaded from an anonymous in-memory copy
# of those bytes. A file that changed, or one the launcher was not built
# with, stops the plugin before its handshake with a message naming the file
# and both digests. Nothing outside PACKAGES and the standard library can be
# imported: without site-packages on sys.path there is nowhere to find it.
# pylint: disable=undefined-variable  (ROOT, PYTHON, PACKAGES, MANIFEST come first)

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import time


def refuse(message):
    """Logs why the plugin will not start, as an hclog line, and exits 1."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    line = json.dumps({"@level": "error", "@message": "python-engine launcher: " + message, "@timestamp": stamp})
    os.write(2, (line + "\n").encode())
    os._exit(1)


if tuple(sys.version_info[:2]) != tuple(PYTHON):
    refuse("python %d.%d runs this launcher, which was built for python %d.%d; rebuild the launcher (build.py) "
           "and pin it again" % (sys.version_info[0], sys.version_info[1], PYTHON[0], PYTHON[1]))

sys.dont_write_bytecode = True


def verified_read(path):
    """Returns the content of path after checking it against MANIFEST; any
    difference ends the process."""
    try:
        real = os.path.realpath(path)
        with open(real, "rb") as f:
            data = f.read()
    except OSError as e:
        refuse("%s: %s" % (path, e))
    rel = os.path.relpath(real, ROOT)
    key = real if rel.startswith("..") else rel.replace(os.sep, "/")
    want = MANIFEST.get(key)
    if want is None:
        refuse("%s is not one of the files this launcher was built with; rebuild the launcher (build.py) and pin it "
               "again" % real)
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        refuse("%s changed after this launcher was built (sha256 %s, the launcher pins %s); rebuild the launcher "
               "(build.py) and pin it again" % (real, got, want))
    return data


class PinnedSource(importlib.abc.Loader):
    """Loads a Python source file from its checked bytes."""

    def __init__(self, path):
        self.path = path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        code = compile(verified_read(self.path), self.path, "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 -- the code was checked against MANIFEST

    def get_filename(self, fullname):
        return self.path

    def get_data(self, path):
        """Data files of a package (pkgutil.get_data) are checked too."""
        return verified_read(path)


class PinnedExtension(importlib.machinery.ExtensionFileLoader):
    """Loads a native extension module from an in-memory copy of its checked
    bytes, so that the file cannot change between the check and the load."""

    def __init__(self, fullname, path):
        self.real_path = path
        fd = os.memfd_create(os.path.basename(path), os.MFD_CLOEXEC)
        os.write(fd, verified_read(path))
        self._fd = fd  # kept open for the life of the process
        super().__init__(fullname, "/proc/self/fd/%d" % fd)


class PinnedFinder(importlib.abc.MetaPathFinder):
    """Resolves the modules of the packages in PACKAGES, and only those;
    every other name is left to Python's own finders, which search the
    standard library alone."""

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        roots = PACKAGES.get(parts[0])
        if roots is None:
            return None
        portions = []
        for root in roots:
            base = os.path.join(root, *parts)
            init = os.path.join(base, "__init__.py")
            if os.path.isfile(init):
                return importlib.util.spec_from_file_location(
                    fullname, init, loader=PinnedSource(init), submodule_search_locations=[base])
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                if os.path.isfile(base + suffix):
                    loader = PinnedExtension(fullname, base + suffix)
                    return importlib.util.spec_from_file_location(fullname, loader.path, loader=loader)
            if os.path.isfile(base + ".py"):
                return importlib.util.spec_from_file_location(fullname, base + ".py", loader=PinnedSource(base + ".py"))
            if os.path.isdir(base):
                portions.append(base)
        if portions:
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = portions
            return spec
        # Raising, rather than returning None, keeps Python's path finder
        # from looking in a pinned package's directories itself.
        raise ModuleNotFoundError("No module named %r (not among the files this launcher pins)" % fullname,
                                  name=fullname)


sys.meta_path.insert(0, PinnedFinder())

from pyengine.main import main  # noqa: E402 -- imported through the finder above

main()
