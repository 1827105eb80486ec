"""The parse cache (state/config.cache): the exact bytes of config.toml, then the parsed
data with the users column-wise. Used only while its bytes match the file and its content
validates; anything else (older format, damage, forgery, another file type) is ignored
silently and the file is parsed: the result is always what the file says."""

from __future__ import annotations

import ast
import json
import os
import stat
import tomllib
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodecli.config import Config, ConfigStore, NodeUser, TransferUser, resolve_paths
from nodecli.config.columns import UserFields, _hashes_pattern, checked_fields, users_of_fields
from nodecli.config.model import KNOWN_ACLS
from nodecli.config.store import CACHE_MAGIC, parse_config_bytes
from nodecli.config.writer import dump_config
from nodecli.errors import ConfigError
from nodecli.passwords import MAX_LOG_N, MAX_P, MAX_R, hash_password, is_valid_hash


def users_to_columns(users: dict[str, NodeUser]) -> list[str] | None:
    """The four columns the store caches for ``users`` (what a save writes)."""
    return UserFields(users).columns


def users_from_columns(columns: object, xusers: dict[str, TransferUser]
                       ) -> dict[str, NodeUser] | None:
    """The users a load takes from cached ``columns`` (None: the file is parsed)."""
    fields = checked_fields(columns, xusers)
    return None if fields is None else users_of_fields(fields)


HASH = ("$scrypt$ln=15,r=8,p=1$5Qvheb8IBxDGm/PNAybueA"
        "$tUU+cdQGfZf/fBrvRGTqNUt9W7OGi0klxagbk/FDZ/c")


@pytest.fixture
def store(home) -> ConfigStore:
    return ConfigStore(resolve_paths(home))


def _fill(store: ConfigStore, n: int = 3) -> Config:
    with store.edit() as cfg:
        cfg.transfer_users["aspera"] = TransferUser("aspera", ["file:////data/*"])
        cfg.transfer_users["web"] = TransferUser("web", [], "/srv/www")
        for i in range(n):
            cfg.users[f"u{i}"] = NodeUser(f"u{i}", "aspera" if i % 2 else "web",
                                          None if i % 3 == 0 else HASH,
                                          [KNOWN_ACLS[j] for j in range(i % 4)])
    return store.load()


def _split(blob: bytes) -> tuple[bytes, dict]:
    """(the source bytes, {"form": how they were made, "data": the JSON line, "users":
    the four column lines})."""
    assert blob.startswith(CACHE_MAGIC)
    head, _, rest = blob[len(CACHE_MAGIC):].partition(b"\n")
    size, crc = map(int, head.split())
    assert zlib.crc32(rest[size:]) == crc
    lines = rest[size:].decode().split("\n")
    assert len(lines) == 7 and lines[6] == ""
    return rest[:size], {"form": lines[0], "data": ast.literal_eval(lines[1]),
                         "users": lines[2:6]}


def _cache(source: bytes, doc: object) -> bytes:
    """A cache for ``source`` holding ``doc`` ({"data": ..., "users": [columns]} and maybe
    "form", else "parsed"; other values as one line after the form), well formed (its
    CRC right). Values are written as the store writes them (repr), columns that are not
    strings as JSON."""
    if isinstance(doc, dict) and {"data", "users"} <= doc.keys() <= {"form", "data", "users"}:
        users = doc["users"]
        columns = ([u if isinstance(u, str) else json.dumps(u) for u in users]
                   if isinstance(users, list) else [json.dumps(users)])
        lines = [doc.get("form", "parsed"), repr(doc["data"]), *columns]
    else:
        lines = ["parsed", repr(doc)]
    text = ("\n".join(lines) + "\n").encode()
    return CACHE_MAGIC + b"%d %d\n" % (len(source), zlib.crc32(text)) + source + text


def test_cache_holds_the_exact_bytes_and_the_users_column_wise(store):
    cfg = _fill(store)
    raw = Path(store.path).read_bytes()
    source, doc = _split(Path(store.cache_path).read_bytes())
    assert source == raw
    parsed = tomllib.loads(raw.decode())
    assert doc["data"] == {k: v for k, v in parsed.items() if k != "users"}
    assert doc["users"] == users_to_columns(cfg.users)
    assert doc["users"][0] == "u0 u1 u2 "
    assert doc["users"][2] == f"- {HASH} {HASH} "  # '-': no password
    assert doc["users"][3] == " admin admin,impersonation "
    assert doc["form"] == "written"  # the bytes are what the writer makes of the content
    assert stat.S_IMODE(Path(store.cache_path).stat().st_mode) == 0o600
    Path(store.cache_path).unlink()
    assert store.load() == cfg  # parsed from the file, and the cache written again
    # the same content; but a file read is not known to be the writer's form
    assert _split(Path(store.cache_path).read_bytes()) == (source, {**doc, "form": "parsed"})


