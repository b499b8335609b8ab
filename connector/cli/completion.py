"""``pyq completion bash|zsh``: the shell code that completes ``pyq`` commands and options.

The completions come from the parser tree itself, through argcomplete: the shell runs
``pyq`` with argcomplete's environment variables set, :func:`connector.cli.main.main`
hands the partial command line to ``argcomplete.autocomplete`` before parsing, and it
prints the candidates (subcommands, options, ``--format`` choices) and exits. Activate it
for one shell with ``eval "$(pyq completion bash)"`` (``zsh`` likewise), or for good by
adding that line to ``~/.bashrc`` / ``~/.zshrc``.
"""

from __future__ import annotations

import argparse
from typing import Any

SHELLS = ("bash", "zsh")


def register(commands: Any) -> None:
    completion = commands.add_parser(
        "completion", help="print shell code that completes pyq commands (bash, zsh)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print the shell code that makes SHELL complete pyq's commands and "
                    "options.\n\n"
                    "  eval \"$(pyq completion bash)\"     in this shell, or in ~/.bashrc\n"
                    "  eval \"$(pyq completion zsh)\"      in this shell, or in ~/.zshrc")
    completion.add_argument("shell", metavar="SHELL", choices=SHELLS,
                            help="bash or zsh")
    completion.set_defaults(run=print_completion)


def print_completion(args: argparse.Namespace) -> int:
    import argcomplete

    print(argcomplete.shellcode(["pyq"], shell=args.shell), end="")
    return 0
