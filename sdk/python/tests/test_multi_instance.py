"""Two promptd instances on MariaDB + Redis: changes made on A reach a
LocalPrompts connected to B through B's event stream (bench.py measures
the latencies; here each change must simply arrive, within 5 s)."""

from __future__ import annotations

import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench  # noqa: E402


def test_localPromptsOnB_seesSwitchesPercentsAndRollbacksMadeOnA(tmp_path: Path, mysql_dsn: str,
                                                                  redis_url: str) -> None:
    a, b = bench.cluster(tmp_path, mysql_dsn, redis_url)
    try:
        figures = bench.figure_b(a, b, changes=5)
        assert set(figures) == {"pointer_switch", "percent_change", "rollback"}
        for f in figures.values():
            assert f["n"] == 5
    finally:
        for p in (a, b):
            p.kill()
