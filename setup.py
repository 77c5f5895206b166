"""The compiled heartbeat lane (coordinator/fastlane/_heartbeats.c), built by ``pip install``
(``make install``) with the machine's C compiler and Python headers. Optional: without a
compiler the install still succeeds, and the pure-Python heartbeat lane answers everything.
Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "coordinator.fastlane._heartbeats",
            sources=["coordinator/fastlane/_heartbeats.c"],
            optional=True,
        )
    ]
)
