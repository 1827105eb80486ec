"""``node health``: the checks that tell whether a node's event pipeline and tokens
work, each with a state (ok, warning, critical, unknown, or skipped when the check
cannot apply to this node or login) and a one-line reason.

Reachable and authenticated; TLS certificate days left; clock offset; node version
against the features nodecli uses; activity event logging (the node's, and the profile
access key's own); age of the event log; the registered verification key against the
local key; failed transfers in the last hour; the expiry of the profile's token.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nodecli.errors import ExitCode, NodecliError, UsageError

OK, WARNING, CRITICAL, UNKNOWN = "ok", "warning", "critical", "unknown"
#: a check that cannot apply to this node or login (a setting the node does not report,
#: what a bearer token may not read): said with its reason, never a state of the node
SKIPPED = "skipped"
#: the Nagios plugin exit code of each state (also the value of nodecli_health_state)
CODES = {OK: 0, WARNING: 1, CRITICAL: 2, UNKNOWN: 3}
#: which state wins (the monitoring-plugins rule): CRITICAL > WARNING > UNKNOWN > OK; not
#: the order of the codes, since UNKNOWN (3) must not hide a CRITICAL (2)
SEVERITY = {OK: 0, UNKNOWN: 1, WARNING: 2, CRITICAL: 3}

#: what nodecli uses, and the node version that has it
FEATURES = (("events", (3, 6, 0)), ("events by id", (3, 7, 3)),
            ("file lock events", (3, 7, 4)), ("per-key activity logging", (3, 8, 0)),
            ("bearer tokens", (3, 8, 0)))

#: (warning, critical) defaults; cert and token count down, the others up
DEFAULTS = {"cert": (30 * 86400.0, 7 * 86400.0), "skew": (2.0, 5.0),
            "fresh": (3600.0, 86400.0), "token": (600.0, 60.0), "failed": (1.0, 10.0)}


@dataclass(slots=True)
class Check:
    name: str
    state: str
    reason: str
    value: float | None = None  # for perfdata and metrics
    unit: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.name, "state": self.state, "reason": self.reason,
                "value": self.value}


@dataclass(slots=True)
class Thresholds:
    warn: dict[str, float] = field(default_factory=lambda: {k: v[0] for k, v in
                                                            DEFAULTS.items()})
    crit: dict[str, float] = field(default_factory=lambda: {k: v[1] for k, v in
                                                            DEFAULTS.items()})

    def update(self, text: str | None, which: str) -> None:
        """``cert=30d,skew=2s,fresh=1h,token=10m,failed=1`` for --warn / --crit."""
        if not text:
            return
        from nodecli.timeparse import TimeParseError, parse_duration

        target = self.warn if which == "warn" else self.crit
        for item in text.split(","):
            key, _, raw = item.strip().partition("=")
            if key not in DEFAULTS or not raw:
                raise UsageError(f"--{which}: {item[:40]!r} is not NAME=VALUE with NAME one "
                                 f"of {', '.join(DEFAULTS)}")
            try:
                target[key] = float(raw) if key == "failed" else \
                    parse_duration(raw).total_seconds()
            except (TimeParseError, ValueError):
                raise UsageError(f"--{which}: {item[:40]!r}: a duration (30d, 2s) or, for "
                                 "failed, a count") from None


def worst(checks: list[Check]) -> str:
    """The state of them all: CRITICAL > WARNING > UNKNOWN > OK; skipped checks count
    for nothing (all skipped, or none: OK)."""
    return max((c.state for c in checks if c.state != SKIPPED), key=SEVERITY.__getitem__,
               default=OK)


# A threshold is reached AT equality (the documented rule, docs/monitoring.md): a value
# that grows (skew, failed transfers) is warning from ``value == warn`` on, and one that
# counts down (certificate, token) is warning from ``left == warn`` on.
def _up(value: float, name: str, t: Thresholds) -> str:
    return CRITICAL if value >= t.crit[name] else WARNING if value >= t.warn[name] else OK


def _down(value: float, name: str, t: Thresholds) -> str:
    return CRITICAL if value <= t.crit[name] else WARNING if value <= t.warn[name] else OK


def run_checks(client: Any, *, access_key: str | None, local_key: Any,
               thresholds: Thresholds, now: float | None = None) -> list[Check]:
    """Every check against the node behind ``client`` (nothing is changed)."""
    now = time.time() if now is None else now
    asked = "GET /info"
    try:
        if client.endpoint.auth.kind == "bearer":  # a token does not reach /info on a node
            asked = "GET /access_keys/self"
            client.json("GET", "/access_keys/self")
            info: Any = {}
        else:
            info = client.json("GET", "/info")
    except NodecliError as exc:
        kind = type(exc).__name__.replace("Error", "").lower()
        failed = [Check("reachable", CRITICAL, f"{asked}: {kind}: {exc.message[:200]}")]
        if "TLS" in exc.message or "certificate" in exc.message:
            failed.append(_cert(client, thresholds, now))  # say why: expired, untrusted
        return failed
    if not isinstance(info, dict):
        return [Check("reachable", CRITICAL, "GET /info did not answer with an object")]
    checks = [Check("reachable", OK, f"{asked} answered ({client.endpoint.auth.kind} login)")]
    checks.append(_cert(client, thresholds, now))
    bearer = client.endpoint.auth.kind == "bearer"
    checks.append(_skew(client, info, thresholds, now))
    checks.append(Check("version", SKIPPED, "a bearer token may not read GET /info: the "
                        "version is not known") if bearer else _version(info))
    checks += _logging(client, info, access_key, bearer)
    later = [_key_match(client, access_key, local_key)] if access_key else []
    later.append(_failed_transfers(client, thresholds, now))
    # GET /events last: a node closes the connection after it (interface.md 4.1), and
    # every request before it goes on the connection the first one opened
    checks.append(_freshness(client, thresholds, now, bearer))
    checks += later
    token = _token(client, thresholds, now)
    if token is not None:
        checks.append(token)
    return checks


def _cert(client: Any, t: Thresholds, now: float) -> Check:
    """Days left on the node's TLS certificate: the one the client's connection verified
    (no handshake of its own); after a failed login, a handshake of its own, verified as
    the client verifies, then one that only reads it, to say why."""
    from urllib.parse import urlsplit

    ep = client.endpoint
    parts = urlsplit(ep.base_url)
    if parts.scheme != "https":
        return Check("certificate", UNKNOWN, "plain http: no certificate")
    untrusted: str | None = None
    der = client.peer_certificate
    if der is not None:
        return _cert_check(der, None, t, now)
    if ep.proxy is not None:
        return Check("certificate", UNKNOWN, "through a proxy: not probed")
    import ssl

    address = (parts.hostname or "", parts.port or 443)
    try:
        der = _peer_certificate(address, client.tls_context(), ep.connect_timeout)
    except ssl.SSLCertVerificationError as exc:
        # read it anyway (nothing is sent) to say when it expired or expires
        untrusted = exc.verify_message or str(exc)
        reader = ssl.create_default_context()
        reader.check_hostname, reader.verify_mode = False, ssl.CERT_NONE
        try:
            der = _peer_certificate(address, reader, ep.connect_timeout)
        except OSError as again:
            return Check("certificate", CRITICAL, f"TLS handshake failed: {again}"[:200])
    except OSError as exc:
        return Check("certificate", CRITICAL, f"TLS handshake failed: {exc}"[:200])
    return _cert_check(der, untrusted, t, now)


def _cert_check(der: bytes | None, untrusted: str | None, t: Thresholds, now: float) -> Check:
    if not der:
        return Check("certificate", UNKNOWN, "the node showed no certificate")
    from cryptography import x509

    cert = x509.load_der_x509_certificate(der)
    left = cert.not_valid_after_utc.timestamp() - now
    days = left / 86400
    when = f"{cert.not_valid_after_utc:%Y-%m-%d}"
    if left <= 0:
        return Check("certificate", CRITICAL, f"expired on {when} ({abs(days):.0f} days ago)",
                     round(days, 1), "d")
    if untrusted is not None:
        return Check("certificate", CRITICAL, f"not trusted: {untrusted[:120]} (expires "
                     f"{when})", round(days, 1), "d")
    return Check("certificate", _down(left, "cert", t), f"expires {when} ({days:.0f} days left)",
                 round(days, 1), "d")


def _peer_certificate(address: tuple[str, int], context: Any, wait: float) -> bytes | None:
    import socket

    # its own handshake, bounded as the client's connections are (--node-timeout)
    with socket.create_connection(address, timeout=min(wait, 10.0)) as raw, \
            context.wrap_socket(raw, server_hostname=address[0]) as tls:
        der: bytes | None = tls.getpeercert(binary_form=True)
        return der


def _skew(client: Any, info: dict[str, Any], t: Thresholds, now: float) -> Check:
    from nodecli.timeparse import TimeParseError, parse_iso8601

    offset = client.clock_offset
    source = "Date header"
    text = info.get("current_time")
    if isinstance(text, str):
        try:
            offset = parse_iso8601(text).timestamp() - now
            source = "/info current_time"
        except TimeParseError:
            pass
    if offset is None:
        return Check("clock", UNKNOWN, "the node says no time")
    where = "ahead of" if offset >= 0 else "behind"
    return Check("clock", _up(abs(offset), "skew", t),
                 f"{abs(offset):.1f} s {where} this machine ({source})",
                 round(offset, 2), "s")


def _version(info: dict[str, Any]) -> Check:
    from nodecli.node.info import version_tuple

    version = info.get("version")
    if not isinstance(version, str) or not version:
        return Check("version", UNKNOWN, "the node says no version")
    have = version_tuple(version)
    missing = [name for name, since in FEATURES if have < since]
    if missing:
        return Check("version", WARNING, f"{version}: without {', '.join(missing)}")
    return Check("version", OK, f"{version}: every feature nodecli uses")


def _logging(client: Any, info: dict[str, Any], access_key: str | None,
             bearer: bool) -> list[Check]:
    from nodecli.node.info import logging_setting

    node_setting = logging_setting(info)
    checks = [Check("logging", SKIPPED, "a bearer token may not read GET /info: the node's "
                    "activity_event_logging is not known" if bearer else
                    "the node does not report activity_event_logging")
              if node_setting is None else
              Check("logging", OK if node_setting else WARNING,
                    "activity event logging is on" if node_setting else
                    "activity event logging is off: the node logs no events")]
    if access_key:
        from nodecli.node.access_keys import get_access_key, key_logging

        try:
            own = key_logging(get_access_key(client, access_key))
        except NodecliError as exc:
            checks.append(Check("key logging", UNKNOWN, f"{access_key}: {exc.message[:150]}"))
        else:
            checks.append(Check("key logging", WARNING if own is False else OK,
                                f"{access_key}: " + ("logging off for this key" if own is False
                                                     else "logged" if own else
                                                     "follows the node setting")))
    return checks


def _freshness(client: Any, t: Thresholds, now: float, bearer: bool = False) -> Check:
    """Whether events arrived lately: any within the warning window is ok. A bearer
    token sees only the events of what it may read: finding none says nothing of the
    node, so that is skipped, not a stale node."""
    from nodecli.node.events.pages import EventFilter, build_params, fetch_page

    for limit, state in ((t.warn["fresh"], OK), (t.crit["fresh"], WARNING)):
        since = datetime.fromtimestamp(now - limit, UTC)
        try:
            page = fetch_page(client, "/events",
                              build_params(EventFilter(), since=since, token=None, count=1))
        except NodecliError as exc:
            if bearer and exc.exit_code == ExitCode.AUTH:
                return Check("fresh events", SKIPPED, "this bearer token may not read the "
                             f"node's events: {exc.message[:120]}")
            return Check("fresh events", UNKNOWN, f"GET /events: {exc.message[:150]}")
        if len(page):
            from nodecli.timeparse import describe_delta

            return Check("fresh events", state,
                         f"an event within the last {describe_delta(limit)}")
    from nodecli.timeparse import describe_delta

    if bearer:
        return Check("fresh events", SKIPPED, "this bearer token sees no event in the last "
                     f"{describe_delta(t.crit['fresh'])}, which says nothing of the node's "
                     "log (a token sees only the events of what it may read)")
    return Check("fresh events", CRITICAL,
                 f"no event in the last {describe_delta(t.crit['fresh'])}")


def _key_match(client: Any, access_key: str, local_key: Any) -> Check:
    from nodecli.node.access_keys import get_access_key
    from nodecli.tokens.keys import key_fingerprint, load_public_key_pem

    try:
        pem = get_access_key(client, access_key).get("token_verification_key")
    except NodecliError as exc:
        return Check("verification key", UNKNOWN, f"{access_key}: {exc.message[:150]}")
    if not isinstance(pem, str) or not pem.strip():
        return Check("verification key", WARNING, f"{access_key} has none registered: "
                                                  "bearer tokens are refused")
    if local_key is None:
        return Check("verification key", UNKNOWN, f"no local key pair for {access_key}")
    try:
        remote = key_fingerprint(load_public_key_pem(pem, "token_verification_key"))
    except NodecliError:
        return Check("verification key", CRITICAL, f"{access_key}: the registered key "
                                                   "is unreadable")
    mine = key_fingerprint(local_key)
    if remote != mine:
        return Check("verification key", CRITICAL, f"{access_key}: registered {remote} is "
                                                   f"not the local key {mine}")
    return Check("verification key", OK, f"{access_key}: {mine} matches the local key")


def _failed_transfers(client: Any, t: Thresholds, now: float) -> Check:
    from nodecli.node.transfers import LiveTransfers

    try:
        found = LiveTransfers(client).refresh()  # (in pages as large as the node allows)
    except NodecliError as exc:
        return Check("failed transfers", UNKNOWN, f"GET /ops/transfers: {exc.message[:150]}")
    hour = (now - 3600) * 1e6
    failed = [x for x in found if x.get("status") not in ("running", "completed", "cancelled")
              and isinstance(x.get("end_time_usec"), int) and x["end_time_usec"] >= hour]
    return Check("failed transfers", _up(len(failed), "failed", t),
                 f"{len(failed)} in the last hour", float(len(failed)))


def _token(client: Any, t: Thresholds, now: float) -> Check | None:
    auth = client.endpoint.auth
    if auth.kind != "bearer":
        return None
    source = auth.source
    if source is not None and hasattr(source, "minted"):
        return Check("token", OK, "minted here, renewed before it expires")
    from nodecli.tokens.wire import TokenError, decode_unverified, token_expiry

    try:
        expires = token_expiry(decode_unverified(auth.bearer() or "").claims)
    except (TokenError, NodecliError):
        return Check("token", UNKNOWN, "the bearer token does not decode")
    if expires is None:
        return Check("token", UNKNOWN, "the bearer token says no expiry")
    left = expires.timestamp() - now
    from nodecli.timeparse import describe_delta

    if left <= 0:
        return Check("token", CRITICAL, f"expired {describe_delta(-left)} ago", 0.0, "s")
    return Check("token", _down(left, "token", t), f"expires in {describe_delta(left)}",
                 round(left), "s")

