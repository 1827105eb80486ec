"""The desired-state document of ``export``, ``diff`` and ``apply``: read, checked, written.

YAML (or JSON, which YAML reads too), ``version: 1``; every section is optional and a
section that is absent is not looked at (a section present and empty is "none")::

    version: 1
    transfer_users:            # the local transfer users (config export's shape)
      aspera: {restrictions: ["file:////data/*"]}
    node_users:                # the local node users; passwords as PHC hashes only
      usr1: {transfer_user: aspera, password: "$scrypt$...", acls: [admin]}
    access_keys:               # one node's keys (apply/diff --node NAME)
      ak1:
        storage: {type: local, path: /data/project}
        configuration: {activity_event_logging: true}
        verification_key: {file: keys/ak1/public.pem}   # or {fingerprint: ...}, {pem: ...}
        secret: env:AK1_SECRET                          # or file:PATH, stdin; or absent
        permissions:
          - {path: /alpha, user: alice, levels: [list, read]}
          - {path: /, group: eng, levels: [list]}

A field left out of an object is left as it is on the node (a node user's password,
acls; a key's configuration, verification key; its permissions). A secret never
appears: only a reference to where it is. Every error names the file, the line and
the place in the document, on one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from nodecli.declare.yaml_values import Again as _Again
from nodecli.declare.yaml_values import Bad as _Bad
from nodecli.declare.yaml_values import Budget, TooMany, marked, quick
from nodecli.errors import UsageError

VERSION = 1
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
SECTIONS = ("version", "transfer_users", "node_users", "access_keys")
SECRET_FORMS = ("env:", "file:", "stdin")


@dataclass(slots=True)
class PermissionSpec:
    path: str
    access_type: str  # user or group
    access_id: str
    levels: tuple[str, ...]

    @property
    def ident(self) -> tuple[str, str, str]:
        return (self.path, self.access_type, self.access_id)

    def name(self) -> str:
        return f"{self.path} {self.access_type} {self.access_id}"


@dataclass(slots=True)
class KeySpec:
    id: str
    storage: dict[str, Any]
    configuration: dict[str, Any] | None = None
    verification_key: tuple[str, str] | None = None  # (file|fingerprint|pem, value)
    secret: str | None = None  # a reference: env:NAME, file:PATH, stdin
    permissions: list[PermissionSpec] | None = None


@dataclass(slots=True)
class Document:
    source: str = "<document>"
    transfer_users: dict[str, dict[str, Any]] | None = None
    node_users: dict[str, dict[str, Any]] | None = None
    access_keys: dict[str, KeySpec] | None = None
    base_dir: str = "."  # where file: references are relative to
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The document as plain data (what ``export`` writes, what a plan embeds)."""
        out: dict[str, Any] = {"version": VERSION}
        if self.transfer_users is not None:
            out["transfer_users"] = {k: dict(v) for k, v in self.transfer_users.items()}
        if self.node_users is not None:
            out["node_users"] = {k: dict(v) for k, v in self.node_users.items()}
        if self.access_keys is not None:
            out["access_keys"] = {k: key_dict(v) for k, v in self.access_keys.items()}
        return out


def key_dict(key: KeySpec) -> dict[str, Any]:
    d: dict[str, Any] = {"storage": dict(key.storage)}
    if key.configuration is not None:
        d["configuration"] = dict(key.configuration)
    if key.verification_key is not None:
        d["verification_key"] = {key.verification_key[0]: key.verification_key[1]}
    if key.secret is not None:
        d["secret"] = key.secret
    if key.permissions is not None:
        d["permissions"] = [{"path": p.path, p.access_type: p.access_id,
                             "levels": list(p.levels)} for p in key.permissions]
    return d


# -- reading: YAML nodes with their lines -------------------------------------------------


def shown_place(where: tuple[Any, ...]) -> str:
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the document"


def _line_of(lines: dict[tuple[Any, ...], int], where: tuple[Any, ...]) -> int | None:
    while True:
        if where in lines:
            return lines[where]
        if not where:
            return None
        where = where[:-1]


