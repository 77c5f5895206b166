"""Test-session settings shared by every package's tests."""

from hypothesis import settings

# CI reruns must see the same examples: a red build is then reproducible, not a dice roll.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.load_profile("ci")
