"""The model of config.toml at its edges (issue 33, the mutation run of
``nodecli/config/model.py``): every refusal word for word at its place, each limit on
both sides (a name of 128 and 129 characters, a token lifetime of 10 and 9 seconds),
what ``to_dict`` writes and in which order, and what a table from the parse cache is
trusted with (the hash format, the restrictions) and what it is not."""

from __future__ import annotations

from typing import Any

import pytest

from nodecli.config.model import (
    KNOWN_ACLS,
    MINT_TTL_RANGE,
    OUTPUT_DEFAULTS,
    SECRET_PLACES,
    Config,
    MintSettings,
    ModelError,
    NodeProfile,
    NodeUser,
    ServiceProfile,
    TransferUser,
    check_name,
)

PHC = "$scrypt$ln=4,r=8,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNo"


def _refused(data: dict[str, Any], **kw: Any) -> str:
    with pytest.raises(ModelError) as info:
        Config.from_dict(data, **kw)
    assert str(info.value) == info.value.text
    return info.value.text


def _with_user(user: Any, name: Any = "alice", **kw: Any) -> str:
    return _refused({"transfer_users": {"t": {}}, "users": {name: user}}, **kw)


# -- the error and the names ---------------------------------------------------------


def test_an_error_is_its_place_then_its_message():
    e = ModelError(["users", "alice", "acls"], "unknown ACL")
    assert (e.where, e.message, e.text) == (["users", "alice", "acls"], "unknown ACL",
                                            "users -> alice -> acls: unknown ACL")
    assert str(e) == e.text
    assert isinstance(e, ValueError)
    assert ModelError([], "bad").text == "bad"
    assert ModelError(["x"], "bad").text == "x: bad"


@pytest.mark.parametrize("name", ["a", "_", "0", "A" * 128, "a.b@c+d-e_f", "Z9"])
def test_a_good_name_is_returned(name):
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["A" * 129, ".a", "-a", "+a", "@a", "a b", "a/b", "a:b",
                                  "é", "a\n"])
def test_a_bad_name_is_refused_showing_it_escaped(name):
    with pytest.raises(ValueError) as info:
        check_name(name, "user name")
    shown = name.encode("unicode_escape").decode("ascii")[:60]
    assert str(info.value) == (f"invalid user name {shown!r}: use 1-128 letters, digits and "
                               ". _ @ + - (not starting with . + - @)")


def test_a_bad_name_is_shown_to_60_characters():
    with pytest.raises(ValueError) as info:
        check_name("-" + "x" * 100)
    assert f"invalid name {'-' + 'x' * 59!r}: use" in str(info.value)


@pytest.mark.parametrize("name", ["", None, 5, ["a"]])
def test_a_name_that_is_no_text_or_empty_is_refused(name):
    with pytest.raises(ValueError) as info:
        check_name(name, "profile name")
    assert str(info.value) == "profile name must be a non-empty string"
    with pytest.raises(ValueError) as info:
        check_name(name)
    assert str(info.value) == "name must be a non-empty string"


# -- what is written -----------------------------------------------------------------


def test_a_transfer_user_writes_what_it_has():
    assert TransferUser("t").to_dict() == {}
    assert TransferUser("t").configured is False
    assert TransferUser("t", ["s3://*"]).to_dict() == {"restrictions": ["s3://*"]}
    assert TransferUser("t", ["s3://*"]).configured is True
    assert TransferUser("t", docroot="").to_dict() == {"docroot": ""}
    assert TransferUser("t", docroot="").configured is True
    restrictions = ["s3://*"]
    written = TransferUser("t", restrictions).to_dict()["restrictions"]
    assert written == restrictions and written is not restrictions


def test_a_node_user_writes_its_password_and_acls_only_when_it_has_them():
    assert NodeUser("a", "t").to_dict() == {"transfer_user": "t"}
    acls = ["admin"]
    d = NodeUser("a", "t", PHC, acls).to_dict()
    assert d == {"transfer_user": "t", "password": PHC, "acls": ["admin"]}
    assert d["acls"] is not acls
    assert NodeUser("a", "t", "", []).to_dict() == {"transfer_user": "t", "password": ""}


