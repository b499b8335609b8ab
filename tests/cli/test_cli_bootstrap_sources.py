"""Where the installed ``pyq`` finds the bootstrap servers, first found wins: the flag,
``-X bootstrap.servers``, ``--command-config``'s line, ``$PYQ_BROKERS``, the profile
(``$XDG_CONFIG_HOME/pyq/profile.toml``), the default ``127.0.0.1:9092``.

Every source but the expected one names an address where nothing listens (its own port),
so the command's one-line error says which address it used; the environment's and the
profile's values also reach a live broker. ``pyq --version`` and ``pyq completion`` ride
along (they need no broker).
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

PYQ = str(Path(sys.executable).parent / "pyq")  # the console script pip installed
SOURCES = ["flag", "-X", "command-config", "env", "profile"]


def dead(source: str) -> str:
    """An address for ``source`` where nothing listens (ports 1..5 are not served here)."""
    return f"127.0.0.1:{SOURCES.index(source) + 1}"


def run_pyq(tmp_path: Path, args: list[str], env: dict[str, str],
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("PYQ_BROKERS", "PYQ_PROFILE")}
    return subprocess.run([PYQ, *args], capture_output=True, text=True, timeout=timeout,
                          env={**base, "XDG_CONFIG_HOME": str(tmp_path / "config"), **env})


def command_line(tmp_path: Path, given: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """``pyq topics list`` with each source in ``given`` set to its address."""
    args = ["topics", "list", "--api-timeout-ms", "500"]
    env: dict[str, str] = {}
    if "flag" in given:
        args += ["--bootstrap-server", given["flag"]]
    if "-X" in given:
        args += ["-X", f"bootstrap.servers={given['-X']}"]
    if "command-config" in given:
        props = tmp_path / "client.properties"
        props.write_text(f"client.id=from-file\nbootstrap.servers={given['command-config']}\n")
        args += ["--command-config", str(props)]
    if "env" in given:
        env["PYQ_BROKERS"] = given["env"]
    profile = tmp_path / "config" / "pyq" / "profile.toml"
    profile.parent.mkdir(parents=True, exist_ok=True)
    profile.unlink(missing_ok=True)
    if "profile" in given:
        profile.write_text(f'bootstrap.servers = "{given["profile"]}"\n')
    return args, env


@pytest.mark.parametrize("winner", [*SOURCES, "default"])
def test_the_first_source_given_wins(tmp_path, winner):
    """The precedence table: the winner and every source below it are given, each with its
    own address; the error names the winner's."""
    below = SOURCES[SOURCES.index(winner):] if winner != "default" else []
    args, env = command_line(tmp_path, {s: dead(s) for s in below})
    out = run_pyq(tmp_path, args, env)
    expected = dead(winner) if winner != "default" else "127.0.0.1:9092"
    assert out.returncode == 1, out.stderr
    assert out.stderr.endswith(f"(bootstrap server {expected})\n"), out.stderr


@pytest.mark.parametrize("source", ["env", "profile", "command-config"])
def test_a_lower_source_reaches_the_broker(tmp_path, shared_broker, source):
    args, env = command_line(tmp_path, {source: shared_broker.bootstrap_servers})
    out = run_pyq(tmp_path, args, env)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""


def test_the_profile_holds_other_client_options_below_the_command_line(tmp_path):
    """A profile's client option is used, and ``-X`` wins over it: an invalid
    ``security.protocol`` in the profile is refused naming it, unless -X replaces it."""
    args, env = command_line(tmp_path, {"profile": dead("profile")})
    profile = tmp_path / "config" / "pyq" / "profile.toml"
    profile.write_text(profile.read_text() + 'security.protocol = "CARRIER_PIGEON"\n')
    refused = run_pyq(tmp_path, args, env)
    assert refused.returncode == 2 and "security.protocol" in refused.stderr, refused.stderr
    assert "CARRIER_PIGEON" in refused.stderr
    replaced = run_pyq(tmp_path, [*args, "-X", "security.protocol=PLAINTEXT"], env)
    assert replaced.stderr.endswith(f"(bootstrap server {dead('profile')})\n"), replaced.stderr


@pytest.mark.parametrize(("env", "profile", "message"), [
    ({"PYQ_BROKERS": "host:port"}, None,
     "pyq topics list: error: $PYQ_BROKERS: 'host:port' is not allowed: must be a "
     "comma-separated list of host:port\n"),
    ({}, 'bootstrap.servers = "a:1"\nbroken', "is not valid TOML"),
    ({}, "bootstrap.servers = [1, 2]", "bootstrap.servers = [1, 2] is not allowed: a client "
     "option is a string, a number or a boolean"),
    ({"PYQ_PROFILE": "/nonexistent/pyq.toml"}, None,
     "pyq topics list: error: $PYQ_PROFILE='/nonexistent/pyq.toml': no such file\n"),
])
def test_a_bad_environment_or_profile_is_a_usage_error_naming_it(tmp_path, env, profile,
                                                                    message):
    path = tmp_path / "config" / "pyq" / "profile.toml"
    path.parent.mkdir(parents=True)
    if profile is not None:
        path.write_text(profile)
    out = run_pyq(tmp_path, ["topics", "list"], env)
    assert out.returncode == 2
    assert message in out.stderr
    assert len(out.stderr.splitlines()) == 1, out.stderr


def test_version_is_the_installed_package_version(tmp_path):
    out = run_pyq(tmp_path, ["--version"], {})
    assert out.returncode == 0, out.stderr
    names = metadata.packages_distributions()["connector"]
    assert out.stdout == f"pyq {metadata.version(names[0])}\n"


@pytest.mark.parametrize(("line", "expected"), [
    ("pyq to", {"topics"}),
    ("pyq topics de", {"delete", "describe"}),
    ("pyq consume t --from-b", {"--from-beginning"}),
])
def test_bash_completes_commands_and_options(tmp_path, line, expected):
    """``eval "$(pyq completion bash)"`` in a real bash, then its completion function asked
    for the last word of ``line`` as bash itself would ask it."""
    words = line.split(" ")
    script = (f'eval "$({PYQ} completion bash)"\n'
              f'COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}\n'
              f'COMP_LINE="{line}"; COMP_POINT={len(line)}\n'
              f'_python_argcomplete {PYQ} "{words[-1]}" "{words[-2]}"\n'
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    env = {"PATH": f"{Path(PYQ).parent}:{os.environ['PATH']}"}
    out = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True,
                         timeout=60, env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    assert {w.strip() for w in out.stdout.split()} == expected


def test_zsh_completion_code_is_printed(tmp_path):
    out = run_pyq(tmp_path, ["completion", "zsh"], {})
    assert out.returncode == 0 and out.stdout.startswith("#compdef pyq"), out.stderr
