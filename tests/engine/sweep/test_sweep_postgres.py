"""Two sweep drivers sharing one study in a real PostgreSQL server, started here on loopback
in a temporary directory (as an unprivileged user when the tests run as root) and stopped at
the end. Skipped, saying why, where PostgreSQL or psycopg2 is not installed."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
from sweep_harness import (
    ONE_THREAD,
    TINY,
    assert_shared,
    cli,
    cli_background,
    kill_everything,
    wait_until,
)

from puffer_tui.engine.shared import sweep_settings as st
from puffer_tui.engine.sweep.study import open_storage


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def postgres_url():
    pytest.importorskip("psycopg2", reason="psycopg2 is not installed (pip install "
                                           "'puffer-tui[sweep-postgres]')")
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip("PostgreSQL is not installed (no initdb/pg_ctl on PATH or in "
                    "/usr/lib/postgresql/*/bin); apt-get install postgresql")
    as_user: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="puffer-pg-"))
    if os.getuid() == 0:  # postgres refuses to run as root
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as a user")
        import pwd

        nobody = pwd.getpwnam("nobody")
        os.chmod(base, 0o755)
        os.chown(base, nobody.pw_uid, nobody.pw_gid)
        as_user = [runuser, "-u", "nobody", "--"]
    data, port = base / "data", _free_port()

    def pg(*args, timeout=120):
        return subprocess.run([*as_user, *args], capture_output=True, text=True,
                              timeout=timeout, cwd=base)

    try:
        made = pg(initdb, "-D", str(data), "-A", "trust", "-U", "sweep", "--no-sync",
                  "-E", "UTF8")
        if made.returncode:
            pytest.skip(f"initdb failed here: {made.stderr.strip()[-300:]}")
        started = pg(pg_ctl, "-D", str(data), "-l", str(base / "server.log"), "-w", "-t", "60",
                     "-o", f"-h 127.0.0.1 -p {port} -k {base} -F", "start")
        if started.returncode:
            log = (base / "server.log").read_text(errors="replace")[-300:] \
                if (base / "server.log").exists() else ""
            pytest.skip(f"PostgreSQL did not start here: {started.stderr.strip()} {log}")
        yield f"postgresql+psycopg2://sweep@127.0.0.1:{port}/postgres"
    finally:
        if data.exists():
            pg(pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop", timeout=60)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_two_drivers_on_one_postgresql_study_share_the_work(postgres_url, tmp_path):
    try:
        first = cli_background("sweep", "bandit", "--trials", "3", "--headless", "--study",
                               "pg", "--storage", postgres_url, "--runs-dir",
                               str(tmp_path / "a"), *TINY, *ONE_THREAD)
        wait_until((tmp_path / "a" / "sweeps" / "pg" / st.SOCKET_FILE).exists,
                   what="the first driver")
        second = cli("sweep", "bandit", "--trials", "3", "--headless", "--study", "pg",
                     "--storage", postgres_url, "--runs-dir", str(tmp_path / "b"),
                     *TINY, *ONE_THREAD)
        out, _ = first.communicate(timeout=240)
        assert first.returncode == 0, out
        assert second.returncode == 0, second.stdout + second.stderr
        import optuna

        study = optuna.load_study(study_name="pg", storage=open_storage(postgres_url))
        assert_shared(study, 3)
    finally:
        kill_everything(tmp_path)