def test_mint_settings_write_in_order_with_their_defaults():
    m = MintSettings("/k.pem", "u1")
    assert (m.group_ids, m.scope_role, m.ttl) == ([], "user", 3600)
    assert list(m.to_dict().items()) == [("key", "/k.pem"), ("user_id", "u1"),
                                         ("scope_role", "user"), ("ttl", 3600)]
    groups = ["g1", "g2"]
    d = MintSettings("/k.pem", "u1", groups, "admin", 60).to_dict()
    assert list(d.items()) == [("key", "/k.pem"), ("user_id", "u1"), ("group_ids", ["g1", "g2"]),
                               ("scope_role", "admin"), ("ttl", 60)]
    assert d["group_ids"] is not groups


def test_a_node_profile_writes_what_is_set_in_order():
    assert NodeProfile("n", "https://n").to_dict() == {"url": "https://n"}
    full = NodeProfile("n", "https://n", user="u", access_key="ak", bearer_file="/b",
                       cacert="/ca", insecure=True, access_key_header="X-K", proxy="http://p:1",
                       mint=MintSettings("/k", "u1"), health_warn="cert=30",
                       health_crit="cert=7", secrets="file")
    assert list(full.to_dict().items()) == [
        ("url", "https://n"), ("user", "u"), ("access_key", "ak"), ("bearer_file", "/b"),
        ("cacert", "/ca"), ("access_key_header", "X-K"), ("proxy", "http://p:1"),
        ("health_warn", "cert=30"), ("health_crit", "cert=7"), ("secrets", "file"),
        ("insecure", True), ("mint", {"key": "/k", "user_id": "u1", "scope_role": "user",
                                      "ttl": 3600})]
    assert NodeProfile("n", "https://n", user="", insecure=False).to_dict() == {
        "url": "https://n", "user": ""}


def test_a_service_profile_writes_what_is_set_in_order():
    assert ServiceProfile("s", "https://s").to_dict() == {"url": "https://s"}
    full = ServiceProfile("s", "https://s", token_file="/t", cacert="/ca", insecure=True,
                          paths={"workspaces": "/w/{id}", "operations": "/o"},
                          proxy="http://p:1", secrets="keyring")
    d = full.to_dict()
    assert list(d.items()) == [
        ("url", "https://s"), ("token_file", "/t"), ("secrets", "keyring"), ("cacert", "/ca"),
        ("proxy", "http://p:1"), ("insecure", True),
        ("paths", {"operations": "/o", "workspaces": "/w/{id}"})]
    assert list(d["paths"]) == ["operations", "workspaces"]
    assert d["paths"] is not full.paths


def test_a_config_writes_its_defaults_and_sorted_tables_and_omits_empty_ones():
    assert Config().to_dict() == {"version": 1}
    cfg = Config(default_node="n", default_service="s", default_output="json")
    cfg.transfer_users = {"z": TransferUser("z"), "a": TransferUser("a")}
    cfg.users = {"u": NodeUser("u", "a")}
    cfg.nodes = {"n": NodeProfile("n", "https://n")}
    cfg.services = {"s": ServiceProfile("s", "https://s")}
    d = cfg.to_dict()
    assert list(d) == ["version", "defaults", "transfer_users", "users", "nodes", "services"]
    assert d["defaults"] == {"node": "n", "service": "s", "output": "json"}
    assert list(d["transfer_users"]) == ["a", "z"]
    assert Config.from_dict(d) == cfg
    assert Config(default_node="", default_output="").to_dict() == {"version": 1}
    assert Config(default_service="s").to_dict()["defaults"] == {"service": "s"}
    assert Config(default_output="csv").to_dict()["defaults"] == {"output": "csv"}


# -- the top level -------------------------------------------------------------------


@pytest.mark.parametrize(("version", "ok"), [(1, True), (0, False), (2, False), (-1, False)])
def test_only_version_1_is_read(version, ok):
    if ok:
        assert Config.from_dict({"version": version}).version == 1
    else:
        assert _refused({"version": version}) == (
            f"version: unsupported version {version} (this nodecli reads version 1)")


