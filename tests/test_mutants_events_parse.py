"""Reading a page of the activity log (nodecli/node/events/pages.py's parse_events, and
the filter a tail asks with), at the edges the mutation run found unwatched: whitespace
between the tokens of a page, each refusal word for word (with and without the page's
URL), the count a page may hold (exactly the limit, one more; a repeated id not
counted), an event's original text kept or made compact, and the filter's refusals. In
process: pure functions."""

from __future__ import annotations

import pytest

from nodecli.errors import UsageError
from nodecli.node.events import pages
from nodecli.node.events.pages import EventFilter, MalformedPage, parse_events


def texts(body: bytes, **kw) -> list[str]:
    return [raw for _, raw in parse_events(body, **kw)]


def refusal(body: bytes, **kw) -> str:
    with pytest.raises(MalformedPage) as exc:
        parse_events(body, **kw)
    return exc.value.message


@pytest.mark.parametrize("ws", [" ", "\t", "\n", "\r", " \t\n\r "])
def test_whitespace_is_taken_between_every_token_of_a_page(ws):
    body = f'{ws}[{ws}{{"id":1}}{ws},{ws}{{"id":2}}{ws}]{ws}'.encode()
    assert texts(body) == ['{"id":1}', '{"id":2}']
    assert parse_events(f"{ws}[{ws}]{ws}".encode()) == []


def test_a_page_with_no_whitespace_at_all():
    assert texts(b'[{"id":1},{"id":"x"}]') == ['{"id":1}', '{"id":"x"}']
    assert parse_events(b"[]") == []


@pytest.mark.parametrize("text, at, want", [
    ("", 0, 0), ("a", 0, 0), (" a", 0, 1), (" \t\n\r", 0, 4), ("a  ", 1, 3),
    ("a  b", 1, 3), ("ab", 2, 2), ("a b", 1, 2), ("x\u00a0", 1, 1),
])
def test_skip_ws_takes_json_whitespace_only(text, at, want):
    assert pages._skip_ws(text, at) == want


@pytest.mark.parametrize("kw, where", [({}, ""), ({"url": "https://n/events?count=5"},
                                                  "https://n/events?count=5: ")])
@pytest.mark.parametrize("body, message", [
    (b"\xff[]", "the events page is not UTF-8 text"),
    (b"", "the events page is empty (0 bytes)"),
    (b" \n", "the events page is empty (2 bytes)"),
    (b"{}", "the events page is not a JSON array (2 bytes)"),
    (b" x[]", "the events page is not a JSON array (4 bytes)"),
    (b"[x]", "the events page is not valid JSON (at character 1)"),
    (b'[ {"id":1}, x]', "the events page is not valid JSON (at character 12)"),
    (b'[{"id":1} {"id":2}]', "the events page is not valid JSON (at character 10)"),
    (b'[{"id":1}', "the events page is not valid JSON (at character 9)"),
    (b'[{"id":1},]', "the events page is not valid JSON (at character 10)"),
    (b"[] []", "the events page has data after the array"),
    (b'[{"id":1}]x', "the events page has data after the array"),
    (b"[]]", "the events page has data after the array"),
    (b"[1]", "item 1 of the events page is not an object"),
    (b'[{"id":1},[]]', "item 2 of the events page is not an object"),
    (b'[{"id":1},{"id":2},{}]', "item 3 of the events page has no id"),
])
def test_each_refusal_word_for_word(kw, where, body, message):
    assert refusal(body, **kw) == where + message


def test_an_item_nesting_too_deeply_is_named_by_its_place():
    deep = b"[" * 100_000 + b"]" * 100_000
    assert refusal(b"[" + deep + b"]") == ("item 1 of the events page nests deeper than "
                                           "nodecli reads")
    assert refusal(b'[{"id":1},' + deep + b"]", url="u") == (
        "u: item 2 of the events page nests deeper than nodecli reads")


@pytest.mark.parametrize("eid, ok", [
    (0, True), (-1, True), ("x", True), (" ", True), ("", False), (True, False),
    (False, False), (None, False), (1.5, False), ([], False), ({}, False),
])
def test_an_id_is_a_non_empty_string_or_an_integer(eid, ok):
    import json

    body = json.dumps([{"id": eid}]).encode()
    if ok:
        assert parse_events(body) == [({"id": eid}, json.dumps({"id": eid}))]
    else:
        assert refusal(body) == "item 1 of the events page has no id"
    assert refusal(b'[{"x":1}]', what="transfers") == "item 1 of the transfers page has no id"


def test_a_repeated_id_is_kept_once_the_first_and_not_counted():
    body = b'[{"id":1,"a":1},{"id":1,"a":2},{"id":"1"},{"id":2}]'
    assert parse_events(body, limit=3) == [({"id": 1, "a": 1}, '{"id":1,"a":1}'),
                                           ({"id": "1"}, '{"id":"1"}'),
                                           ({"id": 2}, '{"id":2}')]


