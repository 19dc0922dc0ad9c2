"""Figures for issue 13's "Must show", measured against real promptd
processes (built as the tests build them, or PROMPTD_BIN):

  (a) the per-call cost of a local assemble and resolve, against a bare
      dict lookup of the same bytes in the same run, and an HTTP assemble;
  (b) pointer switches, percent changes and rollbacks made on instance A
      reaching a LocalPrompts connected to instance B (MariaDB + Redis);
  (c) with promptd stopped, the LocalPrompts keeps serving and a fresh one
      starts from the disk copy;
  (d) exposures: after N local resolves and close(), promptd's counts per
      version and arm equal what was resolved.

    PROMPTD_TEST_MYSQL_DSN=... PROMPTD_TEST_REDIS_URL=... /usr/bin/python3 sdk/python/bench.py [changes]

(b) needs MariaDB and Redis (the test script's, see scripts/lib/services.sh).
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "src"), str(HERE / "tests")]

import promptd  # noqa: E402
from conftest import ADMIN, CONFIG, RUNTIME, Promptd, _mysql, start_promptd  # noqa: E402


def per_call(f: Callable[[], Any], n: int) -> float:
    """Seconds per call, the best of 3 runs of n calls."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def publish(c: promptd.Client, agent: str) -> None:
    c.create_version(agent, CONFIG, 0)
    c.set_env(agent, "prod", 1, 0)


def figure_a(server: Promptd, n: int = 20000) -> dict[str, float]:
    agent = "bench" + uuid.uuid4().hex[:6]
    with promptd.Client(server.url, ADMIN) as c, promptd.Client(server.url, RUNTIME) as rt:
        publish(c, agent)
        v2 = c.create_version(agent, CONFIG, 1).version
        c.http.post(f"/v1/agents/{agent}/envs/prod/releases",
                    json={"candidate_version": v2, "percent": 25, "stickiness": "user"}).raise_for_status()
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            variables = {"persona": "a support bot"}
            cached = {("u1", "persona"): lp.assemble(agent, "prod", variables, user_id="u1").body}
            lookup = per_call(lambda: cached[("u1", "persona")], n)
            resolve = per_call(lambda: lp.resolve(agent, "prod", user_id="u1"), n)
            assemble = per_call(lambda: lp.assemble(agent, "prod", variables, user_id="u1"), n)
            http = per_call(lambda: rt.assemble(agent, "prod", variables, user_id="u1"), 300)
    return {"dict_lookup_us": lookup * 1e6, "local_resolve_us": resolve * 1e6, "local_assemble_us": assemble * 1e6,
            "http_assemble_us": http * 1e6, "resolve_vs_lookup": resolve / lookup,
            "assemble_vs_lookup": assemble / lookup, "http_vs_local_assemble": http / assemble}


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> float:
    """Seconds until cond() held (checked every 0.5 ms); raises on timeout."""
    t0 = time.perf_counter()
    while not cond():
        if time.perf_counter() - t0 > timeout:
            raise TimeoutError("the change did not reach the LocalPrompts")
        time.sleep(0.0005)
    return time.perf_counter() - t0


def summary(xs: list[float]) -> dict[str, float]:
    ms = sorted(x * 1000 for x in xs)
    p99 = ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
    return {"n": len(ms), "p50_ms": statistics.median(ms), "p99_ms": p99, "max_ms": ms[-1]}


def cluster(tmp: Path, dsn: str, redis_url: str) -> tuple[Promptd, Promptd]:
    prefix = "pybench" + uuid.uuid4().hex[:6]
    env = {"PROMPTD_MYSQL_DSN": dsn, "PROMPTD_REDIS_URL": redis_url, "PROMPTD_KEY_PREFIX": prefix,
           "PROMPTD_RECONCILE_EVERY": "1s"}
    a = start_promptd(tmp, PROMPTD_INSTANCE_ID="node-a", **env)
    b = start_promptd(tmp, PROMPTD_INSTANCE_ID="node-b", **env)
    return a, b


def figure_b(a: Promptd, b: Promptd, changes: int = 30) -> dict[str, dict[str, float]]:
    """Changes on A, seen by a LocalPrompts on B."""
    agent = "prop" + uuid.uuid4().hex[:6]
    out: dict[str, dict[str, float]] = {}
    with promptd.Client(a.url, ADMIN) as c, promptd.Client(b.url, RUNTIME) as rt:
        publish(c, agent)
        v2 = c.create_version(agent, CONFIG, 1).version
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            wait_until(lp.stream_up.is_set)
            # Pointer switches 1 <-> 2.
            samples = []
            for i in range(changes):
                env = c.get_env(agent, "prod")
                to = v2 if env.version == 1 else 1
                c.set_env(agent, "prod", to, env.revision)
                samples.append(wait_until(lambda: lp.resolve(agent, "prod").version == to))
            out["pointer_switch"] = summary(samples)
            # Percent changes 0 <-> 100 for one user (whose arm flips each time).
            env = c.get_env(agent, "prod")
            if env.version != 1:
                c.set_env(agent, "prod", 1, env.revision)
            r = c.http.post(f"/v1/agents/{agent}/envs/prod/releases",
                            json={"candidate_version": v2, "percent": 0, "stickiness": "user"})
            r.raise_for_status()
            rid, rev = r.json()["id"], r.json()["revision"]
            wait_until(lambda: lp.resolve(agent, "prod", user_id="u1").release is not None)
            samples = []
            for i in range(changes):
                pct = 100 if i % 2 == 0 else 0
                want = v2 if pct == 100 else 1
                r = c.http.patch(f"/v1/releases/{rid}", json={"percent": pct, "expected_revision": rev})
                r.raise_for_status()
                rev = r.json()["revision"]
                samples.append(wait_until(lambda: lp.resolve(agent, "prod", user_id="u1").version == want))
            out["percent_change"] = summary(samples)
            r = c.http.post(f"/v1/releases/{rid}/rollback", json={"expected_revision": rev, "reason": "bench"})
            r.raise_for_status()
            # Rollbacks: a release at 100 % (user on the candidate), rolled back.
            samples = []
            base = 1
            for i in range(changes):
                cand = c.create_version(agent, dict(CONFIG, system=f"cand {i} {{{{persona}}}}"),
                                        c.list_versions(agent, limit=1).items[0]["version"]).version
                r = c.http.post(f"/v1/agents/{agent}/envs/prod/releases",
                                json={"candidate_version": cand, "percent": 100, "stickiness": "user"})
                r.raise_for_status()
                rid, rev = r.json()["id"], r.json()["revision"]
                wait_until(lambda: lp.resolve(agent, "prod", user_id="u1").version == cand)
                r = c.http.post(f"/v1/releases/{rid}/rollback", json={"expected_revision": rev, "reason": "bench"})
                r.raise_for_status()
                samples.append(wait_until(lambda: lp.resolve(agent, "prod", user_id="u1").version == base))
            out["rollback"] = summary(samples)
    return out


