"""`token create` and the classic `--bearer-create` at the points mutation testing found
unchecked: each refusal's and each message's exact words (they tell the user what was
done and what to do), which key is used or made (a dangling link is a key file that is
there, a given length only for a new key), a password given on the command line,
through stdin or the environment tried once, `--clock-from-node` against a scripted
node's Date header, and `--renew-into` until Ctrl-C (in-process: the pause between
writes is where the test presses Ctrl-C). The prompts are answered in a real
pseudo-terminal."""

from __future__ import annotations

import re
import shutil
import time
from datetime import timedelta
from email.utils import formatdate
from pathlib import Path

import pexpect
import pytest

from nodecli.tokens.wire import decode_unverified, token_expiry, verify
from tests.conftest import FROZEN_NOW, reap, subprocess_env
from tests.scripted_server import ScriptedServer, reply
from tests.test_token_cli import DATA, PASSWORD, PUB, _create, _spawn
from tests.test_token_cli import key_file as key_file  # the fixture
from tests.test_token_cli import users as users  # the fixture

ERR = "nodecli: error: "


def _bits(public: Path) -> int:
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    return load_pem_public_key(public.read_bytes()).key_size  # type: ignore[union-attr]


# -- what is said -----------------------------------------------------------------------------

def test_the_token_line_says_who_what_until_when_and_with_which_key(invoke, users, home: Path,
                                                                    frozen_clock) -> None:
    default = home / "keys" / "AK1" / "private.pem"
    default.parent.mkdir(parents=True)
    shutil.copyfile(DATA / "golden_key.pem", default)  # TEST-ONLY key (make_golden.sh)
    default.chmod(0o600)
    r = _create(invoke, "--expires-at", "+90m", "--scope-role", "user")
    assert r.exit_code == 0, r
    assert verify(r.stdout.strip(), PUB)["user_id"] == "alice"
    assert r.stderr == (
        f"using key {default}\n"
        "bearer token for user_id 'alice', scope node.AK1:user:all, expires "
        f"2030-06-15T13:30:00Z (in 1h 30m), signed with {default}\n")


def test_an_existing_key_of_another_length_is_used_and_the_length_said_to_be_ignored(
        invoke, users, key_file: Path) -> None:
    r = _create(invoke, "--key-file-path", str(key_file), "--token-key-length", "1024")
    assert r.exit_code == 0, r
    assert verify(r.stdout.strip(), PUB)["user_id"] == "alice"
    assert r.stderr.splitlines()[0] == (
        f"nodecli: warning: {key_file} is an existing 2048-bit key: --token-key-length 1024 "
        "applies only to new keys")
    r = _create(invoke, "--key-file-path", str(key_file), "--token-key-length", "2048")
    assert r.exit_code == 0 and "warning" not in r.stderr


@pytest.mark.parametrize(("args", "said"), [
    (("--bearer-create", "--access-key", "AK", "--user-id", "u"), "-u/--user (node user)"),
    (("-u", " ", "--bearer-create", "--access-key", "AK", "--user-id", "u"),
     "-u/--user (node user)"),
    (("-u", "admin", "--bearer-create", "--access-key", "", "--user-id", "u"), "--access-key"),
    (("-u", "admin", "--bearer-create", "--access-key", "AK"), "--user-id"),
    (("token", "create", "-u", "admin", "--access-key", " \t", "--user-id", "u"),
     "--access-key"),
    (("token", "create", "-u", "admin", "--access-key", "AK", "--user-id", ""), "--user-id"),
])
def test_a_missing_or_blank_value_is_named(invoke, users, args, said: str) -> None:
    r = invoke(*args, env={"NODECLI_PASSWORD": PASSWORD})
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"{ERR}{said} is required to create a bearer token\n"


@pytest.mark.parametrize(("extra", "named"), [
    (("-x", "xfer"), "-x"), (("-o", "json"), "-o"), (("-x", "xfer", "-o", "csv"), "-x, -o"),
])
def test_the_classic_bearer_create_names_the_flags_it_does_not_take(
        invoke, users, key_file: Path, extra, named: str) -> None:
    r = invoke("-u", "admin", *extra, "--bearer-create", "--access-key", "AK",
               "--user-id", "u", "--key-file-path", str(key_file),
               env={"NODECLI_PASSWORD": PASSWORD})
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"{ERR}--bearer-create does not take {named}\n"


