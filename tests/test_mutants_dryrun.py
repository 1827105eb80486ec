"""What ``--dry-run`` shows, held word for word (issue 33, the mutation run of
``nodecli/dryrun.py``): secrets masked at any depth of a body (inside lists and
objects) and in a query, in the URL or in the parameters; a config change as a diff
whose password hashes are tags; the stop is not an error. In process: the emulator
tests (tests/test_dry_run.py) prove the commands stop; these prove what they show."""

from __future__ import annotations

import hashlib
import json

import pytest

from nodecli import dryrun
from nodecli.errors import ExitCode, NodecliError


@pytest.fixture
def switch():
    yield
    dryrun.activate(False)


def test_the_switch_is_off_until_the_command_line_turns_it_on(switch):
    assert dryrun.active() is False
    dryrun.activate()
    assert dryrun.active() is True
    dryrun.activate(False)
    assert dryrun.active() is False


def test_the_stop_is_no_error_and_exits_0():
    stop = dryrun.DryRunStop("would do it")
    assert not isinstance(stop, Exception) and not isinstance(stop, NodecliError)
    assert isinstance(stop, BaseException)
    assert stop.exit_code == ExitCode.OK == 0
    assert stop.hint is None
    assert stop.message == str(stop) == "would do it"
    assert stop.args == ("would do it",)


@pytest.mark.parametrize("word", dryrun.SECRET_WORDS)
def test_each_secret_word_marks_a_name_in_any_case_and_place(word):
    assert dryrun.secret_name(word)
    assert dryrun.secret_name(f"my_{word.upper()}_2")
    assert dryrun.secret_name(word.capitalize())


def test_the_secret_words_are_these():
    assert dryrun.SECRET_WORDS == ("secret", "password", "passphrase", "token", "private",
                                   "credential", "authorization", "cookie", "api_key",
                                   "apikey")


@pytest.mark.parametrize("name", ["id", "path", "user", "pass", "key", "auth", "", 5, None,
                                  ("token",), b"token"])
def test_other_names_and_non_text_are_shown(name):
    assert dryrun.secret_name(name) is False


def test_a_secret_is_masked_at_any_depth_and_a_null_one_stays_null():
    body = {
        "id": "ak1",
        "secret": "s3",
        "password": None,
        "storage": {"type": "s3", "credentials": {"access_key_id": "A", "secret_access_key": "B"},
                    "path": "/"},
        "list": [{"token": "t"}, [{"api_key": 1}], "plain", 3, None],
        "count": 2,
        "Private_Key": ["whole", "list"],
        "nested": {"Cookie": {"a": "b"}},
    }
    assert dryrun.redacted(body) == {
        "id": "ak1",
        "secret": "***",
        "password": None,
        "storage": {"type": "s3", "credentials": "***", "path": "/"},
        "list": [{"token": "***"}, [{"api_key": "***"}], "plain", 3, None],
        "count": 2,
        "Private_Key": "***",
        "nested": {"Cookie": "***"},
    }
    assert dryrun.redacted([1, "a", None]) == [1, "a", None]
    assert dryrun.redacted("secret") == "secret"
    assert dryrun.redacted(None) is None


def test_the_query_shown_masks_secret_parameters_of_the_url_and_of_params():
    url = "https://n:9092/api/x?token=T1&page=2&empty=#frag"
    assert dryrun.shown_url(url, {"Secret": "S", "q": "a b"}) == (
        "https://n:9092/api/x?token=***&page=2&empty=&Secret=***&q=a+b")
    assert dryrun.shown_url("https://n/p", [("a", 1), ("password", "p"), ("b", "x/y:z,*")]) == (
        "https://n/p?a=1&password=***&b=x/y:z,*")
    assert dryrun.shown_url("https://n/p?a=%3F", None) == "https://n/p?a=%3F"
    assert dryrun.shown_url("https://n/p?x=1&x=2", [("x", 3)]) == "https://n/p?x=1&x=2&x=3"


def test_a_url_without_any_parameter_is_shown_as_it_is():
    assert dryrun.shown_url("https://n/p#frag") == "https://n/p#frag"
    assert dryrun.shown_url("https://n/p?", {}) == "https://n/p?"
    assert dryrun.shown_url("https://n/p", []) == "https://n/p"