def test_a_missing_version_is_1_and_a_version_must_be_an_integer():
    assert Config.from_dict({}).version == 1
    assert _refused({"version": True}) == "version: must be an integer"
    assert _refused({"version": "1"}) == "version: must be an integer"
    assert _refused({"version": 1.0}) == "version: must be an integer"


def test_an_unknown_key_names_the_allowed_ones():
    assert _refused({"version": 1, "nodez": {}}) == (
        "nodez: unknown key (allowed: defaults, nodes, services, transfer_users, users, "
        "version)")


@pytest.mark.parametrize("section", ["transfer_users", "users", "nodes", "services",
                                     "defaults"])
def test_a_section_must_be_a_table(section):
    assert _refused({section: ["x"]}) == f"{section}: must be a table"


# -- transfer users ------------------------------------------------------------------


def test_transfer_users_are_read_with_restrictions_or_a_docroot():
    cfg = Config.from_dict({"transfer_users": {"r": {"restrictions": ["s3://*"]},
                                               "d": {"docroot": "/srv"}, "n": {}}})
    assert cfg.transfer_users == {"r": TransferUser("r", ["s3://*"]),
                                  "d": TransferUser("d", [], "/srv"),
                                  "n": TransferUser("n")}


@pytest.mark.parametrize(("table", "text"), [
    ({"restrictions": ["s3://*"], "docroot": "/x"},
     "transfer_users -> t: has both restrictions and a docroot; keep one"),
    ({"home": "/x"}, "transfer_users -> t -> home: unknown key (allowed: docroot, restrictions)"),
    ({"restrictions": "s3://*"}, "transfer_users -> t -> restrictions: must be a list"),
    ({"restrictions": ["s3://*", 5]}, "transfer_users -> t -> restrictions -> 1: must be a string"),
    ({"docroot": 5}, "transfer_users -> t -> docroot: must be a string"),
    ("x", "transfer_users -> t: must be a table"),
])
def test_a_bad_transfer_user_is_refused_at_its_place(table, text):
    assert _refused({"transfer_users": {"t": table}}) == text


def test_a_restriction_is_checked_with_its_index_unless_the_cache_vouches_for_it():
    data = {"transfer_users": {"t": {"restrictions": ["s3://*", "ftp://*"]}}}
    assert _refused(data).startswith(
        "transfer_users -> t -> restrictions -> 1: invalid restriction 'ftp://*': unknown "
        "storage scheme 'ftp'")
    assert Config.from_dict(data, validated=True).transfer_users["t"].restrictions == [
        "s3://*", "ftp://*"]
    assert _refused({"transfer_users": {"t": {"restrictions": ["s3://*"],
                                              "docroot": "/x"}}}, validated=True) == (
        "transfer_users -> t: has both restrictions and a docroot; keep one")


def test_a_bad_table_name_is_refused_at_its_place():
    assert _refused({"transfer_users": {"-t": {}}}) == (
        "transfer_users -> -t: invalid name '-t': use 1-128 letters, digits and . _ @ + - "
        "(not starting with . + - @)")


# -- node users ----------------------------------------------------------------------


def test_a_node_user_is_read_with_its_hash_and_acls():
    cfg = Config.from_dict({"transfer_users": {"t": {}}, "users": {
        "a": {"transfer_user": "t", "password": PHC, "acls": ["admin", "internal"]},
        "b": {"transfer_user": "t"}}})
    assert cfg.users == {"a": NodeUser("a", "t", PHC, ["admin", "internal"]),
                         "b": NodeUser("b", "t", None, [])}
    assert cfg.users["a"].acls is not cfg.to_dict()["users"]["a"]["acls"]


