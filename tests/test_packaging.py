"""The package as someone who only runs the broker installs it: ``pip install .`` into a
fresh virtualenv, without the ``[spark]`` extra and without a C compiler (``CC`` and
``LDSHARED`` point at ``false``). It installs (the C record scanner skipped, with a warning),
pulls in no Spark, and its ``pyq-broker`` and ``pyq`` commands run a broker and produce and
consume through it on the pure-Python decoding path.

One module, one install (about a minute: the dependencies come from pip's cache or PyPI).
"""

from __future__ import annotations

import re
import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import pid_alive
from tests.sources import copy_tracked_sources
from tests.wire import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.cluster]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the package installed from a copy of the tracked sources; its bin/."""
    base = tmp_path_factory.mktemp("packaging")
    source = copy_tracked_sources(base / "source")
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    no_compiler = {"CC": "false", "LDSHARED": "false", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                   "PATH": f"{env_dir / 'bin'}:/usr/bin:/bin"}
    done = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-v",
                           str(source)], capture_output=True, text=True, env=no_compiler,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "pyq's C record scanner was not built" in done.stdout + done.stderr
    return env_dir / "bin"


def test_installs_without_spark_or_a_compiler(installed: Path) -> None:
    probe = subprocess.run([str(installed / "python"), "-c", (
        "import importlib.util as u, importlib.metadata as m;"
        "print(m.version('pyq-stream'));"
        "print(u.find_spec('pyspark') is None, u.find_spec('pandas') is None);"
        "print(u.find_spec('connector.client._record_scan') is None)")],
        capture_output=True, text=True, cwd="/", check=True)
    version, no_spark, no_c = probe.stdout.split("\n")[:3]
    assert version == "0.1.0"
    assert no_spark == "True True"  # neither pyspark nor pandas came with it
    assert no_c == "True"


#: What the extras bring: a module that needs one of these may fail to import without it.
EXTRAS_ONLY = ("pyspark", "pandas", "py4j", "jks")

IMPORT_EVERY_MODULE = """
import importlib, pkgutil, sys
import broker_sim, connector
failed = []
for package in (broker_sim, connector):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name.endswith(".__main__"):  # runs a command when imported
            continue
        try:
            importlib.import_module(info.name)
        except ImportError as e:
            if (e.name or "").split(".")[0] not in sys.argv[1:]:
                failed.append(f"{info.name}: {e}")
print("\\n".join(failed))
"""


def test_every_module_imports_with_the_declared_dependencies(installed: Path) -> None:
    """A dependency the code imports but pyproject.toml does not declare fails here (it
    would fail for a user who installed the package), extras' modules aside."""
    done = subprocess.run([str(installed / "python"), "-c", IMPORT_EVERY_MODULE, *EXTRAS_ONLY],
                          capture_output=True, text=True, cwd="/", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "", done.stdout


@pytest.fixture
def broker(installed: Path, tmp_path: Path) -> Iterator[str]:
    """``pyq-broker`` of the fresh install on an ephemeral port; its bootstrap address."""
    log = tmp_path / "broker.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(installed / "pyq-broker"), "--data-dir", str(tmp_path / "data"),
                                 "--port", "0"], stdout=out, stderr=subprocess.STDOUT, cwd="/")
    try:
        port = wait_for(lambda: re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read_text()),
                        30, what="the broker's port").group(1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert not pid_alive(proc.pid)


def test_the_installed_commands_run_a_broker_and_move_records(installed: Path, broker: str) -> None:
    def pyq(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(installed / "pyq"), *args, "--bootstrap-server", broker],
                              input=input, capture_output=True, text=True, timeout=120, cwd="/")

    created = pyq("topics", "create", "installed", "--partitions", "2")
    assert created.returncode == 0, created.stderr
    sent = pyq("produce", "installed", "-p", "0", input="k1\tone\nk2\ttwo\nk3\tthree\n")
    assert sent.returncode == 0, sent.stderr
    got = pyq("consume", "installed", "-p", "0", "-o", "beginning", "-c", "3", "-f", "%k=%s\\n")
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["k1=one", "k2=two", "k3=three"]

