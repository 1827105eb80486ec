"""``config.toml`` as nodecli writes it: the whole document (tomli_w, with the node
users' tables from a template that writes the same bytes much faster) and one user's
table written into the bytes of a file nodecli wrote (:func:`splice_user`)."""

from __future__ import annotations

import re
from typing import Any

from nodecli.config.columns import NO_HASH, CheckedFields, UserFields, valid_fields
from nodecli.config.model import Config, NodeUser, TransferUser


def dump_config(cfg: Config) -> bytes:
    """``config.toml`` bytes of ``cfg``, all written by tomli_w."""
    return _dump_plain(cfg.to_dict())


def _dump_plain(plain: dict[str, Any]) -> bytes:
    """``config.toml`` bytes of ``Config.to_dict()`` output, all written by tomli_w (a
    save of valid users writes them from a template instead: see _users_toml)."""
    import tomli_w

    return (_HEADER + tomli_w.dumps(plain)).encode("utf-8")


_HEADER = (
    "# nodecli configuration. Edit with care: 'nodecli config check' validates it.\n"
    "# Passwords are salted scrypt hashes; profile secrets are not stored here.\n"
)


_PLAIN_STRING = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII without quote or backslash
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


_HASH_LINE = 'password = "%s"\n'
_USER_TABLE = '[users.%s]\ntransfer_user = "%s"\npassword = "%s"\n%s\n'
_QUOTED_NAME = re.compile(r"[^A-Za-z0-9_ -]")  # a name with one of these is a quoted key


def _users_toml(fields: UserFields) -> str | None:
    """The ``[users.*]`` tables of valid users (``fields``, sorted by name) exactly as
    tomli_w writes them, built from a template per table; None when a value is not plain
    printable ASCII without quote or backslash (tomli_w then writes the document)."""
    assert fields.columns is not None
    # Valid names, hashes and ACLs are plain: only a transfer-user name may not be (the
    # general check lets one end in a line break)
    if not _PLAIN_STRING.fullmatch(fields.columns[1]):
        return None
    blocks = {joined: "acls = [\n" + "".join(f'    "{acl}",\n' for acl in joined.split(","))
              + "]\n" if joined else "" for joined in set(fields.acls)}
    hashes = fields.hashes
    quoted = _QUOTED_NAME.search(fields.columns[0]) is not None
    if NO_HASH not in hashes and not quoted:  # the common case: one template per table
        from itertools import chain

        # one format of the table repeated: no string per table
        values = zip(fields.names, fields.transfer_users, hashes,
                     map(blocks.__getitem__, fields.acls), strict=True)
        return ((_USER_TABLE * len(hashes)) % tuple(chain.from_iterable(values)))[:-1]
    if NO_HASH in hashes:
        passwords = [_HASH_LINE % h if h != NO_HASH else "" for h in hashes]
    else:
        passwords = list(map(_HASH_LINE.__mod__, hashes))
    names = fields.names
    if quoted:
        bare = _BARE_KEY.fullmatch
        heads = [f"[users.{n}]\n" if bare(n) else f'[users."{n}"]\n' for n in names]
    else:
        heads = list(map("[users.%s]\n".__mod__, names))
    return "\n".join(map('%stransfer_user = "%s"\n%s%s'.__mod__,
                         zip(heads, fields.transfer_users, passwords,
                             map(blocks.__getitem__, fields.acls), strict=True)))


def _dump_with_users(rest: dict[str, Any], users_text: str) -> bytes:
    """``config.toml`` bytes of ``rest`` (``Config.to_dict(users=False)``) with the
    ``[users.*]`` tables ``users_text`` in their place, as _dump_plain writes them."""
    import tomli_w

    before = {k: v for k, v in rest.items() if k in ("version", "defaults", "transfer_users")}
    after = {k: v for k, v in rest.items() if k not in before}
    parts = [tomli_w.dumps(before) if before else "", users_text,
             tomli_w.dumps(after) if after else ""]
    return (_HEADER + "\n".join(part for part in parts if part)).encode("utf-8")


class Unchanged:
    """The type of :data:`UNCHANGED`: an edit that changed nothing."""


UNCHANGED = Unchanged()


