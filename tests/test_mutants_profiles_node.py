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
from nodecli.errors import ConflictError, NotFoundError, UsageError
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


# -- resolve_node: every source of identity and secret, with the note it leaves --------


def resolved_cfg() -> Config:
    cfg = Config(default_node="prod")
    cfg.nodes["prod"] = NodeProfile("prod", "https://prod:9092", user="admin",
                                    cacert="/prof.pem", insecure=False)
    cfg.nodes["ak"] = NodeProfile("ak", "https://ak:9092", access_key="AKP",
                                  access_key_header="X-Prof", insecure=True,
                                  proxy="http://prof-proxy:3128")
    return cfg


def stored(key: str) -> str | None:
    return {"node:prod": "stored-prod", "node:ak": "stored-ak"}.get(key)


def basic(login: str, secret: str | None, note: str, *, ak: bool = False,
          header: str = "X-Vendor-AccessKey") -> Auth:
    return Auth("basic", login, secret, access_key=login if ak else None,
                access_key_header=header, note=note)


@pytest.mark.parametrize(("flags", "env", "auth", "needed"), [
    (nd.NodeFlags(), {}, basic("admin", "stored-prod", "node user from the profile 'prod'; "
                                                       "secret stored with profile 'prod'"),
     None),
    (nd.NodeFlags(node="ak"), {}, basic("AKP", "stored-ak", "access key from the profile "
                                                            "'ak'; secret stored with profile "
                                                            "'ak'", ak=True, header="X-Prof"),
     None),
    (nd.NodeFlags(user="bob"), {}, basic("bob", None, "node user from the flag"),
     "password of node user 'bob'"),
    (nd.NodeFlags(user="admin"), {}, basic("admin", "stored-prod", "node user from the flag; "
                                                                   "secret stored with "
                                                                   "profile 'prod'"), None),
    (nd.NodeFlags(access_key="AK9", password="pw"), {"NODECLI_PASSWORD": "envpw"},
     basic("AK9", "pw", "access key from the flag; secret from --password-stdin", ak=True),
     None),
    (nd.NodeFlags(), {"NODECLI_USER": "eve", "NODECLI_PASSWORD": "envpw"},
     basic("eve", "envpw", "node user from the environment; secret from NODECLI_PASSWORD"),
     None),
    (nd.NodeFlags(access_key_header="X-Flag"), {"NODECLI_ACCESS_KEY": "AKE"},
     basic("AKE", None, "access key from the environment", ak=True, header="X-Flag"),
     "secret of access key 'AKE'"),
    (nd.NodeFlags(url="https://other:9092"), {"NODECLI_USER": "eve"},
     basic("eve", None, "node user from the environment"), "password of node user 'eve'"),
])
def test_the_identity_and_secret_come_from_the_first_source_naming_one(flags, env, auth,
                                                                       needed):
    target = nd.resolve_node(resolved_cfg(), flags, env, stored)
    assert target.endpoint.auth == auth
    assert target.secret_needed == needed


def test_the_endpoints_tls_label_and_proxy():
    cfg = resolved_cfg()
    ep = nd.resolve_node(cfg, nd.NodeFlags(), {"NODECLI_CACERT": "/env.pem"}, stored).endpoint
    assert (ep.base_url, ep.cacert, ep.insecure, ep.label, ep.proxy) == (
        "https://prod:9092", "/env.pem", False, "prod", None)
    ep = nd.resolve_node(cfg, nd.NodeFlags(node="ak", cacert="/flag.pem"), {}).endpoint
    assert (ep.cacert, ep.insecure, ep.label, ep.proxy.shown()) == (
        "/flag.pem", True, "ak", "http://prof-proxy:3128")
    ep = nd.resolve_node(cfg, nd.NodeFlags(url="https://u:9092", user="u", insecure=True,
                                           proxy="http://flag-proxy:1"), {}).endpoint
    assert (ep.cacert, ep.insecure, ep.label, ep.proxy.shown()) == (
        None, True, "https://u:9092", "http://flag-proxy:1")
    assert nd.resolve_node(cfg, nd.NodeFlags(), {}).endpoint.cacert == "/prof.pem"


