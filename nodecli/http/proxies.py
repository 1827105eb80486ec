"""Which HTTP proxy a request to a node or service goes through.

Precedence: ``--proxy URL`` > the profile's ``proxy`` > the environment, read as curl
and Python's urllib read it: ``https_proxy``/``HTTPS_PROXY`` for https:// URLs,
``http_proxy`` (and ``HTTP_PROXY`` outside CGI) for http:// ones, then
``all_proxy``/``ALL_PROXY``; ``no_proxy``/``NO_PROXY`` (names, ``.domain`` suffixes, IP
addresses, CIDR ranges, ``*``) sends a host direct, whatever named the proxy.

HTTPS goes through the proxy in a CONNECT tunnel, so TLS is still between nodecli and
the node and the node's certificate is verified as without a proxy. A proxy's user name
may be in its URL; its password never comes from the command line: from the URL in an
environment variable, ``NODECLI_PROXY_PASSWORD``, the profile's secret store, or a
prompt (resolved by the caller, see :attr:`Proxy.needs_password`).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import quote, unquote, urlsplit

from nodecli.errors import UsageError

PROXY_SCHEMES = ("http", "https")
# a DNS name (letters, digits, '-', '.'), an IPv4 address, or an IPv6 one (urlsplit has
# taken its brackets off)
_HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?|[0-9A-Fa-f:.]{2,45}")
PASSWORD_ENV = "NODECLI_PROXY_PASSWORD"  # noqa: S105 - a variable name


class ProxyError(UsageError):
    pass


@dataclass(frozen=True, slots=True)
class Proxy:
    scheme: str
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    source: str = ""  # "--proxy", "profile 'prod'", "HTTPS_PROXY"

    @property
    def needs_password(self) -> bool:
        return self.username is not None and self.password is None

    def with_password(self, password: str) -> Proxy:
        return replace(self, password=password)

    def _netloc(self, password: str | None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = ""
        if self.username is not None:
            user = quote(self.username, safe="")
            if password is not None:
                user += ":" + password
            user += "@"
        return f"{user}{host}:{self.port}"

    def url(self) -> str:
        """The URL the HTTP library is given (credentials included)."""
        pw = quote(self.password, safe="") if self.password is not None else None
        return f"{self.scheme}://{self._netloc(pw)}"

    def shown(self) -> str:
        """For messages and -v: the password as ``***``."""
        return f"{self.scheme}://{self._netloc('***' if self.password else None)}"


def parse_proxy(text: str, source: str = "--proxy", *,
                allow_password: bool = False) -> Proxy:
    """``http://[user[:password]@]host[:port]``; a password only where ``allow_password``
    (an environment variable), never on the command line or in the config."""
    value = (text or "").strip()
    if any(ord(c) < 33 or 0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise ProxyError(f"{source}: a proxy URL has no spaces, control characters or "
                         "bytes that are not UTF-8")
    if "://" not in value:
        value = "http://" + value  # curl's default scheme for a proxy
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ProxyError(f"{source}: {text[:80]!r} is not a proxy URL "
                         "(http://[user@]host:port)") from None
    if parts.scheme not in PROXY_SCHEMES:
        raise ProxyError(f"{source}: proxy scheme {parts.scheme!r} is not supported "
                         "(http:// or https://)")
    if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ProxyError(f"{source}: {text[:80]!r} is not a proxy URL "
                         "(http://[user@]host:port)")
    if parts.password is not None and not allow_password:
        raise ProxyError(f"{source}: a proxy password does not go on the command line or "
                         "in the config",
                         hint=f"give the user only (http://user@host:port); the password "
                              f"comes from {PASSWORD_ENV}, the profile's secret store or "
                              "a prompt")
    if not _HOST_RE.fullmatch(parts.hostname) or not _address_ok(parts.hostname):
        raise ProxyError(f"{source}: {parts.hostname[:60]!r} is not a host name or address "
                         "(an international name goes in its xn-- form)")
    default_port = 443 if parts.scheme == "https" else 1080
    return Proxy(parts.scheme, parts.hostname, port or default_port,
                 unquote(parts.username) if parts.username is not None else None,
                 unquote(parts.password) if parts.password is not None else None, source)


def _address_ok(host: str) -> bool:
    """What looks like an IP address must be one (an IPv6 one always has a ':')."""
    if ":" in host or re.fullmatch(r"[0-9.]+", host):
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return False
    return True


def bypassed(host: str, no_proxy: str) -> bool:
    """True when ``host`` matches an entry of a ``NO_PROXY`` list."""
    host = host.lower().strip("[]").rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry.strip("[]"), strict=False):
                    return True
            except ValueError:
                pass
            continue
        name = entry.lstrip(".").rsplit(":", 1)[0] if not entry.startswith("[") else entry
        if host == name or host.endswith("." + name):
            return True
    return False


def _env(env: Mapping[str, str], name: str) -> str | None:
    for key in (name.lower(), name.upper()):
        if key == "HTTP_PROXY" and "REQUEST_METHOD" in env:
            continue  # CGI: a client's Proxy: header would land in HTTP_PROXY (httpoxy)
        value = env.get(key)
        if value:
            return value
    return None


def proxy_for(url: str, env: Mapping[str, str], explicit: str | None = None,
              explicit_source: str = "--proxy") -> Proxy | None:
    """The proxy for requests to ``url`` (None: direct)."""
    parts = urlsplit(url)
    no_proxy = _env(env, "no_proxy") or ""
    if no_proxy and bypassed(parts.hostname or "", no_proxy):
        return None
    if explicit:
        return parse_proxy(explicit, explicit_source)
    for name in (f"{parts.scheme}_proxy", "all_proxy"):
        value = _env(env, name)
        if value:
            which = next(k for k in (name.lower(), name.upper()) if env.get(k) == value)
            return parse_proxy(value, which, allow_password=True)
    return None
