"""The storage objects of access keys, in process: what each function gives, word for word.

``nodecli.node.storage_keys`` builds the body ``access-key create`` sends, the URL a
transfer user's restrictions are matched against, the ``storage`` line of ``access-key
show`` and ``list``, and the refusals a user reads. Each is held here exactly, at its
edges (4096 characters, 1024, the 1000 restrictions kept, control characters on either
side of the range), so a changed word or a bound moved by one fails (the mutants of
mutmut's run of this module; docs/development.md).
"""

from __future__ import annotations

import pytest

from nodecli.errors import ExitCode, NodecliError, UsageError
from nodecli.node import storage_keys as sk

KNOWN = "local, aws_s3, ibm-s3, azure, azure_sas, swift"


def _refusal(fn, *args, **kwargs) -> NodecliError:
    with pytest.raises(NodecliError) as info:
        fn(*args, **kwargs)
    return info.value


# -- the storage URL of each type ------------------------------------------------------


@pytest.mark.parametrize("storage, url", [
    ({"type": "local", "path": "/data/in"}, "file:////data/in/"),
    ({"type": "local", "path": "/data/in/"}, "file:////data/in/"),
    ({"type": "local", "path": "//a//b"}, "file:////a/b/"),
    ({"type": "local"}, "file:////"),
    ({"type": "local", "path": "/"}, "file:////"),
    ({"type": "aws_s3", "bucket": "b1", "path": "/p"}, "s3://s3.amazonaws.com/b1/p/"),
    ({"type": "aws_s3", "bucket": "b1", "endpoint": "", "path": "/p"},
     "s3://s3.amazonaws.com/b1/p/"),
    ({"type": "aws_s3", "bucket": "b1", "endpoint": "minio.lan:9000", "path": "/"},
     "s3://minio.lan:9000/b1/"),
    ({"type": "ibm-s3", "bucket": "b2", "endpoint": "cos.eu", "path": "/x/y"},
     "s3://cos.eu/b2/x/y/"),
    ({"type": "azure", "container": "c1", "path": "/in",
      "credentials": {"account": "acct1", "key": "K"}}, "azu://acct1/c1/in/"),
    ({"type": "azure", "container": "c1", "path": "/in", "credentials": ["acct1"]},
     "azu://None/c1/in/"),
    ({"type": "azure", "container": "c1", "path": "/in"}, "azu://None/c1/in/"),
    ({"type": "azure_sas", "path": "/in", "credentials": {
        "shared_access_signature": "https://Acct2.blob.core.windows.net/c?sv=1&sig=x"}},
     "azu://acct2.blob.core.windows.net/in/"),
    ({"type": "azure_sas", "path": "/in", "credentials": {}}, "azu://?/in/"),
    ({"type": "azure_sas", "path": "/in",
      "credentials": {"shared_access_signature": "https://[::1/c"}}, "azu://?/in/"),
    ({"type": "azure_sas", "path": "/in",
      "credentials": {"shared_access_signature": "not a url"}}, "azu://?/in/"),
    ({"type": "softlayer_swift", "container": "c3", "path": "/in"}, "swift://c3/in/"),
    ({"type": "swift", "container": "c3", "path": "/in"}, "swift://c3/in/"),
])
def test_the_storage_url_of_each_type(storage, url):
    assert sk.storage_url(storage) == url
    kind = sk.storage_type(storage["type"])
    assert kind.url(storage) == url


@pytest.mark.parametrize("storage", [None, "local", ["local"], {"type": "nfs", "path": "/p"},
                                     {"path": "/p"}, {"type": None}, {"type": "LOCAL"}])
def test_no_storage_url_for_what_nodecli_does_not_know(storage):
    assert sk.storage_url(storage) is None


@pytest.mark.parametrize("storage, line", [
    ({"type": "local", "path": "/data"}, "local file:////data/"),
    ({"type": "softlayer_swift", "container": "c", "path": "/"}, "softlayer_swift swift://c/"),
    ({"type": "nfs", "path": "/export/a"}, "nfs /export/a"),
    ({"type": "nfs"}, "nfs ?"),
    ({"type": "nfs", "path": ""}, "nfs ?"),
    ({"type": "", "path": "/p"}, "? /p"),
    ({}, "? ?"),
    (None, "?"),
    (["local"], "?"),
])
def test_the_storage_line_of_show_and_list(storage, line):
    assert sk.summary(storage) == line


