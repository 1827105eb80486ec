"""Rules of the suite itself, kept where a new test cannot forget them."""

from __future__ import annotations

from hypothesis import settings


def test_hypothesis_asserts_no_wall_clock_time():
    """Every @given test runs under the suite's profile (tests/conftest.py): no
    per-example deadline, so a loaded machine cannot fail a correct example. Without
    the profile, Hypothesis's default of 200 ms applies and this fails."""
    assert settings.default is not None and settings.default.deadline is None
