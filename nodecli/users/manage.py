"""Node users and transfer users: every change and query the CLI offers, over the store.

Two layers, both free of click and rich:

* pure functions over a :class:`~nodecli.config.Config` (``apply_*``, ``*_rows``,
  ``*_record``) that validate their input and change the model or describe it;
* one function per command over a :class:`~nodecli.config.ConfigStore` (``add_user``,
  ``delete_transfer_user``...) that does the slow part
  (password hashing) *outside* the lock, then a locked read-modify-write, and returns
  an :class:`Outcome` the CLI only has to print.

Errors are :mod:`nodecli.errors` types: ``UsageError`` (bad name or value, exit 2),
``NotFoundError`` (exit 5), ``ConflictError`` (exists / still referenced, exit 1),
``ConfigError`` (damaged file, exit 3). Nothing is written when one is raised.

The user data as a whole (export file format, import, config check, restore) is
:mod:`nodecli.users.user_data`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodecli.config.model import (
    KNOWN_ACLS,
    Config,
    NodeUser,
    TransferUser,
    check_name,
)
from nodecli.errors import ConflictError, NotFoundError, UsageError

MAX_DOCROOT_LENGTH = 4096

PasswordSource = str | Callable[[], str]


@dataclass(slots=True)
class Outcome:
    """What a command did: a message for stderr, warnings, and optional data."""

    message: str
    warnings: list[str] = field(default_factory=list)
    data: Any = None


# -- validation of single values --------------------------------------------------------


def validate_name(name: object, kind: str = "node user name") -> str:
    """An acceptable user / transfer-user name, else :class:`UsageError`."""
    try:
        return check_name(name, kind)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def parse_acls(values: str | Iterable[str] | None) -> list[str]:
    """Comma-separated ACL lists (one string or several) to a de-duplicated list.

    Only the ACLs a node knows are accepted: ``admin``, ``impersonation``, ``internal``.
    An empty string means the empty list (``--acl-set ''`` clears).
    """
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for value in values:
        for part in value.split(","):
            acl = part.strip()
            if not acl:
                continue
            if acl not in KNOWN_ACLS:
                shown = acl.encode("unicode_escape").decode("ascii")[:40]
                raise UsageError(f"unknown ACL {shown!r}: use a comma-separated list of "
                                 f"{', '.join(KNOWN_ACLS)}")
            if acl not in out:
                out.append(acl)
    return out


def validate_docroot(docroot: str) -> str:
    """A docroot is an absolute path or a storage URL, printable, at most 4096 chars."""
    if not docroot:
        raise UsageError("the docroot is empty")
    if len(docroot) > MAX_DOCROOT_LENGTH:
        raise UsageError(f"the docroot is longer than {MAX_DOCROOT_LENGTH} characters")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in docroot):
        raise UsageError("the docroot contains control characters")
    absolute = (
        docroot.startswith("/")
        or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", docroot) is not None  # scheme://...
        or (len(docroot) >= 3 and docroot[0].isalpha() and docroot[1] == ":"
            and docroot[2] in "/\\")
    )
    if not absolute:
        shown = docroot.encode("unicode_escape").decode("ascii")[:60]
        raise UsageError(f"docroot {shown!r} is not absolute: use /path, C:/path or "
                         "a storage URL such as file:////data")
    return docroot


def parse_restriction_args(values: Sequence[str]) -> list[str]:
    """Validate restrictions (each may be a ``|a|b`` list); UsageError shows the forms."""
    from nodecli.users.restrictions import RestrictionError, parse_restrictions

    try:
        return [r.raw for r in parse_restrictions(list(values))]
    except RestrictionError as exc:
        raise UsageError(str(exc)) from None


def _start_hashing(source: PasswordSource | None) -> Callable[[], str | None]:
    """Ask for the password (``source`` may be a prompt), check it, and start hashing it
    in a thread; the returned function gives the hash (None without a password). scrypt
    releases the interpreter lock, so the start of the command goes on meanwhile. The
    hash is awaited BEFORE the config lock is taken: a writer holding the lock while its
    hash runs makes every other writer wait for it (50 writers on a busy machine waited
    more than the lock's 30 s)."""
    if source is None:
        return lambda: None
    password = source() if callable(source) else source
    from nodecli.users.passwords import (
        PasswordError,
        check_password_text,
        hash_password,
        in_background,
    )

    try:
        check_password_text(password)
    except PasswordError as exc:
        raise UsageError(str(exc)) from None
    return in_background(lambda: hash_password(password), "password-hash")


# -- pure operations over a Config --------------------------------------------------------


def get_user(cfg: Config, name: str) -> NodeUser:
    try:
        return cfg.users[name]
    except KeyError:
        raise NotFoundError(f"no node user {_shown(name)!r}") from None


def authenticate(cfg: Config, name: str, password: str) -> NodeUser:
    """The node user ``name`` if ``password`` matches its stored hash, else AuthError.

    The same message for an unknown user, a user without password and a wrong password,
    so the answer does not reveal which names exist. Used by token creation and the
    emulator (HTTP Basic with node credentials).
    """
    from nodecli.errors import AuthError
    from nodecli.users.passwords import verify_password

    user = cfg.users.get(name)
    if user is None or not verify_password(password, user.password_hash):
        raise AuthError(f"node user {_shown(name)!r}: wrong user name or password")
    return user


def get_transfer_user(cfg: Config, name: str) -> TransferUser:
    try:
        return cfg.transfer_users[name]
    except KeyError:
        raise NotFoundError(f"no transfer user {_shown(name)!r}") from None


def _shown(name: object) -> str:
    text = name if isinstance(name, str) else str(name)
    return text.encode("unicode_escape").decode("ascii")[:80]


def unconfigured_warning(name: str, *, recorded: bool = False) -> str:
    head = (f"transfer user {name!r} was unknown: recorded it, but it has" if recorded
            else f"transfer user {name!r} has")
    return (f"{head} neither restriction nor docroot yet: set one with "
            f"'nodecli xuser set {name} --restriction R' or '--docroot PATH'")


def _ensure_transfer_user(cfg: Config, name: str, warnings: list[str]) -> None:
    """Record an unknown transfer user (as the classic tool does) and warn about it."""
    if name not in cfg.transfer_users:
        cfg.transfer_users[name] = TransferUser(name)
        warnings.append(unconfigured_warning(name, recorded=True))
    elif not cfg.transfer_users[name].configured:
        warnings.append(unconfigured_warning(name))


def check_can_add_user(cfg: Config, name: str, transfer_user: str) -> None:
    validate_name(name, "node user name")
    validate_name(transfer_user, "transfer user name")
    if name in cfg.users:
        raise ConflictError(f"node user {name!r} already exists",
                            hint=f"change it with 'nodecli -mu {name}' or "
                                 f"'nodecli user passwd {name}'")


def apply_add_user(cfg: Config, name: str, *, transfer_user: str, password_hash: str | None,
                   acls: Sequence[str] = ()) -> list[str]:
    """Add a node user; returns warnings (e.g. transfer user auto-recorded)."""
    check_can_add_user(cfg, name, transfer_user)
    warnings: list[str] = []
    _ensure_transfer_user(cfg, transfer_user, warnings)
    cfg.users[name] = NodeUser(name, transfer_user, password_hash, list(acls))
    return warnings


def apply_modify_user(
    cfg: Config,
    name: str,
    *,
    password_hash: str | None = None,
    transfer_user: str | None = None,
    acl_set: Sequence[str] | None = None,
    acl_add: Sequence[str] = (),
    acl_del: Sequence[str] = (),
) -> list[str]:
    """Change a node user's password, transfer user and/or ACLs; returns warnings."""
    user = get_user(cfg, name)
    warnings: list[str] = []
    if transfer_user is not None:
        validate_name(transfer_user, "transfer user name")
        _ensure_transfer_user(cfg, transfer_user, warnings)
        user.transfer_user = transfer_user
    if password_hash is not None:
        user.password_hash = password_hash
    acls = list(user.acls) if acl_set is None else list(acl_set)
    acls += [a for a in acl_add if a not in acls]
    user.acls = [a for a in acls if a not in acl_del]
    return warnings


def apply_delete_user(cfg: Config, name: str) -> NodeUser:
    user = get_user(cfg, name)
    del cfg.users[name]
    return user


def user_row(user: NodeUser) -> dict[str, Any]:
    """The stable machine-output shape of a node user (never the password hash)."""
    return {"name": user.name, "transfer_user": user.transfer_user, "acls": list(user.acls)}


def user_rows(cfg: Config) -> list[dict[str, Any]]:
    return [user_row(cfg.users[name]) for name in sorted(cfg.users)]


def user_record(cfg: Config, name: str) -> dict[str, Any]:
    user = get_user(cfg, name)
    xuser = cfg.transfer_users.get(user.transfer_user)
    row = user_row(user)
    row["password_set"] = user.password_hash is not None
    row["restrictions"] = list(xuser.restrictions) if xuser else []
    row["docroot"] = xuser.docroot if xuser else None
    return row


def referencing_users(cfg: Config, transfer_user: str) -> list[str]:
    return sorted(n for n, u in cfg.users.items() if u.transfer_user == transfer_user)


def apply_add_transfer_user(cfg: Config, name: str, *, restrictions: Sequence[str] = (),
                            docroot: str | None = None) -> TransferUser:
    validate_name(name, "transfer user name")
    if name in cfg.transfer_users:
        raise ConflictError(f"transfer user {name!r} already exists",
                            hint=f"change it with 'nodecli xuser set {name} ...'")
    if restrictions and docroot is not None:
        raise UsageError("a transfer user has restrictions OR a docroot, not both")
    if not restrictions and docroot is None:
        raise UsageError("give --restriction R (one or more) or --docroot PATH")
    xuser = TransferUser(name, parse_restriction_args(restrictions),
                         validate_docroot(docroot) if docroot is not None else None)
    cfg.transfer_users[name] = xuser
    return xuser


def apply_set_transfer_user(
    cfg: Config,
    name: str,
    *,
    restrictions: Sequence[str] | None = None,
    add_restrictions: Sequence[str] = (),
    remove_restrictions: Sequence[str] = (),
    docroot: str | None = None,
) -> list[str]:
    """Replace or edit restrictions, or switch to a docroot. Returns notes for the user.

    ``restrictions`` replaces the list (and drops a docroot); ``docroot`` replaces the
    docroot (and drops restrictions); adding restrictions to a docroot user is refused.
    """
    xuser = get_transfer_user(cfg, name)
    notes: list[str] = []
    wants_restr = restrictions is not None or bool(add_restrictions) or bool(remove_restrictions)
    if docroot is not None and wants_restr:
        raise UsageError("a transfer user has restrictions OR a docroot, not both")
    if restrictions is None and not add_restrictions and not remove_restrictions \
            and docroot is None:
        raise UsageError("nothing to change: give --restriction, --add-restriction, "
                         "--remove-restriction or --docroot")
    if docroot is not None:
        new_docroot = validate_docroot(docroot)
        if xuser.restrictions:
            notes.append(f"removed {len(xuser.restrictions)} restriction(s): a transfer user "
                         "has restrictions OR a docroot")
        xuser.restrictions = []
        xuser.docroot = new_docroot
        return notes
    current = list(xuser.restrictions)
    if restrictions is not None:
        current = parse_restriction_args(restrictions) if restrictions else []
        if not current:
            raise UsageError("--restriction needs at least one restriction")
    if add_restrictions:
        if xuser.docroot is not None and restrictions is None:
            raise ConflictError(f"transfer user {name!r} has a docroot",
                                hint="replace it with --restriction R (drops the docroot)")
        current += [r for r in parse_restriction_args(add_restrictions) if r not in current]
    for r in remove_restrictions:
        if r not in current:
            raise NotFoundError(f"transfer user {name!r} has no restriction {_shown(r)!r}")
        current.remove(r)
    if xuser.docroot is not None:
        notes.append(f"removed docroot {xuser.docroot!r}: a transfer user has restrictions "
                     "OR a docroot")
        xuser.docroot = None
    xuser.restrictions = current
    if not xuser.configured:
        notes.append(unconfigured_warning(name))
    return notes


def apply_delete_transfer_user(cfg: Config, name: str, *, force: bool = False) -> list[str]:
    """Delete a transfer user; with ``force`` also the node users on it (returned)."""
    get_transfer_user(cfg, name)
    users = referencing_users(cfg, name)
    if users and not force:
        shown = ", ".join(users[:10]) + (f" and {len(users) - 10} more" if len(users) > 10 else "")
        raise ConflictError(
            f"transfer user {name!r} is used by {len(users)} node user(s): {shown}",
            hint="move them with 'nodecli user ... ' or delete them too with --force",
        )
    for user in users:
        del cfg.users[user]
    del cfg.transfer_users[name]
    return users


def transfer_user_row(cfg: Config, xuser: TransferUser) -> dict[str, Any]:
    """Stable machine-output shape of a transfer user."""
    return {
        "name": xuser.name,
        "restrictions": list(xuser.restrictions),
        "docroot": xuser.docroot,
        "node_users": referencing_users(cfg, xuser.name),
    }


def transfer_user_rows(cfg: Config) -> list[dict[str, Any]]:
    """Every transfer user with the node users on it."""
    by_xuser: dict[str, list[str]] = {}
    for uname in sorted(cfg.users):
        by_xuser.setdefault(cfg.users[uname].transfer_user, []).append(uname)
    return [
        {"name": x.name, "restrictions": list(x.restrictions), "docroot": x.docroot,
         "node_users": by_xuser.get(x.name, [])}
        for x in (cfg.transfer_users[n] for n in sorted(cfg.transfer_users))
    ]


def transfer_user_record(cfg: Config, name: str) -> dict[str, Any]:
    xuser = get_transfer_user(cfg, name)
    row = transfer_user_row(cfg, xuser)
    from nodecli.users.restrictions import to_list_string

    row["file_restriction"] = to_list_string(xuser.restrictions) if xuser.restrictions else None
    return row


# -- one function per command, over the store ---------------------------------------------


def list_users(store: Any) -> list[dict[str, Any]]:
    return user_rows(store.load())


def show_user(store: Any, name: str) -> dict[str, Any]:
    return user_record(store.load(), name)


def add_user(store: Any, name: str, *, transfer_user: str, password: PasswordSource | None,
             acls: Sequence[str] = ()) -> Outcome:
    """Add a node user. ``password`` may be a callable (a prompt), asked only after the
    name was checked against the stored users, so nobody types a password for a doomed
    command. The hash is computed outside the lock (it is deliberately slow)."""
    validate_name(name, "node user name")
    validate_name(transfer_user, "transfer user name")
    if callable(password):
        check_can_add_user(store.load(), name, transfer_user)
    password_hash = _start_hashing(password)()  # before the lock (see _start_hashing)
    with store.edit() as cfg:
        warnings = apply_add_user(cfg, name, transfer_user=transfer_user,
                                  password_hash=password_hash, acls=acls)
    return Outcome(f"added node user {name!r} on transfer user {transfer_user!r}", warnings)


def modify_user(
    store: Any,
    name: str,
    *,
    password: PasswordSource | None = None,
    transfer_user: str | None = None,
    acl_set: Sequence[str] | None = None,
    acl_add: Sequence[str] = (),
    acl_del: Sequence[str] = (),
) -> Outcome:
    validate_name(name, "node user name")
    if callable(password):
        get_user(store.load(), name)  # fail before a prompt
    if transfer_user is not None:
        validate_name(transfer_user, "transfer user name")
    password_hash = _start_hashing(password)()  # before the lock (see _start_hashing)
    with store.edit() as cfg:
        warnings = apply_modify_user(cfg, name, password_hash=password_hash,
                                     transfer_user=transfer_user, acl_set=acl_set,
                                     acl_add=acl_add, acl_del=acl_del)
        acls = list(cfg.users[name].acls)
    what = []
    if password_hash is not None:
        what.append("password")
    if transfer_user is not None:
        what.append(f"transfer user {transfer_user!r}")
    if acl_set is not None or acl_add or acl_del:
        what.append(f"ACLs [{','.join(acls)}]")
    return Outcome(f"changed node user {name!r}: {', '.join(what) or 'nothing'}", warnings,
                   data=acls)


def delete_user(store: Any, name: str) -> Outcome:
    validate_name(name, "node user name")
    with store.edit() as cfg:
        apply_delete_user(cfg, name)
    return Outcome(f"deleted node user {name!r}")


def list_transfer_users(store: Any) -> list[dict[str, Any]]:
    return transfer_user_rows(store.load())


def show_transfer_user(store: Any, name: str) -> dict[str, Any]:
    return transfer_user_record(store.load(), name)


def add_transfer_user(store: Any, name: str, *, restrictions: Sequence[str] = (),
                      docroot: str | None = None) -> Outcome:
    with store.edit() as cfg:
        xuser = apply_add_transfer_user(cfg, name, restrictions=restrictions, docroot=docroot)
    form = (f"docroot {xuser.docroot!r}" if xuser.docroot is not None
            else f"{len(xuser.restrictions)} restriction(s)")
    return Outcome(f"added transfer user {name!r} with {form}")


def set_transfer_user(store: Any, name: str, **changes: Any) -> Outcome:
    validate_name(name, "transfer user name")
    with store.edit() as cfg:
        notes = apply_set_transfer_user(cfg, name, **changes)
    return Outcome(f"changed transfer user {name!r}", notes)


def delete_transfer_user(store: Any, name: str, *, force: bool = False) -> Outcome:
    validate_name(name, "transfer user name")
    with store.edit() as cfg:
        removed = apply_delete_transfer_user(cfg, name, force=force)
    msg = f"deleted transfer user {name!r}"
    if removed:
        msg += f" and its {len(removed)} node user(s): {', '.join(removed)}"
    return Outcome(msg, data=removed)
