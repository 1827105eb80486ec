"""nodecli.node.raw_api at its boundaries (issue 33, item 2: the survivors of its mutation
run): gh's method rule, the method and header shapes at their lengths, where fields go
(query or body) and how, and the stop of --dry-run. plan() in process (a pure function);
what is sent over HTTPS to a scripted server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodecli.errors import UsageError
from nodecli.node.raw_api import Call, plan


def _plan(method=None, path="/p", typed=(), strings=(), body=None, headers=(), **kw) -> Call:
    return plan(method, path, tuple(typed), tuple(strings), body, tuple(headers), **kw)


def _refused(**kw) -> str:
    with pytest.raises(UsageError) as e:
        _plan(**kw)
    return str(e.value)


def test_get_with_nothing_post_with_fields_or_input_and_x_wins():
    assert _plan().method == "GET"
    assert _plan(typed=["a=1"]).method == "POST"
    assert _plan(strings=["a=1"]).method == "POST"
    assert _plan(body=b"").method == "POST"
    assert _plan(method="put", strings=["a=1"]).method == "PUT"
    assert _plan(method="delete").method == "DELETE"


def test_fields_and_input_are_not_both_given():
    for kw in ({"typed": ["a=1"]}, {"strings": ["a=1"]}):
        assert _refused(body=b"{}", **kw) == "give fields (-f/-F) or --input, not both"
    assert _plan(body=b"{}").body == b"{}"


def test_paginate_means_get_and_refuses_another_method_and_an_input():
    assert _plan(paginate=True).method == "GET"
    assert _plan(method="get", paginate=True).method == "GET"
    assert _plan(paginate=True, typed=["count=5"]).params == [("count", "5")]
    assert _refused(method="POST" * 10, paginate=True) == (
        '--paginate follows Link rel="next" of GET lists: not with -X ' + ("POST" * 10)[:30])
    assert _refused(paginate=True, body=b"{}") == (
        "--paginate sends GET: give the query as fields (-f), not --input")


@pytest.mark.parametrize("method", ["A", "M-SEARCH", "X_Y", "A" * 20, "cancel"])
def test_a_method_of_one_to_twenty_letters_passes(method):
    assert _plan(method=method).method == method.upper()


@pytest.mark.parametrize("method", ["A" * 21, "B" * 40, "1GET", "-GET", "GE T", "GET1", "GÉT", ""])
def test_any_other_method_is_refused_and_shown(method):
    if method == "":  # no -X at all is GET
        assert _plan(method=method).method == "GET"
        return
    assert _refused(method=method) == f"-X: {method.upper()[:30]!r} is not an HTTP method"


@pytest.mark.parametrize("path", ["p", "", "/a b", "/a\tb", "/a\x1fb", "/a\nb", " /a"])
def test_a_path_starts_with_a_slash_and_has_no_space_or_control(path):
    assert _refused(path=path) == f"PATH starts with '/' and has no spaces: {path[:60]!r}"


def test_a_refused_path_is_shown_in_60_characters():
    assert _refused(path="x" * 99).endswith(repr("x" * 60))


def test_a_path_with_odd_but_printable_characters_passes():
    assert _plan(path="/a~b?c=d&é\x7f").path == "/a~b?c=d&é\x7f"


def test_typed_fields_are_values_and_string_fields_stay_text():
    call = _plan(method="POST", typed=["n=1", "t=true", "o={\"a\":[1]}", "s=x", "e="],
                 strings=["m=1", "u=", "eq=a=b"])
    assert json.loads(call.body) == {"n": 1, "t": True, "o": {"a": [1]}, "s": "x",
                                     "e": "", "m": "1", "u": "", "eq": "a=b"}
    assert call.body == b'{"n":1,"t":true,"o":{"a":[1]},"s":"x","e":"","m":"1","u":"",' \
                        b'"eq":"a=b"}'
    assert call.params == [] and call.headers == {"Content-Type": "application/json"}


@pytest.mark.parametrize(("flag", "item"), [("-f", "novalue"), ("-f", "=1"), ("-F", "x"),
                                            ("-F", "=1")])
def test_a_field_is_key_equals_value(flag, item):
    kw = {"typed": [item]} if flag == "-f" else {"strings": [item]}
    assert _refused(**kw) == f"{flag} takes KEY=VALUE, not {item!r}"


def test_a_refused_field_is_shown_in_40_characters():
    assert _refused(strings=["y" * 50]).endswith(repr("y" * 40))
    assert _refused(typed=["y" * 50]).endswith(repr("y" * 40))


def test_a_field_from_a_file_is_its_utf8_text(tmp_path):
    f = tmp_path / "v.txt"
    f.write_text("é line\n", encoding="utf-8")
    call = _plan(method="POST", typed=[f"v=@{f}"])
    assert json.loads(call.body) == {"v": "é line\n"}
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\xff\xfe")
    assert _refused(typed=[f"v=@{bad}"]) == f"{bad} is not UTF-8 text"


def test_fields_are_the_query_of_get_delete_head_and_cancel_and_a_body_otherwise():
    for method in ("GET", "DELETE", "HEAD", "CANCEL"):
        call = _plan(method=method, typed=["n=1", "o={\"a\":1}"], strings=["s=1"])
        assert call.params == [("n", "1"), ("o", '{"a": 1}'), ("s", "1")]
        assert call.body is None and call.headers == {}
    for method in ("POST", "PUT", "PATCH"):
        call = _plan(method=method, strings=["s=1"])
        assert call.params == [] and call.body == b'{"s":"1"}'


def test_no_fields_no_body_no_content_type():
    call = _plan(method="POST")
    assert (call.params, call.body, call.headers) == ([], None, {})


def test_headers_by_name_and_a_content_type_given_is_kept():
    call = _plan(body=b"x", headers=["Content-Type: text/plain", "X-A:\t v\tw", "X-B:",
                                     "X-C: a b c"])
    assert call.headers == {"Content-Type": "text/plain", "X-A": "v\tw", "X-B": "",
                            "X-C": "a b c"}
    assert _plan(headers=["N" * 128 + ": v"]).headers == {"N" * 128: "v"}


@pytest.mark.parametrize("header", ["N" * 129 + ": v", "Bad Header: v", "NoColon",
                                    ": v", "X: a\nb", "X: a\x00b", "X: a\x1fb", "X(: v"])
def test_a_header_is_one_line_of_name_colon_value(header):
    assert _refused(headers=[header]) == (
        f"-H takes 'Name: value' on one line, not {header[:40]!r}")


def test_a_value_with_an_equals_sign_is_split_at_the_first():
    call = _plan(method="PUT", typed=["q=a=b"], strings=["r==c"])
    assert json.loads(call.body) == {"q": "a=b", "r": "=c"}


# -- over HTTPS: what is sent, and pages followed ---------------------------------------

@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    from tests.scripted_server import certificates

    return certificates(tmp_path_factory.mktemp("certs"))


class Node:
    """A node whose answers a test sets: ``pages`` maps a request target to (status,
    body, Link header or None); a target asked again gets ``again`` if set there."""

    def __init__(self, certs) -> None:
        from tests.scripted_server import ScriptedServer

        self.certs = certs
        self.pages: dict[str, tuple[int, Any, str | None]] = {}
        self.again: dict[str, tuple[int, Any, str | None]] = {}
        self.server = ScriptedServer(self._answer, tls=(certs[1], certs[2]))

    def _answer(self, seen):
        from tests.scripted_server import reply

        asked = [s.target for s in self.server.seen].count(seen.target)
        status, body, link = (self.again.get(seen.target) if asked > 1 else None) or \
            self.pages.get(seen.target, (404, {"error": {"user_message": "no"}}, None))
        headers = [("Content-Type", "application/json")]
        if link:
            headers.append(("Link", f'<{link}>; rel="next"'))
        yield reply(status, b"" if body is None else json.dumps(body).encode(), headers)

    def client(self):
        from nodecli.http.client import Auth, Endpoint, open_client

        return open_client(Endpoint(self.server.url(), Auth("basic", username="u",
                                                             password="pw-raw-api"),
                                    cacert=self.certs[0], deadline=10.0, max_attempts=1))

    @property
    def targets(self) -> list[str]:
        return [s.target for s in self.server.seen]


@pytest.fixture(scope="module")
def node_server(certs):
    node = Node(certs)
    yield node
    node.server.close()


@pytest.fixture
def node(node_server):
    node_server.pages.clear()
    node_server.again.clear()
    node_server.server.seen.clear()
    return node_server


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_any_2xx_is_an_answer_and_headers_and_no_empty_query_are_sent(node, status):
    from nodecli.node.raw_api import send

    node.pages["/x"] = (status, None if status == 204 else {"ok": 1}, None)
    call = _plan(method="DELETE", path="/x", headers=["X-Trace: t-1", "Accept: text/x"])
    with node.client() as c:
        resp = send(c, call)
    assert resp.status == status
    seen = node.server.seen[-1]
    assert (seen.method, seen.target) == ("DELETE", "/x")
    assert (seen.headers["x-trace"], seen.headers["accept"]) == ("t-1", "text/x")


def test_fields_of_a_get_are_its_query_and_a_body_goes_with_its_type(node):
    from nodecli.node.raw_api import send

    node.pages["/x?a=1&b=%7B%7D"] = (200, {}, None)
    node.pages["/y"] = (201, {}, None)
    with node.client() as c:
        send(c, _plan(method="GET", path="/x", typed=["a=1", "b={}"]))
        send(c, _plan(path="/y", strings=["s=1"]))
    assert node.targets == ["/x?a=1&b=%7B%7D", "/y"]
    posted = node.server.seen[-1]
    assert (posted.method, posted.body, posted.headers["content-type"]) == (
        "POST", b'{"s":"1"}', "application/json")


def _transfers(node, path: str, first: str) -> list[Any]:
    """Pages of /ops/transfers: the first Link names another host (its query is asked
    of this node's collection), the last names the very token it was asked with."""
    from nodecli.node.raw_api import paginate

    node.pages[first] = (200, [{"id": "1"}, {"id": "2"}],
                         "https://internal.example:9/ops/transfers?iteration_token=t1")
    node.pages["/ops/transfers?iteration_token=t1"] = (
        200, [{"id": "3"}], "/ops/transfers?iteration_token=t2")
    node.pages["/ops/transfers?iteration_token=t2"] = (
        200, [{"id": "4"}], "/ops/transfers?iteration_token=t2")
    # a pager that asks the same token again sees it once more, then the end
    node.again["/ops/transfers?iteration_token=t2"] = (200, [], None)
    with node.client() as c:
        return paginate(c, _plan(path=path, paginate=True))


@pytest.mark.parametrize("path", ["/ops/transfers", "/ops/transfers?q=a?b"])
def test_paginate_follows_the_collection_asked_and_stops_at_the_token_used(node, path):
    got = _transfers(node, path, path)
    assert [t["id"] for t in got] == ["1", "2", "3", "4"]
    assert node.targets == [path,
                            "/ops/transfers?iteration_token=t1",
                            "/ops/transfers?iteration_token=t2"]


def test_paginate_refuses_any_method_but_get():
    from nodecli.node.raw_api import paginate

    with pytest.raises(UsageError) as e:
        paginate(None, Call("POST", "/x", [], None, {}))
    assert str(e.value) == '--paginate follows Link rel="next" of GET lists'
