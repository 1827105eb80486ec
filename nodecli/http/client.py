"""The one HTTP client factory: auth modes, TLS, timeouts, retries, errors, redaction.

Nothing else constructs an HTTP client: domain modules call :func:`open_client` with
an :class:`Endpoint` and use :meth:`Client.request` / :meth:`Client.json`. Policy:

* TLS verification is on (system trust store); ``cacert`` adds a private CA;
  ``insecure`` turns it off and the caller warns on every run.
* Every attempt has explicit connect/read timeouts; every request has an overall
  deadline covering all attempts and the body download (a server dribbling bytes
  cannot hold us forever), and a maximum body size.
* Only idempotent methods (GET, HEAD, PUT, DELETE) are retried: on connect errors,
  timeouts, resets, 429, 502, 503 and 504, with full-jitter exponential backoff,
  honouring ``Retry-After`` (seconds or HTTP-date). POST is never retried.
* Redirects are followed by hand, on the endpoint's own origin only, at most 5
  (:mod:`nodecli.http.redirects`); credentials go to that origin only, so an absolute
  URL given to ``request`` on another host gets none.
* Failures become :mod:`nodecli.errors` exceptions carrying ``status`` and the node's
  own message, whatever the body looks like; ``log`` (-v) sees everything redacted.

Link headers: :mod:`nodecli.http.links`; statuses to errors, Retry-After and backoff:
:mod:`nodecli.http.errors`; request checks and clock skew: :mod:`nodecli.http.checks`.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urljoin

from nodecli import __version__, interrupt
from nodecli.errors import (
    RemoteError,
    UsageError,
)
from nodecli.http.checks import header_safe, peer_certificate, refuse_undecodable
from nodecli.http.deadline import Budget, Watchdog
from nodecli.http.errors import (
    RETRY_STATUSES,
    backoff_delay,
    connect_failure,
    node_message,
    parse_retry_after,
    status_error,
    tls_error,
    with_not_retried,
)
from nodecli.http.links import origin
from nodecli.http.redirects import REDIRECT_STATUSES, redirect_target

USER_AGENT = f"nodecli/{__version__}"
DEFAULT_ACCESS_KEY_HEADER = "X-Vendor-AccessKey"
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
MAX_CA_FILE_BYTES = 16 * 1024 * 1024  # a CA bundle of the whole web is ~250 kB
Log = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Auth:
    """Credentials for one endpoint.

    kind: ``none``; ``basic`` (node user or access key id + password/secret);
    ``bearer`` (node bearer token + access-key header); ``oauth`` (collaboration
    service access token, ``Authorization: Bearer`` only). ``note`` says where the
    credentials came from, for 401 hints ("password from NODECLI_PASSWORD"). The
    password and token are never in its repr.
    """

    kind: str = "none"
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    access_key: str | None = None
    access_key_header: str = DEFAULT_ACCESS_KEY_HEADER
    note: str = ""
    # where a renewing bearer token comes from (nodecli.tokens.source): asked for the
    # token of each request, and once for a new one after a 401
    source: Any = field(default=None, repr=False, compare=False)

    def bearer(self) -> str | None:
        return self.source.current() if self.source is not None else self.token

    def headers(self) -> dict[str, str]:
        if self.kind == "basic":
            raw = f"{self.username or ''}:{self.password or ''}".encode()
            return {"Authorization": "Basic " + base64.b64encode(raw).decode("ascii")}
        if self.kind == "bearer":
            h = {"Authorization": f"Bearer {self.bearer()}"}
            if self.access_key:
                h[self.access_key_header] = self.access_key
            return h
        if self.kind == "oauth":
            return {"Authorization": f"Bearer {self.bearer()}"}
        return {}

    def describe(self) -> str:
        """Which credentials were used, for error hints (never the secret)."""
        if self.kind == "basic" and self.access_key:
            text = f"access key {self.access_key!r} and its secret over HTTP Basic"
        elif self.kind == "basic":
            text = f"HTTP Basic as {self.username!r}"
        elif self.kind == "bearer":
            text = (f"bearer token with access key {self.access_key!r} in header "
                    f"{self.access_key_header}")
        elif self.kind == "oauth":
            text = "OAuth bearer token"
        else:
            text = "no credentials"
        return f"{text} ({self.note})" if self.note else text

    def secrets(self) -> list[str]:
        found = [s for s in (self.password, self.token) if s]
        return found + (self.source.seen() if self.source is not None else [])


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to reach a server. ``deadline`` bounds a request (attempts, waits, body)
    within the command's ``budget`` (:class:`Budget`); ``label`` is the profile name or URL,
    for messages; ``peer`` and ``cacert_env`` are for the TLS hint: what this endpoint is and
    the variable that gives its CA file (node commands read NODECLI_CACERT, service
    commands NODECLI_SERVICE_CACERT)."""

    base_url: str
    auth: Auth = field(default_factory=Auth)
    cacert: str | None = None
    insecure: bool = False
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    deadline: float | None = None
    max_attempts: int = 4
    max_body: int = 64 * 1024 * 1024
    label: str = ""
    peer: str = "node"
    cacert_env: str = "NODECLI_CACERT"
    proxy: Any = None  # nodecli.http.proxies.Proxy: requests go through it (CONNECT for https)
    budget: Budget | None = field(default=None, compare=False)
    # follow a redirect to another origin (never with a body or credentials): api only
    cross_origin_redirects: bool = False

    def with_auth(self, auth: Auth) -> Endpoint:
        return replace(self, auth=auth)

    def replace(self, **changes: Any) -> Endpoint:
        return replace(self, **changes)


