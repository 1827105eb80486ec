"""`key generate` at the points mutation testing found unchecked: what it says of the
pair it made (the files, the fingerprint and size, the command that registers the key,
quoted for the shell) and of a long generation (a message without a terminal, a
spinner on one, nothing with -q), the record that the new key needs no validation, and
what `-o json` holds. The spinner's own drawing is tested in a real terminal in
tests/test_keys.py; here a key of 8192 bits is refused before it is made (an existing
file), or made in-process by a stand-in for the slow part."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from nodecli.tokens.keys import fingerprint

ERR = "nodecli: error: "


def test_a_new_pair_is_said_with_its_fingerprint_and_how_to_register_it(invoke, home: Path,
                                                                        tmp_path: Path) -> None:
    folder = tmp_path / "my keys"
    r = invoke("key", "generate", f"{folder}/", "--bits", "1024")
    assert (r.exit_code, r.stdout) == (0, "")
    private, public = folder / "private.pem", folder / "public.pem"
    assert r.stderr == (
        f"created private key {private} (mode 0600) and public key {public}\n"
        f"fingerprint {fingerprint(public)} (1024 bits)\n"
        "register the public key on the node: nodecli access-key set-verification-key "
        f"ACCESS_KEY --public-key '{public}'\n")
    # a key made here is known good: its first use does not validate it again
    record = json.loads((home / "state" / "validated-keys.json").read_text())
    assert record["sha256"] == [hashlib.sha256(private.read_bytes()).hexdigest()]


def test_a_new_key_is_recorded_in_the_home_given_on_the_command_line(invoke, home: Path,
                                                                     tmp_path: Path) -> None:
    other = tmp_path / "other-home"
    r = invoke("--home", str(other), "key", "generate", str(tmp_path / "k.pem"), "--bits",
               "1024")
    assert r.exit_code == 0, r
    record = json.loads((other / "state" / "validated-keys.json").read_text())
    assert record["sha256"] == [hashlib.sha256((tmp_path / "k.pem").read_bytes()).hexdigest()]
    assert not (home / "state").exists()


def test_json_names_the_pair_its_size_and_fingerprint(invoke, tmp_path: Path) -> None:
    r = invoke("key", "generate", str(tmp_path / "k.pem"), "--bits", "1024", "-o", "json",
               "-q")
    assert r.exit_code == 0, r
    public = tmp_path / "k.pem.pub"
    assert json.loads(r.stdout) == {"private_key": str(tmp_path / "k.pem"),
                                    "public_key": str(public), "bits": 1024,
                                    "fingerprint": fingerprint(public)}
    assert r.stderr == ""


@pytest.mark.parametrize("bits", ["8192", "16384"])
def test_a_long_generation_is_announced_without_a_terminal(invoke, tmp_path: Path,
                                                           bits: str) -> None:
    taken = tmp_path / "taken.pem"
    taken.write_text("kept")
    r = invoke("key", "generate", str(taken), "--bits", bits)
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr.splitlines()[:2] == [
        f"generating a {bits}-bit RSA key (this can take a minute)...",
        f"{ERR}{taken} already exists: not overwritten"]
    r = invoke("-q", "key", "generate", str(taken), "--bits", bits)
    assert r.stderr.splitlines()[0] == f"{ERR}{taken} already exists: not overwritten"
    r = invoke("key", "generate", str(taken), "--bits", "4096")
    assert r.stderr.splitlines()[0] == f"{ERR}{taken} already exists: not overwritten"
    assert taken.read_text() == "kept"


def test_a_long_generation_in_a_terminal_shows_a_spinner_not_a_message(tmp_path: Path) -> None:
    from tests.conftest import nodecli_cmd, pty_to_the_end, subprocess_env

    taken = tmp_path / "taken.pem"
    taken.write_text("kept")
    for quiet in ((), ("-q",)):
        cmd = nodecli_cmd(*quiet, "key", "generate", str(taken), "--bits", "8192")
        status, said = pty_to_the_end(cmd, subprocess_env())
        assert status == 1, said
        assert f"{ERR}{taken} already exists: not overwritten" in said
        assert "this can take a minute" not in said
    assert taken.read_text() == "kept"


def test_a_long_generation_in_a_terminal_says_how_long_it_took(invoke, tmp_path: Path,
                                                               monkeypatch) -> None:
    """On a terminal (stdin and stderr), after the spinner: the time it took. The slow
    part (making 8192-bit primes) is stood in for by a 1024-bit key. --force replaces
    a pair; the key is recorded in the home given."""
    from nodecli.cli.app import Terminal
    from nodecli.tokens import keys

    made = keys.generate_private_key(1024)
    asked: list[int] = []

    def stand_in(bits: int):
        asked.append(bits)
        return made

    monkeypatch.setattr(keys, "generate_private_key", stand_in)
    monkeypatch.setattr(Terminal, "interactive", property(lambda self: True))
    target = tmp_path / "big.pem"
    target.write_text("old")
    target.chmod(0o600)
    other = tmp_path / "other-home"
    r = invoke("--home", str(other), "key", "generate", str(target), "--bits", "8192",
               "--force")
    assert r.exit_code == 0, r
    assert asked == [8192]
    assert keys.load_private_key(target, state_dir=tmp_path).key_size == 1024
    record = json.loads((other / "state" / "validated-keys.json").read_text())
    assert record["sha256"] == [hashlib.sha256(target.read_bytes()).hexdigest()]
    first = r.stderr.splitlines()[0]
    assert re.fullmatch(r"generated a 8192-bit RSA key in (\d+)\.\d s", first), first
    assert int(re.findall(r"\d+", first)[1]) < 60
    assert r.stderr.splitlines()[1].startswith(f"created private key {target} ")
    r = invoke("-q", "key", "generate", str(tmp_path / "quiet.pem"), "--bits", "8192")
    assert (r.exit_code, r.stderr) == (0, "")