def test_cache_is_used_only_while_its_bytes_match_the_file(store):
    _fill(store, 1)
    raw = Path(store.path).read_bytes()
    source, doc = _split(Path(store.cache_path).read_bytes())
    # the cache is what a load reads when its bytes are the file's (still validated)
    doc["users"] = ["u0 carol ", "web web ", "- - ", "  "]
    Path(store.cache_path).write_bytes(_cache(source, doc))
    assert set(store.load().users) == {"u0", "carol"}
    # the same content beside other bytes is ignored: the file is the truth
    for other in (raw + b"\n", raw[:-1], b"", raw.replace(b"u0", b"u9")):
        Path(store.cache_path).write_bytes(_cache(other, doc))
        assert set(store.load().users) == {"u0"}
    # a size that does not match the bytes that follow
    good = _cache(source, doc)
    Path(store.cache_path).write_bytes(good.replace(b" %d " % len(source), b" 5 ", 1))
    assert set(store.load().users) == {"u0"}
    # a column line too many
    doc_more = {"data": doc["data"], "users": [*doc["users"], "x "]}
    Path(store.cache_path).write_bytes(_cache(source, doc_more))
    assert set(store.load().users) == {"u0"}
    # a tail that is not the one its CRC was made from (damage)
    Path(store.cache_path).write_bytes(good.replace(b"carol", b"carl"))
    assert set(store.load().users) == {"u0"}


def test_an_older_cache_is_ignored_and_replaced(store):
    cfg = _fill(store)
    raw = Path(store.path).read_bytes()
    old = {"source": raw.decode(), "data": {"version": 1}}  # the first format
    Path(store.cache_path).write_text(json.dumps(old))
    assert store.load() == cfg
    assert _split(Path(store.cache_path).read_bytes())[0] == raw


def test_cache_keeps_non_ascii_text_readable(store):
    with store.edit() as cfg:
        cfg.transfer_users["aspera"] = TransferUser("aspera", ["file:////données/*"])
    blob = Path(store.cache_path).read_bytes()
    assert "données".encode() in blob
    assert _split(blob)[1]["data"]["transfer_users"]["aspera"]["restrictions"] == [
        "file:////données/*"]


def test_a_cache_that_does_not_validate_is_ignored_and_errors_come_from_the_file(store):
    cfg = _fill(store)
    source, doc = _split(Path(store.cache_path).read_bytes())
    bad_users = [
        ["u0 u1 u2 ", "web aspera gone ", f"- {HASH} {HASH} ", "  admin "],  # unknown xuser
        ["u0 u1 -u2 ", "web aspera web ", f"- {HASH} {HASH} ", "   "],  # bad name
        ["u0 u1 u1 ", "web aspera web ", f"- {HASH} {HASH} ", "   "],  # a name twice
        ["u0 u1 u2 ", "web aspera web ", f"- {HASH} $scrypt$ln=15 ", "   "],  # bad hash
        ["u0 u1 u2 ", "web aspera web ", f"- {HASH.replace('ln=15', 'ln=21')} - ", "   "],
        ["u0 u1 u2 ", "web aspera web ", "- - - ", "  root "],  # unknown ACL
        ["u0 u1 u2 ", "web aspera web ", "- - - ", "  admin,,admin "],
        ["u0 u1 u2 ", "web aspera ", "- - - ", "   "],  # a column too short
        ["u0 u1 u2", "web aspera web", "- - -", "  "],  # not space-terminated
        ["u0 u1 u2 ", "web aspera web ", "- - - "],  # three columns
        [["u0"], ["web"], [None], [[]]],  # lists (the shape of another format)
        "u0 u1 u2 ", None, 7, {"u0": {}},
    ]
    for users in bad_users:
        Path(store.cache_path).write_bytes(_cache(source, {"data": doc["data"], "users": users}))
        assert store.load() == cfg, users
    for data in ({**doc["data"], "users": {}}, {**doc["data"], "version": 9}, [], "x",
                 {**doc["data"], "nodes": {"n": {"url": "ftp://x"}}}):
        Path(store.cache_path).write_bytes(_cache(source, {"data": data, "users": doc["users"]}))
        assert store.load() == cfg, data
    # an invalid file is reported exactly as without a cache: a cache of its bytes that
    # does not validate either is not where the message comes from
    Path(store.path).write_text('version = 1\n[users.alice]\ntransfer_user = "xfer9"\n')
    with pytest.raises(ConfigError) as plain:
        store.load()
    assert plain.value.message.startswith(f"{store.path}: users -> alice -> transfer_user: ")
    assert plain.value.hint
    for bad in ({"data": {"version": 1}, "users": ["alice ", "xfer9 ", "- ", " "]},
                {"data": {"version": 1, "users": {"alice": {"transfer_user": "x"}}},
                 "users": ["", "", "", ""]}):
        Path(store.cache_path).write_bytes(_cache(Path(store.path).read_bytes(), bad))
        with pytest.raises(ConfigError) as cached:
            store.load()
        assert (cached.value.message, cached.value.hint) == (plain.value.message,
                                                             plain.value.hint)