@pytest.mark.parametrize("n, limit, refused", [
    (2, 2, False), (3, 2, True), (1, 1, False), (2, 1, True), (5, None, False),
    (0, 1, False),
])
def test_a_page_holds_at_most_the_count_asked_for(n, limit, refused):
    body = ("[" + ",".join(f'{{"id":{k}}}' for k in range(n)) + "]").encode()
    if refused:
        assert refusal(body, limit=limit, url="u") == (
            f"u: the node sent more than the {limit} events asked for (count) in one page")
    else:
        assert len(parse_events(body, limit=limit)) == n


def test_an_events_text_is_the_servers_own_unless_it_spans_lines_or_is_not_json():
    body = (b'[{"id": 1,  "b": [1.50, 1e2]},{"id":2,\n"b":1},{"id":3,\r"b":1},'
            b'{"id":4,"b":NaN},{"id": 5},{"id":4,"c":Infinity},{"id": 6}]')
    assert texts(body) == ['{"id": 1,  "b": [1.50, 1e2]}', '{"id":2,"b":1}', '{"id":3,"b":1}',
                           '{"id":4,"b":"NaN"}', '{"id": 5}', '{"id": 6}']


def test_an_event_holding_a_constant_is_read_with_it_as_its_word():
    (obj, raw), = parse_events(b'[{"id":1,"x":-Infinity}]')
    assert obj == {"id": 1, "x": "-Infinity"} and raw == '{"id":1,"x":"-Infinity"}'


@pytest.mark.parametrize("kw, message", [
    ({"type": "a", "type_glob": "a.*"}, "--type and --type-glob cannot be combined: the node "
     "takes one type or one glob per request"),
    ({"type": ""}, "invalid event type '': expected a dotted name such as transfer.started "
     "or file.created"),
    ({"type": "file."}, "invalid event type 'file.': expected a dotted name such as "
     "transfer.started or file.created"),
    ({"type": "A" * 61}, f"invalid event type {'A' * 60!r}: expected a dotted name such as "
     "transfer.started or file.created"),
    ({"type_glob": ""}, "invalid type glob '': dotted names where * is the only wildcard, "
     "such as file.* or transfer.*"),
    ({"type_glob": "**"}, "invalid type glob '**': dotted names where * is the only "
     "wildcard, such as file.* or transfer.*"),
    ({"type_glob": "file.**"}, "invalid type glob 'file.**': dotted names where * is the "
     "only wildcard, such as file.* or transfer.*"),
    ({"type_glob": "?" * 61}, f"invalid type glob {'?' * 60!r}: dotted names where * is the "
     "only wildcard, such as file.* or transfer.*"),
])
def test_a_filter_is_refused_word_for_word(kw, message):
    with pytest.raises(UsageError) as exc:
        EventFilter(**kw)
    assert exc.value.message == message


@pytest.mark.parametrize("kw", [{}, {"type": "file.created"}, {"type": "a"},
                                {"type_glob": "*"}, {"type_glob": "file.*"},
                                {"type_glob": "*.*"}, {"type_glob": "file*"},
                                {"type_glob": "a.b_1"}])
def test_a_filter_of_one_type_or_one_glob_or_neither_is_taken(kw):
    assert EventFilter(**kw).as_dict() == {"type": kw.get("type"),
                                           "type_glob": kw.get("type_glob")}


@pytest.mark.parametrize("link_host", [None, "inner.example:9092"])
def test_a_page_whose_link_names_another_host_is_told_to_the_log_once_per_page(
        emulator, log, link_host):
    """fetch_page over HTTPS: a foreign Link rel="next" is said, with the base URL its
    query goes to instead; a Link to the node itself is not."""
    from nodecli.http.client import Auth, Endpoint, open_client

    said: list[str] = []
    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                  cacert=emulator.ca_file), log=said.append)
    log.generate(2)
    log.link_host = link_host
    try:
        page = pages.fetch_page(client, "/events", [("count", "1")])
    finally:
        log.link_host = None
        client.close()
    told = [line for line in said if line.startswith("!")]
    base = client.endpoint.base_url
    if link_host is None:
        assert told == [] and page.foreign_host is None
    else:
        assert told == [f'! the Link rel="next" names host {link_host}: its query is '
                        f"requested on {base} instead"]
    assert page.next_url.startswith(base + "/events?")


def test_a_fetched_page_of_another_collection_is_named_by_it(emulator, log):
    from nodecli.emulator.server import Reply
    from nodecli.http.client import Auth, Endpoint, open_client

    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                  cacert=emulator.ca_file))
    log.push_reply(Reply(200, b"[1]"))
    try:
        with pytest.raises(MalformedPage) as exc:
            pages.fetch_page(client, "/events", collection="/ops/transfers")
    finally:
        client.close()
    assert exc.value.message.endswith(": item 1 of the transfers page is not an object")
