"""A Ray that the `ray` vec backend starts serves this machine only: every server it opens
listens on loopback (Ray's default is every interface, where whoever connects runs code as
you), token authentication is on, and the token file is readable by its owner alone.
Skipped when Ray is not installed (pip install "puffer-tui[ray]")."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("ray", reason='the ray extra is not installed (pip install "puffer-tui[ray]")')

# Runs in a fresh process (Ray reads its switches when imported): starts the project's Ray vec
# env with no address, then reports every TCP socket that Ray's processes listen on.
PROBE = r"""
import json, os, sys
import psutil
import puffer_tui.envs as envs
from puffer_tui.engine.vec import make

vec = make(envs.creator("bandit"), backend="ray", num_envs=2, num_workers=1, seed=0)
try:
    import ray
    mine = {os.getpid()}
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(os.environ["TMPDIR"] in part for part in proc.info["cmdline"] or ()):
                mine.add(proc.pid)
                mine.update(child.pid for child in proc.children(recursive=True))
        except psutil.Error:
            pass
    listening = sorted({c.laddr.ip for c in psutil.net_connections("inet")
                        if c.status == "LISTEN" and c.pid in mine})
    token = os.path.expanduser("~/.ray/auth_token")
    mode = oct(os.stat(token).st_mode & 0o777) if os.path.exists(token) else None
    print(json.dumps({"listening": listening, "token_mode": mode,
                      "auth": os.environ.get("RAY_AUTH_MODE"),
                      "gcs": ray.get_runtime_context().gcs_address}))
finally:
    vec.close()
"""


def test_the_ray_we_start_listens_on_loopback_only_with_a_private_token():
    home = tempfile.mkdtemp(prefix="rh", dir="/tmp")
    tmp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # short: Ray's unix socket paths live here
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")}
    env.update(HOME=home, TMPDIR=tmp, RAY_USAGE_STATS_ENABLED="0")
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                              text=True, timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    assert report["listening"], "found none of Ray's listening sockets: the probe is blind"
    loopback = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}
    assert set(report["listening"]) <= loopback, report
    assert report["gcs"].startswith("127.0.0.1:"), report
    assert report["auth"] == "token"
    if report["token_mode"] is not None:  # Rays before token auth write no token
        assert report["token_mode"] == "0o600", report