def test_a_cache_that_is_not_a_plain_file_is_not_read(store):
    cfg = _fill(store)
    Path(store.cache_path).unlink()
    os.mkfifo(store.cache_path)  # a reader would block forever
    assert store.load() == cfg
    Path(store.cache_path).unlink()
    Path(store.cache_path).mkdir()
    assert store.load() == cfg


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_damaged_or_forged_cache_never_breaks_a_load(store, data):
    """Damage (truncation, any byte changed, junk) is ignored: the load is the file's.
    A forged cache with a right CRC and the file's bytes is only ever used when it
    validates: the load never fails and gives a valid configuration."""
    if not Path(store.path).exists():
        _fill(store, 5)
    Path(store.cache_path).unlink(missing_ok=True)
    cfg = store.load()
    good = Path(store.cache_path).read_bytes()
    source, doc = _split(good)
    how = data.draw(st.sampled_from(["truncate", "flip", "bytes", "json", "literal",
                                     "columns"]))
    if how == "truncate":
        blob = good[:data.draw(st.integers(0, len(good) - 1))]
    elif how == "flip":
        at = data.draw(st.integers(0, len(good) - 1))
        blob = good[:at] + bytes([good[at] ^ data.draw(st.integers(1, 255))]) + good[at + 1:]
    elif how == "bytes":
        blob = CACHE_MAGIC + data.draw(st.binary(max_size=200))
    elif how == "json":
        value = data.draw(st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=4)
            | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12))
        blob = _cache(source, {"data": value, "users": value} if data.draw(st.booleans())
                      else value)
    elif how == "literal":  # any line where the data goes: code, other literals, nesting
        line = data.draw(st.sampled_from([
            "__import__('os').system('false')", "{'version': 1} if 1 else 0", "1+", "{",
            "(" * 300, "[" * 100_000, "{'version': b'1'}", "{'version': (1,)}", "{1, 2}",
            "{'version': 1, 'nodes': {('a',): {}}}", "{'version': 1e999}", "...", "9" * 5000,
            "{'version': 1, 'transfer_users': {'x': {'restrictions': ('file:////d/*',)}}}",
            "{'version': True}", "{'version': 1, 'defaults': {'node': None}}", "\x00",
        ]) | st.text(max_size=40).filter(lambda t: "\n" not in t))
        text = "\n".join(["parsed", line, *doc["users"]]) + "\n"
        blob = (CACHE_MAGIC + b"%d %d\n" % (len(source), zlib.crc32(text.encode()))
                + source + text.encode())
    else:
        field = st.text(st.sampled_from("u0u9aspwe -,$/+=ln15rp8admin\n\xe9"), max_size=40)
        blob = _cache(source, {"data": doc["data"],
                               "users": data.draw(st.lists(field, min_size=3, max_size=5))})
    Path(store.cache_path).write_bytes(blob)
    got = store.load()
    if how in ("truncate", "flip", "bytes"):
        assert got == cfg
    else:
        assert parse_config_bytes(dump_config(got), "mem") == got


# -- the column-wise users against the general reader ---------------------------------------

_names = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,12}", fullmatch=True)


@settings(max_examples=150)
@given(st.lists(st.tuples(_names, st.sampled_from(["aspera", "web"]),
                          st.one_of(st.none(), st.just(HASH)),
                          st.lists(st.sampled_from(KNOWN_ACLS))), max_size=8,
                unique_by=lambda t: t[0]))
