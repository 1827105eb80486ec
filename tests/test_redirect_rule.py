"""The redirect rule itself (http/redirects.redirect_target), at its edges: what is refused
and what each refusal says. tests/test_redirects.py drives the same rule over TLS."""

from __future__ import annotations

import pytest

from nodecli.errors import RemoteError
from nodecli.http.redirects import MAX_REDIRECTS, redirect_target

NODE = "https://node.example:9092/events"


def _refused(location: str, *, url: str = NODE, method: str = "GET",
             content: bytes | None = None, redirects: int = 1, **kw) -> RemoteError:
    with pytest.raises(RemoteError) as info:
        redirect_target(302, location, url, method, content, redirects=redirects, **kw)
    return info.value


def test_another_origin_is_refused_unless_asked_for():
    exc = _refused("https://other.example:9092/events")
    assert exc.message.startswith(f"GET {NODE}: HTTP 302 redirect to another origin")
    assert exc.hint == ("nothing was sent there; if the node really moved, use its new URL "
                        "('nodecli api --follow-redirects' follows it, without credentials)")
    target, method, body = redirect_target(302, "https://other.example:9092/e", NODE, "GET",
                                           None, redirects=1, anywhere=True)
    assert (target, method, body) == ("https://other.example:9092/e", "GET", None)


def test_a_body_never_goes_to_another_origin_even_when_asked():
    exc = _refused("https://node.example:9093/x", method="PUT", content=b"{}", anywhere=True)
    assert "a request body is never sent elsewhere" in exc.message
    assert exc.hint == "nothing was sent there; if the node really moved, use its new URL"


def test_https_is_never_followed_to_http():
    exc = _refused("http://node.example:9092/events", anywhere=True)
    assert "from https" in exc.message
    assert exc.hint == "if the move is real, use the new https:// URL"


@pytest.mark.parametrize("location", ["ftp://node.example/x", "https:///x",
                                      "https://node.example:99999/x"])
def test_an_unusable_location_is_said_as_such(location):
    exc = _refused(location, url="http://node.example:9092/events")
    assert exc.message.endswith(f"unusable Location {location!r} (not an http or https URL "
                                "with a host and a usable port)"), exc.message


def test_the_location_shown_is_cut_at_200_characters():
    location = "https://node.example:9092/" + "a" * 300
    exc = _refused(location, redirects=MAX_REDIRECTS + 1)
    assert repr(location[:200]) in exc.message and location[:201] not in exc.message


@pytest.mark.parametrize(("status", "method", "after"), [
    (303, "POST", "GET"), (303, "PUT", "GET"), (303, "HEAD", "HEAD"), (302, "POST", "GET"),
    (301, "POST", "GET"), (302, "PUT", "PUT"), (307, "POST", "POST"), (308, "PUT", "PUT"),
])
def test_which_redirects_become_a_get_without_a_body(status, method, after):
    _, got, body = redirect_target(status, "/moved", NODE, method, b"{}", redirects=1)
    assert got == after and (body is None) == (after != method or after == "GET" != method)
