"""A PEP 517 build backend for fp8lab that needs no index (no setuptools
download): it writes the wheel itself.  The wheel holds the package fp8lab/
and the Go shared library fp8lab/libfp8lab.so (built here with `go build
-buildmode=c-shared` of ../capi when missing, or taken from FP8LAB_LIB), so
it is tagged for this platform (py3-none-<platform>)."""

import base64
import hashlib
import os
import shutil
import subprocess
import sysconfig
import zipfile

NAME, VERSION = "fp8lab", "0.1.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(HERE, NAME)
LIB = os.path.join(PKG, "libfp8lab.so")


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "py3-none-" + plat


def _ensure_lib():
    env = os.environ.get("FP8LAB_LIB")
    if env and os.path.abspath(env) != LIB:
        shutil.copyfile(env, LIB)
    if os.path.exists(LIB):
        return
    root = os.path.dirname(HERE)
    if not os.path.isdir(os.path.join(root, "capi")):
        raise RuntimeError("fp8lab: %s is missing and there is no ../capi to build it from (run `make python` in the repository)" % LIB)
    go = shutil.which(os.environ.get("GO", "go"))
    if go is None:
        raise RuntimeError("fp8lab: building %s needs Go (https://go.dev) or FP8LAB_LIB naming a built library" % LIB)
    subprocess.check_call([go, "build", "-buildmode=c-shared", "-o", LIB, "./capi"], cwd=root)


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: fp8lab's bit-exact tensor-core models, narrow formats and FP8 attention simulator from NumPy\n"
            "Requires-Python: >=3.9\nRequires-Dist: numpy\n" % (NAME, VERSION))


def _files():
    for d, dirs, files in os.walk(PKG):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in sorted(files):
            if f.endswith((".py", ".so")):
                full = os.path.join(d, f)
                yield full, os.path.relpath(full, HERE).replace(os.sep, "/")


def _record_line(arc, data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arc, h, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    di = os.path.join(metadata_directory, "%s-%s.dist-info" % (NAME, VERSION))
    os.makedirs(di, exist_ok=True)
    with open(os.path.join(di, "METADATA"), "w") as f:
        f.write(_metadata())
    return os.path.basename(di)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _ensure_lib()
    tag = _tag()
    name = "%s-%s-%s.whl" % (NAME, VERSION, tag)
    di = "%s-%s.dist-info" % (NAME, VERSION)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for full, arc in _files():
            with open(full, "rb") as f:
                data = f.read()
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        for fname, text in (("METADATA", _metadata()),
                            ("WHEEL", "Wheel-Version: 1.0\nGenerator: fp8lab-backend\nRoot-Is-Purelib: false\nTag: %s\n" % tag)):
            arc = di + "/" + fname
            z.writestr(arc, text)
            records.append(_record_line(arc, text.encode()))
        records.append(di + "/RECORD,,")
        z.writestr(di + "/RECORD", "\n".join(records) + "\n")
    return name


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("fp8lab: no sdist; install from the repository (pip install ./python)")