def test_a_url_that_does_not_parse_is_shown_as_it_is():
    assert dryrun.shown_url("https://[::1/x?token=T", {"a": "b"}) == "https://[::1/x?token=T"


def test_a_request_shows_method_url_and_the_body_masked_indented_and_unescaped():
    body = json.dumps({"id": "é", "secret": "s3", "items": [{"password": "p"}]}).encode()
    stop = dryrun.request("POST", "https://n/access_keys", body, params={"token": "t"})
    assert isinstance(stop, dryrun.DryRunStop)
    assert stop.message == (
        "would send: POST https://n/access_keys?token=***\n"
        "{\n"
        '  "id": "é",\n'
        '  "secret": "***",\n'
        '  "items": [\n'
        "    {\n"
        '      "password": "***"\n'
        "    }\n"
        "  ]\n"
        "}\n"
        "nothing was sent (--dry-run)")


def test_a_request_passes_url_and_body_through_the_clients_redaction():
    seen = []

    def redact(text: str) -> str:
        seen.append(text)
        return text.replace("bob", "[user]")

    stop = dryrun.request("PUT", "https://n/users/bob", b'{"name": "bob"}', redact)
    assert stop.message == ('would send: PUT https://n/users/[user]\n'
                            '{\n  "name": "[user]"\n}\nnothing was sent (--dry-run)')
    assert seen == ["https://n/users/bob", '{\n  "name": "bob"\n}']


@pytest.mark.parametrize(("body", "shown"), [
    (b"not json", "(8 bytes)"),
    (b"\xff\xfe", "(2 bytes)"),
    (b"[" * 100_000 + b"]" * 100_000, "(200000 bytes)"),
])
def test_a_body_that_is_not_json_is_shown_by_its_size(body, shown):
    assert dryrun.request("POST", "https://n/x", body).message == (
        f"would send: POST https://n/x\n{shown}\nnothing was sent (--dry-run)")


@pytest.mark.parametrize("body", [None, b""])
def test_a_request_without_a_body_is_two_lines(body):
    assert dryrun.request("DELETE", "https://n/x/1", body).message == (
        "would send: DELETE https://n/x/1\nnothing was sent (--dry-run)")


def _tag(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:8]


def test_a_config_change_is_a_unified_diff_with_hashes_as_tags():
    before = b'[users.u1]\ntransfer_user = "x"\npassword = "$scrypt$old"\n'
    after = b'[users.u1]\ntransfer_user = "x"\n  password= "$scrypt$new"\n[users.u2]\n'
    stop = dryrun.config_change("/h/config.toml", before, after)
    assert stop.message == (
        "would change /h/config.toml:\n"
        "--- /h/config.toml\n"
        "+++ /h/config.toml (after)\n"
        "@@ -1,3 +1,4 @@\n"
        " [users.u1]\n"
        ' transfer_user = "x"\n'
        f'-password = "*** ({_tag(chr(34) + "$scrypt$old" + chr(34))})"\n'
        f'+  password= "*** ({_tag(chr(34) + "$scrypt$new" + chr(34))})"\n'
        "+[users.u2]\n"
        "nothing was written (--dry-run)")
    assert "$scrypt" not in stop.message


def test_a_config_change_from_no_file_and_with_bad_bytes():
    stop = dryrun.config_change("c.toml", None, b"version = 1\nname = \"\xff\"\n")
    assert stop.message == (
        "would change c.toml:\n--- c.toml\n+++ c.toml (after)\n@@ -0,0 +1,2 @@\n"
        '+version = 1\n+name = "\ufffd"\nnothing was written (--dry-run)')


def test_only_a_password_key_is_hidden():
    stop = dryrun.config_change("c", b"", b'password_hint = "a"\nold_password = "b"\n')
    assert '+password_hint = "a"\n+old_password = "b"\n' in stop.message


def test_a_file_not_written_says_its_size_and_octal_mode():
    assert dryrun.write("/k/id_rsa", 1675, 0o600).message == (
        "would write /k/id_rsa (1675 bytes, mode 600); nothing was written (--dry-run)")
    assert dryrun.write("e.json", 0, 0o644).message == (
        "would write e.json (0 bytes, mode 644); nothing was written (--dry-run)")