def test_a_bearer_token_from_the_environment_and_its_access_key(tmp_path):
    cfg = resolved_cfg()
    env = {"NODECLI_BEARER": "  Bearer tok-e \n", "NODECLI_ACCESS_KEY": "AKE"}
    target = nd.resolve_node(cfg, nd.NodeFlags(), env)
    assert target.endpoint.auth == Auth(
        "bearer", token="tok-e", access_key="AKE", access_key_header="X-Vendor-AccessKey",
        note="token from NODECLI_BEARER, from the environment")
    assert target.secret_needed is None
    # --access-key AK with NODECLI_BEARER: the token made for that key
    target = nd.resolve_node(cfg, nd.NodeFlags(access_key="AKF"), {"NODECLI_BEARER": "t2"})
    assert target.endpoint.auth == Auth(
        "bearer", token="t2", access_key="AKF", access_key_header="X-Vendor-AccessKey",
        note="token from NODECLI_BEARER, from the flag")
    # ... not with a secret on stdin, a user or a token file of its own
    for flags in (nd.NodeFlags(access_key="AKF", password="pw"),
                  nd.NodeFlags(access_key="AKF", user="bob")):
        assert nd.resolve_node(cfg, flags, {"NODECLI_BEARER": "t2"}).endpoint.auth.kind == \
            "basic"
    # a bearer token of the profile ak's access key, its header
    target = nd.resolve_node(cfg, nd.NodeFlags(node="ak"), {"NODECLI_BEARER": "t3"})
    assert target.endpoint.auth.kind == "bearer"
    token = tmp_path / "tok"
    token.write_text("tok-f\n")
    target = nd.resolve_node(cfg, nd.NodeFlags(node="ak", bearer_file=str(token)), {})
    auth = target.endpoint.auth
    assert (auth.kind, auth.bearer(), auth.access_key, auth.access_key_header, auth.note) == (
        "bearer", "tok-f", "AKP", "X-Prof", f"token file {token}, from the flag")
    assert auth.token is None and auth.source.label == f"token file {token}"
    with pytest.raises(UsageError) as info:
        nd.resolve_node(Config(), nd.NodeFlags(url="https://n:9092"), {"NODECLI_BEARER": "t"})
    assert info.value.message == ("a bearer token needs the access key it was made for: "
                                  "--access-key AK (or NODECLI_ACCESS_KEY)")


def test_a_profile_that_signs_its_tokens_mints_them_unless_a_token_file_is_given(tmp_path):
    cfg = resolved_cfg()
    cfg.nodes["m"] = NodeProfile("m", "https://m:9092", access_key="AKM",
                                 mint=MintSettings("/k.pem", "u7", ["g1"], "admin", 600))
    auth = nd.resolve_node(cfg, nd.NodeFlags(node="m"), {}).endpoint.auth
    source = auth.source
    assert (auth.kind, auth.token, auth.access_key) == ("bearer", None, "AKM")
    assert auth.note == f"{source.label}, from the profile 'm'"
    assert source.label == "token minted for user 'u7' with key /k.pem"
    token = tmp_path / "tok"
    token.write_text("tok-f\n")
    auth = nd.resolve_node(cfg, nd.NodeFlags(node="m", bearer_file=str(token)),
                           {}).endpoint.auth
    assert auth.bearer() == "tok-f"  # (the flag's token file, not minted)
    auth = nd.resolve_node(cfg, nd.NodeFlags(node="m", user="bob"), {}).endpoint.auth
    assert auth.kind == "basic"  # another identity than the profile's: no minting