@pytest.mark.parametrize("how", ["-p", "--password-stdin", "NODECLI_PASSWORD"])
def test_a_password_not_typed_is_tried_once(invoke, users, key_file: Path, how: str) -> None:
    args = ["token", "create", "-u", "admin", "--access-key", "AK", "--user-id", "u",
            "--key-file-path", str(key_file)]
    env, given = {}, None
    if how == "-p":
        args += ["-p", "wrong"]
    elif how == "--password-stdin":
        args.append("--password-stdin")
        given = "wrong\n"
    else:
        env = {"NODECLI_PASSWORD": "wrong"}
    r = invoke(*args, env=env, input=given)
    assert (r.exit_code, r.stdout) == (4, "")
    assert r.stderr == f"{ERR}wrong password for node user 'admin'\n"


def test_both_key_options_are_refused_before_the_password_is_checked(invoke, users,
                                                                      tmp_path: Path) -> None:
    r = _create(invoke, "--key-file-dir", str(tmp_path), "--key-file-path", str(tmp_path / "k"),
                env={"NODECLI_PASSWORD": "wrong"})
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"{ERR}give --key-file-dir or --key-file-path, not both\n"


def test_a_key_is_recorded_as_validated_in_the_home_given_on_the_command_line(
        invoke, users, key_file: Path, home: Path, tmp_path: Path) -> None:
    """``--home`` wins over NODECLI_HOME for the record of validated keys too."""
    import hashlib
    import json

    other = tmp_path / "other-home"
    shutil.copytree(home, other)
    r = invoke("--home", str(other), "token", "create", "-u", "admin", "--access-key", "AK1",
               "--user-id", "alice", "--key-file-path", str(key_file),
               env={"NODECLI_PASSWORD": PASSWORD})
    assert r.exit_code == 0, r
    record = json.loads((other / "state" / "validated-keys.json").read_text())
    assert record["sha256"] == [hashlib.sha256(key_file.read_bytes()).hexdigest()]
    assert not (home / "state" / "validated-keys.json").exists()


# -- which key --------------------------------------------------------------------------------

def test_a_dangling_link_is_a_key_file_that_is_there_and_never_replaced(
        invoke, users, tmp_path: Path) -> None:
    link = tmp_path / "d" / "private.pem"
    link.parent.mkdir()
    link.symlink_to(tmp_path / "nowhere.pem")
    for where in (("--key-file-path", str(link)), ("--key-file-dir", str(link.parent))):
        r = _create(invoke, *where, "--yes", "--token-key-length", "1024")
        assert (r.exit_code, r.stdout) == (5, ""), r
        assert r.stderr == f"{ERR}key file {link}: no such file\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == ["d"]
    assert [p.name for p in link.parent.iterdir()] == ["private.pem"]


def test_without_a_terminal_a_missing_key_is_refused_with_what_to_do(invoke, users,
                                                                     home: Path,
                                                                     tmp_path: Path) -> None:
    r = _create(invoke)
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"{ERR}no key file given and stdin is not a terminal: use --key-file-path PATH (or "
        f"--key-file-dir DIR) for an existing key, or --yes to create "
        f"{home / 'keys' / 'AK1' / 'private.pem'}\n")
    r = _create(invoke, "--key-file-dir", str(tmp_path / "k"))
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == (
        f"{ERR}key file {tmp_path / 'k' / 'private.pem'} does not exist and stdin is not a "
        "terminal: use --yes to create it, or give an existing --key-file-path\n")
    assert not (home / "keys").exists() and not (tmp_path / "k").exists()


def test_a_new_key_has_the_length_asked_and_is_the_one_that_signs(invoke, users, home: Path,
                                                                  tmp_path: Path) -> None:
    r = _create(invoke, "--key-file-dir", str(tmp_path / "k"), "--token-key-length", "1024",
                "--yes")
    assert r.exit_code == 0, r
    private, public = tmp_path / "k" / "private.pem", tmp_path / "k" / "public.pem"
    assert _bits(public) == 1024
    verify(r.stdout.strip(), public.read_bytes())
    lines = r.stderr.splitlines()
    assert lines[0] == f"created private key {private} (mode 0600) and public key {public}"
    assert lines[2] == ("register the public key on the node: nodecli access-key "
                        f"set-verification-key AK1 --public-key {public}")
    assert lines[-1].endswith(f", signed with {private}")
    assert not (home / "keys").exists()


