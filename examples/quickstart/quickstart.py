"""The Python SDK's quick start: publish a prompt, point an env at it, resolve
and assemble it the way a runtime does.

    pip install promptd-<version>-py3-none-any.whl
    PROMPTD_URL=http://127.0.0.1:8080 PROMPTD_ADMIN_TOKEN=... PROMPTD_TOKEN=... \
        python3 quickstart.py [AGENT]

PROMPTD_ADMIN_TOKEN is an admin token (it publishes and moves env pointers),
PROMPTD_TOKEN a runtime token (it resolves and assembles). AGENT defaults to
quickstart-python; it must be new (version 1 is created with base_version 0).
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version as dist_version

import promptd


def main() -> int:
    url = os.environ.get("PROMPTD_URL", "http://127.0.0.1:8080")
    agent = sys.argv[1] if len(sys.argv) > 1 else "quickstart-python"
    print(f"promptd SDK {dist_version('promptd')} (module {promptd.__file__})")

    with promptd.Client(url, os.environ["PROMPTD_ADMIN_TOKEN"]) as admin, \
            promptd.Client(url, os.environ["PROMPTD_TOKEN"]) as rt:
        v = admin.create_version(agent, {
            "system": "You are {{persona}} for {{company}}.",
            "variables": {"persona": {"required": True}, "company": {"default": "ACME"}},
            "model": {"name": "gpt-4o", "temperature": 0.2},
        }, base_version=0, message="quick start")
        print(f"published {agent} version {v.version}")

        env = admin.set_env(agent, "prod", v.version, expected_revision=0)
        print(f"{agent}/prod -> version {env.version} (revision {env.revision})")

        r = rt.resolve(agent, "prod", user_id="u1")
        print(f"resolved: version {r.version}, pinned {r.pinned}, system {r.config['system']!r}")

        plain = rt.assemble(agent, "prod", {"persona": "a support bot"}, user_id="u1")
        print("assembled:", plain.messages)

        openai = rt.assemble(agent, "prod", {"persona": "a support bot"}, user_id="u1", format="openai")
        print("openai body:", openai.body)

        try:
            rt.assemble(agent, "prod", {}, user_id="u1")  # persona is required
        except promptd.PromptdError as e:
            print(f"refused: {e.status} {e.code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
