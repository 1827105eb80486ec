"""The node users column-wise: what the parse cache stores and the ``[users]`` writer
works from.

The parse cache (config.store) keeps the users as four columns, each one string of
space-terminated fields (no valid name, hash or ACL holds a space): the names, the
transfer users, the password hashes ("-" for none) and the ACLs (comma-joined: no
known ACL holds a comma). Four long strings are far cheaper to decode than 40,000
short ones, and a column is checked as a whole: one regex over the names, one over the
hashes, the set of transfer users against the known ones, each distinct ACL field
once. Any doubt answers None, and the caller then parses the file with the general
reader, so every error message stays the one that reader gives.
"""

from __future__ import annotations

import re
from typing import Any

from nodecli.config.model import _KNOWN_ACL_SET, _NAME_BODY, _NAME_RE, NodeUser, TransferUser

_bulk_patterns: dict[str, re.Pattern[str]] = {}
#: the hash field of a user without password, in the column form
NO_HASH = "-"


def _names_pattern() -> re.Pattern[str]:
    """Space-terminated names, each one _NAME_RE accepts (compiled on first use)."""
    pattern = _bulk_patterns.get("names")
    if pattern is None:
        pattern = _bulk_patterns["names"] = re.compile(f"(?:{_NAME_BODY} )*+")
    return pattern


def _hashes_pattern() -> re.Pattern[str]:
    """Space-terminated fields, each "-" or a PHC string ``passwords.is_valid_hash``
    accepts in its common form (ASCII digits; its parameter ranges spelt out from its
    limits). A test holds the two to the same answers."""
    pattern = _bulk_patterns.get("hashes")
    if pattern is None:
        from nodecli.passwords import MAX_LOG_N, MAX_P, MAX_R

        def upto(top: int) -> str:  # 1..top (top < 100), a single digit maybe as 0d
            if top < 10:
                return f"0?[1-{top}]"
            tens, ones = divmod(top, 10)
            middle = f"|[1-{tens - 1}][0-9]" if tens > 1 else ""
            return f"(?:0?[1-9]{middle}|{tens}[0-{ones}])"

        pattern = _bulk_patterns["hashes"] = re.compile(
            f"(?:(?:\\$scrypt\\$ln={upto(MAX_LOG_N)},r={upto(MAX_R)},p={upto(MAX_P)}"
            "\\$[A-Za-z0-9+/]{11,88}\\$[A-Za-z0-9+/]{22,88}|-) )*+")
    return pattern


def names_valid(text: str) -> bool:
    """Whether ``text`` is a names column (:func:`_names_pattern`): space-terminated
    names, each one ``_NAME_RE`` accepts. A few names are checked one by one with that
    regex, which the model compiled already; compiling the column's own costs more."""
    if text.count(" ") >= 32:
        return _names_pattern().fullmatch(text) is not None
    names = text.split(" ")
    return names.pop() == "" and "\n" not in text and all(map(_NAME_RE.match, names))


_B64 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def hashes_valid(text: str) -> bool:
    """Whether ``text`` is a hashes column (:func:`_hashes_pattern`).

    Hashes made by one nodecli share their parameters and lengths, and the regex
    costs ~2 ms over 10,000 of them; such a column is checked in a few passes instead.
    When every field has the first one's width, the first matches the pattern, each
    position of the parameters part (up to the salt) and each position outside the
    base64 alphabet in the first field holds the same character in every field, and
    the column holds no other character outside that alphabet, then every field is the
    first with other base64 characters in the same places: it matches as the first
    does. Any other column is left to the regex."""
    width = text.find(" ") + 1
    count = len(text) // width if width else 0
    if count < 32 or count * width != len(text) or not text.startswith("$scrypt$"):
        return _hashes_pattern().fullmatch(text) is not None
    first = text[:width]
    if _hashes_pattern().fullmatch(first) is None or not text.isascii():
        return False  # (that field does not match; nor does a non-ASCII one)
    salt = first.index("$", first.index(",p=")) + 1
    b64 = _B64.decode()
    fixed = [*range(salt), *(k for k in range(salt, width) if first[k] not in b64)]
    others = len(first.encode().translate(None, _B64))
    if all(text[k::width] == first[k] * count for k in fixed) and \
            len(text.encode().translate(None, _B64)) == others * count:
        return True
    return _hashes_pattern().fullmatch(text) is not None


def _fields(values: list[str]) -> str:
    return " ".join(values) + " " if values else ""


class UserFields:
    """The users of a configuration field by field, in their order (what the parse cache
    and the ``[users]`` writer work from): lists ``names``, ``transfer_users``,
    ``hashes`` ("-" for no password) and ``acls`` (comma-joined), and ``columns``, the
    four as space-terminated text, or None when some value would not read back as it is
    (a space or line break in a name, a "-" password, a comma or an empty ACL...:
    nothing a configuration nodecli writes holds)."""

    __slots__ = ("acls", "columns", "hashes", "names", "transfer_users")

    def __init__(self, users: dict[str, NodeUser], *, sort: bool = False) -> None:
        """The fields of ``users`` in their order, or sorted by name with ``sort``."""
        self.columns: list[str] | None = None
        try:
            names = sorted(users) if sort else list(users)
            self._fill(names, [users[name] for name in names] if sort else users.values())
        except TypeError:  # a value that is not a string: no column form (nor valid)
            self.columns = None

    def _fill(self, names: list[str], values: Any) -> None:
        self.names = names
        self.transfer_users = [u.transfer_user for u in values]
        hashes = [u.password_hash for u in values]
        missing = hashes.count(None)
        if missing or NO_HASH in hashes:
            hashes = [NO_HASH if h is None else h for h in hashes]
        self.hashes: list[str] = hashes  # type: ignore[assignment]
        lists = [u.acls for u in values]
        self.acls = list(map(",".join, lists))
        columns = [_fields(self.names), _fields(self.transfer_users), _fields(self.hashes),
                   _fields(self.acls)]
        n = len(self.names)
        if any(column.count(" ") != n or "\n" in column for column in columns) or \
                columns[3].count(",") != sum(map(len, lists)) - (n - self.acls.count("")) or \
                self.acls.count("") != lists.count([]) or \
                self.hashes.count(NO_HASH) != missing:
            self.columns = None
        else:
            self.columns = columns