@pytest.mark.parametrize(("user", "text"), [
    ("x", "users -> alice: must be a table"),
    ({}, "users -> alice -> transfer_user: is required"),
    ({"transfer_user": 5}, "users -> alice -> transfer_user: must be a string"),
    ({"transfer_user": "t9"}, "users -> alice -> transfer_user: unknown transfer user 't9'"),
    ({"transfer_user": "t", "pass": "x"},
     "users -> alice -> pass: unknown key (allowed: acls, password, transfer_user)"),
    ({"transfer_user": "t", "password": 5}, "users -> alice -> password: must be a string"),
    ({"transfer_user": "t", "password": "clear"},
     "users -> alice -> password: is not a password hash (PHC string starting '$')"),
    ({"transfer_user": "t", "password": ""},
     "users -> alice -> password: is not a password hash (PHC string starting '$')"),
    ({"transfer_user": "t", "acls": "admin"}, "users -> alice -> acls: must be a list"),
    ({"transfer_user": "t", "acls": ""}, "users -> alice -> acls: must be a list"),
    ({"transfer_user": "t", "acls": {}}, "users -> alice -> acls: must be a list"),
    ({"transfer_user": "t", "acls": ["admin", 5]}, "users -> alice -> acls -> 1: must be a string"),
    ({"transfer_user": "t", "acls": [{"a": 1}]}, "users -> alice -> acls -> 0: must be a string"),
    ({"transfer_user": "t", "acls": ["admin", "root"]},
     "users -> alice -> acls: unknown ACL 'root' (known: admin, impersonation, internal)"),
])
def test_a_bad_node_user_is_refused_at_its_place(user, text):
    assert _with_user(user) == text


@pytest.mark.parametrize("name", ["-rf", "a b", "x" * 129])
def test_a_bad_user_name_is_refused_at_its_place(name):
    with pytest.raises(ValueError) as info:
        check_name(name)
    assert _with_user({"transfer_user": "t"}, name) == f"users -> {name}: {info.value}"


def test_a_user_name_that_is_no_text_is_refused_at_its_place():
    assert _with_user({"transfer_user": "t"}, 5) == "users -> 5: name must be a non-empty string"


def test_the_cache_vouches_for_a_hash_format_but_not_for_its_type():
    cfg = Config.from_dict({"transfer_users": {"t": {}},
                            "users": {"a": {"transfer_user": "t", "password": "clear"}}},
                           validated=True)
    assert cfg.users["a"].password_hash == "clear"
    assert _with_user({"transfer_user": "t", "password": 5}, validated=True) == (
        "users -> alice -> password: must be a string")


def test_every_known_acl_is_read():
    cfg = Config.from_dict({"transfer_users": {"t": {}},
                            "users": {"a": {"transfer_user": "t", "acls": list(KNOWN_ACLS)}}})
    assert cfg.users["a"].acls == ["admin", "impersonation", "internal"]


# -- node profiles -------------------------------------------------------------------


def _node(**table: Any) -> dict[str, Any]:
    return {"nodes": {"n": {"url": "https://n:9092", **table}}}


def test_a_node_profile_is_read_whole():
    cfg = Config.from_dict(_node(user="u", access_key="ak", bearer_file="/b", cacert="/ca",
                                 insecure=True, access_key_header="X-K", proxy="http://p:3128",
                                 mint={"key": "/k", "user_id": "u1", "group_ids": ["g"],
                                       "scope_role": "admin", "ttl": 10},
                                 health_warn="cert=30", health_crit="cert=7",
                                 secrets="keyring"))
    assert cfg.nodes["n"] == NodeProfile(
        "n", "https://n:9092", user="u", access_key="ak", bearer_file="/b", cacert="/ca",
        insecure=True, access_key_header="X-K", proxy="http://p:3128",
        mint=MintSettings("/k", "u1", ["g"], "admin", 10), health_warn="cert=30",
        health_crit="cert=7", secrets="keyring")
    assert Config.from_dict(_node()).nodes["n"] == NodeProfile("n", "https://n:9092")


@pytest.mark.parametrize("url", ["http://n", "https://n", "https://n:1/x", "https://[::1]:9092"])
def test_a_url_starts_with_http_or_https_and_a_host(url):
    assert Config.from_dict({"nodes": {"n": {"url": url}}}).nodes["n"].url == url


@pytest.mark.parametrize("url", ["ftp://n", "https://", "https:///x", "https:// n", "HTTPS://n",
                                 "httpss://n", " https://n", "n"])
