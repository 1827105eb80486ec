"""nodecli.node.transfers at its boundaries (issue 33, item 2: the survivors of its
mutation run): a transfer spec file, a rate's shape and units, what an ended transfer
is. Pure functions in process."""

from __future__ import annotations

import pytest

from nodecli.errors import UsageError
from nodecli.node.transfers import MAX_SPEC_BYTES, is_final, load_transfer_spec, parse_rate


@pytest.mark.parametrize(("text", "kbps"), [
    ("800", 800), ("800k", 800), ("800K", 800), ("500m", 500_000), ("500M", 500_000),
    ("2g", 2_000_000), ("2G", 2_000_000), (" 1.5m ", 1500), ("1.25mbps", 1250),
    ("999999999", 999_999_999), ("0.001g", 1000), ("1.999k", 1), ("1kbps", 1),
    ("7 g", 7_000_000)])
def test_a_rate_in_kbps(text, kbps):
    assert parse_rate(text) == kbps


@pytest.mark.parametrize("text", ["", "fast", "1t", "1000000000", "1.2345", "-5", "1,5",
                                  "1.", ".5", "5 bps k", "1e3", "5mb"])
def test_anything_else_is_not_a_rate(text):
    with pytest.raises(UsageError) as e:
        parse_rate(text)
    assert str(e.value) == f"--target-rate: {text[:40]!r} is not a rate (500m, 2g, 800k)"


def test_a_refused_rate_is_shown_in_40_characters():
    with pytest.raises(UsageError) as e:
        parse_rate("r" * 50)
    assert str(e.value) == f"--target-rate: {'r' * 40!r} is not a rate (500m, 2g, 800k)"


@pytest.mark.parametrize("text", ["0", "0k", "0.999", "0.5k", "0.0m"])
def test_a_rate_below_one_kbps_is_refused(text):
    with pytest.raises(UsageError) as e:
        parse_rate(text)
    assert str(e.value) == "--target-rate must be above 0"


@pytest.mark.parametrize(("status", "final"), [
    ("running", False), ("completed", True), ("failed", True), ("cancelled", True),
    ("Running", True), (None, True)])
def test_any_status_but_running_has_ended(status, final):
    assert is_final({"status": status}) is final
    assert is_final({}) is True


def test_a_spec_is_a_json_object_in_utf8(tmp_path):
    f = tmp_path / "spec.json"
    f.write_text('{"paths": [{"source": "é"}]}', encoding="utf-8")
    assert load_transfer_spec(str(f)) == {"paths": [{"source": "é"}]}


@pytest.mark.parametrize(("content", "says"), [
    (b"\xff{}", "is not UTF-8 text"), (b"{", "is not valid JSON: "),
    (b"[1]", "must hold a JSON object"), (b"[" * 100_000, "is nested too deeply"),
    (b"", "is not valid JSON: ")])
def test_a_spec_that_is_no_json_object_is_refused_and_named(tmp_path, content, says):
    f = tmp_path / "spec.json"
    f.write_bytes(content)
    with pytest.raises(UsageError) as e:
        load_transfer_spec(str(f))
    assert str(e.value).startswith(f"transfer spec {f} {says}")


def test_a_spec_of_one_mebibyte_is_read_and_one_byte_more_is_not(tmp_path):
    f = tmp_path / "spec.json"
    body = b'{"x": "' + b"a" * (MAX_SPEC_BYTES - 10) + b'"}'
    f.write_bytes(body)
    assert len(body) == MAX_SPEC_BYTES - 1
    assert load_transfer_spec(str(f)) == {"x": "a" * (MAX_SPEC_BYTES - 10)}
    f.write_bytes(body[:-2] + b'a"}')
    assert len(f.read_bytes()) == MAX_SPEC_BYTES
    assert len(load_transfer_spec(str(f))["x"]) == MAX_SPEC_BYTES - 9
    f.write_bytes(body[:-2] + b'aa"}')
    with pytest.raises(UsageError):
        load_transfer_spec(str(f))


def test_a_spec_path_may_start_with_a_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "s.json").write_text("{}")
    assert load_transfer_spec("~/s.json") == {}