def test_users_columns_round_trip_to_the_same_users(rows):
    xusers = {"aspera": TransferUser("aspera", ["s3://*"]), "web": TransferUser("web")}
    users = {n: NodeUser(n, x, p, list(a)) for n, x, p, a in rows}
    assert users_from_columns(users_to_columns(users), xusers) == users
    plain = {"version": 1, "transfer_users": {"aspera": {"restrictions": ["s3://*"]},
                                              "web": {}},
             "users": {n: u.to_dict() for n, u in users.items()}}
    assert Config.from_dict(plain).users == users  # the general reader agrees


_field = st.text(st.sampled_from("ab_.-@+ é\n,"), max_size=6)


@settings(max_examples=300)
@given(st.lists(st.tuples(_field, st.sampled_from(["aspera", "nope", "", "a b"]),
                          st.sampled_from([None, HASH, "-", "$x", HASH + " "]),
                          st.lists(st.sampled_from([*KNOWN_ACLS, "root", "", "a,b"]),
                                   max_size=3)), max_size=5))
def test_users_columns_accept_only_what_the_general_reader_accepts(rows):
    """Any columns written from arbitrary (also invalid) users: when they are read back,
    the general reader accepts the same users and gives the same objects."""
    xusers = {"aspera": TransferUser("aspera", ["s3://*"])}
    users = {n: NodeUser(n, x, p, list(a)) for n, x, p, a in rows}
    got = users_from_columns(users_to_columns(users), xusers)
    if got is None:
        return
    plain = {"version": 1, "transfer_users": {"aspera": {"restrictions": ["s3://*"]}},
             "users": {n: u.to_dict() for n, u in got.items()}}
    assert Config.from_dict(plain).users == got
    assert len(got) == len(users) and got == users


def _digits(top: int) -> list[str]:
    return [str(i) for i in range(0, 101)] + [f"0{i}" for i in range(10)] + ["", "+1", "١"]


def test_the_hash_column_pattern_is_is_valid_hash_for_every_parameter_value():
    salt, digest = HASH.split("$")[3:]
    for ln in _digits(MAX_LOG_N):
        for r, p in (("8", "1"), ("1", "16")):
            phc = f"$scrypt$ln={ln},r={r},p={p}${salt}${digest}"
            assert (_hashes_pattern().fullmatch(phc + " ") is not None) == (
                is_valid_hash(phc) and ln.isascii()), phc
    for r in _digits(MAX_R):
        phc = f"$scrypt$ln=15,r={r},p=1${salt}${digest}"
        assert (_hashes_pattern().fullmatch(phc + " ") is not None) == (
            is_valid_hash(phc) and r.isascii()), phc
    for p in _digits(MAX_P):
        phc = f"$scrypt$ln=15,r=8,p={p}${salt}${digest}"
        assert (_hashes_pattern().fullmatch(phc + " ") is not None) == (
            is_valid_hash(phc) and p.isascii()), phc


@settings(max_examples=400)
@given(st.tuples(st.sampled_from(["$scrypt$", "$scrypt", "$argon2$", ""]),
                 st.sampled_from(["ln=15,r=8,p=1", "ln=4,r=1,p=1", "ln=20,r=32,p=16",
                                  "ln=15,r=8", "ln=1,r=1,p=1,x=1"]),
                 st.text(st.sampled_from("Aa9+/=$- \n."), min_size=0, max_size=92),
                 st.text(st.sampled_from("Aa9+/=$- \n."), min_size=0, max_size=92)))
def test_the_hash_column_pattern_agrees_with_is_valid_hash(parts):
    head, params, salt, digest = parts
    phc = f"{head}{params}${salt}${digest}"
    assert (_hashes_pattern().fullmatch(phc + " ") is not None) == (
        is_valid_hash(phc) and " " not in phc and "\n" not in phc)


def test_hashes_nodecli_makes_are_read_column_wise():
    phc = hash_password("pw", log_n=4)
    assert users_from_columns(["a ", "t ", phc + " ", " "], {"t": TransferUser("t")}) == {
        "a": NodeUser("a", "t", phc, [])}


# -- listings read the users column-wise, checked as a load checks them --------------------


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.dictionaries(_names, st.tuples(st.sampled_from(["t1", "t2", "t3", "t4", "t5", "t6"]),
                                         st.lists(st.sampled_from(KNOWN_ACLS), max_size=2)),
                       max_size=12),
       st.integers(1, 6))