# -- types, paths, fields --------------------------------------------------------------


@pytest.mark.parametrize("name, wire", [("swift", "softlayer_swift"),
                                        ("softlayer_swift", "softlayer_swift"),
                                        ("ibm-s3", "ibm-s3"), ("local", "local")])
def test_a_type_by_its_name_here_or_on_the_wire(name, wire):
    assert sk.storage_type(name).wire == wire


@pytest.mark.parametrize("name, shown", [
    ("nfs", "'nfs'"), ("a" * 41, repr("a" * 40)), ("b" * 40, repr("b" * 40)),
    (None, "'None'"), ("", "''"), ("SWIFT", "'SWIFT'"),
])
def test_an_unknown_type_is_refused_with_the_known_ones(name, shown):
    e = _refusal(sk.storage_type, name)
    assert isinstance(e, UsageError) and e.exit_code == ExitCode.USAGE
    assert e.message == f"unknown storage type {shown} (known: {KNOWN})"


def test_check_path_at_its_edges():
    assert sk.check_path("/") == "/"
    longest = "/" + "a" * 4095
    assert sk.check_path(longest) == longest
    assert sk.check_path("/a/ b/\x80/\u00e9") == "/a/ b/\x80/\u00e9"
    assert sk.check_path("/a/.../..b/.c") == "/a/.../..b/.c"
    too_long = _refusal(sk.check_path, longest + "a")
    assert too_long.message == "--path: at most 4096 characters, no control characters"
    for bad in ("/a\x1fb", "/a\x7fb", "/a\x00", "/\n"):
        e = _refusal(sk.check_path, bad, "--parent-path")
        assert isinstance(e, UsageError)
        assert e.message == "--parent-path: at most 4096 characters, no control characters"


@pytest.mark.parametrize("path, message", [
    ("data", "--path must be absolute (start with /), not 'data'"),
    ("", "--path must be absolute (start with /), not ''"),
    (None, "--path must be absolute (start with /), not 'None'"),
    ("x" * 81, "--path must be absolute (start with /), not " + repr("x" * 80)),
    ("/a/../b", "--path must not hold . or .. ('/a/../b')"),
    ("/a/.", "--path must not hold . or .. ('/a/.')"),
    ("/./a", "--path must not hold . or .. ('/./a')"),
    ("/" + "y" * 80 + "/..", "--path must not hold . or .. (" + repr("/" + "y" * 79) + ")"),
])
def test_check_path_refusals_word_for_word(path, message):
    e = _refusal(sk.check_path, path)
    assert isinstance(e, UsageError)
    assert e.message == message


def test_check_path_names_the_option_it_checks():
    assert _refusal(sk.check_path, "rel", "--root").message == \
        "--root must be absolute (start with /), not 'rel'"
    assert _refusal(sk.check_path, "/..", "--root").message == \
        "--root must not hold . or .. ('/..')"


# -- the storage object of a new key ----------------------------------------------------


