"""Hints name the variables the command really reads.

Each case runs a command that stops with a hint naming an environment variable, then
sets that variable (and nothing the hint did not mention) and checks that the command
now gets past that point: the variable named is the one this command reads.
"""

from __future__ import annotations

import json

import pytest

from nodecli.emulator.operations import mint_service_token

AK, AK_SECRET = "AKhint", "ak-hint-secret"


@pytest.fixture
def world(emulator, tmp_path, invoke):
    """The emulator (node user admin, access key AK, a service token) and local data."""
    emulator.add_access_key(AK, AK_SECRET)
    token = mint_service_token(emulator.state, "u1", "user:all")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"direction": "send", "paths": [{"source": "/a"}]}))
    assert invoke("xuser", "add", "xfer", "-r", "file:////data/*").exit_code == 0
    assert invoke("-au", "issuer", "-x", "xfer", "-p", "issuer-pw").exit_code == 0
    return {"url": emulator.url, "token": token, "spec": str(spec)}


def cases(w):
    url = w["url"]
    admin = {"NODECLI_USER": "admin", "NODECLI_PASSWORD": "admin-pass"}
    return [
        # (argv, env, variable the hint names, env that answers it, exit code then)
        (["node", "info"], {}, "NODECLI_URL", {"NODECLI_URL": url, **admin}, 0),
        (["node", "info"], {}, "NODECLI_NODE", {"NODECLI_URL": url, **admin}, 0),
        (["node", "info", "--url", url], {}, "NODECLI_USER", admin, 0),
        (["events", "list", "--url", url], {}, "NODECLI_ACCESS_KEY",
         {"NODECLI_ACCESS_KEY": AK, "NODECLI_PASSWORD": AK_SECRET}, 0),
        (["node", "info", "--url", url, "--user", "admin"], {}, "NODECLI_PASSWORD",
         {"NODECLI_PASSWORD": "admin-pass"}, 0),
        (["access-key", "list", "--url", url, "--access-key", AK], {}, "NODECLI_PASSWORD",
         {"NODECLI_PASSWORD": AK_SECRET}, 0),
        (["permission", "list", "/", "--url", url], {}, "NODECLI_ACCESS_KEY",
         {"NODECLI_ACCESS_KEY": AK, "NODECLI_PASSWORD": AK_SECRET}, 0),
        # a bearer token from the variable is used (the emulator refuses this one: 4)
        (["transfer", "start", "--spec", w["spec"], "--url", url], admin, "NODECLI_BEARER",
         {"NODECLI_BEARER": "not-a-valid-token", "NODECLI_ACCESS_KEY": AK}, 4),
        (["operations", "list"], {}, "NODECLI_SERVICE_URL",
         {"NODECLI_SERVICE_URL": url, "NODECLI_TOKEN": w["token"]}, 0),
        (["operations", "list", "--url", url], {}, "NODECLI_TOKEN",
         {"NODECLI_TOKEN": w["token"]}, 0),
        (["service", "add", "corp", "--url", url], {}, "NODECLI_TOKEN",
         {"NODECLI_TOKEN": w["token"]}, 0),
        (["user", "add", "bob", "-x", "xfer"], {}, "NODECLI_PASSWORD",
         {"NODECLI_PASSWORD": "bob-pw"}, 0),
        (["-au", "carol", "-x", "xfer"], {}, "NODECLI_PASSWORD",
         {"NODECLI_PASSWORD": "carol-pw"}, 0),
        (["token", "create", "-u", "issuer", "--access-key", AK, "--user-id", "u1", "--yes",
          "--token-key-length", "1024"], {}, "NODECLI_PASSWORD",
         {"NODECLI_PASSWORD": "issuer-pw"}, 0),
    ]


def test_each_variable_a_hint_names_is_read_by_that_command(invoke, world):
    failures = []
    for argv, env, var, answer, code in cases(world):
        before = invoke(*argv, env=env, input="")
        if before.exit_code == 0 or var not in before.stderr:
            failures.append(f"{argv}: expected a hint naming {var}, got {before!r}")
            continue
        after = invoke(*argv, env={**env, **answer}, input="")
        if after.exit_code != code:
            failures.append(f"{argv} with {sorted(answer)}: exit {after.exit_code}, not "
                            f"{code}: {after.stderr!r}")
        elif code and var not in after.stderr:  # refused, but the value came from var
            failures.append(f"{argv}: the refusal does not name {var} as the source: "
                            f"{after.stderr!r}")
    assert not failures, "\n".join(failures)


def test_permission_commands_do_not_offer_a_login_they_lack(invoke, world):
    """Their --user is the grantee's id, so the hint offers the access key only."""
    r = invoke("permission", "list", "/", "--url", world["url"], input="")
    assert r.exit_code == 2, r
    assert r.stderr.startswith("nodecli: error: no credentials: give --access-key AK "
                               "(or NODECLI_ACCESS_KEY)"), r.stderr
    assert "--user" not in r.stderr and "NODECLI_USER" not in r.stderr


def test_node_tls_hint_names_the_node_variable(invoke, tls_emulator):
    env = {"NODECLI_USER": "admin", "NODECLI_PASSWORD": "admin-pass"}
    r = invoke("node", "info", "--url", tls_emulator.url, env=env)
    assert r.exit_code == 6, r
    assert r.stderr.splitlines()[-1] == (
        "hint: give the node's CA with --cacert PEM (or NODECLI_CACERT; "
        "for a test node only, --insecure)")
    # the service's variable is not what node commands read; the node's is
    r = invoke("node", "info", "--url", tls_emulator.url,
               env={**env, "NODECLI_SERVICE_CACERT": tls_emulator.ca_file})
    assert r.exit_code == 6, r
    r = invoke("node", "info", "--url", tls_emulator.url, "-o", "json",
               env={**env, "NODECLI_CACERT": tls_emulator.ca_file})
    assert r.exit_code == 0, r


def test_every_variable_in_the_man_page_is_read_by_nodecli():
    """The man page's ENVIRONMENT lists only variables some code really reads, and every
    NODECLI_ variable the code reads is listed there."""
    import re
    from pathlib import Path

    from nodecli import devtools

    page = devtools.generated_files()["man/nodecli.1"]
    env_section = page.split("\n.SH ENVIRONMENT\n", 1)[1].split("\n.SH ", 1)[0]
    documented = set(re.findall(r"\\fB(_?NODECLI_[A-Z_]+)\\fR", env_section))
    root = Path(devtools.__file__).parent
    read: set[str] = set()
    for path in root.rglob("*.py"):
        if path.name == "devtools.py":
            continue
        text = path.read_text(encoding="utf-8")
        read |= set(re.findall(r"\"(_?NODECLI_[A-Z_]+)\"", text))
    read.discard("NODECLI_")  # a prefix test, not a variable
    # hooks the program honours only under the test suite are no interface: they are
    # described in docs/development.md, not in the man page
    hooks = {v for v in read if v.startswith("NODECLI_TEST_")}
    development = (root.parent / "docs" / "development.md").read_text(encoding="utf-8")
    assert {h for h in hooks if h not in development} == set(), \
        "test hooks missing from docs/development.md"
    read -= hooks
    assert documented - read == set(), "documented but never read"
    assert read - documented == set(), "read but missing from the man page"
