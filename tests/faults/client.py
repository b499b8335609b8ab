"""The test's side of the fault tests' client process (:mod:`tests.faults.workload`): starts
it (prefixed with ``ip netns exec NS`` when the cluster lives in network namespaces), sends
it one command at a time and reads its one-line JSON answer. The process is stopped by its
own pid in :meth:`WorkloadProcess.close` whatever happened, and dies with the test process
(``PR_SET_PDEATHSIG``, which ``ip netns exec`` passes on through its exec); its stderr goes
to a file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from reference.kafka_cluster import die_with_parent

ROOT = Path(__file__).resolve().parents[2]


class WorkloadProcess:
    """One client process; one test thread talks to it (commands are not concurrent)."""

    def __init__(self, config: dict[str, Any], log: Path, prefix: list[str] | None = None) -> None:
        self.log = log
        self._err: IO[bytes] = open(log, "wb")  # closed in close()
        self.proc = subprocess.Popen(
            [*(prefix or []), sys.executable, "-m", "tests.faults.workload", json.dumps(config)],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
            preexec_fn=die_with_parent)
        try:
            self._answer("ready")
        except BaseException:
            self.close()
            raise

    def _answer(self, key: str) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the workload process exited ({self.proc.wait()}):\n"
                               f"{self.log.read_text(errors='replace')[-4000:]}")
        answer = json.loads(line)
        if key not in answer:
            raise RuntimeError(f"the workload process answered {answer} (expected {key!r})")
        return answer[key]

    def command(self, line: str, key: str) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._answer(key)

    def phase(self, name: str) -> None:
        self.command(f"phase {name}", "phase")

    def leader(self, partition: int) -> int:
        return int(self.command(f"leader {partition}", "leader"))

    def controller(self) -> int:
        """The active controller's node id (DescribeQuorum's leader)."""
        return int(self.command("controller", "controller"))

    def acked(self) -> int:
        return int(self.command("status", "acked"))

    def stop(self) -> dict[str, Any]:
        """Stop writing, check; the verdict (see :mod:`tests.faults.workload`)."""
        verdict: dict[str, Any] = self.command("stop", "verdict")
        self.proc.wait(30)
        return verdict

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self._err.close()
