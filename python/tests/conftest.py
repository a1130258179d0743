"""Fixtures of the Python tests: the repository, the ground truth, a built
`lab` program and a running lab on a free loopback port."""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "golden")
CI = os.environ.get("CI") == "true"


def need(cond, reason):
    """Skips the test with its reason, or fails it on CI (CI=true), where
    everything the tests need is installed."""
    if not cond:
        if CI:
            pytest.fail("on CI: " + reason)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def golden():
    need(os.path.isdir(os.path.join(SHARED, "h200")), "no ground truth at %s (../shared/golden)" % SHARED)
    return SHARED


@pytest.fixture(scope="session")
def lab_bin(tmp_path_factory):
    """The lab program: $FP8LAB_LAB_BIN, or built here with go build."""
    env = os.environ.get("FP8LAB_LAB_BIN")
    if env:
        return env
    go = shutil.which(os.environ.get("GO", "go"))
    need(go is not None, "no Go toolchain to build cmd/lab")
    out = str(tmp_path_factory.mktemp("bin") / "lab")
    subprocess.run([go, "build", "-o", out, "./cmd/lab"], cwd=REPO, check=True)
    return out


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab_url(lab_bin, tmp_path_factory):
    """A lab serving on 127.0.0.1 (a fresh notebook), stopped at the end."""
    data = str(tmp_path_factory.mktemp("labdata"))
    port = _free_port()
    url = "http://127.0.0.1:%d" % port
    log = open(os.path.join(data, "serve.log"), "wb")
    p = subprocess.Popen([lab_bin, "serve", "-addr", "127.0.0.1:%d" % port, "-data", data, "-workers", "1"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/api/info", timeout=2).read()
                break
            except OSError:
                if p.poll() is not None or time.monotonic() > deadline:
                    log.close()
                    raise RuntimeError("lab serve did not start:\n" + open(log.name).read()[-2000:])
                time.sleep(0.1)
        yield url
    finally:
        p.terminate()  # SIGTERM: the lab records its runs and stops
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()