def parse(raw: bytes, source: str, base_dir: str = ".") -> Document:
    """The checked document ``raw`` holds; UsageError ``FILE:LINE: place: why`` if not."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise UsageError(f"{source}: larger than {MAX_DOCUMENT_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    if text.lstrip()[:1] == "{":
        fast = _from_json(text, source)
        if fast is not None:
            fast.source, fast.base_dir = source, base_dir
            return fast
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        root = yaml.compose(text, Loader=loader_cls)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{source}{line}: not YAML or JSON: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{source}: not YAML or JSON: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise UsageError(f"{source}: nested too deeply") from None
    lines: dict[tuple[Any, ...], int] = {}
    try:
        if root is None:
            raise _Bad((), "empty: a document starts with 'version: 1'")
        try:
            doc = check(quick(root, Budget(len(raw))))
        except (_Again, _Bad):
            # read again, noting each place's line, so that the error names it
            doc = check(marked(root, (), lines, Budget(len(raw))))
    except _Bad as bad:
        line_no = _line_of(lines, bad.where)
        at = f":{line_no}" if line_no is not None else ""
        raise UsageError(f"{source}{at}: {shown_place(bad.where)}: {bad.message}") from None
    except RecursionError:
        raise UsageError(f"{source}: nested too deeply") from None
    except TooMany as many:
        raise UsageError(f"{source}: its aliases stand for more than {many.limit:,} values "
                         "(a YAML alias bomb?): write them out") from None
    doc.source, doc.base_dir, doc.lines = source, base_dir, lines
    return doc


def _from_json(text: str, source: str) -> Document | None:
    """A JSON document read by the json module; None when the YAML reader must say
    where it is wrong (a schema error, a key given twice: its marks name the line)."""
    import json

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            raise ValueError("a key given twice")
        return out

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source}:{exc.lineno}: not JSON: {exc.msg} (column "
                         f"{exc.colno})") from None
    except (ValueError, RecursionError):
        return None
    try:
        return check(data)
    except _Bad:
        return None


def from_data(data: Any, source: str) -> Document:
    """The checked document of already-read data (a saved plan's): errors name the place."""
    try:
        doc = check(data)
    except _Bad as bad:
        raise UsageError(f"{source}: {shown_place(bad.where)}: {bad.message}") from None
    doc.source = source
    return doc


# -- the schema ---------------------------------------------------------------------------


def _mapping(value: Any, where: tuple[Any, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(where, f"must be a mapping (name: value), not {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, int | float):
        return "a number"
    return "text"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _text(value: Any, where: tuple[Any, ...], what: str = "text") -> str:
    if not isinstance(value, str) or not value:
        raise _Bad(where, f"must be {what}, not {_kind(value) if value != '' else 'empty'}")
    if _CONTROL.search(value):
        raise _Bad(where, "control characters are not allowed")
    return value


def _known(data: dict[str, Any], allowed: tuple[str, ...], where: tuple[Any, ...]) -> None:
    for key in data:
        if key not in allowed:
            raise _Bad((*where, key), f"unknown field (known: {', '.join(allowed)})")


def check(data: Any) -> Document:
    data = _mapping(data, ())
    _known(data, SECTIONS, ())
    if "version" not in data:
        raise _Bad((), "no 'version: 1'")
    version = data["version"]
    if version != VERSION or isinstance(version, bool):
        raise _Bad(("version",), f"unsupported version {version!r} (this nodecli reads "
                                 f"version {VERSION})")
    doc = Document()
    if "transfer_users" in data:
        doc.transfer_users = _transfer_users(data["transfer_users"])
    if "node_users" in data:
        doc.node_users = _node_users(data["node_users"])
    if "access_keys" in data:
        doc.access_keys = _access_keys(data["access_keys"])
    return doc


def _section(value: Any, where: tuple[Any, ...]) -> dict[str, Any]:
    return {} if value is None else _mapping(value, where)


def _transfer_users(value: Any) -> dict[str, dict[str, Any]]:
    from nodecli.users.manage import validate_docroot, validate_name
    from nodecli.users.restrictions import RestrictionError, parse_restriction

    out: dict[str, dict[str, Any]] = {}
    for name, entry in _section(value, ("transfer_users",)).items():
        where = ("transfer_users", name)
        _checked(validate_name, name, where, "transfer user name")
        entry = _section(entry, where)
        _known(entry, ("restrictions", "docroot"), where)
        if "restrictions" in entry and "docroot" in entry:
            raise _Bad(where, "restrictions or a docroot, not both")
        clean: dict[str, Any] = {}
        if "restrictions" in entry:
            items = entry["restrictions"]
            if not isinstance(items, list):
                raise _Bad((*where, "restrictions"), "must be a list")
            for i, r in enumerate(items):
                _text(r, (*where, "restrictions", i))
                try:
                    parse_restriction(r)
                except RestrictionError as exc:
                    raise _Bad((*where, "restrictions", i), str(exc)) from None
            clean["restrictions"] = list(items)
        if "docroot" in entry:
            clean["docroot"] = _checked(validate_docroot, _text(entry["docroot"],
                                                                (*where, "docroot")),
                                        (*where, "docroot"))
        out[name] = clean
    return out


def _checked(fn: Any, value: Any, where: tuple[Any, ...], *args: Any) -> Any:
    from nodecli.errors import NodecliError

    try:
        return fn(value, *args)
    except (NodecliError, ValueError) as exc:
        raise _Bad(where, getattr(exc, "message", None) or str(exc)) from None


def _node_users(value: Any) -> dict[str, dict[str, Any]]:
    from nodecli.users.manage import parse_acls, validate_name
    from nodecli.users.passwords import is_valid_hash

    out: dict[str, dict[str, Any]] = {}
    acl_lists: dict[tuple[str, ...], list[str]] = {}  # a few lists, many users
    for name, entry in _section(value, ("node_users",)).items():
        where = ("node_users", name)
        _checked(validate_name, name, where)
        entry = _mapping(entry, where)
        _known(entry, ("transfer_user", "password", "acls"), where)
        if "transfer_user" not in entry:
            raise _Bad(where, "no transfer_user")
        clean: dict[str, Any] = {"transfer_user": _text(entry["transfer_user"],
                                                        (*where, "transfer_user"))}
        if "password" in entry:
            pw = entry["password"]
            if not isinstance(pw, str) or not is_valid_hash(pw):
                raise _Bad((*where, "password"), "must be a password hash ($scrypt$...), "
                                                  "never the password itself")
            clean["password"] = pw
        if "acls" in entry:
            acls = entry["acls"]
            if not isinstance(acls, list) or not all(isinstance(a, str) for a in acls):
                raise _Bad((*where, "acls"), "must be a list of words")
            key = tuple(acls)
            if key not in acl_lists:
                acl_lists[key] = _checked(parse_acls, acls, (*where, "acls"))
            clean["acls"] = list(acl_lists[key])
        out[name] = clean
    return out


def _access_keys(value: Any) -> dict[str, KeySpec]:
    from nodecli.node.access_keys import AK_ID_RE, STORAGE_TYPES

    out: dict[str, KeySpec] = {}
    for ak, entry in _section(value, ("access_keys",)).items():
        where = ("access_keys", ak)
        if not AK_ID_RE.match(ak):
            raise _Bad(where, "an access key id is letters, digits and . _ @ + - "
                              "(at most 128)")
        entry = _mapping(entry, where)
        _known(entry, ("storage", "configuration", "verification_key", "secret",
                       "permissions"), where)
        if "storage" not in entry:
            raise _Bad(where, "no storage (type and path)")
        storage = _mapping(entry["storage"], (*where, "storage"))
        _known(storage, ("type", "path"), (*where, "storage"))
        stype = storage.get("type", "local")
        if stype not in STORAGE_TYPES:
            raise _Bad((*where, "storage", "type"),
                       f"storage type {stype!r} is not supported ({', '.join(STORAGE_TYPES)})")
        path = _text(storage.get("path"), (*where, "storage", "path"), "an absolute path")
        if not path.startswith("/"):
            raise _Bad((*where, "storage", "path"), "must be absolute (start with /)")
        key = KeySpec(ak, {"type": stype, "path": path})
        if "configuration" in entry:
            conf = _section(entry["configuration"], (*where, "configuration"))
            key.configuration = conf
        if "verification_key" in entry:
            key.verification_key = _verification(entry["verification_key"],
                                                 (*where, "verification_key"))
        if "secret" in entry:
            key.secret = _secret_ref(entry["secret"], (*where, "secret"))
        if "permissions" in entry:
            key.permissions = _permissions(entry["permissions"], (*where, "permissions"))
        out[ak] = key
    return out


def _verification(value: Any, where: tuple[Any, ...]) -> tuple[str, str]:
    value = _mapping(value, where)
    forms = ("file", "fingerprint", "pem")
    _known(value, forms, where)
    if len(value) != 1:
        raise _Bad(where, "one of file, fingerprint or pem")
    ((kind, text),) = value.items()
    if kind == "pem":
        if not isinstance(text, str) or "BEGIN PUBLIC KEY" not in text:
            raise _Bad((*where, kind), "must be a PEM public key")
        return kind, text
    return kind, _text(text, (*where, kind))


def _secret_ref(value: Any, where: tuple[Any, ...]) -> str:
    """``env:NAME``, ``file:PATH`` or ``stdin``: where the secret is, never the secret."""
    text = _text(value, where, "a reference (env:NAME, file:PATH or stdin)")
    if text == "stdin":
        return text
    if text.startswith("env:") and len(text) > 4:
        import re

        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", text[4:]):
            raise _Bad(where, f"not a variable name: {text[4:]!r}")
        return text
    if text.startswith("file:") and len(text) > 5:
        return text
    raise _Bad(where, "a secret is never written here: give env:NAME, file:PATH or stdin "
                      "(or leave it out: a new one is made and stored)")


def _permissions(value: Any, where: tuple[Any, ...]) -> list[PermissionSpec]:
    from nodecli.node.permissions import ACCESS_LEVELS

    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(where, f"must be a list, not {_kind(value)}")
    out: list[PermissionSpec] = []
    seen: set[tuple[str, str, str]] = set()
    for i, entry in enumerate(value):
        here = (*where, i)
        entry = _mapping(entry, here)
        _known(entry, ("path", "user", "group", "levels"), here)
        path = normal_path(_text(entry.get("path"), (*here, "path"), "a path"), here)
        if ("user" in entry) == ("group" in entry):
            raise _Bad(here, "a user or a group (one of the two)")
        kind = "user" if "user" in entry else "group"
        holder = _text(str(entry[kind]) if isinstance(entry[kind], int) and
                       not isinstance(entry[kind], bool) else entry[kind], (*here, kind))
        levels = entry.get("levels")
        if not isinstance(levels, list) or not levels:
            raise _Bad((*here, "levels"), f"a list of {', '.join(ACCESS_LEVELS)}")
        for j, level in enumerate(levels):
            if level not in ACCESS_LEVELS:
                raise _Bad((*here, "levels", j), f"unknown level {level!r} (levels: "
                                                 f"{', '.join(ACCESS_LEVELS)})")
        spec = PermissionSpec(path, kind, holder, canonical_levels(levels))
        if spec.ident in seen:
            raise _Bad(here, f"a second permission for {kind} {holder} on {path}")
        seen.add(spec.ident)
        out.append(spec)
    return out


def canonical_levels(levels: Any) -> tuple[str, ...]:
    """Levels in one order (the node's list), each once: two equal sets compare equal."""
    from nodecli.node.permissions import ACCESS_LEVELS

    given = {str(x) for x in levels} if isinstance(levels, list) else set()
    return tuple(x for x in ACCESS_LEVELS if x in given) + tuple(
        sorted(given - set(ACCESS_LEVELS)))


def normal_path(path: str, where: tuple[Any, ...] = ()) -> str:
    """``/a//b/`` -> ``/a/b``: one spelling per folder."""
    from nodecli.node.paths import split_path

    try:
        return "/" + "/".join(split_path(path))
    except UsageError as exc:
        raise _Bad((*where, "path"), exc.message) from None


# -- writing ------------------------------------------------------------------------------


def dump(data: dict[str, Any], fmt: str) -> str:
    """The document as YAML (block style, in the order given) or JSON."""
    if fmt == "json":
        import json

        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return str(yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True,
                         default_flow_style=False, width=100))


CSV_COLUMNS = ("name", "transfer_user", "password_hash", "acls")


def from_csv(raw: bytes, source: str) -> dict[str, Any]:
    """A csv of node users (a header names ``name``, ``transfer_user``, optional
    ``password_hash`` and ``acls``, split at ``;`` or spaces) as a document."""
    import csv
    import io

    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    missing = [c for c in ("name", "transfer_user") if c not in header]
    if missing:
        raise UsageError(f"{source}:1: the header has no {missing[0]} column (columns: "
                         f"{', '.join(CSV_COLUMNS)})")
    unknown = [c for c in header if c not in CSV_COLUMNS]
    if unknown:
        raise UsageError(f"{source}:1: unknown column {unknown[0]!r} (columns: "
                         f"{', '.join(CSV_COLUMNS)})")
    users: dict[str, Any] = {}
    try:
        for row in reader:
            line = reader.line_num
            if None in row:
                raise UsageError(f"{source}:{line}: more fields than the header has")
            name = (row.get("name") or "").strip()
            entry: dict[str, Any] = {"transfer_user": (row.get("transfer_user") or "").strip()}
            if (row.get("password_hash") or "").strip():
                entry["password"] = row["password_hash"].strip()
            acls = (row.get("acls") or "").replace(";", " ").split()
            if acls:
                entry["acls"] = acls
            if name in users:
                raise UsageError(f"{source}:{line}: node user {name!r} a second time")
            try:
                _node_users({name: entry})
            except _Bad as bad:
                # (an empty name is no place to show: the column is)
                place = shown_place(bad.where[1:]) if name else "name"
                raise UsageError(f"{source}:{line}: {place}: {bad.message}") from None
            users[name] = entry
    except csv.Error as exc:
        raise UsageError(f"{source}:{reader.line_num}: not csv: {exc}") from None
    return {"version": VERSION, "node_users": users}
