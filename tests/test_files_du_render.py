"""nodecli/cli/files_du.py's pieces around the scan, in process: the listing it gives the
scan, the status line's words, what a Ctrl-C or a node's error says (with or without
--resume, before or after the first folder), and each output format of du's rows and
of --top, ncdu's export copied byte for byte. Written for mutmut's survivors of the
module, each proven against its mutant planted by hand."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from nodecli.cli.app import Terminal
from nodecli.cli.files_du import _lister, _render, run_scan, say_scan_end, scan_status
from nodecli.errors import ExitCode, Interrupted, NodecliError
from nodecli.node.files import Entry


class Status:
    """What app.term.status is asked: the lines shown, the clears."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.clears = 0

    def show(self, text: str) -> None:
        self.shown.append(text)

    def clear(self) -> None:
        self.clears += 1


def app_with_status() -> tuple[Any, Status]:
    status = Status()
    return SimpleNamespace(term=SimpleNamespace(status=status)), status


# -- the listing a scan is given ------------------------------------------------------


def test_the_scan_lists_a_folder_through_the_node_as_plain_entries() -> None:
    calls: list[tuple[Any, str]] = []
    when = datetime(2025, 1, 1, tzinfo=UTC)
    entries = [Entry(id="F", name="f", path="/d/f", type="directory", size=None,
                     mtime=when),  # a folder, as a node may type it
               Entry(id="L", name="l", path="/d/l", type="link", size=7, mtime=None),
               Entry(id="G", name="g", path="/d/g", type="file", size=0, mtime=when)]

    def list_folder(client: Any, file_id: str) -> Any:
        calls.append((client, file_id))
        yield from entries

    client = object()
    listing = _lister(SimpleNamespace(list_folder=list_folder), client)
    assert calls == []  # nothing asked before the scan lists the folder
    got = list(listing("D1"))
    assert calls == [(client, "D1")]
    assert got == [
        {"id": "F", "name": "f", "type": "folder", "size": None, "mtime": when},
        {"id": "L", "name": "l", "type": "link", "size": 7, "mtime": None},
        {"id": "G", "name": "g", "type": "file", "size": 0, "mtime": when}]


# -- the status line ------------------------------------------------------------------


def test_the_status_line_says_the_counts_size_rate_and_what_is_left() -> None:
    app, status = app_with_status()
    show = scan_status(app, "/big")
    show(SimpleNamespace(folders=1234, files=1234567, size=1536, rate=12345.6,
                         pending=10000))
    show(SimpleNamespace(folders=0, files=0, size=0, rate=0.4, pending=0))
    assert status.shown == [
        "scanning /big: 1,234 folders, 1,234,567 files, 1.5 kB · 12,346 entries/s · "
        "10,000 to list",
        "scanning /big: 0 folders, 0 files, 0 B · 0 entries/s · 0 to list"]


# -- how a scan ends ---------------------------------------------------------------------


class Scan:
    def __init__(self, then: Any, listings: int | None) -> None:
        self.then = then
        self.snap = None if listings is None else SimpleNamespace(listings=listings)

    def run(self) -> Any:
        if isinstance(self.then, BaseException):
            raise self.then
        return self.then


def test_a_finished_scan_gives_its_result_and_clears_the_status() -> None:
    app, status = app_with_status()
    done = object()
    assert run_scan(app, Scan(done, 3), "/p", "n") is done
    assert status.clears == 1


