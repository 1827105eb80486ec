"""The documentation is executable: the shell examples of README.md and of every guide
in docs/ run in order against the emulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readme_runner import Block, ReadmeError, all_blocks, documents, parse_blocks, run_readme

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(900)  # every block of README and docs/ in one run: minutes when loaded
def test_readme_and_guides_run_as_written() -> None:
    blocks, result = run_readme(ROOT / "README.md")
    ran = [b for b in blocks if b.skip is None]
    assert len(ran) >= 30, "the README and the guides should show runnable examples"
    assert {b.doc for b in ran} >= {"README.md", "docs/users.md", "docs/events.md"}
    assert result.ok, result.failure()
    # the walk writes only inside its $NODECLI_HOME, which the last block removes
    assert result.leftovers == [], result.leftovers


def test_every_skip_names_a_reason_and_few_are_skipped() -> None:
    blocks = all_blocks(ROOT / "README.md")
    skipped = [b for b in blocks if b.skip]
    assert all(b.skip for b in skipped)
    assert len(skipped) <= len(blocks) // 4, [(b.doc, b.line, b.skip) for b in skipped]


def test_every_page_of_docs_is_run_and_the_readme_stays_short() -> None:
    order = [p.relative_to(ROOT).as_posix() for p in documents(ROOT / "README.md")]
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    assert sorted(order[1:]) == pages, "every docs/ page is linked from the README"
    guides = ["users", "tokens", "access", "events", "transfers", "operations", "monitoring"]
    assert all(f"docs/{g}.md" in order for g in guides)
    assert order[-2:] == ["docs/reference.md", "docs/development.md"]
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


def test_no_page_cites_the_developers_spec() -> None:
    """Users do not have the contract the developers work from."""
    for doc in documents(ROOT / "README.md"):
        text = doc.read_text(encoding="utf-8")
        assert "interface.md" not in text and "field-notes" not in text, doc.name


def test_a_failure_in_a_guide_names_the_guide(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "two.md").write_text("```sh\nfalse\n```\n", encoding="utf-8")
    readme = _write(tmp_path, "```sh\ntrue\n```\nNext: [two](docs/two.md).\n")
    blocks, result = run_readme(readme, timeout=60)
    assert [(b.doc, b.index) for b in blocks] == [("README.md", 1), ("docs/two.md", 2)]
    assert not result.ok and "docs/two.md:1 (sh block 2)" in result.failure()


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
