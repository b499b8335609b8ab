"""Builds the one C extension; everything else about the package is in pyproject.toml.

The extension (``connector/client/_record_scan.c``, the record decoder's per-record pass)
is optional: where no C compiler (or no Python headers) is found, installing still
succeeds, says so once, and the client decodes records on its numpy path instead (the same
columns, slower; see ``connector/client/columnar.py``).
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Builds the extension if it can; otherwise warns with what is lost and how to get it."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler at all: distutils' platform error
            self._warn(e)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # the compiler failed (missing headers, say)
            self._warn(e)

    @staticmethod
    def _warn(error: BaseException) -> None:
        print(f"WARNING: pyq's C record scanner was not built ({error}); installing without it: "
              "the client decodes records with numpy, slower. Install a C compiler and the "
              "Python headers, then reinstall, to build it.", file=sys.stderr)


setup(
    ext_modules=[Extension("connector.client._record_scan", ["connector/client/_record_scan.c"],
                           extra_compile_args=["-Wextra"])],
    cmdclass={"build_ext": OptionalBuildExt},
)
