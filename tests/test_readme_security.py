"""The README's Security section, run as written: its Python blocks in one namespace (with
the suite's SparkSession as ``spark``), its shell blocks with bash, the way a reader would
paste them. Nothing in the blocks is rewritten."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker_sim.security.local_ca import LocalCA
from connector.client import Admin

pytestmark = pytest.mark.integration
README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks() -> list[tuple[str, str]]:
    text = README.read_text()
    section = text[text.index("\n## Security\n"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```(python|bash)\n(.*?)```", section, re.S)


def test_the_security_section_runs_as_written(spark, tmp_path: Path) -> None:
    blocks = _blocks()
    assert [kind for kind, _ in blocks] == ["python", "python", "bash", "bash"]
    namespace: dict = {"spark": spark}
    try:
        for kind, code in blocks[:2]:
            exec(compile(code, f"README.md ({kind} block)", "exec"), namespace)
        env = {**os.environ, "BOOTSTRAP": namespace["BOOTSTRAP"], "CA": namespace["CA"],
               "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        cli = subprocess.run(["bash", "-e", "-c", blocks[2][1]], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=180)
        assert cli.returncode == 0, cli.stderr
        users = [line.split()[0] for line in cli.stdout.splitlines() if line.split()]
        assert "alice" in users and "bob" in users           # pyq users list
        assert "User:bob" in cli.stdout                       # pyq acls add printed the ACL
        assert cli.stdout.rstrip().splitlines()[-1] == "paid"  # bob reads what Spark wrote
    finally:
        if "cluster" in namespace:
            namespace["cluster"].close()

    # The broker block: it needs broker.pem in the working directory, as the text says.
    ca = LocalCA(tmp_path / "ca")
    (tmp_path / "broker.pem").write_bytes(ca.issue("broker").pem.read_bytes())
    broker = subprocess.Popen(["bash", "-c", blocks[3][1]], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        address = None
        deadline = time.monotonic() + 60
        assert broker.stdout is not None
        while address is None and time.monotonic() < deadline:
            line = broker.stdout.readline()
            if m := re.match(r"listening on (\S+:\d+)$", line.strip()):
                address = m.group(1)
        assert address is not None, "the broker did not report its address"
        with Admin({"bootstrap.servers": address, "security.protocol": "SASL_SSL",
                    "ssl.ca.location": str(ca.ca_path), "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": "alice", "sasl.password": "alice-secret"}) as admin:
            assert [b.port for b in admin.describe_cluster(30_000).brokers] == [int(address.rsplit(":")[1])]
    finally:
        os.killpg(broker.pid, signal.SIGTERM)
        broker.wait(30)