def figure_c(tmp: Path) -> dict[str, Any]:
    server = start_promptd(tmp)
    agent = "cold" + uuid.uuid4().hex[:6]
    cache = str(tmp / "bundle.json")
    with promptd.Client(server.url, ADMIN) as c:
        publish(c, agent)
    rt = promptd.Client(server.url, RUNTIME, timeout=1.0)
    lp = promptd.LocalPrompts(rt, cache_path=cache, flush_interval=3600).start()
    want = lp.assemble(agent, "prod", {"persona": "bot"}, user_id="u1").body
    server.kill()
    served = sum(lp.assemble(agent, "prod", {"persona": "bot"}, user_id=f"u{i}").body["version"] == 1
                 for i in range(1000))
    t0 = time.perf_counter()
    cold = promptd.LocalPrompts(promptd.Client(server.url, RUNTIME, timeout=1.0), cache_path=cache,
                                flush_interval=3600).start()
    start_s = time.perf_counter() - t0
    same = cold.assemble(agent, "prod", {"persona": "bot"}, user_id="u1").body == want
    lp.close()
    cold.close()
    return {"served_while_down": served, "fresh_from_disk": cold.core.from_disk, "same_answer": same,
            "cold_start_ms": start_s * 1000}


def figure_d(server: Promptd, n: int = 3333) -> dict[str, Any]:
    agent = "expo" + uuid.uuid4().hex[:6]
    with promptd.Client(server.url, ADMIN) as c, promptd.Client(server.url, RUNTIME) as rt:
        publish(c, agent)
        v2 = c.create_version(agent, CONFIG, 1).version
        c.http.post(f"/v1/agents/{agent}/envs/prod/releases",
                    json={"candidate_version": v2, "percent": 30, "stickiness": "user"}).raise_for_status()
        want: dict[str, int] = {}
        with promptd.LocalPrompts(rt, agents=[agent], flush_interval=3600) as lp:
            for i in range(n):
                r = lp.resolve(agent, "prod", user_id=f"user-{i}")
                k = f"v{r.version}/{r.release.arm if r.release else '-'}"
                want[k] = want.get(k, 0) + 1
        frm = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
        got: dict[str, int] = {}
        for it in rt.get_exposures(agent, "prod", frm=frm):
            k = f"v{it['version']}/{it.get('arm') or '-'}"
            got[k] = got.get(k, 0) + int(it["count"])
    return {"resolved": want, "server": got, "equal": got == want}


def mysql_db() -> Iterator[str]:
    dsn = os.environ["PROMPTD_TEST_MYSQL_DSN"]
    name = "promptd_pybench_" + uuid.uuid4().hex[:6]
    _mysql(dsn, f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
    head, _, rest = dsn.partition(")/")
    query = rest.partition("?")[2]
    try:
        yield f"{head})/{name}" + (f"?{query}" if query else "")
    finally:
        _mysql(dsn, f"DROP DATABASE IF EXISTS `{name}`")


def report(name: str, f: Callable[[], Any]) -> None:
    try:
        print(name, f(), flush=True)
    except Exception as err:  # a figure that cannot be measured says why
        print(name, "FAILED:", repr(err), flush=True)


def main() -> None:
    changes = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    tmp = Path(tempfile.mkdtemp(prefix="promptd-pybench-"))
    server = start_promptd(tmp)
    try:
        report("(a) per call:", lambda: {k: round(v, 2) for k, v in figure_a(server).items()})
        report("(d) exposures:", lambda: figure_d(server))
    finally:
        server.kill()
    report("(c) promptd stopped:", lambda: figure_c(tmp))
    if not (os.environ.get("PROMPTD_TEST_MYSQL_DSN") and os.environ.get("PROMPTD_TEST_REDIS_URL")):
        print("(b) skipped: PROMPTD_TEST_MYSQL_DSN and PROMPTD_TEST_REDIS_URL not set")
        return
    gen = mysql_db()
    dsn = next(gen)
    a, b = cluster(tmp, dsn, os.environ["PROMPTD_TEST_REDIS_URL"])
    try:
        figures = figure_b(a, b, changes)
        for k, v in figures.items():
            print(f"(b) {k}, made on A, seen by LocalPrompts on B:", {x: round(y, 1) for x, y in v.items()})
    finally:
        a.kill()
        b.kill()
        gen.close()


if __name__ == "__main__":
    main()
