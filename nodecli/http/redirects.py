"""Where a redirect may lead: the one rule the client follows for 301, 302, 303, 307 and
308 answers (curl's without ``-L``, and its own origin only).

* An origin is (scheme, host, port), the scheme and host compared without regard to
  case and a missing port read as the scheme's default (:func:`nodecli.http.links.origin`):
  the same host on another port is another origin.
* A redirect to another origin is refused, whatever the method (exit 6, naming the
  ``Location``): the answer of a host the user did not name must not be shown,
  written or checkpointed as the node's. ``nodecli api --follow-redirects`` follows one
  anyway, for a request without a body, and never with credentials
  (:meth:`nodecli.http.client.Client._headers_for` sends them to the endpoint's own
  origin only).
* ``https://`` is never followed to ``http://``.
* A 303 turns any method but HEAD into a GET without a body (RFC 9110 15.4.4); so do 301 and
  302 for a POST, as browsers and curl do; 307 and 308 keep the method and body.
* At most :data:`MAX_REDIRECTS` are followed: the 5th is, the 6th is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urljoin

from nodecli.errors import RemoteError
from nodecli.http.links import origin

MAX_REDIRECTS = 5
REDIRECT_STATUSES = (301, 302, 303, 307, 308)


def redirect_target(status: int, location: str, url: str, method: str,
                    content: bytes | None, *, redirects: int, anywhere: bool = False,
                    redact: Callable[[str], str] = str) -> tuple[str, str, bytes | None]:
    """The URL, method and body to send after the ``redirects``-th redirect (counted
    from 1) of a request to ``url``; raises :class:`RemoteError` where none may follow.
    ``anywhere``: follow to another origin too (``api --follow-redirects``)."""
    shown = redact(location)[:200]
    what = f"{method} {redact(url)}: HTTP {status} redirect"
    if redirects > MAX_REDIRECTS:
        raise RemoteError(f"{what} to {shown!r} refused: more than {MAX_REDIRECTS} "
                          "redirects")
    try:
        target = urljoin(url, location)
        new_origin = origin(target)
        # (an unusable port, :99999, gives origin() no host either)
        if not target.lower().startswith(("http://", "https://")) or not new_origin[1]:
            raise ValueError("not an http or https URL with a host and a usable port")
    except ValueError as exc:
        raise RemoteError(f"{what} to an unusable Location {shown!r} ({exc})") from None
    old_origin = origin(url)
    if old_origin[0] == "https" and new_origin[0] != "https":
        raise RemoteError(f"{what} from https to {shown!r} refused: nodecli never follows "
                          "https to plain http",
                          hint="if the move is real, use the new https:// URL")
    if new_origin != old_origin:
        if content is not None:
            raise RemoteError(f"{what} to another origin ({shown!r}) refused: a request "
                              "body is never sent elsewhere",
                              hint="nothing was sent there; if the node really moved, use "
                                   "its new URL")
        if not anywhere:
            raise RemoteError(f"{what} to another origin ({shown!r}) refused: nodecli "
                              "follows redirects on the node's own scheme, host and port "
                              "only",
                              hint="nothing was sent there; if the node really moved, use "
                                   "its new URL ('nodecli api --follow-redirects' follows "
                                   "it, without credentials)")
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, content = "GET", None
    return target, method, content
