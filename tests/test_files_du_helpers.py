"""nodecli/cli/files_du.py's helpers in process: which failures a scan skips, the tests'
snapshot cadence, the label a state keeps of the node and login, and how a scan's end
is told. Written for mutmut's survivors, each proven against its mutant planted by
hand."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from nodecli.cli.app import Terminal
from nodecli.cli.files_du import (
    SAVE_EVERY_ENV,
    node_label,
    save_every,
    save_seconds,
    say_scan_end,
    unreadable,
)
from nodecli.errors import NodecliError
from nodecli.node.files import ListingError
from nodecli.node.files_scan import SAVE_EVERY


def with_status(exc: BaseException, status: int | None) -> BaseException:
    if status is not None:
        exc.status = status  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize(("exc", "skipped"), [
    (with_status(NodecliError("refused"), 403), True),
    (with_status(NodecliError("gone"), 404), True),
    (with_status(NodecliError("no"), 405), False),
    (with_status(NodecliError("no status"), None), False),
    (with_status(ValueError("not ours"), 403), False),
    (with_status(ListingError("unreadable listing"), 404), False),
])
def test_only_a_refused_or_vanished_folder_is_skipped(exc: BaseException,
                                                      skipped: bool) -> None:
    assert unreadable(exc) is skipped


@pytest.mark.parametrize(("value", "every", "seconds"), [
    (None, None, SAVE_EVERY), ("0", None, SAVE_EVERY), ("1", 1, float("inf")),
    ("5", 5, float("inf")), ("x", None, SAVE_EVERY),
])
def test_the_tests_cadence_replaces_the_clocks(monkeypatch, value, every, seconds) -> None:
    if value is None:
        monkeypatch.delenv(SAVE_EVERY_ENV, raising=False)
    else:
        monkeypatch.setenv(SAVE_EVERY_ENV, value)
    assert (save_every(), save_seconds()) == (every, seconds)


@pytest.mark.parametrize(("auth", "who"), [
    ({"username": "u", "access_key": "ak", "kind": "basic"}, "u"),
    ({"username": None, "access_key": "ak", "kind": "basic"}, "ak"),
    ({"username": None, "access_key": None, "kind": "bearer"}, "bearer"),
])
def test_a_scan_is_labelled_by_its_login_and_node(auth, who) -> None:
    client = SimpleNamespace(endpoint=SimpleNamespace(auth=SimpleNamespace(**auth),
                                                      base_url="https://n:1"))
    assert node_label(client) == f"{who}@https://n:1"


def test_a_finished_du_says_its_totals_and_v_the_sums() -> None:
    err = io.StringIO()
    result = SimpleNamespace(was_finished=True, resumed=True, finished_at="T", path="/d",
                             size=2048, files=3, folders=1, skipped=[], skipped_count=0)
    term = Terminal(verbosity=1, _stdout=io.StringIO(), _stderr=err)
    say_scan_end(SimpleNamespace(term=term), result, "s")
    assert err.getvalue().splitlines() == [
        "scan s finished at T: its totals (--restart scans again)",
        "debug: /d: 2.0 kB in 3 files, 1 folders"]