# -- --clock-from-node ------------------------------------------------------------------------

@pytest.mark.parametrize(("shift", "said"), [(7200, "ahead of"), (-7200, "behind")])
def test_a_token_signed_on_the_clock_of_a_node(invoke, users, key_file: Path, frozen_clock,
                                               shift: int, said: str) -> None:
    """The node's Date header is 2 h from this machine's clock: the token expires an
    hour after the node's now, and the user is told by how much the clocks differ."""

    def script(seen):
        yield reply(401, b"", [("Date", formatdate(time.time() + shift, usegmt=True))])

    with ScriptedServer(script) as node:
        url = node.url("127.0.0.1")
        r = _create(invoke, "--key-file-path", str(key_file), "--clock-from-node", url)
    assert r.exit_code == 0, r
    assert [(s.method, s.target) for s in node.seen] == [("GET", "/info")]
    first = r.stderr.splitlines()[0]
    assert re.fullmatch(rf"the clock of {re.escape(url)} is 7(199|200|201) s "
                        f"{said} this machine's: tokens are signed on the node's clock",
                        first), first
    expires = token_expiry(decode_unverified(r.stdout.strip()).claims)
    late = (expires - (FROZEN_NOW + timedelta(hours=1))).total_seconds()
    assert shift - 2 <= late <= shift + 2, late
    assert "(in 1h)" in r.stderr.splitlines()[1]


@pytest.mark.parametrize(("shift", "said", "by"), [
    (0.75, "ahead of", 1), (-0.75, "behind", 1), (0.0, "ahead of", 0)])
def test_a_node_clock_less_than_a_second_off_is_said_ahead_or_behind(
        invoke, users, key_file: Path, frozen_clock, monkeypatch, shift: float,
        said: str, by: int) -> None:
    """A node 0.75 s ahead is ahead (not "behind" for being less than a second ahead),
    0.75 s behind is behind, one exactly on time "0 s ahead of". The test owns both
    clocks: the node's Date header (whole seconds, taken as half a second later: it was
    set while the answer was made) and this machine's wall clock as the client reads it
    when the answer comes."""
    import types

    from nodecli.http import client as client_mod

    date = 1_900_000_000  # a whole second, as Date headers are

    def script(seen):
        yield reply(401, b"", [("Date", formatdate(date, usegmt=True))])

    monkeypatch.setattr(client_mod, "time", types.SimpleNamespace(
        time=lambda: date + 0.5 - shift, monotonic=time.monotonic))
    with ScriptedServer(script) as node:
        url = node.url("127.0.0.1")
        r = _create(invoke, "--key-file-path", str(key_file), "--clock-from-node", url)
    assert r.exit_code == 0, r
    assert r.stderr.splitlines()[0] == (f"the clock of {url} is {by} s {said} this "
                                        "machine's: tokens are signed on the node's clock")


@pytest.mark.parametrize("half", [("--renew-into", "token"), ("--every", "10m")])
def test_half_a_renewal_is_refused_before_the_node_is_asked(invoke, users, key_file: Path,
                                                            tmp_path: Path, half) -> None:
    def script(seen):
        yield reply(401, b"", [("Date", formatdate(time.time(), usegmt=True))])

    option, value = half
    if option == "--renew-into":
        value = str(tmp_path / value)
    with ScriptedServer(script) as node:
        r = _create(invoke, "--key-file-path", str(key_file), option, value,
                    "--clock-from-node", node.url("127.0.0.1"))
        assert node.seen == []
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == f"{ERR}--renew-into FILE and --every DURATION go together\n"


# -- --renew-into -----------------------------------------------------------------------------

class CtrlC:
    """The renewal's pause: records each, moves the (frozen) clock on by as long, and
    presses Ctrl-C in the ``at``-th."""

    def __init__(self, at: int, clock=None) -> None:
        self.at, self.clock, self.seen = at, clock, []

    def __call__(self, seconds: float) -> None:
        self.seen.append(seconds)
        if len(self.seen) >= self.at:
            raise KeyboardInterrupt
        if self.clock is not None:
            self.clock.advance(seconds=seconds)


