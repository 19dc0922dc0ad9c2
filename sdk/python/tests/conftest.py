"""Test fixtures: a real promptd built once per session (or PROMPTD_BIN),
started on a free loopback port with its data in a tmp dir; MariaDB and
Redis from the test script (PROMPTD_TEST_MYSQL_DSN, PROMPTD_TEST_REDIS_URL),
a fresh database per test. Integration tests fail instead of skipping when
PROMPTD_REQUIRE_INTEGRATION=1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "sdk" / "python" / "src"))

ADMIN = "admin-secret-" + uuid.uuid4().hex
RUNTIME = "rt-secret-" + uuid.uuid4().hex
TOKENS = f"admin:admin:{ADMIN},rt:runtime:{RUNTIME}"


def required() -> bool:
    return os.environ.get("PROMPTD_REQUIRE_INTEGRATION") == "1"


def unavailable(why: str) -> None:
    if required():
        pytest.fail(f"integration test: {why}, but PROMPTD_REQUIRE_INTEGRATION=1")
    pytest.skip(f"integration test: {why}; run ./scripts/test.sh")


_bin_lock = threading.Lock()
_bin: Optional[str] = None


def promptd_binary() -> str:
    global _bin
    with _bin_lock:
        if _bin is None:
            env_bin = os.environ.get("PROMPTD_BIN")
            if env_bin:
                _bin = env_bin
            else:
                out = os.path.join(tempfile.mkdtemp(prefix="promptd-py-bin-"), "promptd")
                subprocess.run(["go", "build", "-o", out, "./cmd/promptd"], cwd=ROOT, check=True)
                _bin = out
        return _bin


class Promptd:
    """A promptd process; ``url`` once it listens."""

    def __init__(self, env: dict[str, str], data_dir: str) -> None:
        self.vars = {"PROMPTD_ADDR": "127.0.0.1:0", "PROMPTD_DATA_DIR": data_dir, "PROMPTD_TOKENS": TOKENS, **env}
        self.addr = ""
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.log: list[str] = []
        self.start()

    @property
    def url(self) -> str:
        return "http://" + self.addr

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROMPTD_")}
        env.update(self.vars)
        if self.addr:
            env["PROMPTD_ADDR"] = self.addr
        self.proc = subprocess.Popen([promptd_binary()], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        addr: list[str] = []
        got = threading.Event()
        proc = self.proc

        def read() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.decode(errors="replace")
                self.log.append(line)
                del self.log[:-200]
                try:
                    d = json.loads(line)
                except ValueError:
                    continue
                if isinstance(d, dict) and d.get("msg") == "listening" and not got.is_set():
                    addr.append(str(d.get("addr")))
                    got.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + 60
        while not got.wait(0.05):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("promptd did not start:\n" + "".join(self.log[-40:]))
        if self.addr and addr[0] != self.addr:
            raise RuntimeError(f"promptd restarted on {addr[0]}, not {self.addr}")
        self.addr = addr[0]

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def pause(self) -> None:
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            os.kill(self.proc.pid, signal.SIGCONT)


def start_promptd(tmp: Path, **env: str) -> Promptd:
    d = tmp / ("promptd-" + uuid.uuid4().hex[:8])
    d.mkdir()
    return Promptd(env, str(d))


@pytest.fixture(scope="session")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Promptd]:
    """One embedded (SQLite) promptd for tests that only need their own
    agents and sessions."""
    p = start_promptd(tmp_path_factory.mktemp("shared"))
    yield p
    p.kill()


@pytest.fixture
def fresh_server(tmp_path: Path) -> Iterator[Promptd]:
    """A promptd of this test alone (stopped, restarted at will)."""
    p = start_promptd(tmp_path)
    yield p
    p.kill()


_DSN = re.compile(r"^(?P<user>[^:@]*)(?::(?P<pw>[^@]*))?@tcp\((?P<host>[^:)]+):(?P<port>\d+)\)/(?P<db>[^?]*)(?P<q>\?.*)?$")


def _mysql(dsn: str, sql: str) -> None:
    m = _DSN.match(dsn)
    if not m:
        pytest.fail(f"PROMPTD_TEST_MYSQL_DSN: cannot parse {dsn!r}")
    cmd = ["mariadb", "-h", m["host"], "-P", m["port"], "-u", m["user"], "--protocol=TCP", "-e", sql]
    env = dict(os.environ, MYSQL_PWD=m["pw"] or "")
    subprocess.run(cmd, check=True, env=env, capture_output=True, timeout=60)


@pytest.fixture
def mysql_dsn() -> Iterator[str]:
    """A fresh database (utf8mb4, binary collation) on the test MariaDB."""
    dsn = os.environ.get("PROMPTD_TEST_MYSQL_DSN", "")
    if not dsn:
        unavailable("PROMPTD_TEST_MYSQL_DSN not set")
    name = "promptd_py_" + uuid.uuid4().hex[:8]
    _mysql(dsn, f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
    m = _DSN.match(dsn)
    assert m is not None
    yield f"{m['user']}:{m['pw'] or ''}@tcp({m['host']}:{m['port']})/{name}{m['q'] or ''}"
    _mysql(dsn, f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture
def redis_url() -> str:
    u = os.environ.get("PROMPTD_TEST_REDIS_URL", "")
    if not u:
        unavailable("PROMPTD_TEST_REDIS_URL not set")
    return u


def uid(prefix: str = "a") -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


CONFIG: dict[str, Any] = {
    "system": "You are {{persona}} for {{company}}.",
    "skills": [{"name": "refunds", "instructions": "Refunds within {{refund_days}} days."}],
    "memory": ["Customer prefers email."],
    "model": {"name": "gpt-4o", "temperature": 0.2},
    "variables": {"persona": {"required": True}, "company": {"default": "ACME"}, "refund_days": {"default": "30"}},
}
