"""README.md is executable: its shell examples run in order against the emulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme_runner import Block, ReadmeError, parse_blocks, run_readme

ROOT = Path(__file__).resolve().parent.parent


def test_readme_examples_run_as_written() -> None:
    blocks, result = run_readme(ROOT / "README.md")
    ran = [b for b in blocks if b.skip is None]
    assert len(ran) >= 20, "the README should show runnable examples"
    assert result.ok, result.failure()
    # the walk writes only inside its $NODECLI_HOME, which the last block removes
    assert result.leftovers == [], result.leftovers


def test_every_skip_names_a_reason_and_few_are_skipped() -> None:
    blocks = parse_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    skipped = [b for b in blocks if b.skip]
    assert all(b.skip for b in skipped)
    assert len(skipped) <= len(blocks) // 4, [(b.line, b.skip) for b in skipped]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "README.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_runner_reports_the_failing_block_and_line(tmp_path: Path) -> None:
    readme = _write(tmp_path, "# t\n\n```sh\nX=1\n```\n\ntext\n\n```sh\ntest \"$X\" = 2\n```\n")
    blocks, result = run_readme(readme, timeout=60)
    assert [b.line for b in blocks] == [3, 9]
    assert not result.ok
    assert "README.md:9 (sh block 2)" in result.failure()


def test_runner_keeps_state_between_blocks_and_checks_expected_exit(tmp_path: Path) -> None:
    readme = _write(tmp_path, (
        "```sh\ncd ~ && X=1 && mkdir d\n```\n"
        "```json\n{\"not\": \"run\"}\n```\n"
        "<!-- readme-test: exit=3 -->\n```sh\ntest -d ~/d\nsh -c 'exit 3'   # refused\n```\n"
        "<!-- readme-test: skip (needs a real node) -->\n```sh\nfalse\n```\n"
        "```sh\ntest \"$X\" = 1 && test \"$PWD\" = \"$HOME\"\n```\n"))
    blocks, result = run_readme(readme, timeout=60)
    assert [b.expect_exit for b in blocks] == [None, 3, None, None]
    assert blocks[2].skip == "needs a real node"
    assert result.ok, result.failure()


def test_runner_refuses_an_unexpected_status_of_a_refusal_block(tmp_path: Path) -> None:
    readme = _write(tmp_path, "<!-- readme-test: exit=2 -->\n```sh\nsh -c 'exit 1'\n```\n")
    _blocks, result = run_readme(readme, timeout=60)
    assert not result.ok
    assert "exited 1, not 2" in result.failure()


def test_background_jobs_end_with_the_run(tmp_path: Path) -> None:
    readme = _write(tmp_path, "```sh\nsleep 300 &\necho started\n```\n")
    _blocks, result = run_readme(readme, timeout=30)
    assert result.ok and not result.timed_out


@pytest.mark.parametrize("text", [
    "```sh\nnever closed\n",
    "<!-- readme-test: skip -->\n```sh\ntrue\n```\n",
    "<!-- readme-test: sometimes -->\n```sh\ntrue\n```\n",
])
def test_conventions_are_enforced(text: str) -> None:
    with pytest.raises(ReadmeError):
        parse_blocks(text)


def test_block_dataclass_defaults() -> None:
    b = Block(1, 1, "true")
    assert b.skip is None and b.expect_exit is None