@pytest.mark.parametrize("kind, path, fields, secret, want", [
    ("local", "/data", {}, None, {"type": "local", "path": "/data"}),
    ("local", "/data", {"bucket": None}, "", {"type": "local", "path": "/data"}),
    ("aws_s3", "/in", {"bucket": "b", "access_key_id": "A"}, "S",
     {"type": "aws_s3", "path": "/in", "bucket": "b", "endpoint": "s3.amazonaws.com",
      "credentials": {"type": "key", "access_key_id": "A", "secret_access_key": "S"}}),
    ("aws_s3", None, {"bucket": "b", "access_key_id": "A", "endpoint": "minio:9000"}, "S",
     {"type": "aws_s3", "path": "/", "bucket": "b", "endpoint": "minio:9000",
      "credentials": {"type": "key", "access_key_id": "A", "secret_access_key": "S"}}),
    ("ibm-s3", "/in", {"bucket": "b", "endpoint": "cos", "access_key_id": "H"}, "S",
     {"type": "ibm-s3", "path": "/in", "bucket": "b", "endpoint": "cos",
      "credentials": {"type": "key", "access_key_id": "H", "secret_access_key": "S"}}),
    ("azure", "/in", {"container": "c", "account": "a"}, "K",
     {"type": "azure", "path": "/in", "container": "c",
      "credentials": {"type": "key", "account": "a", "key": "K",
                      "storage_endpoint": "blob.core.windows.net"}}),
    ("azure", "/in", {"container": "c", "account": "a", "storage_endpoint": "blob.gov"}, "K",
     {"type": "azure", "path": "/in", "container": "c",
      "credentials": {"type": "key", "account": "a", "key": "K",
                      "storage_endpoint": "blob.gov"}}),
    ("azure_sas", "/in", {}, "https://a.blob/c?sig=1",
     {"type": "azure_sas", "path": "/in",
      "credentials": {"shared_access_signature": "https://a.blob/c?sig=1"}}),
    ("swift", "/in", {"container": "c", "username": "t:u"}, "P",
     {"type": "softlayer_swift", "path": "/in", "container": "c",
      "credentials": {"username": "t:u", "api_key": "P"}}),
    ("softlayer_swift", "/in", {"container": "c", "username": "t:u"}, "P",
     {"type": "softlayer_swift", "path": "/in", "container": "c",
      "credentials": {"username": "t:u", "api_key": "P"}}),
])
def test_the_storage_object_of_each_type(kind, path, fields, secret, want):
    assert sk.build_storage(kind, path, fields, secret) == want


def test_a_field_at_its_edges():
    longest = "b" * 1024
    got = sk.build_storage("aws_s3", "/", {"bucket": longest, "access_key_id": "~\x7f\x80"}, "S")
    assert got["bucket"] == longest and got["credentials"]["access_key_id"] == "~\x7f\x80"
    message = "give 1 to 1024 characters without control characters"
    for name, value, option in (("bucket", longest + "b", "--bucket"),
                                ("bucket", "", "--bucket"),
                                ("access_key_id", "a\x1f", "--access-key-id"),
                                ("access_key_id", "\x00", "--access-key-id")):
        fields = {"bucket": "b", "access_key_id": "A", name: value}
        e = _refusal(sk.build_storage, "aws_s3", "/", fields, "S")
        assert isinstance(e, UsageError)
        assert e.message == f"{option}: {message}"
    e = _refusal(sk.build_storage, "azure", "/", {"container": "c", "account": "a",
                                                  "storage_endpoint": ""}, "K")
    assert e.message == f"storage_endpoint: {message}"


@pytest.mark.parametrize("kind, path, fields, secret, message", [
    ("local", "/d", {"container": "c", "bucket": "b"}, None,
     "--bucket, --container: not a field of local storage"),
    ("swift", "/d", {"container": "c", "username": "u", "account": "a"}, "P",
     "--account: not a field of swift storage"),
    ("aws_s3", "/d", {"bucket": "b", "access_key_id": "A", "region": "eu"}, "S",
     "region: not a field of aws_s3 storage"),
    ("azure_sas", "/d", {"storage_endpoint": "x"}, "S",
     "storage_endpoint: not a field of azure_sas storage"),
    ("local", None, {}, None, "local storage needs --path /FOLDER"),
    ("local", "/d", {}, "S", "local storage has no secret: leave --storage-secret out"),
    ("aws_s3", "/d", {}, "S", "aws_s3 storage needs --bucket, --access-key-id"),
    ("ibm-s3", "/d", {"bucket": "b"}, "S", "ibm-s3 storage needs --endpoint, --access-key-id"),
    ("softlayer_swift", "/d", {"container": "c"}, "P", "swift storage needs --username"),
    ("azure", "/d", {"container": "c", "account": "a"}, None,
     "azure storage needs its key from --storage-secret env:NAME, file:PATH or stdin"),
    ("aws_s3", "/d", {"bucket": "b", "access_key_id": "A"}, "",
     "aws_s3 storage needs its secret_access_key from --storage-secret env:NAME, "
     "file:PATH or stdin"),
    ("azure_sas", "d", {}, "S", "--path must be absolute (start with /), not 'd'"),
    ("nfs", "/d", {}, None, f"unknown storage type 'nfs' (known: {KNOWN})"),
])
def test_build_storage_refusals_word_for_word(kind, path, fields, secret, message):
    e = _refusal(sk.build_storage, kind, path, fields, secret)
    assert isinstance(e, UsageError)
    assert e.message == message