@pytest.mark.parametrize(("listings", "name", "message", "hint"), [
    (1234, "night", "scan of /p q interrupted after 1,234 folders",
     "the same command goes on where it stopped (--resume night)"),
    (0, "night", "scan of /p q interrupted after 0 folders",
     "the same command goes on where it stopped (--resume night)"),
    (1, "night", "scan of /p q interrupted after 1 folder",
     "the same command goes on where it stopped (--resume night)"),
    (2, "night", "scan of /p q interrupted after 2 folders",
     "the same command goes on where it stopped (--resume night)"),
    (None, "night", "scan of /p q interrupted",
     "the same command goes on where it stopped (--resume night)"),
    (5, None, "scan of /p q interrupted after 5 folders",
     "--resume NAME keeps a scan's place, to go on after an interruption"),
])
def test_a_ctrl_c_says_how_far_and_how_to_go_on(listings, name, message, hint) -> None:
    app, status = app_with_status()
    with pytest.raises(Interrupted) as info:
        run_scan(app, Scan(KeyboardInterrupt(), listings), "/p q", name)
    e = info.value
    assert (e.message, e.hint, e.exit_code) == (message, hint, ExitCode.INTERRUPTED)
    assert e.__cause__ is None and e.__suppress_context__  # no "during handling" chain
    assert status.clears >= 1


SAVED = "the scan's place is saved: the same command goes on (--resume n)"


@pytest.mark.parametrize(("hint", "listings", "name", "after"), [
    (None, 1, "n", SAVED),
    ("check the node", 7, "n", f"check the node; {SAVED}"),
    ("check the node", 0, "n", "check the node"),  # nothing listed: nothing saved
    ("check the node", None, "n", "check the node"),
    (None, 3, None, None),  # no --resume: no place kept
    ("", 3, "n", SAVED),
])
def test_a_node_error_tells_that_the_place_is_saved(hint, listings, name, after) -> None:
    app, status = app_with_status()
    error = NodecliError("the node broke", hint=hint)
    with pytest.raises(NodecliError) as info:
        run_scan(app, Scan(error, listings), "/p", name)
    assert info.value is error
    assert (error.message, error.hint) == ("the node broke", after)
    assert status.clears == 1


def test_du_names_a_folder_not_listed_with_the_whole_reason() -> None:
    """du keeps the reason whole ("not listed: ..."); find says the cause alone."""
    reason = "not listed: GET /files/7/files: HTTP 403"
    result = SimpleNamespace(was_finished=False, resumed=False, path="/d", size=0, files=0,
                             folders=1, skipped=[{"path": "/d/a", "reason": reason}],
                             skipped_count=1)
    said = []
    for words in ({}, {"missed": "not read", "cause_only": True}):
        err = io.StringIO()
        term = Terminal(_stdout=io.StringIO(), _stderr=err)
        say_scan_end(SimpleNamespace(term=term), result, None, **words)
        said.append(err.getvalue())
    assert said == [f"nodecli: warning: /d/a: not scanned ({reason})\n",
                    "nodecli: warning: /d/a: not read (GET /files/7/files: HTTP 403)\n"]


# -- the outputs -----------------------------------------------------------------------


ROWS = [{"path": "/d", "size": 1536, "files": 1200, "folders": 2, "depth": 0, "extra": 1},
        {"path": "/d/a", "size": 0, "files": 0, "folders": 0, "depth": 1, "extra": 2}]
TOP = [{"path": "/d/big", "size": 2048}, {"path": "/d/x", "size": 1}]


def render(fmt: str, *, top: int = 0, rows: list[dict[str, Any]] = ROWS,
           tops: list[dict[str, Any]] = TOP) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    term = Terminal(_stdout=out, _stderr=err)
    result = SimpleNamespace(rows=rows, top=tops, ncdu=None)
    _render(SimpleNamespace(term=term), result, fmt, top)
    return out.getvalue(), err.getvalue()


def test_rows_as_json_csv_and_jsonl_carry_the_row_fields_alone() -> None:
    want = [{k: r[k] for k in ("path", "size", "files", "folders", "depth")} for r in ROWS]
    out, _ = render("json")
    assert json.loads(out) == want
    out, _ = render("jsonl")
    assert [json.loads(line) for line in out.splitlines()] == want
    out, _ = render("csv")
    assert list(csv.reader(io.StringIO(out))) == [
        ["path", "size", "files", "folders", "depth"],
        ["/d", "1536", "1200", "2", "0"], ["/d/a", "0", "0", "0", "1"]]


