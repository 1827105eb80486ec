"""Every option or argument naming a file to read handles a bad path the same way.

A missing file exits 5 with one line naming it; a folder, FIFO, device or socket is
refused at once (exit 2, never blocking on a FIFO); a leading '~' is expanded by
nodecli itself (as when the shell did not, inside quotes or a variable). Paths saved in
profiles follow the same rules when they are used.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

URL = "https://127.0.0.1:9"  # never reached: every case fails before any request

# (id, argv with F for the path, label in the message)
CASES = [
    ("node add --bearer-file",
     ["node", "add", "p", "--url", URL, "--access-key", "AK1", "--bearer-file", "F"],
     "token file"),
    ("node add --cacert",
     ["node", "add", "p", "--url", URL, "--user", "u", "--no-secret", "--cacert", "F"],
     "CA file"),
    ("node info --cacert", ["node", "info", "--url", URL, "--user", "u", "--cacert", "F"],
     "CA file"),
    ("node info --bearer-file",
     ["node", "info", "--url", URL, "--access-key", "AK1", "--bearer-file", "F"],
     "token file"),
    ("events list --cacert", ["events", "list", "--url", URL, "--user", "u", "--cacert", "F"],
     "CA file"),
    ("events tail --bearer-file",
     ["events", "tail", "--url", URL, "--access-key", "AK1", "--bearer-file", "F"],
     "token file"),
    ("permission list --cacert",
     ["permission", "list", "/", "--url", URL, "--access-key", "AK1", "--cacert", "F"],
     "CA file"),
    ("transfer start --spec",
     ["transfer", "start", "--url", URL, "--user", "u", "--spec", "F"], "transfer spec"),
    ("access-key set-verification-key --public-key",
     ["access-key", "set-verification-key", "AK1", "--url", URL, "--user", "u",
      "--public-key", "F"], "PEM key file"),
    ("service add --token-file", ["service", "add", "s", "--url", URL, "--token-file", "F"],
     "token file"),
    ("service add --cacert",
     ["service", "add", "s", "--url", URL, "--token-stdin", "--cacert", "F"], "CA file"),
    ("operations list --token-file", ["operations", "list", "--url", URL, "--token-file", "F"],
     "token file"),
    ("operations list --cacert", ["operations", "list", "--url", URL, "--cacert", "F"],
     "CA file"),
    ("workspaces create --cacert",
     ["workspaces", "create", "--name", "w", "--url", URL, "--cacert", "F"], "CA file"),
    ("config import", ["config", "import", "F"], "import file"),
    ("key public", ["key", "public", "F"], "key file"),
    ("key fingerprint", ["key", "fingerprint", "F"], "key file"),
    ("token verify --public-key", ["token", "verify", "e30.e30.e30", "--public-key", "F"],
     "key file"),
]
IDS = [c[0] for c in CASES]


def _argv(argv: list[str], path: str) -> list[str]:
    return [path if a == "F" else a for a in argv]


def _one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nodecli: error: "), stderr
    return lines[0]


@pytest.mark.parametrize(("case", "argv", "label"), CASES, ids=IDS)
def test_missing_file_exits_5_naming_it(invoke, tmp_path, case, argv, label):
    missing = tmp_path / "nowhere" / "missing.pem"
    r = invoke(*_argv(argv, str(missing)), input="")
    assert r.exit_code == 5, r
    line = _one_error_line(r.stderr)
    assert line == f"nodecli: error: {label} {missing}: no such file", line
    assert r.stdout == ""


@pytest.mark.parametrize(("case", "argv", "label"), CASES, ids=IDS)
def test_tilde_is_expanded_by_nodecli(invoke, tmp_path, case, argv, label):
    """'~/x' reaching nodecli unexpanded (quoted) names the file under $HOME."""
    fake_home = tmp_path / "user-home"
    fake_home.mkdir()
    r = invoke(*_argv(argv, "~/missing.pem"), input="", env={"HOME": str(fake_home)})
    assert r.exit_code == 5, r
    assert str(fake_home / "missing.pem") in _one_error_line(r.stderr)
    assert "~" not in r.stderr


@pytest.mark.parametrize(("case", "argv", "label"), CASES, ids=IDS)
def test_folder_is_refused(invoke, tmp_path, case, argv, label):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    r = invoke(*_argv(argv, str(folder)), input="")
    assert r.exit_code == 2, r
    line = _one_error_line(r.stderr)
    assert str(folder) in line and "folder" in line


@pytest.mark.parametrize(("case", "argv", "label"), CASES, ids=IDS)
def test_fifo_is_refused_at_once(run_cli, tmp_path, case, argv, label):
    """A FIFO without a writer would block a plain open() forever."""
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    r = run_cli(*_argv(argv, str(fifo)), input="", timeout=60)
    assert r.exit_code == 2, r
    line = _one_error_line(r.stderr)
    assert str(fifo) in line and ("named pipe" in line or "not a regular file" in line)


@pytest.mark.parametrize(("var", "argv"), [
    ("NODECLI_CACERT", ["node", "info", "--url", URL, "--user", "u"]),
    ("NODECLI_SERVICE_CACERT", ["operations", "list", "--url", URL]),
])
def test_a_path_from_the_environment_names_the_variable(invoke, tmp_path, var, argv):
    missing = tmp_path / "ca.pem"
    r = invoke(*argv, input="", env={var: str(missing)})
    assert r.exit_code == 5, r
    assert r.stderr.splitlines() == [f"nodecli: error: CA file {missing}: no such file",
                                     f"hint: the path comes from {var}"]


def test_profile_paths_that_went_missing_or_became_fifos(invoke, run_cli, tls_emulator,
                                                         tmp_path, home):
    """The CA file and token file saved in profiles are checked the same way when used."""
    ca = tmp_path / "ca.pem"
    ca.write_bytes(Path(tls_emulator.ca_file).read_bytes())
    r = invoke("node", "add", "lab", "--url", tls_emulator.url, "--user", "admin",
               "--cacert", str(ca), "--password-stdin", input="admin-pass\n")
    assert r.exit_code == 0, r
    assert invoke("node", "info", "--node", "lab").exit_code == 0  # the CA works as data
    ca.unlink()
    r = invoke("node", "info", "--node", "lab")
    assert r.exit_code == 5, r
    assert _one_error_line(r.stderr) == f"nodecli: error: CA file {ca}: no such file"
    os.mkfifo(ca)
    r = run_cli("node", "info", "--node", "lab", env={"NODECLI_HOME": str(home)},
                timeout=60)  # a blocking open() would time out here
    assert r.exit_code == 2, r
    assert "named pipe" in _one_error_line(r.stderr)

    token = tmp_path / "svc.token"
    token.write_text("opaque\n")
    token.chmod(0o600)
    assert invoke("service", "add", "svc", "--url", URL, "--token-file", str(token)).exit_code == 0
    token.unlink()
    r = invoke("operations", "list", "--service", "svc")
    assert r.exit_code == 5, r
    assert _one_error_line(r.stderr) == f"nodecli: error: token file {token}: no such file"


def test_a_ca_file_that_is_not_a_certificate_is_a_usage_error(invoke, tmp_path):
    bad = tmp_path / "not-a-ca.pem"
    bad.write_text("hello\n")
    r = invoke("node", "info", "--url", URL, "--user", "u", "--cacert", str(bad),
               "--password-stdin", input="pw\n")
    assert r.exit_code == 2, r
    assert f"cannot use CA file {bad}" in _one_error_line(r.stderr)


@pytest.mark.parametrize(("argv", "created"), [
    (["config", "export", "~/out/users.json"], "out/users.json"),
    (["-b", "~/backup.json"], "backup.json"),
    (["key", "generate", "~/keys/ak9/", "--bits", "1024"], "keys/ak9/private.pem"),
])
def test_files_written_expand_tilde_too(invoke, tmp_path, argv, created):
    fake_home = tmp_path / "user-home"
    (fake_home / "out").mkdir(parents=True)
    r = invoke(*argv, env={"HOME": str(fake_home)})
    assert r.exit_code == 0, r
    assert (fake_home / created).is_file()
    assert not any(p.name == "~" for p in Path.cwd().iterdir())


@pytest.mark.parametrize("option", ["--checkpoint", "--to"])
def test_events_tail_files_that_are_fifos_or_folders_are_refused(run_cli, node_env, tmp_path,
                                                                 option):
    """The position and output files of a tail: created when missing, but a FIFO or a
    folder there is refused at once (exit 2), never waited on."""
    fifo = tmp_path / "a-fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for path, words in ((fifo, ("not a regular file",)), (folder, ("directory", "folder"))):
        r = run_cli("events", "tail", option, str(path), "-o", "jsonl", env=node_env,
                    timeout=60)
        assert r.exit_code == 2, r
        line = r.stderr.splitlines()[0]  # a usage error may add "see --help"
        assert line.startswith("nodecli: error: ") and str(path) in line, r.stderr
        assert any(w in line for w in words), line


def test_events_tail_checkpoint_expands_tilde(invoke, node_env, log, tmp_path):
    fake_home = tmp_path / "user-home"
    fake_home.mkdir()
    log.generate(2)
    r = invoke("events", "tail", "--checkpoint", "~/pos.json", "--since", "1h", "-o", "jsonl",
               env={**node_env, "HOME": str(fake_home)})
    assert r.exit_code == 0, r
    assert (fake_home / "pos.json").is_file()