def test_a_refusal_comes_before_the_next_check():
    # a stray field is named before a missing one, a bad value before a missing path
    e = _refusal(sk.build_storage, "aws_s3", "/d", {"container": "c"}, None)
    assert e.message == "--container: not a field of aws_s3 storage"
    e = _refusal(sk.build_storage, "local", None, {}, None)
    assert e.message == "local storage needs --path /FOLDER"
    e = _refusal(sk.build_storage, "aws_s3", "/d", {"bucket": ""}, None)
    assert e.message == "--bucket: give 1 to 1024 characters without control characters"


# -- credential names -------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "secret_access_key", "api_key", "accessKeyId", "sas_url", "shared_access_signature",
    "Password", "passphrase", "x_token", "credentials", "privateKey", "APIKEY", "key",
    "KEY", "keys", "sas", "pwd", "pass", "my-pass", "a1Key", "userKeys", "x.pwd",
    "9Key", "sas.2",
])
def test_credential_names(name):
    assert sk.credential_name(name) is True


@pytest.mark.parametrize("name", [
    "token_verification_key", "monkey", "keystone", "bypass", "passage", "sas2", "key2",
    "account", "username", "path", "type", "", None, 1, ("key",), "Keyring", "aKeyring",
])
def test_names_that_hold_no_credential(name):
    assert sk.credential_name(name) is False


# -- the transfer user's restrictions ----------------------------------------------------


def test_a_storage_outside_the_restrictions_is_refused_with_the_fix_word_for_word():
    storage = {"type": "local", "path": "/etc"}
    e = _refusal(sk.check_restrictions, storage, ["file:////data/*", "s3://*"],
                 "transfer user 'xu'")
    assert type(e) is NodecliError and e.exit_code == ExitCode.ERROR
    assert e.message == (
        "the storage file:////etc/ is outside the restrictions of transfer user 'xu' "
        "(file:////data/*, s3://*): the node would accept the key and every transfer "
        "with it would fail")
    assert e.hint == (
        "add the restriction file:////etc/* (nodecli xuser set NAME --add-restriction "
        "'file:////etc/*'), choose a path inside them, or give --no-check if the node's "
        "restrictions are not these")


def test_no_restriction_at_all_refuses_and_says_none():
    storage = {"type": "swift", "container": "c", "path": "/in"}
    e = _refusal(sk.check_restrictions, storage, [], "--restriction")
    assert e.message == (
        "the storage swift://c/in/ is outside the restrictions of --restriction (none): "
        "the node would accept the key and every transfer with it would fail")
    assert e.hint.startswith("add the restriction swift://* (nodecli xuser set NAME "
                             "--add-restriction 'swift://*'), ")


@pytest.mark.parametrize("storage, restrictions", [
    ({"type": "local", "path": "/data/in"}, ["file:////data/*"]),
    ({"type": "aws_s3", "bucket": "b", "path": "/"}, ["file:////data/*", "s3://*"]),
    ({"type": "nfs", "path": "/etc"}, []),
    ({"type": "nfs", "path": "/etc"}, ["file:////data/*"]),
])
def test_a_storage_the_restrictions_allow_or_nodecli_does_not_know_passes(storage,
                                                                          restrictions):
    assert sk.check_restrictions(storage, restrictions, "x") is None


def test_a_rejecting_restriction_wins():
    storage = {"type": "local", "path": "/data/secret"}
    e = _refusal(sk.check_restrictions, storage, ["file:////data/*", "!file:////data/secret*"],
                 "h")
    assert "(file:////data/*, !file:////data/secret*)" in e.message