def test_a_url_that_is_not_http_is_refused(url):
    assert _refused({"nodes": {"n": {"url": url}}}) == (
        f"nodes -> n -> url: not an http(s) URL: {url!r}")
    assert _refused({"services": {"s": {"url": url}}}) == (
        f"services -> s -> url: not an http(s) URL: {url!r}")


@pytest.mark.parametrize(("table", "text"), [
    ({"url": None}, None),
    ({"port": 1}, "nodes -> n -> port: unknown key (allowed: access_key, access_key_header, "
                  "bearer_file, cacert, health_crit, health_warn, insecure, mint, proxy, "
                  "secrets, url, user)"),
    ({"url": 5}, "nodes -> n -> url: must be a string"),
    ({"insecure": 1}, "nodes -> n -> insecure: must be true or false"),
    ({"insecure": "yes"}, "nodes -> n -> insecure: must be true or false"),
    ({"user": 1}, "nodes -> n -> user: must be a string"),
    ({"health_warn": []}, "nodes -> n -> health_warn: must be a string"),
    ({"proxy": "ftp://p"}, "nodes -> n -> proxy: --proxy: proxy scheme 'ftp' is not supported "
                           "(http:// or https://)"),
    ({"proxy": 5}, "nodes -> n -> proxy: must be a string"),
    ({"secrets": "vault"}, "nodes -> n -> secrets: must be one of file, keyring, none"),
    ({"secrets": 1}, "nodes -> n -> secrets: must be a string"),
    ({"mint": "x"}, "nodes -> n -> mint: must be a table"),
])
def test_a_bad_node_profile_is_refused_at_its_place(table, text):
    if text is None:
        assert _refused({"nodes": {"n": {}}}) == "nodes -> n -> url: is required"
        return
    assert _refused(_node(**table)) == text


@pytest.mark.parametrize("place", SECRET_PLACES)
def test_each_secret_place_is_read(place):
    assert Config.from_dict(_node(secrets=place)).nodes["n"].secrets == place
    assert Config.from_dict({"services": {"s": {"url": "https://s", "secrets": place}}}
                            ).services["s"].secrets == place


def _mint(**table: Any) -> str:
    return _refused(_node(mint={"key": "/k", "user_id": "u1", **table}))


@pytest.mark.parametrize(("table", "text"), [
    ({"role": "x"}, "nodes -> n -> mint -> role: unknown key (allowed: group_ids, key, "
                    "scope_role, ttl, user_id)"),
    ({"key": ""}, "nodes -> n -> mint -> key: must not be empty"),
    ({"user_id": ""}, "nodes -> n -> mint -> user_id: must not be empty"),
    ({"key": "", "user_id": ""}, "nodes -> n -> mint -> key: must not be empty"),
    ({"key": 5}, "nodes -> n -> mint -> key: must be a string"),
    ({"scope_role": "root"}, "nodes -> n -> mint -> scope_role: must be user or admin"),
    ({"scope_role": 1}, "nodes -> n -> mint -> scope_role: must be a string"),
    ({"ttl": 9}, "nodes -> n -> mint -> ttl: must be 10 to 2592000 seconds"),
    ({"ttl": 2592001}, "nodes -> n -> mint -> ttl: must be 10 to 2592000 seconds"),
    ({"ttl": "60"}, "nodes -> n -> mint -> ttl: must be an integer"),
    ({"group_ids": ["g", 1]}, "nodes -> n -> mint -> group_ids -> 1: must be a string"),
])
def test_bad_mint_settings_are_refused_at_their_place(table, text):
    assert _mint(**table) == text


def test_mint_settings_need_a_key_and_a_user():
    assert _refused(_node(mint={"user_id": "u"})) == "nodes -> n -> mint -> key: is required"
    assert _refused(_node(mint={"key": "/k"})) == "nodes -> n -> mint -> user_id: is required"


@pytest.mark.parametrize("ttl", [10, 2592000])
def test_a_token_lifetime_is_10_seconds_to_30_days(ttl):
    assert MINT_TTL_RANGE == (10, 30 * 86400)
    mint = Config.from_dict(_node(mint={"key": "/k", "user_id": "u", "ttl": ttl})).nodes["n"].mint
    assert mint == MintSettings("/k", "u", [], "user", ttl)