def test_renew_into_says_each_write_and_when_the_last_token_expires(
        invoke, users, key_file: Path, tmp_path: Path, frozen_clock, monkeypatch) -> None:
    from nodecli import interrupt

    pause = CtrlC(2, frozen_clock)
    monkeypatch.setattr(interrupt, "wait", pause)
    out = tmp_path / "token"
    r = _create(invoke, "--key-file-path", str(key_file), "--expires-at", "+30m",
                "--renew-into", str(out), "--every", "10m")
    assert (r.exit_code, r.stdout) == (130, "")
    assert pause.seen == [600.0, 600.0]
    wrote = "wrote a token to {} (expires 2030-06-15T12:{}:00Z); next in 10m"
    assert r.stderr == (f"{wrote.format(out, 30)}\n{wrote.format(out, 40)}\nnodecli: stopped "
                        f"renewing {out}; the last token there expires 2030-06-15T12:40:00Z\n")
    claims = verify(out.read_text().strip(), PUB)  # each token lasts 30m from its writing
    assert claims["user_id"] == "alice" and claims["expires_at"] == "2030-06-15T12:40:00Z"


def test_renew_into_on_the_clock_of_a_node(invoke, users, key_file: Path, tmp_path: Path,
                                           frozen_clock, monkeypatch) -> None:
    from nodecli import interrupt

    monkeypatch.setattr(interrupt, "wait", CtrlC(1))

    def script(seen):
        yield reply(401, b"", [("Date", formatdate(time.time() - 86400, usegmt=True))])

    out = tmp_path / "token"
    with ScriptedServer(script) as node:
        r = _create(invoke, "--key-file-path", str(key_file), "--expires-at", "+30m",
                    "--renew-into", str(out), "--every", "10m", "--clock-from-node",
                    node.url("127.0.0.1"))
    assert r.exit_code == 130, r
    expires = token_expiry(decode_unverified(out.read_text().strip()).claims)
    early = (FROZEN_NOW + timedelta(minutes=30) - expires).total_seconds()
    assert 86400 - 2 <= early <= 86400 + 2, early
    said = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert f"wrote a token to {out} (expires {said}); next in 10m" in r.stderr


def test_renew_into_stopped_before_its_first_write_says_no_expiry(
        invoke, users, key_file: Path, tmp_path: Path, monkeypatch) -> None:
    from nodecli import fsutil

    def ctrl_c(*args, **kwargs) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fsutil, "atomic_write", ctrl_c)
    out = tmp_path / "token"
    r = _create(invoke, "--key-file-path", str(key_file), "--expires-at", "+30m",
                "--renew-into", str(out), "--every", "10m")
    assert (r.exit_code, r.stdout) == (130, "")
    assert r.stderr == f"nodecli: stopped renewing {out}\n"
    assert not out.exists()


# -- the prompts, in a real terminal ----------------------------------------------------------

def _finish(child) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_a_missing_key_file_is_made_where_given_when_the_user_agrees(users, home: Path,
                                                                      tmp_path: Path) -> None:
    target = tmp_path / "given" / "ak.pem"
    env = {"NODECLI_HOME": str(home), "NODECLI_PASSWORD": PASSWORD}
    child = _spawn("token", "create", "-u", "admin", "--access-key", "AK5", "--user-id", "c",
                   "--token-key-length", "1024", "--key-file-path", str(target), env=env)
    try:
        child.expect_exact(f"{target} does not exist. Create a new 1024-bit RSA key pair "
                           "there? [Y/n]: ")
        child.sendline("")  # the default: yes
        child.expect_exact(f"set-verification-key AK5 --public-key {target}.pub")
        child.expect(r"([A-Za-z0-9+/=]{200,})\r\n")
        token = child.match.group(1)
        assert _finish(child) == 0
    finally:
        reap(child)
    verify(token, Path(f"{target}.pub").read_bytes())
    other = tmp_path / "other"
    child = _spawn("token", "create", "-u", "admin", "--access-key", "AK5", "--user-id", "c",
                   "--key-file-dir", str(other), env=env)
    try:
        child.expect_exact(f"{other / 'private.pem'} does not exist. Create a new 4096-bit "
                           "RSA key pair there? [Y/n]: ")
        child.sendline("n")
        child.expect_exact("nodecli: aborted: no key pair, token not created")
        assert _finish(child) == 1
    finally:
        reap(child)
    assert not other.exists()