def test_no_credentials_names_the_options_the_command_takes():
    cfg = Config()
    with pytest.raises(UsageError) as info:
        nd.resolve_node(cfg, nd.NodeFlags(url="https://n:9092"), {})
    assert info.value.message == ("no credentials: give --user NAME or --access-key AK (or "
                                  "NODECLI_USER / NODECLI_ACCESS_KEY, or a profile that has "
                                  "them)")
    with pytest.raises(UsageError) as info:
        nd.resolve_node(cfg, nd.NodeFlags(url="https://n:9092", user_login=False), {})
    assert info.value.message == ("no credentials: give --access-key AK (or "
                                  "NODECLI_ACCESS_KEY) with its secret or with --bearer-file "
                                  "PATH, or a profile that has one")
    with pytest.raises(UsageError) as info:
        nd.resolve_node(cfg, nd.NodeFlags(url="ftp://n", user="u"), {})
    assert info.value.message == "node URL must start with https:// (or http://): 'ftp://n'"
    with pytest.raises(NotFoundError) as info:
        nd.resolve_node(resolved_cfg(), nd.NodeFlags(), {"NODECLI_NODE": "zz"})
    assert info.value.message == "no node profile 'zz' (profiles: ak, prod)"


# -- validate_profile, _check_mint, changed_mint ----------------------------------------


@pytest.mark.parametrize(("changes", "message"), [
    ({"name": "-x"}, "invalid profile name '-x': "),
    ({"url": "ftp://n"}, "--url must be an http(s) URL such as https://node:9092, not "
                         "'ftp://n'"),
    ({"url": "https://n:9092/a b"}, "--url must be an http(s) URL such as "),
    ({"url": "https://u:p@n:9092"}, "--url must not carry credentials (user:password@); "
                                    "use --user / --access-key and the secret store"),
    ({"user": "u", "access_key": "AK"}, "give --user or --access-key, not both"),
    ({"access_key": "A K"}, "invalid access key id 'A K'"),
    ({"access_key": "AK", "access_key_header": "X Bad"},
     "--access-key-header must be an HTTP header name, not 'X Bad'"),
    ({"access_key": "AK", "access_key_header": "X" * 129},
     "--access-key-header must be an HTTP header name, not "),
    ({"bearer_file": "/tok"}, "--bearer-file needs the access key the token was made for: "
                              "--access-key AK"),
    ({"insecure": True, "cacert": "/ca.pem"}, "give --cacert or --insecure, not both"),
    ({"insecure": True, "url": "http://n:9092"}, "--insecure only makes sense with an "
                                                 "https:// URL"),
    ({"proxy": "ftp://p"}, "--proxy"),
])
def test_each_bad_profile_field_is_named(changes, message):
    spec = replace(NodeProfile("p", "https://n:9092"), **changes)
    with pytest.raises(UsageError) as info:
        nd.validate_profile(spec)
    assert info.value.message.startswith(message), info.value.message


