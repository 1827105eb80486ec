"""An access key id or a header name that ends with a newline is refused before it is
stored or sent: ``$`` in their patterns also matched before a final newline (the class
config/model.py's names had, found by its mutation run)."""

from __future__ import annotations

import pytest

from nodecli.errors import UsageError
from nodecli.node.access_keys import check_ak_id


@pytest.mark.parametrize("ak", ["ak\n", "ak\r", "\nak", "a\nk"])
def test_an_access_key_id_with_a_newline_is_refused(ak):
    with pytest.raises(UsageError, match="invalid access key id"):
        check_ak_id(ak)


def test_an_access_key_id_at_its_bounds_is_taken():
    assert check_ak_id("a") == "a"
    assert check_ak_id("A9_.@+-" * 18 + "xy") == "A9_.@+-" * 18 + "xy"  # 128
    with pytest.raises(UsageError):
        check_ak_id("a" * 129)


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--access-key", "ak\n", "invalid access key id"),
    ("--access-key-header", "X-Key\n", "--access-key-header must be an HTTP header name"),
])
def test_node_add_refuses_a_final_newline_and_stores_nothing(invoke, home, flag, value, said):
    argv = ["node", "add", "n", "--url", "https://n:9092", "--no-check", "--no-secret"]
    if flag == "--access-key-header":
        argv += ["--access-key", "ak"]
    r = invoke(*argv, flag, value)
    assert r.exit_code == 2, r
    assert said in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert not (home / "config.toml").exists() or "[nodes.n]" not in \
        (home / "config.toml").read_text()