def test_listings_give_what_a_load_gives(store, users, n_xusers):
    from nodecli.config.columns import UserTable
    from nodecli.users import (
        UserRows,
        list_transfer_users,
        list_users,
        transfer_user_rows,
        user_rows,
    )

    cfg = Config(transfer_users={f"t{i}": TransferUser(f"t{i}", ["s3://*"])
                                 for i in range(1, 7)},
                 users={n: NodeUser(n, x, HASH, list(a)) for n, (x, a) in users.items()})
    with store.locked():
        store.save_unlocked(cfg)
    for with_cache in (True, False):
        if not with_cache:
            Path(store.cache_path).unlink()
        loaded = store.load()
        assert list_users(store) == user_rows(loaded)
        assert list_transfer_users(store) == transfer_user_rows(loaded)
        rest, table = store.load_user_table()
        assert rest.users == {} and rest.transfer_users == loaded.transfer_users
        assert list(UserRows(table)) == user_rows(loaded)
        full = UserTable.of(loaded.users)
        assert (table.names, table.transfer_users, table.acls) == (
            full.names, full.transfer_users, full.acls)


def test_listings_report_a_damaged_config_as_a_load_does(store):
    from nodecli.users import list_transfer_users, list_users

    _fill(store)
    Path(store.path).write_text('version = 1\n[users.alice]\ntransfer_user = "xfer9"\n')
    with pytest.raises(ConfigError) as plain:
        store.load()
    for listing in (list_users, list_transfer_users, lambda s: s.load_user_table()):
        with pytest.raises(ConfigError) as got:
            listing(store)
        assert (got.value.message, got.value.hint) == (plain.value.message, plain.value.hint)


def test_a_table_of_a_hand_sorted_file_is_sorted(store):
    Path(store.path).parent.mkdir(parents=True, exist_ok=True)
    Path(store.path).write_text('version = 1\n[transfer_users.t]\n'
                                '[users.zed]\ntransfer_user = "t"\n'
                                '[users.amy]\ntransfer_user = "t"\nacls = ["admin"]\n')
    for _ in range(2):  # without, then with the cache
        _rest, table = store.load_user_table()
        assert (table.names, table.transfer_users, table.acls) == (
            ["amy", "zed"], ["t", "t"], ["admin", ""])


_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_hash_column_check_agrees_with_the_pattern(data):
    """hashes_valid's passes over a column of like hashes answer as the regex does,
    whatever one character of it is changed to."""
    import random

    from nodecli.config.columns import hashes_valid

    rng = random.Random(data.draw(st.integers(0, 2**32)))
    params = data.draw(st.sampled_from(["ln=15,r=8,p=1", "ln=4,r=1,p=16", "ln=20,r=32,p=1"]))
    salt_len, digest_len = data.draw(st.integers(10, 24)), data.draw(st.integers(20, 44))

    def b64(n: int) -> str:
        return "".join(rng.choice(_B64_CHARS) for _ in range(n))

    fields = [f"$scrypt${params}${b64(salt_len)}${b64(digest_len)} "
              for _ in range(data.draw(st.integers(30, 40)))]
    other = data.draw(st.sampled_from(["", ",p=2", "ln=1"]))
    if other:  # one field with other parameters, of the same width (valid, or not: ln=1xx)
        fields[rng.randrange(len(fields))] = (
            fields[0].replace(",p=1", other, 1) if other == ",p=2"
            else fields[0].replace("ln=", other, 1)[:-2] + " ")
    text = "".join(fields)
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(text) - 1))
        char = data.draw(st.sampled_from([*"$ ,=-p0123456789Aa+/\n.", "é", "\x00"]))
        text = text[:at] + char + text[at + 1:]
    if data.draw(st.booleans()):  # another field at the end, or a field cut short
        text += data.draw(st.sampled_from(["- ", fields[0], fields[0][:-3] + " ", ""]))
    assert hashes_valid(text) == (_hashes_pattern().fullmatch(text) is not None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from("aZ09_.@+-é \n\t$"), max_size=6)
                | st.sampled_from(["a" * 128, "a" * 129, "_" + "." * 127]), max_size=40),
       st.sampled_from(["", " ", "x", "\n"]))
def test_the_names_column_check_agrees_with_the_pattern(names, tail):
    """names_valid (name by name for a few, the column's regex for many) answers as
    the column's regex does."""
    from nodecli.config.columns import _names_pattern, names_valid

    text = "".join(f"{name} " for name in names) + tail
    assert names_valid(text) == (_names_pattern().fullmatch(text) is not None)
