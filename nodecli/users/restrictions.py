"""Transfer-user storage restrictions (user data field ``file_restriction``).

A restriction is a glob over a storage URL: ``?`` matches one character, ``*`` any
run, ``\\`` escapes the next character. A leading ``!`` turns it into a rejecting
rule. The accepted storage forms (interface.md 5.2, field-notes) are:

========================  ==============================================
local, Unix-like          ``file:////folder/*``, ``file:////*``
local, Windows            ``file:///c%3A/folder/*``, ``file:///c*``
object storage            ``s3://*``, ``azu://*``, ``azure-files://*``, ``adl://*``,
                          ``swift://*``, ``oss://*``, ``gs://*``, ``google-gcs://*``,
                          ``hdfs://*``
streams                   ``*``, ``udp://*``, ``tcp://*``, ``udp://host*``,
                          ``udp://host:5000*``
========================  ==============================================

Several restrictions can be written as one delimiter-prefixed string whose first
character is the delimiter: ``|file:////data/mnt1/*|s3://mys3/bucket/*``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

OBJECT_SCHEMES = (
    "s3", "azu", "azure-files", "adl", "swift", "oss", "gs", "google-gcs", "hdfs",
)
STREAM_SCHEMES = ("udp", "tcp")

ACCEPTED_FORMS = (
    "file:////folder/*, file:////*, file:///c%3A/folder/*, file:///c*, "
    + ", ".join(f"{s}://*" for s in OBJECT_SCHEMES)
    + ", *, udp://*, tcp://*, udp://host*, udp://host:5000*"
    + " (prefix ! to reject; ? * and \\ escapes are glob syntax)"
)

MAX_RESTRICTION_LENGTH = 4096
# Characters that can serve as list delimiter: punctuation that is not glob,
# escape, negation, URL or percent syntax.
LIST_DELIMITERS = "|,;#~^&+= "

# (patterns compiled on first use, by re's cache)
_WINDOWS_DRIVE = r"^[A-Za-z](%3[Aa](/.*)?|\*.*)$"
_STREAM_TARGET = r"^(?P<host>[A-Za-z0-9.\-\[\]:*?\\_]*?)(:(?P<port>[0-9]+))?\*?$"


class RestrictionError(ValueError):
    """One restriction (or list) is malformed; the message names it and the fix."""


@dataclass(frozen=True, slots=True)
class Restriction:
    """One parsed restriction. ``storage`` is "local", "local-windows", an object scheme,
    "udp", "tcp" or "stream"; ``pattern`` the glob without the leading "!"."""

    raw: str
    negated: bool
    storage: str
    pattern: str

    @property
    def accepts(self) -> bool:
        return not self.negated


def _show(text: str) -> str:
    shown = text.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _fail(raw: str, why: str) -> RestrictionError:
    return RestrictionError(f"invalid restriction {_show(raw)!r}: {why}; accepted forms: "
                            f"{ACCEPTED_FORMS}")


def _check_glob_syntax(raw: str, pattern: str) -> None:
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= len(pattern):
                raise _fail(raw, "ends with a lone escape '\\'")
            i += 2
            continue
        if ch == "%":
            if not re.match(r"%[0-9A-Fa-f]{2}", pattern[i : i + 3]):
                raise _fail(raw, f"bad percent-encoding at position {i + 1}")
        i += 1


def parse_restriction(raw: str) -> Restriction:
    """Validate one restriction and classify its storage. Raises RestrictionError."""
    if not isinstance(raw, str):
        raise RestrictionError("a restriction must be text")
    if not raw:
        raise _fail(raw, "it is empty")
    if len(raw) > MAX_RESTRICTION_LENGTH:
        raise _fail(raw, f"longer than {MAX_RESTRICTION_LENGTH} characters")
    if any(ord(c) < 0x20 or c == "\x7f" or 0x80 <= ord(c) < 0xA0 for c in raw):
        raise _fail(raw, "contains control characters")
    negated = raw.startswith("!")
    pattern = raw[1:] if negated else raw
    if not pattern:
        raise _fail(raw, "nothing follows '!'")
    _check_glob_syntax(raw, pattern)

    if pattern == "*":
        return Restriction(raw, negated, "stream", pattern)
    scheme, sep, rest = pattern.partition("://")
    if not sep:
        raise _fail(raw, "missing a storage scheme such as file:// or s3://")
    scheme_l = scheme.lower()
    if scheme_l == "file":
        if not rest.startswith("/"):
            raise _fail(raw, "a local restriction starts with file:/// ")
        path = rest[1:]
        if path.startswith("/"):
            return Restriction(raw, negated, "local", pattern)
        if re.match(_WINDOWS_DRIVE, path):
            return Restriction(raw, negated, "local-windows", pattern)
        if re.match(r"^[A-Za-z]:", path):
            raise _fail(raw, "percent-encode the drive colon: file:///c%3A/folder/*")
        raise _fail(raw, "use file:////path/* (Unix) or file:///c%3A/path/* (Windows)")
    if scheme_l in OBJECT_SCHEMES:
        if not rest:
            raise _fail(raw, f"nothing after {scheme}:// (use {scheme}://* for all)")
        return Restriction(raw, negated, scheme_l, pattern)
    if scheme_l in STREAM_SCHEMES:
        m = re.match(_STREAM_TARGET, rest)
        if not rest or m is None:
            raise _fail(raw, f"use {scheme_l}://*, {scheme_l}://host* or {scheme_l}://host:5000*")
        port = m.group("port")
        if port is not None and not 1 <= int(port) <= 65535:
            raise _fail(raw, f"port {port} is outside 1-65535")
        return Restriction(raw, negated, scheme_l, pattern)
    raise _fail(raw, f"unknown storage scheme {_show(scheme)!r}")


def split_restriction_list(text: str) -> list[str]:
    """Split a delimiter-prefixed list (``|a|b``); a plain restriction is a list of one."""
    if not text:
        raise RestrictionError("empty restriction list")
    first = text[0]
    if first not in LIST_DELIMITERS:
        return [text]
    items = text[1:].split(first)
    if not items or any(item == "" for item in items):
        raise RestrictionError(
            f"empty restriction in list {_show(text)!r} (delimiter {first!r} doubled or trailing)"
        )
    return items


def parse_restrictions(values: list[str] | tuple[str, ...]) -> list[Restriction]:
    """Expand list forms, validate each, and drop exact duplicates (keeping order)."""
    out: list[Restriction] = []
    seen: set[str] = set()
    for value in values:
        for item in split_restriction_list(value):
            r = parse_restriction(item)
            if r.raw not in seen:
                seen.add(r.raw)
                out.append(r)
    return out


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A node glob as a regular expression for ``fullmatch``: ``?`` one character, ``*``
    any run (``/`` included), ``\\`` makes the next character literal."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "*" else "." if c == "?" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def restriction_matcher(restrictions: list[str] | tuple[str, ...]) -> Callable[[str], bool]:
    """``url -> allowed`` for a transfer user's restrictions: a URL is allowed when some
    accepting restriction matches it and no rejecting one (``!``) does, whatever their
    order."""
    rules = [(raw.startswith("!"), glob_regex(raw[1:] if raw.startswith("!") else raw))
             for raw in restrictions]

    def allowed(url: str) -> bool:
        accepted = False
        for negated, rx in rules:
            if rx.fullmatch(url):
                if negated:
                    return False
                accepted = True
        return accepted

    return allowed


def to_list_string(restrictions: list[str]) -> str:
    """The ``file_restriction`` user-data form: ``|a|b``. The delimiter is the first of
    :data:`LIST_DELIMITERS` that no restriction contains (``file:////a|b`` goes out as
    ``,file:////a|b``), so a node never reads one restriction as several."""
    for delimiter in LIST_DELIMITERS:
        if not any(delimiter in r for r in restrictions):
            return "".join(delimiter + r for r in restrictions)
    raise RestrictionError("these restrictions contain every list delimiter "
                           f"({LIST_DELIMITERS!r}): a node could not read them as a list")
