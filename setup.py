"""Builds the one C extension; everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("connector.client._record_scan", ["connector/client/_record_scan.c"],
              extra_compile_args=["-Wextra"]),
])
