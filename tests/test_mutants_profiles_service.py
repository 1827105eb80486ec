"""nodecli.profiles (the shared rule and secret keeping) and nodecli.profiles.service, in
process, for the survivors of their mutation run (issue 33, item 2): what an unknown
profile's error says, where a profile's secrets are kept, recorded, looked for and
forgotten, and what ``service add`` / ``service show`` make of a token and its file."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from nodecli.config.model import ServiceProfile
from nodecli.config.paths import resolve_paths
from nodecli.config.secrets import FileBackend, find_secret, keyring_service
from nodecli.config.store import ConfigStore
from nodecli.errors import ConflictError, NotFoundError, UsageError
from nodecli.http.client import Auth
from nodecli.profiles import (
    forget_secrets,
    keep_secrets,
    record_stored,
    set_default,
    unknown_profile,
)
from nodecli.profiles import service as svc
from tests.conftest import FROZEN_NOW
from tests.test_secrets import memory_keyring  # noqa: F401 - the fixture


@pytest.fixture
def saved(home):
    paths = resolve_paths(home)
    return ConfigStore(paths), paths


def envelope(scope: str = "user:all", left: timedelta = timedelta(hours=1)) -> str:
    """A token in the documented envelope, expiring ``left`` after the frozen now."""
    import json

    from nodecli.tokens.wire import encode_token

    expires = (FROZEN_NOW + left).strftime("%Y-%m-%dT%H:%M:%SZ")
    claims = {"user_id": "u1", "scope": scope, "expires_at": expires}
    return encode_token(json.dumps(claims).encode(), b"\x01" * 256)


# -- nodecli.profiles ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["node", "service"])
def test_an_unknown_profile_names_the_saved_ones_or_none_and_how_to_add(kind):
    err = unknown_profile(kind, "zz", {})
    assert (err.message, err.hint) == (f"no {kind} profile 'zz' (profiles: none saved)",
                                       f"add one with: nodecli {kind} add NAME --url URL ...")
    err = unknown_profile(kind, "zz", {"b": 1, "a": 2})
    assert err.message == f"no {kind} profile 'zz' (profiles: a, b)"


def test_set_default_refuses_an_unknown_service_and_clears_with_none(saved):
    store, paths = saved
    svc.add_profile(store, paths, "s1", "https://s.example", token="opaque-1")
    with pytest.raises(NotFoundError, match=r"no service profile 'zz' \(profiles: s1\)"):
        set_default(store, "service", "zz")
    set_default(store, "service", None)
    assert store.load().default_service is None


def test_record_stored_after_one_more_secret(saved):
    """A profile's record of where its secrets are: the new place when there was none,
    unknown (None: search everywhere) when it was another place, as it was when it is
    the same; a service profile too; a name not saved is left alone."""
    store, paths = saved
    file_backend = FileBackend(paths)

    class Keyring:
        name = "keyring"

    svc.add_profile(store, paths, "s", "https://s.example", token_file=str(token_file(
        paths)))
    assert store.load().services["s"].secrets == "none"
    record_stored(store, "service", "s", file_backend)
    assert store.load().services["s"].secrets == "file"
    record_stored(store, "service", "s", file_backend)
    assert store.load().services["s"].secrets == "file"
    record_stored(store, "service", "s", Keyring())
    assert store.load().services["s"].secrets is None
    record_stored(store, "service", "gone", file_backend)  # no error, nothing made
    assert set(store.load().services) == {"s"}


def token_file(paths, text: str = "opaque-from-file\n", mode: int = 0o600) -> Path:
    path = Path(paths.config_dir).parent / "token.txt"
    path.write_text(text)
    os.chmod(path, mode)
    return path


@pytest.mark.parametrize("kind", ["node", "service"])
def test_forgetting_a_profile_forgets_its_secret_and_its_proxy_password(saved, kind):
    store, paths = saved
    keep_secrets(store, paths, kind, "p", "the-secret", "the-proxy-pw")
    keep_secrets(store, paths, kind, "other", "other-secret", "other-proxy-pw")
    assert find_secret(paths, f"{kind}:p:proxy", "file")[0] == "the-proxy-pw"
    forget_secrets(paths, kind, "p", "file")
    assert find_secret(paths, f"{kind}:p", "file") == (None, None)
    assert find_secret(paths, f"{kind}:p:proxy", "file") == (None, None)
    assert find_secret(paths, f"{kind}:other:proxy", "file")[0] == "other-proxy-pw"


def test_forgetting_a_profile_recorded_in_the_file_leaves_the_keyring_alone(
        saved, memory_keyring):  # noqa: F811
    """The record says where the secrets are: the keyring is not asked for a profile
    whose secrets went to the file (an entry of the same name there is not ours)."""
    _, paths = saved
    service = keyring_service(paths)
    memory_keyring.items[(service, "node:p")] = "another program's"
    memory_keyring.items[(service, "node:p:proxy")] = "another program's too"
    forget_secrets(paths, "node", "p", "file")
    assert len(memory_keyring.items) == 2
    forget_secrets(paths, "node", "p", None)  # not recorded: every place
    assert memory_keyring.items == {}


# -- nodecli.profiles.service: add ------------------------------------------------------


def test_a_bad_service_profile_name_is_named_as_one(saved):
    store, paths = saved
    with pytest.raises(UsageError) as info:
        svc.add_profile(store, paths, "-bad", "https://s.example", token="t")
    assert info.value.message.startswith("invalid service profile name '-bad': ")
    with pytest.raises(UsageError) as info:
        svc.check_new_profile(store.load(), "")
    assert info.value.message == "service profile name must be a non-empty string"


def test_adding_a_service_profile_keeps_defaults_and_refuses_a_second_of_a_name(saved):
    store, paths = saved
    first = svc.add_profile(store, paths, "s1", "https://s1.example", token="opaque-1")
    second = svc.add_profile(store, paths, "s2", "https://s2.example", token="opaque-2")
    cfg = store.load()
    assert cfg.default_service == "s1"  # the first one only
    assert first.profile.name == "s1" and cfg.services["s2"].name == "s2"
    assert not cfg.services["s2"].insecure and not second.profile.insecure
    assert (first.stored, first.backend) == (True, "file")
    with pytest.raises(ConflictError, match="service profile 's1' already exists"):
        svc.check_new_profile(cfg, "s1")
    assert svc.check_new_profile(cfg, "s1", force=True) == "s1"
    with pytest.raises(ConflictError, match="service profile 's1' already exists"):
        svc.add_profile(store, paths, "s1", "https://other.example", token="opaque-3")
    replaced = svc.add_profile(store, paths, "s1", "https://other.example", token="opaque-3",
                               force=True)
    assert replaced.profile.url == store.load().services["s1"].url == "https://other.example"


def test_an_empty_token_is_refused(saved):
    store, paths = saved
    with pytest.raises(UsageError, match=r"^the access token is empty$"):
        svc.add_profile(store, paths, "s", "https://s.example", token="")


def test_a_token_file_is_saved_by_its_full_path_and_its_token_judged(saved, frozen_clock,
                                                                    monkeypatch):
    store, paths = saved
    path = token_file(paths, envelope("other:scope") + "\n")
    monkeypatch.chdir(path.parent)
    cacert = path.parent / "ca.pem"
    cacert.write_text("x")
    done = svc.add_profile(store, paths, "s", "https://s.example", token_file="token.txt",
                           cacert="ca.pem")
    assert done.profile.token_file == store.load().services["s"].token_file == str(path)
    assert done.profile.cacert == store.load().services["s"].cacert == str(cacert)
    assert (done.stored, done.backend) == (False, None)
    assert done.token_info.scopes == ["other:scope"]
    assert done.warnings == ["the token has neither user:all nor admin:all: operations "
                             "calls will be refused"]


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604])
def test_a_token_file_others_may_read_is_warned_about(saved, mode):
    store, paths = saved
    path = token_file(paths, mode=mode)
    done = svc.add_profile(store, paths, "s", "https://s.example", token_file=str(path))
    assert done.warnings == ([] if mode == 0o600 else
                             [f"{path} is readable by other users: chmod 600 {path}"])


@pytest.mark.parametrize(("left", "expired"), [(timedelta(0), True),
                                               (timedelta(seconds=1), False),
                                               (timedelta(seconds=-1), True)])
def test_a_token_expiring_now_is_warned_about_one_second_later_is_not(saved, frozen_clock,
                                                                      left, expired):
    store, paths = saved
    done = svc.add_profile(store, paths, "s", "https://s.example",
                           token=envelope("admin:all", left))
    assert done.warnings == (["the token has already expired: calls will be refused until "
                              "it is replaced"] if expired else [])


@pytest.mark.parametrize("scope", ["user:all", "admin:all", "x admin:all"])
def test_an_operations_scope_is_no_warning(saved, frozen_clock, scope):
    store, paths = saved
    done = svc.add_profile(store, paths, "s", "https://s.example", token=envelope(scope))
    assert done.warnings == []


# -- nodecli.profiles.service: show and list -------------------------------------------


def test_show_names_the_profile_asked_for_its_default_flag_and_stored_token(saved,
                                                                           frozen_clock):
    store, paths = saved
    svc.add_profile(store, paths, "a", "https://a.example", token=envelope())
    svc.add_profile(store, paths, "b", "https://b.example", token="opaque-b")
    cfg = store.load()
    shown = svc.show_profile(cfg, paths, "b")
    assert (shown["name"], shown["default"], shown["token"]) == ("b", False, "stored")
    assert shown["url"] == "https://b.example"
    assert shown["token_info"]["opaque"] is True and "token_problem" not in shown
    shown = svc.show_profile(cfg, paths, None)
    assert (shown["name"], shown["default"], shown["token"]) == ("a", True, "stored")
    assert shown["token_info"]["scopes"] == ["user:all"]
    assert shown["token_info"]["seconds_left"] == 3600


def test_a_profile_without_a_stored_token_shows_none(saved, memory_keyring):  # noqa: F811
    """A token recorded in the file is looked for there only (an entry of the same name
    in the keyring is not read)."""
    store, paths = saved
    svc.add_profile(store, paths, "s", "https://s.example", token="opaque")
    forget_secrets(paths, "service", "s", "file")
    memory_keyring.items[(keyring_service(paths), "service:s")] = "not-ours"
    cfg = store.load()
    cfg.services["s"].secrets = "file"
    assert svc.profile_token(cfg.services["s"], paths) == ("none", None)
    assert svc.list_profiles(cfg, paths)[0]["token"] == "none"
    assert "token_info" not in svc.show_profile(cfg, paths, "s")


def test_a_profile_reads_its_token_from_where_it_recorded_it(saved, memory_keyring):  # noqa: F811
    _, paths = saved
    memory_keyring.items[(keyring_service(paths), "service:k")] = "in-keyring"
    prof = ServiceProfile("k", "https://k.example", secrets="keyring")
    assert svc.profile_token(prof, paths) == ("stored", "in-keyring")


# -- nodecli.profiles.service: resolve -------------------------------------------------


def test_resolving_an_unknown_or_no_service_says_what_to_give():
    from nodecli.config.model import Config

    with pytest.raises(NotFoundError) as info:
        svc.resolve_service(Config(), svc.ServiceFlags(service="zz"), {})
    assert info.value.message == "no service profile 'zz' (profiles: none saved)"
    with pytest.raises(UsageError) as info:
        svc.resolve_service(Config(), svc.ServiceFlags(), {})
    assert info.value.message == (
        "no collaboration service given: use --service NAME or --url URL "
        "(NODECLI_SERVICE / NODECLI_SERVICE_URL), or set a default with "
        "'nodecli service default NAME'")


def test_a_resolved_service_takes_tls_label_and_proxy_from_flag_env_profile():
    from nodecli.config.model import Config

    cfg = Config(default_service="s")
    cfg.services["s"] = ServiceProfile("s", "https://s.example", insecure=True,
                                       proxy="http://prof-proxy:3128")
    t = svc.resolve_service(cfg, svc.ServiceFlags(), {"NODECLI_SERVICE_CACERT": "/env.pem"})
    ep = t.endpoint
    assert (ep.insecure, ep.label, ep.cacert, ep.peer, ep.cacert_env) == (
        True, "s", "/env.pem", "service", "NODECLI_SERVICE_CACERT")
    assert ep.auth == Auth("oauth") and t.token is None and t.profile is cfg.services["s"]
    assert ep.proxy.shown() == "http://prof-proxy:3128"
    t = svc.resolve_service(cfg, svc.ServiceFlags(url="https://u.example",
                                                  proxy="http://flag-proxy:8080"),
                            {"HTTPS_PROXY": "http://env-proxy:1"})
    ep = t.endpoint
    assert (ep.insecure, ep.label, ep.proxy.shown()) == (False, "https://u.example",
                                                         "http://flag-proxy:8080")
    t = svc.resolve_service(cfg, svc.ServiceFlags(url="https://u.example", insecure=True),
                            {"HTTPS_PROXY": "http://env-proxy:1"})
    assert (t.endpoint.insecure, t.endpoint.proxy.shown()) == (True, "http://env-proxy:1")


def test_a_token_given_later_keeps_the_profile_and_names_its_source():
    from nodecli.config.model import Config

    cfg = Config(default_service="s")
    cfg.services["s"] = ServiceProfile("s", "https://s.example")
    t = svc.resolve_service(cfg, svc.ServiceFlags(), {}).with_token(" Bearer tok-1 ")
    assert (t.token, t.token_source, t.profile) == ("tok-1", "prompt", cfg.services["s"])
    assert t.endpoint.auth == Auth("oauth", token="tok-1", note="token from prompt")


def test_each_source_of_a_services_token_is_named(saved, tmp_path):
    from nodecli.config.model import Config

    _, paths = saved
    path = token_file(paths, "from-profile-file\n")
    cfg = Config(default_service="f")
    cfg.services["f"] = ServiceProfile("f", "https://f.example", token_file=str(path))
    cfg.services["k"] = ServiceProfile("k", "https://k.example")
    flag_file = tmp_path / "flag-token"
    flag_file.write_text("from-flag-file\n")
    lookup = {"service:k": "from-store"}.get
    cases = [
        (svc.ServiceFlags(token="from-stdin", token_file=str(flag_file)),
         {"NODECLI_TOKEN": "e"}, "from-stdin", "--token-stdin"),
        (svc.ServiceFlags(token_file=str(flag_file)), {"NODECLI_TOKEN": "e"},
         "from-flag-file", f"--token-file {flag_file}"),
        (svc.ServiceFlags(), {"NODECLI_TOKEN": "from-env"}, "from-env", "NODECLI_TOKEN"),
        (svc.ServiceFlags(), {}, "from-profile-file",
         f"token file {path} of profile 'f'"),
        (svc.ServiceFlags(service="k"), {}, "from-store", "stored token of profile 'k'"),
    ]
    for flags, env, token, source in cases:
        t = svc.resolve_service(cfg, flags, env, lookup)
        assert (t.token, t.token_source) == (token, source)
        assert t.endpoint.auth == Auth("oauth", token=token, note=f"token from {source}")
    t = svc.resolve_service(cfg, svc.ServiceFlags(service="k"), {}, None)
    assert (t.token, t.token_source, t.endpoint.auth) == (None, "", Auth("oauth"))


def test_the_environment_names_the_service_or_its_url_and_the_paths_are_overridden():
    from nodecli.config.model import Config
    from nodecli.config.service_paths import DEFAULT_PATHS

    cfg = Config(default_service="a")
    cfg.services["a"] = ServiceProfile("a", "https://a.example")
    cfg.services["b"] = ServiceProfile("b", "https://b.example",
                                       paths={"operations": "/b-ops",
                                              "workspaces": "/b-ws/{id}/ops"})
    t = svc.resolve_service(cfg, svc.ServiceFlags(), {"NODECLI_SERVICE": "b"})
    assert (t.profile.name, t.endpoint.base_url) == ("b", "https://b.example")
    t = svc.resolve_service(cfg, svc.ServiceFlags(), {"NODECLI_SERVICE_URL": "https://u.x"})
    assert (t.profile, t.endpoint.base_url, t.endpoint.label) == (None, "https://u.x",
                                                                  "https://u.x")
    assert t.paths == DEFAULT_PATHS
    t = svc.resolve_service(cfg, svc.ServiceFlags(service="b",
                                                  paths={"operations": "/flag-ops"}), {})
    assert (t.paths.operations, t.paths.workspaces) == ("/flag-ops", "/b-ws/{id}/ops")
    assert t.with_token("tok").paths is t.paths


def test_a_service_profiles_proxy_password_comes_from_its_own_secret():
    from nodecli.config.model import Config

    cfg = Config(default_service="s")
    cfg.services["s"] = ServiceProfile("s", "https://s.example", proxy="http://bob@pr:3128")
    asked: list[str] = []

    def lookup(key: str) -> str | None:
        asked.append(key)
        return {"service:s:proxy": "proxy-pw"}.get(key)

    t = svc.resolve_service(cfg, svc.ServiceFlags(token="t"), {}, lookup)
    assert t.endpoint.proxy.password == "proxy-pw" and asked == ["service:s:proxy"]


def test_a_service_url_is_checked_whole():
    assert svc.check_url("http://s.example:8080/base") == "http://s.example:8080/base"
    refusals = {
        "ftp://s.example": "service URL must start with https:// (or http://): "
                           "'ftp://s.example'",
        "https://u:p@s.example": "the service URL must not carry credentials "
                                 "(user:password@); the access token goes in "
                                 "--token-file, --token-stdin or NODECLI_TOKEN",
        "https://s.example/a b": "invalid service URL 'https://s.example/a b'",
        "https:///path": "invalid service URL 'https:///path'",
        "https://s.example:99999": "invalid service URL 'https://s.example:99999': ",
    }
    for url, message in refusals.items():
        with pytest.raises(UsageError) as info:
            svc.check_url(url)
        assert info.value.message.startswith(message), info.value.message
        if not message.endswith(": "):
            assert info.value.message == message


def test_a_service_profile_saves_its_tls_proxy_and_proxy_password(saved):
    store, paths = saved
    done = svc.add_profile(store, paths, "s", "https://s.example", token="t",
                           insecure=True, proxy="http://bob@pr:3128",
                           proxy_password="pp")
    kept = store.load().services["s"]
    assert (kept.insecure, kept.proxy) == (True, "http://bob@pr:3128") == (
        done.profile.insecure, done.profile.proxy)
    assert find_secret(paths, "service:s:proxy", "file")[0] == "pp"
    svc.add_profile(store, paths, "s", "https://s.example", token="t", force=True)
    kept = store.load().services["s"]
    assert (kept.insecure, kept.proxy) == (False, None)
    assert find_secret(paths, "service:s:proxy", "file") == (None, None)  # forgotten


def test_a_proxy_password_from_the_environment_wins_over_the_stored_one():
    from nodecli.profiles import resolve_proxy

    prof = ServiceProfile("s", "https://s.example", proxy="http://bob@pr:3128")
    asked: list[str] = []

    def lookup(key: str) -> str | None:
        asked.append(key)
        return "stored-pp"

    env = {"NODECLI_PROXY_PASSWORD": "env-pp"}
    got = resolve_proxy("https://s.example", None, prof, "service", env, lookup)
    assert (got.password, asked) == ("env-pp", [])
    got = resolve_proxy("https://s.example", None, prof, "service", {}, lookup)
    assert (got.password, asked) == ("stored-pp", ["service:s:proxy"])
    got = resolve_proxy("https://s.example", None, prof, "service", {}, None)
    assert got.password is None and got.needs_password  # the caller asks
    got = resolve_proxy("https://s.example", None, None, "service",
                        {"HTTPS_PROXY": "http://bob@pr:1"}, lookup)
    assert got.needs_password and asked == ["service:s:proxy"]  # no profile: no lookup