def test_a_token_lifetime_is_an_hour_unless_set():
    mint = Config.from_dict(_node(mint={"key": "/k", "user_id": "u"})).nodes["n"].mint
    assert mint == MintSettings("/k", "u", [], "user", 3600)


def test_a_minting_role_is_user_or_admin():
    for role in ("user", "admin"):
        cfg = Config.from_dict(_node(mint={"key": "/k", "user_id": "u", "scope_role": role}))
        assert cfg.nodes["n"].mint.scope_role == role


# -- service profiles ----------------------------------------------------------------


def test_a_service_profile_is_read_whole():
    cfg = Config.from_dict({"services": {"s": {
        "url": "https://s", "token_file": "/t", "cacert": "/ca", "insecure": True,
        "paths": {"operations": "/o", "workspaces": "/w/{id}/ops"}, "proxy": "http://p:1",
        "secrets": "none"}}})
    assert cfg.services["s"] == ServiceProfile(
        "s", "https://s", token_file="/t", cacert="/ca", insecure=True,
        paths={"operations": "/o", "workspaces": "/w/{id}/ops"}, proxy="http://p:1",
        secrets="none")
    assert Config.from_dict({"services": {"s": {"url": "https://s"}}}).services["s"] == \
        ServiceProfile("s", "https://s")


@pytest.mark.parametrize(("table", "text"), [
    ({"user": "u"}, "services -> s -> user: unknown key (allowed: cacert, insecure, paths, "
                    "proxy, secrets, token_file, url)"),
    ({"paths": "x"}, "services -> s -> paths: must be a table"),
    ({"paths": {"operations": 5}}, "services -> s -> paths -> operations: must be a string"),
    ({"paths": {"operations": "ops"}}, "services -> s -> paths -> operations: service path "
                                       "operations: 'ops' is not an absolute path without {id}"),
    ({"paths": {"jobs": "/j"}}, "services -> s -> paths -> jobs: unknown service path 'jobs' "
                                "(one of operations, workspaces, workspace-memberships, "
                                "group-memberships, create-workspace)"),
    ({"token_file": 5}, "services -> s -> token_file: must be a string"),
    ({"insecure": 0}, "services -> s -> insecure: must be true or false"),
    ({"proxy": "x y"}, "services -> s -> proxy: --proxy: a proxy URL has no spaces, control "
                       "characters or bytes that are not UTF-8"),
    ({"secrets": "disk"}, "services -> s -> secrets: must be one of file, keyring, none"),
])
def test_a_bad_service_profile_is_refused_at_its_place(table, text):
    assert _refused({"services": {"s": {"url": "https://s", **table}}}) == text


# -- defaults ------------------------------------------------------------------------


def test_defaults_are_read_and_must_name_known_profiles():
    data: dict[str, Any] = {**_node(), "services": {"s": {"url": "https://s"}},
                            "defaults": {"node": "n", "service": "s", "output": "yaml"}}
    cfg = Config.from_dict(data)
    assert (cfg.default_node, cfg.default_service, cfg.default_output) == ("n", "s", "yaml")
    data["defaults"] = {"node": "m"}
    assert _refused(data) == "defaults -> node: unknown node profile 'm'"
    data["defaults"] = {"service": "t"}
    assert _refused(data) == "defaults -> service: unknown service profile 't'"
    data["defaults"] = {"node": "", "service": ""}  # (empty: no default)
    assert Config.from_dict(data).default_node == ""
    data["defaults"] = {"node": 1}
    assert _refused(data) == "defaults -> node: must be a string"
    data["defaults"] = {"editor": "vi"}
    assert _refused(data) == "defaults -> editor: unknown key (allowed: node, output, service)"


@pytest.mark.parametrize("output", OUTPUT_DEFAULTS)
def test_each_default_output_is_read(output):
    assert Config.from_dict({"defaults": {"output": output}}).default_output == output


@pytest.mark.parametrize("output", ["raw", "JSON", "", "tsv"])
def test_another_default_output_is_refused(output):
    assert _refused({"defaults": {"output": output}}) == (
        "defaults -> output: must be one of table, wide, json, jsonl, csv, yaml")