def _user_table(name: str, user: NodeUser, transfer_users: dict[str, TransferUser]
                ) -> bytes | None:
    """The ``[users.NAME]`` table of a valid node user ``name`` exactly as _users_toml
    writes it (ending with one line break); None when it is not valid or not that plain."""
    fields = UserFields({name: user})
    if not valid_fields(fields, transfer_users):
        return None
    text = _users_toml(fields)
    return None if text is None else text.encode("ascii")


def splice_user(raw: bytes, columns: list[str], fields: CheckedFields, cfg: Config,
                name: str) -> tuple[bytes, list[str]] | Unchanged | None:
    """The new ``config.toml`` bytes and users' columns of ``cfg`` when its node users
    differ from those of ``columns`` (and their ``fields``) at most in user ``name``:
    that user's field is added to, changed in or removed from each column, and its
    table in ``raw``, which must be exactly what the writer made of those users (and
    of the other tables of ``cfg``, which the caller found unchanged);
    :data:`UNCHANGED` when the users are the same; None when that cannot be done here
    (the caller then writes everything: the same bytes, or its error).

    The writer's ``[users]`` part is the users' tables in name order, separated by one
    empty line, so a table is found by its header line, which no other line of the
    file can be: the neighbour found is checked to be exactly the table its fields
    make, and the new table is checked as a load would check it (its transfer user
    among the unchanged ones)."""
    from bisect import bisect_left

    names, xusers, hashes, acls, acl_lists = fields
    n = len(names)
    i = bisect_left(names, name)
    had = i < n and names[i] == name
    user = cfg.users.get(name)
    keys = list(cfg.users)  # users_of_fields made them in name order; an add appends
    if user is not None and not had:
        same_others = len(keys) == n + 1 and keys[-1] == name and keys[:-1] == names
    elif user is None and had:
        same_others = len(keys) == n - 1 and keys[:i] == names[:i] and keys[i:] == names[i + 1:]
    else:
        same_others = keys == names
    if not same_others:
        return None

    def table(k: int) -> bytes | None:  # the table of the k-th user of ``fields``
        password = None if hashes[k] == NO_HASH else hashes[k]
        other = NodeUser(names[k], xusers[k], password, acl_lists[acls[k]])
        return _user_table(names[k], other, cfg.transfer_users)

    def find(block: bytes | None) -> int:  # where a table starts in ``raw`` (-1: not there)
        return -1 if block is None else raw.find(b"\n" + block) + 1 or -1

    view = memoryview(raw)  # (slices without copies: the file is copied once, joined)
    new = None
    if user is not None:
        new = _user_table(name, user, cfg.transfer_users)
        if new is None:
            return None
    if had:
        old = table(i)
        if new == old:
            return UNCHANGED
        start = find(old)
        if start < 0:
            return None
        assert old is not None
        end = start + len(old)
        if new is not None:
            data = b"".join((view[:start], new, view[end:]))
        elif i + 1 < n and raw.startswith(b"\n[users.", end):  # and the empty line after it
            data = b"".join((view[:start], view[end + 1:]))
        elif i + 1 == n and n > 1 and raw.endswith(b"\n\n", 0, start):  # the empty line before
            data = b"".join((view[:start - 1], view[end:]))
        else:
            return None  # (the last user: the writer then leaves out [users])
    elif new is None:
        return UNCHANGED
    elif i < n:  # before the table that comes next
        start = find(table(i))
        if start < 0:
            return None
        data = b"".join((view[:start], new, b"\n", view[start:]))
    elif n:  # after the last table
        last = table(n - 1)
        start = find(last)
        if start < 0:
            return None
        assert last is not None
        end = start + len(last)
        data = b"".join((view[:end], b"\n", new, view[end:]))
    else:
        return None  # (the first user: the writer then adds [users])
    if user is None:
        values = ["", "", "", ""]
    else:
        one = UserFields({name: user})
        values = [f"{one.names[0]} ", f"{one.transfer_users[0]} ", f"{one.hashes[0]} ",
                  f"{one.acls[0]} "]
    spliced = []
    for text, items, value in zip(columns, (names, xusers, hashes, acls), values,
                                  strict=True):
        at = sum(map(len, items[:i])) + i  # (each field ends with a space)
        after = at + len(items[i]) + 1 if had else at
        spliced.append("".join((text[:at], value, text[after:])))
    return data, spliced