def test_top_as_json_and_csv_carries_path_and_size() -> None:
    out, _ = render("json", top=2)
    assert json.loads(out) == TOP
    out, _ = render("csv", top=5)
    assert list(csv.reader(io.StringIO(out))) == [["path", "size"], ["/d/big", "2048"],
                                                  ["/d/x", "1"]]


@pytest.mark.parametrize("fmt", ["table", "wide"])
def test_rows_as_a_table_with_human_sizes(fmt) -> None:
    out, _ = render(fmt)
    assert out.splitlines() == ["path    size  files  folders",  # numbers to the right
                                "/d    1.5 kB   1200        2",
                                "/d/a     0 B      0        0"]


def test_top_as_a_table_has_path_and_size_alone() -> None:
    out, _ = render("table", top=2)
    assert out.splitlines() == ["path      size", "/d/big  2.0 kB", "/d/x       1 B"]


def test_no_rows_as_a_table_says_no_files() -> None:
    out, err = render("table", rows=[])
    assert (out, err) == ("", "no files\n")
    out, err = render("table", top=3, tops=[])
    assert (out, err) == ("", "no files\n")
    assert render("json", rows=[]) == ("[]\n", "")


class Closing(io.BytesIO):
    closes = 0

    def close(self) -> None:
        Closing.closes += 1
        super().close()


def test_ncdu_is_copied_byte_for_byte_after_what_stdout_holds() -> None:
    export = b'[1,2,{"progname":"nodecli"},[{"name":"/d\xc3\xa9"}]]\n'
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=False)
    out.write("before ")  # buffered text goes out first
    term = Terminal(_stdout=out, _stderr=io.StringIO())
    spool = Closing(export)
    Closing.closes = 0
    _render(SimpleNamespace(term=term), SimpleNamespace(ncdu=spool), "ncdu", 0)
    assert raw.getvalue() == b"before " + export  # flushed: nothing left behind
    assert Closing.closes == 1 and spool.closed


def test_ncdu_to_a_text_stream_is_the_same_text() -> None:
    export = '[1,2,{"progname":"nodecli"},[{"name":"/dé"}]]\n'
    out = io.StringIO()
    spool = Closing(export.encode())
    _render(SimpleNamespace(term=Terminal(_stdout=out, _stderr=io.StringIO())),
            SimpleNamespace(ncdu=spool), "ncdu", 0)
    assert out.getvalue() == export and spool.closed


def test_ncdu_spool_is_closed_when_stdout_fails() -> None:
    class Broken(io.StringIO):
        def flush(self) -> None:
            raise BrokenPipeError("stdout went away")

    spool = Closing(b"[]")
    with pytest.raises(BrokenPipeError):
        _render(SimpleNamespace(term=Terminal(_stdout=Broken(), _stderr=io.StringIO())),
                SimpleNamespace(ncdu=spool), "ncdu", 0)
    assert spool.closed


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def narrow(fmt: str, top: int, rows: list[dict[str, Any]], tops: list[dict[str, Any]]
           ) -> list[str]:
    out = Tty()
    term = Terminal(_stdout=out, _stderr=io.StringIO(), no_color=True)
    _render(SimpleNamespace(term=term), SimpleNamespace(rows=rows, top=tops, ncdu=None),
            fmt, top)
    return out.getvalue().splitlines()


LONG = "/" + "p" * 60


def test_on_a_narrow_terminal_the_numbers_stay_whole_and_the_path_gives_way(
        monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "20")
    rows = [{"path": LONG, "size": 123456789, "files": 1234567, "folders": 987654321,
             "depth": 1}]
    assert narrow("table", 0, rows, []) == ["path        size    files    folders",
                                            "/pppp\u2026  123.5 MB  1234567  987654321"]
    assert narrow("table", 1, [], [{"path": LONG, "size": 123456789}]) == [
        "path            size", "/pppppppp\u2026  123.5 MB"]
    # -o wide: every cell whole, the line as long as it takes
    assert narrow("wide", 0, rows, []) == [
        "path" + " " * 63 + "size    files    folders",
        LONG + "  123.5 MB  1234567  987654321"]