def test_the_key_file_asked_for_may_be_a_folder_the_home_or_the_default(
        users, home: Path, tmp_path: Path) -> None:
    """The name typed at "Private key file": a folder gets private.pem in it; ~ is the
    user's home; a name whose public key is there is refused and asked again; Enter
    takes the default in the home's keys/AK/."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (tmp_path / "taken.pem.pub").write_text("someone's public key")
    env = {"NODECLI_HOME": str(home), "NODECLI_PASSWORD": PASSWORD, "HOME": str(tmp_path)}
    made = []
    for answers, where in (([str(folder)], folder / "private.pem"),
                           (["~/taken.pem", "~/mine.pem"], tmp_path / "mine.pem"),
                           ([""], home / "keys" / "AK6" / "private.pem")):
        child = _spawn("token", "create", "-u", "admin", "--access-key", "AK6", "--user-id",
                       "d", "--token-key-length", "1024", env=env)
        try:
            child.expect_exact("No key file given. Create a new 1024-bit RSA key pair? "
                               "[Y/n]: ")
            child.sendline("y")
            for answer in answers:
                child.expect_exact(f"Private key file [{home / 'keys' / 'AK6' / 'private.pem'}]: ")
                child.sendline(answer)
                if answer == "~/taken.pem":
                    child.expect_exact(f"nodecli: warning: {tmp_path / 'taken.pem.pub'} already "
                                       "exists and is never overwritten: choose another name")
            child.expect_exact(f"created private key {where} (mode 0600)")
            child.expect(r"([A-Za-z0-9+/=]{200,})\r\n")
            made.append((child.match.group(1), where))
            assert _finish(child) == 0
        finally:
            reap(child)
    for token, where in made:
        public = where.with_name("public.pem") if where.name == "private.pem" else \
            Path(f"{where}.pub")
        verify(token, public.read_bytes())
    assert not (tmp_path / "taken.pem").exists()
    assert (tmp_path / "taken.pem.pub").read_text() == "someone's public key"


def test_a_typed_password_that_is_wrong_is_asked_again_in_these_words(users, home: Path,
                                                                      key_file: Path) -> None:
    child = _spawn("token", "create", "-u", "admin", "--access-key", "AK8", "--user-id", "e",
                   "--key-file-path", str(key_file), env={"NODECLI_HOME": str(home)})
    try:
        child.expect_exact("Password for node user admin: ")
        child.sendline("wrong")
        child.expect_exact("\r\nnodecli: warning: wrong password, try again\r\n"
                           "Password for node user admin: ")
        child.sendline(PASSWORD)
        child.expect(r"([A-Za-z0-9+/=]{200,})\r\n")
        assert _finish(child) == 0
    finally:
        reap(child)


def test_the_questions_go_to_the_terminal_and_only_the_token_to_stdout(users, home: Path,
                                                                       tmp_path: Path) -> None:
    """stdout is a file (``> token.txt``): every question is still asked on the
    terminal, and the file holds the token alone."""
    import shlex
    import sys

    out, given = tmp_path / "token.txt", tmp_path / "given.pem"
    env = subprocess_env({"NODECLI_HOME": str(home), "NODECLI_PASSWORD": PASSWORD})
    for extra, answers in (
            (["--key-file-path", str(given)], [("there? [Y/n]: ", "y")]),
            ([], [("key pair? [Y/n]: ", "y"),
                  ("Private key file [", str(tmp_path / "k.pem"))])):
        argv = [sys.executable, "-m", "nodecli", "token", "create", "-u", "admin",
                "--access-key", "AK9", "--user-id", "f", "--token-key-length", "1024", *extra]
        line = f"exec {shlex.join(argv)} > {shlex.quote(str(out))}"
        child = pexpect.spawn("/bin/sh", ["-c", line], env=env, encoding="utf-8", timeout=30,
                              dimensions=(24, 200))
        try:
            for question, answer in answers:
                child.expect_exact(question)
                child.sendline(answer)
            assert _finish(child) == 0
        finally:
            reap(child)
        token = out.read_text()
        assert token.count("\n") == 1
        assert decode_unverified(token.strip()).claims["user_id"] == "f"