@pytest.mark.parametrize("info, found", [
    (None, []), ([], []), ("file:////*", []), ({}, []),
    ({"restrictions": None}, []), ({"restrictions": "file:////*"}, []),
    ({"restrictions": {"a": 1}}, []),
    ({"restrictions": ["file:////a/*", "", 3, None, ["x"], "s3://*"]},
     ["file:////a/*", "s3://*"]),
    ({"Restrictions": ["s3://*"]}, []),
])
def test_the_restrictions_a_node_reports(info, found):
    assert sk.info_restrictions(info) == found


def test_at_most_1000_restrictions_are_kept_from_a_node():
    many = [f"s3://b{i}/*" for i in range(1001)]
    assert sk.info_restrictions({"restrictions": many}) == many[:1000]
    assert sk.info_restrictions({"restrictions": many[:1000]}) == many[:1000]
    assert sk.info_restrictions({"restrictions": ["", *many[:1000]]}) == many[:1000]


def test_a_folder_named_with_the_letters_of_a_mutated_strip_keeps_its_slash():
    assert sk.storage_url({"type": "local", "path": "/XX"}) == "file:////XX/"
    assert sk.storage_url({"type": "swift", "container": "c", "path": "X/"}) == "swift://c/X/"


def test_a_field_may_hold_a_space_but_no_control_character():
    got = sk.build_storage("swift", "/", {"container": "my c", "username": " u "}, "P")
    assert (got["container"], got["credentials"]["username"]) == ("my c", " u ")
    e = _refusal(sk.build_storage, "swift", "/", {"container": "my\x1fc", "username": "u"},
                 "P")
    assert e.message == "--container: give 1 to 1024 characters without control characters"


# -- secrets from a reference, and sub-keys ---------------------------------------------


def _secret(ref: str) -> str:
    return sk.read_secret_ref(ref, "--storage-secret", {}, lambda what: "")


def test_a_secret_file_that_is_not_utf8_is_read_with_replacements(tmp_path):
    f = tmp_path / "s"
    f.write_bytes(b"\xff\xfeab\xc3\xa9c\n")
    assert _secret(f"file:{f}") == "\ufffd\ufffdab\u00e9c"


def test_a_secret_file_over_64_kib_is_refused_naming_the_option(tmp_path):
    f = tmp_path / "s"
    f.write_bytes(b"k" * (64 * 1024))
    assert _secret(f"file:{f}") == "k" * (64 * 1024)
    f.write_bytes(b"k" * (64 * 1024 + 1))
    e = _refusal(_secret, f"file:{f}")
    assert isinstance(e, UsageError)
    assert e.message == f"--storage-secret file {f} is larger than 65536 bytes"
    e = _refusal(_secret, f"file:{tmp_path / 'none'}")
    assert e.exit_code == ExitCode.NOT_FOUND
    assert e.message == f"--storage-secret file {tmp_path / 'none'}: no such file"


def test_an_empty_secret_file_is_named_by_its_first_80_characters(tmp_path):
    folder = tmp_path / ("d" * 100)
    folder.mkdir()
    f = folder / "empty"
    f.write_bytes(b" \n")
    ref = f"file:{f}"
    e = _refusal(_secret, ref)
    assert isinstance(e, UsageError)
    assert e.message == f"--storage-secret: {ref[:80]}: the file is empty"


def test_a_parent_shown_without_storage_is_named_in_the_refusal():
    e = _refusal(sk.sub_storage, {"id": "ak-p1"}, "sub")
    assert type(e) is NodecliError
    assert e.message == ("access key 'ak-p1': the node did not show its storage, so a "
                         "sub-key cannot be placed under it")


def test_a_sub_key_without_a_path_is_refused_word_for_word():
    e = _refusal(sk.sub_storage, {"id": "p", "storage": {"type": "local", "path": "/d"}}, "")
    assert isinstance(e, UsageError)
    assert e.message == "--path: give the sub-key's folder"


def test_a_relative_sub_key_under_a_parent_path_ending_in_a_space():
    parent = {"id": "p", "storage": {"type": "local", "path": "/data "}}
    assert sk.sub_storage(parent, "in") == {"type": "local", "path": "/data /in"}
    parent = {"id": "p", "storage": {"type": "local", "path": "/data/"}}
    assert sk.sub_storage(parent, "in") == {"type": "local", "path": "/data/in"}