@dataclass(slots=True)
class Response:
    """One HTTP answer; header names are lower-case."""

    status: int
    headers: dict[str, str]
    body: bytes
    url: str
    elapsed: float

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        """The body as JSON, read by :func:`nodecli.remote_json.loads` (numbers and
        constants no program could print back are kept as the server's text)."""
        from nodecli.remote_json import TooDeep, loads

        try:
            return loads(self.body)
        except TooDeep:
            raise RemoteError(f"{self.url}: the server sent JSON nested deeper than nodecli "
                              "reads") from None
        except ValueError:
            raise RemoteError(
                f"{self.url}: the server sent a response that is not valid JSON "
                f"({len(self.body)} bytes)"
            ) from None


class _Transient(Exception):
    def __init__(self, reason: str, retry_after: float | None = None,
                 response: Response | None = None, hint: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.hint = reason, hint
        self.retry_after = retry_after
        self.response = response


class Client:
    """A configured HTTP client for one endpoint. Use :func:`open_client`."""

    def __init__(self, endpoint: Endpoint, *, log: Log | None = None,
                 sleep: Callable[[float], None] = interrupt.wait,
                 status: Callable[[str | None], None] | None = None,
                 skew: Callable[[float], None] | None = None) -> None:
        self.endpoint = endpoint
        self._log = log
        # told "what is being retried" before each wait, None when the request is over:
        # a person at a terminal is not left in front of seconds of silence
        self._status = status
        self._retried = False
        # told once when the server's clock (its Date header) is off by more than
        # SKEW_WARN seconds: tokens signed here are judged on that clock
        self._skew = skew
        self.clock_offset: float | None = None
        # the node's TLS certificate (DER) as the last answer's connection verified it
        self.peer_certificate: bytes | None = None
        self._sleep = sleep
        self._origin = origin(endpoint.base_url)
        self._extra_secrets: list[str] = []
        # a bad CA file is a usage error at once, whatever the URL
        self._verify: Any = self._tls_verify()
        self._client: Any = None  # httpx2.Client, made for the first request
        self._watchdog = Watchdog()
        self._budget, self._past_deadline = endpoint.budget or Budget(following=True), ""

    def tls_context(self) -> Any:
        """An ssl context verifying as this client does (to probe a server's certificate)."""
        import ssl

        if self._verify is False:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            return ctx
        return ssl.create_default_context() if self._verify is True else self._verify

    def _tls_verify(self) -> Any:
        """What httpx2 verifies with: the system store, a private CA, or nothing."""
        if self.endpoint.insecure:
            return False
        if not self.endpoint.cacert:
            return True
        import ssl

        from nodecli.fsutil import read_limited

        # Read like every file the user names (a missing one exits 5 naming it; a
        # FIFO is refused instead of blocking), then handed to ssl as data.
        raw = read_limited(self.endpoint.cacert, MAX_CA_FILE_BYTES, "CA file")
        if not raw.strip():
            # ssl takes empty data for none given and trusts the system's store: a CA
            # file truncated to nothing must not widen what is trusted
            raise UsageError(f"cannot use CA file {self.endpoint.cacert}: it is empty")
        cadata: str | bytes = raw
        if b"-----BEGIN" in raw:
            cadata = raw.decode("ascii", "ignore")  # text around the blocks
        try:
            return ssl.create_default_context(cadata=cadata)
        except (ValueError, ssl.SSLError) as exc:
            raise UsageError(f"cannot use CA file {self.endpoint.cacert}: {exc}") from None

    def _httpx_client(self) -> Any:
        if self._client is None:
            import httpx2

            endpoint = self.endpoint
            proxy = endpoint.proxy
            if proxy is not None:
                self.log(f"> via proxy {proxy.shown()} (from {proxy.source})")
            # the environment is read by nodecli.http.proxies (NO_PROXY included), so httpx2
            # is told exactly: no proxy, or this one; TLS to the node inside its tunnel
            try:
                self._client = httpx2.Client(
                    verify=self._verify,
                    timeout=httpx2.Timeout(endpoint.read_timeout,
                                           connect=endpoint.connect_timeout),
                    follow_redirects=False,
                    headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
                    trust_env=False,
                    proxy=proxy.url() if proxy is not None else None,
                )
            except (httpx2.InvalidURL, ValueError) as exc:  # a proxy URL httpx2 refuses
                raise UsageError(f"cannot use proxy {proxy.shown() if proxy else ''}: "
                                 f"{self.redact(str(exc))}") from None
        return self._client

    # -- plumbing ----------------------------------------------------------------------

    def close(self) -> None:
        self._watchdog.close()
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def log(self, text: str) -> None:
        if self._log:
            # (the writer behind ``log`` makes server-sent text safe for a terminal)
            self._log(self.redact(text))

    def add_secret(self, value: str) -> None:
        """Also redact ``value`` (a secret sent in a body) from the log and messages."""
        if value:
            self._extra_secrets.append(value)

    def redact(self, text: str) -> str:
        proxy = self.endpoint.proxy
        extra = [proxy.password] if proxy is not None and proxy.password else []
        for secret in [*self.endpoint.auth.secrets(), *self._extra_secrets, *extra]:
            text = text.replace(secret, "***")
        return text

    def url_for(self, path_or_url: str) -> str:
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", path_or_url):
            return path_or_url
        return urljoin(self.endpoint.base_url.rstrip("/") + "/", path_or_url.lstrip("/"))

    def _headers_for(self, url: str, extra: dict[str, str] | None) -> dict[str, str]:
        headers = dict(extra or {})
        if origin(url) == self._origin:
            auth = self.endpoint.auth
            for name, value in auth.headers().items():
                if not header_safe(value):
                    what = "bearer token" if auth.kind in ("bearer", "oauth") and \
                        name == "Authorization" else f"{name} header"
                    raise UsageError(
                        f"the {what} of {auth.describe()} holds a line break, a control "
                        "character or a character HTTP headers cannot carry",
                        hint="a token file holds one token on one line")
                headers[name] = value
        return headers

    def _renew_token(self, url: str) -> bool:
        """After a 401 from the endpoint's own origin: ask a renewing token source for
        another token (a replaced token file, a freshly minted token)."""
        source = self.endpoint.auth.source
        if source is None or origin(url) != self._origin:
            return False
        from nodecli.errors import NodecliError

        try:
            fresh = bool(source.renew())
        except (NodecliError, OSError) as exc:
            self.log(f"! could not renew the {source.label}: {exc}")
            return False
        self.log(f"! 401: renewed the {source.label}; retrying" if fresh else
                 f"! 401: the {source.label} holds no newer token")
        return fresh

    # -- one attempt -------------------------------------------------------------------

    def _attempt(self, method: str, url: str, *, params: Any, content: bytes | None,
                 headers: dict[str, str], deadline_at: float) -> Response:
        started = time.monotonic()
        if self._log:
            shown = {k: ("***" if k.lower() in ("authorization", "cookie") else v)
                     for k, v in headers.items()}
            self.log(f"> {method} {url}" + (f" params={params}" if params else ""))
            if shown:
                self.log(f"> headers {shown}")
        resp = self._send(method, url, params=params, content=content, headers=headers,
                          deadline_at=deadline_at, started=started)
        self._check_clock(resp, time.time())
        if self._log:
            self.log(f"< {resp.status} {url} ({resp.elapsed * 1000:.0f} ms, "
                     f"{len(resp.body)} bytes)")
            self.log("< headers " + str({k: ("***" if k in ("set-cookie", "authorization")
                                               else v) for k, v in resp.headers.items()}))
        if resp.status in RETRY_STATUSES:
            raise _Transient(f"HTTP {resp.status}", parse_retry_after(resp.header("retry-after")),
                             resp)
        return resp

    def _read_body(self, url: str, chunks: Iterator[bytes], deadline_at: float) -> bytes:
        body: list[bytes] = []
        size = 0
        for chunk in chunks:
            size += len(chunk)
            if size > self.endpoint.max_body:
                raise RemoteError(f"{url}: response larger than "
                                  f"{self.endpoint.max_body} bytes; refused")
            if time.monotonic() > deadline_at:
                raise _Transient(self._past_deadline)
            body.append(chunk)
        return b"".join(body)

    def _send(self, method: str, url: str, *, params: Any, content: bytes | None,
              headers: dict[str, str], deadline_at: float, started: float) -> Response:
        client = self._httpx_client()
        import httpx2

        watchdog = self._watchdog
        watchdog.arm(deadline_at)
        # The watchdog cannot cut a TCP connect (no socket yet) or a TLS handshake (the
        # socket is being wrapped): the connect timeout, which bounds both, never runs
        # past the deadline.
        left = deadline_at - time.monotonic()
        capped = left < self.endpoint.connect_timeout
        timeout = httpx2.Timeout(self.endpoint.read_timeout, connect=max(left, 0.001)
                                 if capped else self.endpoint.connect_timeout)
        try:
            with client.stream(method, url, params=params, content=content, headers=headers,
                               timeout=timeout, extensions={"trace": watchdog.trace}) as r:
                # (before the body: a node that closes the connection after it leaves no
                # TLS object to ask)
                self.peer_certificate = peer_certificate(r.extensions) or self.peer_certificate
                body = self._read_body(url, r.iter_bytes(), deadline_at)
                return Response(r.status_code, {k.lower(): v for k, v in r.headers.items()},
                                body, str(r.url), time.monotonic() - started)
        except httpx2.ConnectTimeout:
            if capped:
                raise _Transient(self._past_deadline) from None
            raise _Transient(f"connection timed out after "
                             f"{self.endpoint.connect_timeout:g} s") from None
        except httpx2.ReadTimeout:
            raise _Transient(f"no answer within the read timeout of "
                             f"{self.endpoint.read_timeout:g} s") from None
        except httpx2.ConnectError as exc:
            if watchdog.fired:
                raise _Transient(self._past_deadline) from None
            text = str(exc)
            tls_problem = tls_error(text, url, self.endpoint.cacert, peer=self.endpoint.peer,
                                    cacert_env=self.endpoint.cacert_env)
            if tls_problem is not None:
                raise tls_problem from None
            reason, hint, transient = connect_failure(exc, url, self.endpoint.proxy)
            if not transient:
                raise RemoteError(f"{method} {self.redact(url)}: {reason}",
                                  hint=hint) from None
            raise _Transient(reason, hint=hint) from None
        except (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError) as exc:
            if watchdog.fired:
                raise _Transient(self._past_deadline) from None
            raise _Transient(f"connection broken: {exc or type(exc).__name__}") from None
        except httpx2.TimeoutException:
            raise _Transient("timed out") from None
        except httpx2.ProxyError as exc:  # the proxy refused the tunnel (407, 403, 502 ...)
            proxy = self.endpoint.proxy
            shown = proxy.shown() if proxy is not None else "the proxy"
            hint = ("check the proxy's user and password (NODECLI_PROXY_PASSWORD, the "
                    "profile's secret or the prompt)" if "407" in str(exc) else None)
            raise RemoteError(f"{method} {self.redact(url)}: proxy {shown} refused: "
                              f"{self.redact(str(exc))}", hint=hint) from None
        except httpx2.DecodingError:
            raise RemoteError(f"{method} {self.redact(url)}: the body does not decode as its "
                              "Content-Encoding says") from None
        except httpx2.UnsupportedProtocol:
            raise UsageError(f"unsupported URL {url!r}: use http:// or https://") from None
        except (httpx2.InvalidURL, httpx2.LocalProtocolError) as exc:
            raise UsageError(f"cannot send {method} {self.redact(url)}: "
                             f"{self.redact(str(exc))}") from None
        finally:
            watchdog.disarm()

    # -- public ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path_or_url: str,
        *,
        params: Any = None,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
        expect: tuple[int, ...] = (200,),
        retry: bool | None = None,
        hint_for: Callable[[int], str | None] | None = None,
        body: bytes | None = None,
    ) -> Response:
        """Send one request with the retry/redirect/error policy; return the response.

        A status outside ``expect`` raises the mapped error (see :func:`status_error`).
        """
        method = method.upper()
        refuse_undecodable(path_or_url, params, headers)
        retryable = method in IDEMPOTENT if retry is None else retry
        content = body
        hdrs = dict(headers or {})
        if json_body is not None:
            content = json.dumps(json_body, separators=(",", ":")).encode()
            hdrs.setdefault("Content-Type", "application/json")
        url = self.url_for(path_or_url)
        from nodecli import dryrun

        if dryrun.active() and method not in ("GET", "HEAD"):
            raise dryrun.request(method, url, content, self.redact, params)
        deadline_at, why = self._budget.request_ends(self.endpoint.deadline)
        self._past_deadline = f"no complete answer within {why}"
        try:
            return self._retrying(method, url, params, content, hdrs, expect, hint_for,
                                  retryable, deadline_at)
        finally:
            if self._status is not None and self._retried:
                self._retried = False
                self._status(None)

    def _retrying(self, method: str, url: str, params: Any, content: bytes | None,
                  hdrs: dict[str, str], expect: tuple[int, ...],
                  hint_for: Callable[[int], str | None] | None, retryable: bool,
                  deadline_at: float) -> Response:
        attempt = 0
        redirects = 0
        renewed = False
        while True:
            attempt += 1
            if time.monotonic() >= deadline_at:
                # spent before this attempt (a one-shot command's earlier requests, a
                # redirect): nothing is sent, rather than racing the watchdog's cut
                raise RemoteError(f"{method} {self.redact(url)}: {self._past_deadline}")
            try:
                resp = self._attempt(method, url, params=params, content=content,
                                     headers=self._headers_for(url, hdrs),
                                     deadline_at=deadline_at)
            except _Transient as exc:
                delay = exc.retry_after if exc.retry_after is not None else backoff_delay(attempt)
                # no wait runs to the deadline (an attempt starting there is cut at once)
                if not retryable or attempt >= self.endpoint.max_attempts or \
                        deadline_at - time.monotonic() <= delay:
                    if exc.response is not None:
                        final_hint = hint_for if retryable else with_not_retried(hint_for)
                        return self._finish(exc.response, expect, method, final_hint)
                    tries = f" after {attempt} attempts" if attempt > 1 else ""
                    hint = exc.hint or (None if retryable else
                                        "not retried: the request is not idempotent")
                    if url.startswith("http://") and "broken" in exc.reason:
                        hint = "if the node serves HTTPS, use an https:// URL"
                    raise RemoteError(
                        f"{method} {self.redact(url)}: {exc.reason}{tries}", hint=hint,
                    ) from None
                self.log(f"! {exc.reason}; retry {attempt}/{self.endpoint.max_attempts - 1} "
                         f"in {delay:.1f} s")
                if self._status is not None:
                    self._retried = True
                    # what matters first: the line is cut to the terminal's width
                    self._status(f"retry {attempt} of {self.endpoint.max_attempts - 1} in "
                                 f"{delay:.0f} s: {self.endpoint.label or origin(url)}: "
                                 f"{exc.reason}")
                self._sleep(delay)
                continue
            if resp.status in REDIRECT_STATUSES and resp.header("location"):
                redirects += 1
                url, method, content = redirect_target(
                    resp.status, resp.header("location") or "", url, method, content,
                    redirects=redirects, anywhere=self.endpoint.cross_origin_redirects,
                    redact=self.redact)
                self.log(f"> redirected to {url}")
                continue
            if resp.status == 401 and not renewed and self._renew_token(url):
                renewed = True  # a new token: the same request once more, right away
                attempt -= 1
                continue
            return self._finish(resp, expect, method, hint_for)

    def _check_clock(self, resp: Response, received: float) -> None:
        """Compare the server's Date header with our clock (once per client)."""
        if self.clock_offset is not None:
            return
        from nodecli.http.checks import SKEW_WARN, clock_offset_of

        offset = clock_offset_of(resp.header("date"), received)
        if offset is None:
            return
        self.clock_offset = offset
        source = self.endpoint.auth.source
        if source is not None and hasattr(source, "offset") and abs(offset) >= 2:
            source.offset = offset  # minted tokens then expire on the node's clock
        if abs(offset) > SKEW_WARN and self._skew is not None:
            self._skew(offset)

    def _finish(self, resp: Response, expect: tuple[int, ...], method: str,
                hint_for: Callable[[int], str | None] | None) -> Response:
        if resp.status in expect:
            return resp
        msg = node_message(resp.body)
        text = f"{method} {self.redact(resp.url)}: HTTP {resp.status}"
        if msg:
            # one line (the writer strips controls), without what we sent that is secret:
            # a node may echo the body it refused
            text += ": " + self.redact(" ".join(msg.split()))
        hint = hint_for(resp.status) if hint_for else None
        raise status_error(resp.status, text, auth=self.endpoint.auth, url=resp.url, hint=hint)

    def json(self, method: str, path_or_url: str, **kwargs: Any) -> Any:
        resp = self.request(method, path_or_url, **kwargs)
        return resp.json() if resp.body else None

    def derive(self, **changes: Any) -> Client:
        """A client for the same endpoint with some settings changed.

        For example ``derive(max_attempts=1)`` for a caller that retries by itself
        (``events tail -f`` retries forever with its own status line).
        """
        derived = Client(self.endpoint.replace(**changes), log=self._log, sleep=self._sleep,
                         status=self._status, skew=self._skew)
        derived.clock_offset = self.clock_offset  # (said once per command, not per client)
        return derived


def open_client(endpoint: Endpoint, *, log: Log | None = None,
                status: Callable[[str | None], None] | None = None,
                skew: Callable[[float], None] | None = None) -> Client:
    """The factory. Everything that talks HTTP gets its client here."""
    return Client(endpoint, log=log, status=status, skew=skew)
