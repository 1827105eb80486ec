"""Rules of the suite itself, kept where a new test cannot forget them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st


def test_hypothesis_asserts_no_wall_clock_time():
    """Every @given test runs under the suite's profile: no per-example deadline, so a
    loaded machine cannot fail a correct example (tests/conftest.py)."""
    assert settings.default is not None and settings.default.deadline is None

    @given(st.integers())
    def example(n: int) -> None:
        pass

    assert example.hypothesis.inner_test is not None  # type: ignore[attr-defined]
    example()