def test_a_valid_profile_is_normalised(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = NodeProfile("p", " https://n:9092/ ", user="", access_key="AK",
                       bearer_file="tok", cacert="ca.pem", access_key_header="X-" + "K" * 126,
                       proxy="http://pr:1", health_warn="w", secrets="file")
    got = nd.validate_profile(spec)
    assert got == NodeProfile("p", "https://n:9092", user=None, access_key="AK",
                              bearer_file=str(tmp_path / "tok"),
                              cacert=str(tmp_path / "ca.pem"),
                              access_key_header="X-" + "K" * 126, proxy="http://pr:1")
    got = nd.validate_profile(NodeProfile("q", "http://n", user="u", proxy=""))
    assert (got.access_key, got.bearer_file, got.cacert, got.access_key_header,
            got.proxy) == (None, None, None, None, None)


@pytest.fixture(scope="module")
def private_key(tmp_path_factory):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = tmp_path_factory.mktemp("key") / "k.pem"
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(("changes", "mint", "message"), [
    ({"access_key": None}, {}, "--mint-key signs bearer tokens for an access key: give "
                               "--access-key AK (and no --user or --bearer-file)"),
    ({"bearer_file": "/tok"}, {}, "--mint-key signs bearer tokens for an access key"),
    ({}, {"user_id": ""}, "--mint-key needs --mint-user-id UID (the user the tokens are for)"),
    ({}, {"scope_role": "root"}, "--mint-scope-role is user or admin"),
    ({}, {"ttl": 9}, "--mint-ttl must be from 10 s to 30 days"),
    ({}, {"ttl": 30 * 86400 + 1}, "--mint-ttl must be from 10 s to 30 days"),
])
def test_each_bad_signing_setting_is_named(private_key, changes, mint, message):
    settings = replace(MintSettings(str(private_key), "u1"), **mint)
    spec = replace(NodeProfile("p", "https://n:9092", access_key="AK", mint=settings),
                   **changes)
    with pytest.raises(UsageError) as info:
        nd.validate_profile(spec)
    assert info.value.message.startswith(message), info.value.message


@pytest.mark.parametrize("ttl", [10, 30 * 86400])
def test_a_signing_profile_keeps_its_key_path_and_checked_groups(private_key, ttl,
                                                                 monkeypatch):
    monkeypatch.chdir(private_key.parent)
    spec = NodeProfile("p", "https://n:9092", access_key="AK",
                       mint=MintSettings("k.pem", "u1", [" g1", "g2 "], "admin", ttl))
    assert nd.validate_profile(spec).mint == MintSettings(str(private_key), "u1",
                                                          ["g1", "g2"], "admin", ttl)
    spec = replace(spec, mint=MintSettings("k.pem", "u1", [], "user", ttl))
    assert nd.validate_profile(spec).mint == MintSettings(str(private_key), "u1", [], "user",
                                                          ttl)


def test_changed_mint_starts_with_a_key_and_changes_only_what_is_given():
    with pytest.raises(UsageError) as info:
        nd.changed_mint(None, mint_user_id="u1")
    assert info.value.message == ("this profile does not sign its own tokens: give --mint-key "
                                  "PATH (with --mint-user-id UID) to make it, or leave out "
                                  "--mint-*")
    assert nd.changed_mint(None, mint_key="/k.pem") == MintSettings("/k.pem", "", [], "user",
                                                                    3600)
    current = MintSettings("/k.pem", "u1", ["g1"], "admin", 600)
    assert nd.changed_mint(current) == current
    assert nd.changed_mint(current, mint_key="/k2.pem", mint_user_id="u2",
                           mint_group_ids="a, , b", mint_scope_role="user",
                           mint_ttl="2h") == MintSettings("/k2.pem", "u2", ["a", " b"],
                                                          "user", 7200)
    assert nd.changed_mint(current, mint_user_id="", mint_group_ids="").user_id == ""
    assert nd.changed_mint(current, mint_group_ids="").group_ids == []
    with pytest.raises(UsageError, match=r"^--mint-ttl: "):
        nd.changed_mint(current, mint_ttl="soon")


# -- add, show, the login check's target, the clock's endpoint ----------------------------


def test_adding_a_profile_refuses_a_secret_without_a_login_and_replaces_on_request(saved):
    store, paths = saved
    with pytest.raises(UsageError) as info:
        nd.add_profile(store, paths, NodeProfile("p", "https://p:9092"), "pw")
    assert info.value.message == "a secret needs --user or --access-key to go with it"
    nd.add_profile(store, paths, NodeProfile("p", "https://p:9092", user="u"), "pw")
    nd.add_profile(store, paths, NodeProfile("q", "https://q:9092", user="u"))
    assert store.load().default_node == "p"
    shown = nd.add_profile(store, paths, NodeProfile("p", "https://p2:9092", user="u"),
                           replace=True, make_default=False)
    assert (shown["url"], shown["secret_stored"], shown["default"]) == (
        "https://p2:9092", False, True)
    nd.add_profile(store, paths, NodeProfile("r", "https://r:9092", user="u"),
                   make_default=True)
    assert store.load().default_node == "r"


def test_show_gives_every_field_where_the_secret_is_and_never_the_secret(saved):
    store, paths = saved
    nd.add_profile(store, paths, NodeProfile("p", "https://p:9092", access_key="AK",
                                             proxy="http://pr:1"), "s3cret")
    nd.add_profile(store, paths, NodeProfile("q", "https://q:9092", user="u"))
    nd.set_health_thresholds(store, "p", "cert_days=9", None)
    shown = nd.show_profile(store.load(), paths, "p")
    where = f"file {paths.secrets_file} (0600)"
    assert shown == {
        "name": "p", "default": True, "url": "https://p:9092", "auth": "access key AK",
        "user": None, "access_key": "AK", "bearer_file": None, "cacert": None,
        "insecure": False, "access_key_header": "X-Vendor-AccessKey", "secret_stored": True,
        "secret_backend": where, "secret_store": where, "proxy": "http://pr:1", "mint": None,
        "health_warn": "cert_days=9", "health_crit": None}
    shown = nd.show_profile(store.load(), paths, "q")
    assert (shown["name"], shown["default"], shown["secret_stored"],
            shown["secret_backend"], shown["auth"]) == ("q", False, False, None, "node user u")
    assert nd.show_profile(store.load(), paths, None)["name"] == "p"
    with pytest.raises(NotFoundError, match=r"^no node profile 'zz' \(profiles: p, q\)$"):
        nd.show_profile(store.load(), paths, "zz")


@pytest.mark.parametrize(("profile", "summary"), [
    (NodeProfile("p", "https://p", access_key="AK",
                 mint=MintSettings("/k", "u")), "bearer minted (AK)"),
    (NodeProfile("p", "https://p", access_key="AK", bearer_file="/t"), "bearer (AK)"),
    (NodeProfile("p", "https://p", access_key="AK"), "access key AK"),
    (NodeProfile("p", "https://p", user="u"), "node user u"),
    (NodeProfile("p", "https://p"), "none"),
])
def test_the_auth_summary_of_each_kind_of_profile(profile, summary):
    cfg = Config(nodes={"p": profile})
    assert nd.list_profiles(cfg)[0]["auth"] == summary


def test_a_login_check_uses_the_profiles_own_identity_not_the_environments():
    profile = NodeProfile("new", "https://new:9092", user="u")
    env = {"NODECLI_URL": "https://env:9092", "NODECLI_USER": "env-user",
           "NODECLI_NODE": "other", "NODECLI_ACCESS_KEY": "AKE", "NODECLI_BEARER": "t",
           "NODECLI_PASSWORD": "env-pw", "NODECLI_CACERT": "/env.pem"}
    target = nd.login_target(profile, None, None, env)
    auth = target.endpoint.auth
    assert (target.endpoint.base_url, auth.username, auth.password, target.endpoint.cacert) \
        == ("https://new:9092", "u", "env-pw", "/env.pem")
    target = nd.login_target(profile, "typed", None, env, stored="kept")
    assert target.endpoint.auth.password == "typed"
    target = nd.login_target(profile, None, None, {}, stored="kept")
    assert (target.endpoint.auth.password, target.secret_needed) == ("kept", None)
    target = nd.login_target(profile, None, None, {})
    assert target.secret_needed == "password of node user 'u'"
    proxied = replace(profile, proxy="http://bob@pr:3128")
    ep = nd.login_target(proxied, "pw", "proxy-pw", {}).endpoint
    assert ep.proxy.password == "proxy-pw"


def test_the_clock_endpoint_of_a_profile_or_a_url_carries_no_secret():
    cfg = resolved_cfg()
    ep = nd.clock_endpoint(cfg, "ak", {"NODECLI_CACERT": "/env.pem"})
    assert (ep.base_url, ep.cacert, ep.insecure, ep.label, ep.auth, ep.max_attempts,
            ep.deadline) == ("https://ak:9092", None, True, "ak", Auth(), 2, 30.0)
    assert ep.proxy.shown() == "http://prof-proxy:3128"
    ep = nd.clock_endpoint(cfg, "https://x:9092", {"NODECLI_CACERT": "/env.pem"})
    assert (ep.base_url, ep.cacert, ep.insecure, ep.label, ep.proxy) == (
        "https://x:9092", "/env.pem", False, "https://x:9092", None)
    with pytest.raises(NotFoundError, match=r"^no node profile 'zz' \(profiles: ak, prod\)$"):
        nd.clock_endpoint(cfg, "zz", {})


def test_a_plain_http_node_and_the_url_from_the_environment():
    cfg = resolved_cfg()
    target = nd.resolve_node(cfg, nd.NodeFlags(user="u"), {"NODECLI_URL": "http://n:9092"})
    assert (target.endpoint.base_url, target.profile) == ("http://n:9092", None)


def test_changing_a_profiles_tls_keeps_its_login_and_an_empty_url_is_refused():
    current = NodeProfile("p", "https://p:9092", user="bob")
    new = nd.changed_profile(current, {"cacert": "/ca.pem"}, None)
    assert (new.user, new.cacert) == ("bob", "/ca.pem")
    with pytest.raises(UsageError) as info:
        nd.changed_profile(current, {"url": ""}, None)
    assert info.value.message == "--url cannot be empty: a profile needs its node's URL"
    assert nd.changed_profile(current, {"url": "https://q:9092"}, None).url == \
        "https://q:9092"


def test_a_user_flag_is_not_given_the_profiles_access_key():
    cfg = resolved_cfg()
    target = nd.resolve_node(cfg, nd.NodeFlags(node="ak", user="bob"), {})
    assert (target.endpoint.auth.username, target.endpoint.auth.access_key) == ("bob", None)
    assert target.profile is cfg.nodes["ak"]


def test_a_token_file_flag_takes_the_access_key_from_the_environment(tmp_path):
    token = tmp_path / "tok"
    token.write_text("tok-f\n")
    cfg = resolved_cfg()
    auth = nd.resolve_node(cfg, nd.NodeFlags(bearer_file=str(token)),
                           {"NODECLI_ACCESS_KEY": "AKE"}).endpoint.auth
    assert (auth.kind, auth.access_key) == ("bearer", "AKE")
    auth = nd.resolve_node(cfg, nd.NodeFlags(bearer_file=str(token), access_key="AKF"),
                           {"NODECLI_ACCESS_KEY": "AKE"}).endpoint.auth
    assert auth.access_key == "AKF"


def test_the_resolved_target_keeps_its_profile():
    cfg = resolved_cfg()
    assert nd.resolve_node(cfg, nd.NodeFlags(), {}, stored).profile is cfg.nodes["prod"]
    assert nd.resolve_node(cfg, nd.NodeFlags(), {"NODECLI_BEARER": "t",
                                                 "NODECLI_ACCESS_KEY": "AK"}).profile \
        is cfg.nodes["prod"]


def test_the_proxy_of_the_environment_or_a_profile_and_no_proxy():
    cfg = resolved_cfg()
    env = {"HTTPS_PROXY": "http://env-proxy:1"}
    ep = nd.resolve_node(cfg, nd.NodeFlags(), env, stored).endpoint
    assert (ep.proxy.shown(), ep.proxy.source) == ("http://env-proxy:1", "HTTPS_PROXY")
    ep = nd.resolve_node(cfg, nd.NodeFlags(node="ak"), env, stored).endpoint
    assert (ep.proxy.shown(), ep.proxy.source) == ("http://prof-proxy:3128", "profile 'ak'")
    for where in ("prod", "ak"):
        ep = nd.resolve_node(cfg, nd.NodeFlags(node=where), {**env, "NO_PROXY": where},
                             stored).endpoint
        assert ep.proxy is None


def test_the_clock_of_a_plain_http_url_and_no_proxy_for_it():
    env = {"HTTP_PROXY": "http://env-proxy:1", "NO_PROXY": "near"}
    ep = nd.clock_endpoint(Config(), "http://near:9092", env)
    assert (ep.base_url, ep.label, ep.proxy) == ("http://near:9092", "http://near:9092", None)
    ep = nd.clock_endpoint(Config(), "http://far:9092", env)
    assert ep.proxy.shown() == "http://env-proxy:1"


def test_the_clock_of_a_node_is_read_from_its_answer_without_credentials(tmp_path):
    """``token create --clock-from-node``: one GET /info carrying no credentials, over the
    profile's TLS settings; the Date header's offset from our clock."""
    import time
    from email.utils import formatdate

    from tests.scripted_server import ScriptedServer, certificates, reply

    ca, cert, key = certificates(tmp_path)

    def script(seen):
        yield reply(401, b"", [("Date", formatdate(time.time() + 120, usegmt=True))])

    with ScriptedServer(script, tls=(cert, key)) as server:
        cfg = Config(nodes={"n": NodeProfile("n", server.url(), user="u", cacert=ca)})
        label, offset = nd.node_clock(cfg, "n", {})
        assert label == "n" and 118 < offset < 122
        assert [(s.method, s.target) for s in server.seen] == [("GET", "/info")]
        assert "authorization" not in server.seen[0].headers


@pytest.mark.parametrize(("auth", "asked"), [
    (Auth("bearer", token="t", access_key="AK"), "/events?count=1"),
    (Auth("basic", "u", "pw"), "/info"),
])
def test_a_login_check_asks_one_thing(tmp_path, auth, asked):
    """A bearer token reads one event (GET /events?count=1, not a whole page); a user or
    access key with its secret reads /info."""
    from nodecli.http.client import open_client
    from tests.scripted_server import ScriptedServer, certificates, reply

    ca, cert, key = certificates(tmp_path)

    def script(seen):
        body = b"[]" if seen.target.startswith("/events") else b'{"version": "4.4.0"}'
        yield reply(200, body, [("Content-Type", "application/json")])

    with ScriptedServer(script, tls=(cert, key)) as server, open_client(
            Endpoint(server.url(), auth, cacert=ca, deadline=10.0)) as client:
        assert nd.check_login(client) == f"GET {asked}"
        assert [s.target for s in server.seen] == [asked]


def test_adding_a_node_profile_keeps_its_proxy_password_and_returns_its_summary(saved):
    store, paths = saved
    nd.add_profile(store, paths, NodeProfile("a", "https://a:9092", user="u"))
    shown = nd.add_profile(store, paths, NodeProfile("p", "https://p:9092", user="u",
                                                     proxy="http://bob@pr:1"), "pw",
                           proxy_password="pp")
    assert (shown["name"], shown["default"], shown["proxy"]) == ("p", False,
                                                                 "http://bob@pr:1")
    from nodecli.config.secrets import find_secret

    assert find_secret(paths, "node:p:proxy", "file")[0] == "pp"
    with pytest.raises(ConflictError) as info:
        nd.add_profile(store, paths, NodeProfile("p", "https://p:9092", user="u"))
    assert (info.value.message, info.value.hint) == (
        "node profile 'p' already exists",
        "use --force to replace it, or 'nodecli node remove'")


def test_show_without_a_name_or_default_and_a_signing_profile(saved, memory_keyring):  # noqa: F811
    _, paths = saved
    with pytest.raises(UsageError) as info:
        nd.show_profile(Config(), paths, None)
    assert info.value.message == ("no profile named and no default profile: give NAME or "
                                  "set one with 'nodecli node default NAME'")
    mint = MintSettings("/k.pem", "u7", ["g"], "admin", 600)
    cfg = Config(nodes={"m": NodeProfile("m", "https://m:9092", access_key="AK", mint=mint,
                                         secrets="file")})
    memory_keyring.items[(keyring_service(paths), "node:m")] = "not ours"
    shown = nd.show_profile(cfg, paths, "m")
    assert shown["mint"] == mint.to_dict() and shown["auth"] == "bearer minted (AK)"
    assert (shown["secret_stored"], shown["secret_backend"]) == (False, None)


def test_a_url_keeps_a_final_x_and_loses_a_final_slash():
    assert nd.validate_profile(NodeProfile("p", "https://nodeX/", user="u")).url == \
        "https://nodeX"
