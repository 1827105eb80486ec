"""nodecli.profiles.node in process, for the survivors of its mutation run (issue 33,
item 2): the note a secret adds to a login, what ``node remove`` and ``node list`` give
back, ``node set``'s rules (one login replaces the other, a CA file replaces --insecure),
and the identity and secret ``resolve_node`` takes from flags, environment and profile."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodecli.config.model import Config, MintSettings, NodeProfile
from nodecli.config.paths import resolve_paths
from nodecli.config.secrets import keyring_service
from nodecli.config.store import ConfigStore
from nodecli.errors import NotFoundError, UsageError
from nodecli.http.client import Auth, Endpoint
from nodecli.profiles import node as nd
from tests.test_secrets import memory_keyring  # noqa: F401 - the fixture


@pytest.fixture
def saved(home):
    paths = resolve_paths(home)
    return ConfigStore(paths), paths


# -- NodeTarget.with_secret ---------------------------------------------------------------


@pytest.mark.parametrize(("note", "shown"), [
    ("access key from the flag", "access key from the flag; secret typed at the prompt"),
    ("node user from the profile 'p'; secret from NODECLI_PASSWORD",
     "node user from the profile 'p'; secret typed at the prompt"),
    ("", "secret typed at the prompt"),
])
def test_a_secret_given_later_keeps_the_login_and_says_where_it_came_from(note, shown):
    auth = Auth("basic", "AK1", None, access_key="AK1", access_key_header="X-Key", note=note)
    target = nd.NodeTarget(Endpoint("https://n:9092", auth), None, "secret of access key")
    ep = target.with_secret("s3cret")
    assert ep.auth == Auth("basic", "AK1", "s3cret", access_key="AK1",
                           access_key_header="X-Key", note=shown)
    assert nd.NodeTarget(Endpoint("https://n:9092", auth), None, "x").with_secret(
        "s", "from stdin").auth.note.endswith("secret from stdin")


# -- remove, list, health thresholds --------------------------------------------------


def test_removing_profiles_says_whether_it_was_the_default(saved):
    store, paths = saved
    nd.add_profile(store, paths, nd.ProfileSpec("a", "https://a:9092", user="u"), "pw")
    nd.add_profile(store, paths, nd.ProfileSpec("b", "https://b:9092", user="u"), "pw")
    assert nd.remove_profile(store, paths, "b") is False
    assert store.load().default_node == "a"
    assert nd.remove_profile(store, paths, "a") is True
    assert store.load().default_node is None
    with pytest.raises(NotFoundError) as info:
        nd.remove_profile(store, paths, "a")
    assert info.value.message == "no node profile 'a' (profiles: none saved)"


def test_removing_a_profile_recorded_in_the_file_leaves_the_keyring_alone(
        saved, memory_keyring, monkeypatch):  # noqa: F811
    store, paths = saved
    monkeypatch.setenv("NODECLI_SECRETS_BACKEND", "file")
    nd.add_profile(store, paths, nd.ProfileSpec("f", "https://f:9092", user="u"), "pw")
    monkeypatch.delenv("NODECLI_SECRETS_BACKEND")
    assert store.load().nodes["f"].secrets == "file"
    memory_keyring.items[(keyring_service(paths), "node:f")] = "not ours"
    nd.remove_profile(store, paths, "f")
    assert memory_keyring.items == {(keyring_service(paths), "node:f"): "not ours"}


def test_a_list_row_holds_every_field_and_no_secret(saved):
    store, paths = saved
    nd.add_profile(store, paths, nd.ProfileSpec("a", "https://a:9092", user="u",
                                                cacert="/ca.pem"), "pw")
    nd.add_profile(store, paths, nd.ProfileSpec("b", "https://b:9092", access_key="AK",
                                                access_key_header="X-Key",
                                                bearer_file="/tok"))
    rows = nd.list_profiles(store.load())
    assert rows == [
        {"name": "a", "default": True, "url": "https://a:9092", "auth": "node user u",
         "user": "u", "access_key": None, "bearer_file": None, "cacert": "/ca.pem",
         "insecure": False, "access_key_header": None},
        {"name": "b", "default": False, "url": "https://b:9092", "auth": "bearer (AK)",
         "user": None, "access_key": "AK", "bearer_file": "/tok", "cacert": None,
         "insecure": False, "access_key_header": "X-Key"},
    ]


def test_health_thresholds_set_one_keep_the_other(saved):
    store, paths = saved
    nd.add_profile(store, paths, nd.ProfileSpec("a", "https://a:9092", user="u"))
    nd.set_health_thresholds(store, "a", "cert_days=30", "cert_days=7")
    got = nd.set_health_thresholds(store, "a", "cert_days=20", None)
    assert (got.health_warn, got.health_crit) == ("cert_days=20", "cert_days=7")
    saved_now = store.load().nodes["a"]
    assert (saved_now.health_warn, saved_now.health_crit) == ("cert_days=20", "cert_days=7")
    got = nd.set_health_thresholds(store, "a", None, "", reset=False)
    assert (got.health_warn, got.health_crit) == ("cert_days=20", None)
    got = nd.set_health_thresholds(store, "a", None, None, reset=True)
    assert (got.health_warn, got.health_crit) == (None, None)
    with pytest.raises(NotFoundError, match="no node profile 'zz'"):
        nd.set_health_thresholds(store, "zz", None, None)


# -- node set ------------------------------------------------------------------------


AK_PROFILE = NodeProfile("p", "https://p:9092", access_key="AK", bearer_file="/tok",
                         health_warn="w", health_crit="c", secrets="file")


def test_a_user_replaces_the_access_key_its_token_and_its_signing():
    minting = replace(AK_PROFILE, bearer_file=None,
                      mint=MintSettings("/k.pem", "u1", [], "user", 3600))
    for current in (AK_PROFILE, minting):
        new = nd.changed_profile(current, {"user": "bob"}, None)
        assert (new.user, new.access_key, new.bearer_file, new.mint) == ("bob", None, None,
                                                                          None)
        assert (new.health_warn, new.health_crit, new.secrets) == ("w", "c", "file")


def test_an_access_key_replaces_the_user():
    current = NodeProfile("p", "https://p:9092", user="bob")
    new = nd.changed_profile(current, {"access_key": "AK2"}, None)
    assert (new.user, new.access_key) == (None, "AK2")


def test_fields_not_given_are_skipped_not_the_end_of_the_changes():
    new = nd.changed_profile(AK_PROFILE, {"url": None, "user": None, "cacert": "/ca.pem",
                                          "proxy": None, "access_key_header": "X-K"}, None)
    assert (new.url, new.cacert, new.access_key_header) == ("https://p:9092", "/ca.pem",
                                                           "X-K")
    with pytest.raises(UsageError, match=r"^nothing to change"):
        nd.changed_profile(AK_PROFILE, {"url": None}, None)
    with pytest.raises(UsageError, match=r"^not a profile field: secrets$"):
        nd.changed_profile(AK_PROFILE, {"secrets": "x"}, None)


def test_a_ca_file_and_insecure_replace_each_other():
    insecure = replace(AK_PROFILE, insecure=True)
    new = nd.changed_profile(insecure, {"cacert": "/ca.pem"}, None)
    assert (new.cacert, new.insecure) == ("/ca.pem", False)
    new = nd.changed_profile(replace(AK_PROFILE, cacert="/ca.pem"), {}, True)
    assert (new.cacert, new.insecure) == (None, True)
    new = nd.changed_profile(insecure, {}, False)
    assert (new.cacert, new.insecure) == (None, False)


def test_set_profile_saves_in_place_and_refuses_an_unknown_one(saved):
    store, paths = saved
    nd.add_profile(store, paths, nd.ProfileSpec("a", "https://a:9092", user="u"))
    nd.set_profile(store, replace(store.load().nodes["a"], url="https://a2:9092"))
    assert store.load().nodes["a"].url == "https://a2:9092"
    with pytest.raises(NotFoundError, match="no node profile 'b' \\(profiles: a\\)"):
        nd.set_profile(store, NodeProfile("b", "https://b:9092"))


def test_resolve_node_gives_an_empty_config_the_words_to_start():
    with pytest.raises(UsageError, match=r"^no node given: use --node NAME"):
        nd.resolve_node(Config(), nd.NodeFlags(), {})
    assert isinstance(nd.resolve_node(Config(), nd.NodeFlags(url="https://n:9092",
                                                             user="u"), {}), nd.NodeTarget)