def valid_fields(fields: UserFields, transfer_users: dict[str, TransferUser]) -> bool:
    """Whether the users ``fields`` were made from are valid against ``transfer_users``:
    the checks of :func:`checked_fields` on the lists in hand (the names, keys of one
    dict, are distinct). False may also mean "in doubt"."""
    columns = fields.columns
    if columns is None:
        return False
    if not fields.names:
        return True
    if not names_valid(columns[0]) or \
            not hashes_valid(columns[2]) or \
            not set(fields.transfer_users) <= transfer_users.keys():
        return False
    return all(_KNOWN_ACL_SET.issuperset(joined.split(",") if joined else ())
               for joined in set(fields.acls))


#: The checked fields of :func:`checked_fields`: names, transfer users, hashes (``NO_HASH``
#: for none; empty unless asked for), comma-joined ACLs and each ACL field as a list.
CheckedFields = tuple[list[str], list[str], list[str], list[str], dict[str, list[str]]]


def checked_fields(columns: Any, transfer_users: dict[str, TransferUser], *,
                   with_hashes: bool = True) -> CheckedFields | None:
    """The fields of ``columns`` if they hold valid users, else None. Without
    ``with_hashes`` the hashes are checked but not split out (their list is empty)."""
    if columns.__class__ is not list or len(columns) != 4 or \
            set(map(type, columns)) != {str}:
        return None
    names_text, xusers_text, hashes_text, acls_text = columns
    if not names_text:
        return ([], [], [], [], {}) if not (xusers_text or hashes_text or acls_text) else None
    if not names_valid(names_text) or \
            not hashes_valid(hashes_text):
        return None
    names = names_text.split(" ")
    xusers = xusers_text.split(" ")
    acls = acls_text.split(" ")
    n = len(names)  # (the trailing empty field is dropped below, in each column)
    if with_hashes:
        hashes = hashes_text.split(" ")
        if len(hashes) != n or "" != hashes.pop():
            return None
    elif hashes_text.count(" ") != n - 1:  # (the pattern ends every field with a space)
        return None
    else:
        hashes = []
    if not n == len(xusers) == len(acls) or \
            "" != names.pop() or "" != xusers.pop() or "" != acls.pop():
        return None
    if len(set(names)) != n - 1 or not set(xusers) <= transfer_users.keys():
        return None  # (so the transfer users are known names)
    acl_lists: dict[str, list[str]] = {}
    for joined in set(acls):
        parts = joined.split(",") if joined else []
        if not _KNOWN_ACL_SET.issuperset(parts):
            return None
        acl_lists[joined] = parts
    return names, xusers, hashes, acls, acl_lists


def users_of_fields(fields: CheckedFields) -> dict[str, NodeUser]:
    """The node users of checked fields."""
    import gc

    names, xusers, hashes, acls, acl_lists = fields
    passwords = [None if h == NO_HASH else h for h in hashes] if NO_HASH in hashes else hashes
    # 10,000 objects at once: the cyclic collector would walk them several times over
    enabled = gc.isenabled()
    gc.disable()
    try:
        new = NodeUser.__new__
        out: dict[str, NodeUser] = {}
        for name, xuser, password, joined in zip(names, xusers, passwords, acls, strict=True):
            user = new(NodeUser)
            user.name = name
            user.transfer_user = xuser
            user.password_hash = password
            user.acls = list(acl_lists[joined])
            out[name] = user
    finally:
        if enabled:
            gc.enable()
    return out


class UserTable:
    """Every node user as parallel lists sorted by name, for listings: ``names``,
    ``transfer_users`` and ``acls`` (comma-joined, "" for none)."""

    __slots__ = ("acls", "names", "transfer_users")

    def __init__(self, names: list[str], transfer_users: list[str], acls: list[str], *,
                 ordered: bool = False) -> None:
        """``ordered``: the caller knows ``names`` are sorted (else they are sorted here)."""
        if not ordered and names != sorted(names):  # (a file not written by nodecli)
            order = sorted(range(len(names)), key=names.__getitem__)
            names = [names[i] for i in order]
            transfer_users = [transfer_users[i] for i in order]
            acls = [acls[i] for i in order]
        self.names = names
        self.transfer_users = transfer_users
        self.acls = acls

    @classmethod
    def of(cls, users: dict[str, NodeUser]) -> UserTable:
        ordered = [users[name] for name in sorted(users)]
        return cls([u.name for u in ordered], [u.transfer_user for u in ordered],
                   [",".join(u.acls) for u in ordered], ordered=True)
