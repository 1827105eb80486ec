"""Pages of the activity log (nodecli/node/events/pages.py), at the edges the mutation
run found unwatched: the version gates' messages and hints, the empty-log hint for each
kind of login and node version, and a status the tail retries (its reason and the
Retry-After it carries). In process; requests over HTTPS to the emulator."""

from __future__ import annotations

from typing import Any

import pytest

from nodecli.errors import NodecliError
from nodecli.http.client import Auth, Endpoint, open_client
from nodecli.node.events import pages
from nodecli.node.info import NodeInfo

LOGGING = ("the node's event log is empty: on nodes 3.7.4 and later events are logged only "
           "when the server setting activity_event_logging is true (set it, then restart "
           "the node service)")
PER_KEY = ("; or, on nodes 3.8.0 and later, access key 'k1' may have its own setting off: "
           "nodecli access-key set k1 --activity-event-logging on (see 'nodecli access-key "
           "show')")
BEARER = ("no event is visible to this bearer token: a token sees only the events of files "
          "on which its user or groups hold a permission (nodecli permission grant PATH "
          "--user ID --levels list); if the node's event log is empty too: on nodes 3.7.4 and "
          "later events are logged only when the server setting activity_event_logging is "
          "true (set it, then restart the node service)")


@pytest.fixture
def emu(emulator):
    clients: list[Any] = []

    def make(auth: Auth) -> Any:
        clients.append(open_client(Endpoint(emulator.url, auth, label="emu",
                                            cacert=emulator.ca_file)))
        return clients[-1]

    yield make
    for c in clients:
        c.close()


@pytest.mark.parametrize("version, message, hint", [
    ("3.5.9", "node n1 runs version 3.5.9: the events endpoints exist from node 3.6.0",
     "upgrade the node to 3.6.0 or later"),
    ("3.7.2", "node n1 runs version 3.7.2: GET /events/{id} exists from node 3.7.3",
     "use 'nodecli events list' (and --type) to find the event"),
])
def test_get_by_id_names_the_first_gate_a_node_fails(version, message, hint):
    with pytest.raises(NodecliError) as exc:
        pages.require_get_by_id(NodeInfo(version), "n1")
    assert (exc.value.message, exc.value.hint) == (message, hint)
    pages.require_get_by_id(NodeInfo("3.7.3"), "n1")
    pages.require_get_by_id(None, "n1")


@pytest.mark.parametrize("auth, version, want", [
    (Auth("basic", "admin", "admin-pass"), "3.8.0", LOGGING),
    (Auth("basic", access_key="k1", password="s"), "3.8.0", LOGGING + PER_KEY),
    (Auth("basic", access_key="k1", password="s"), "3.7.9", LOGGING),
    (Auth("basic", access_key="k1", password="s"), "4.0", LOGGING + PER_KEY),
    (Auth("bearer", token="t", access_key="k1"), "3.8.0", BEARER + PER_KEY),
    (Auth("basic", "admin", "admin-pass"), "3.7.3", None),  # before the setting existed
])
def test_a_node_that_says_logging_is_off_gets_the_hint_for_its_login(emu, auth, version,
                                                                     want):
    """/info said activity_event_logging is false: the hint is given without asking the
    log (no request: this login could not even read it)."""
    assert pages.empty_log_hint(emu(auth), NodeInfo(version, logging=False)) == want


def test_no_hint_without_what_info_said(emu):
    assert pages.empty_log_hint(emu(Auth("basic", "admin", "admin-pass")), None) is None


@pytest.mark.parametrize("logging", [True, None])
def test_logging_on_or_unknown_gives_the_hint_only_when_the_log_is_empty(emu, log, logging):
    client = emu(Auth("basic", "admin", "admin-pass"))
    info = NodeInfo("4.4.5", logging=logging)
    assert pages.empty_log_hint(client, info) == LOGGING
    log.generate(1)
    assert pages.empty_log_hint(client, info) is None


def test_logging_off_gives_the_hint_even_when_events_are_there(emu, log):
    """(events logged before the setting was turned off)"""
    log.generate(1)
    client = emu(Auth("basic", "admin", "admin-pass"))
    assert pages.empty_log_hint(client, NodeInfo("4.4.5", logging=False)) == LOGGING


@pytest.mark.parametrize("fault, retry_after", [("429", 0.0), ("503", None), ("500", None)])
def test_a_status_to_retry_says_which_and_carries_its_retry_after(emu, emulator, fault,
                                                                  retry_after):
    client = emu(Auth("basic", "admin", "admin-pass")).derive(max_attempts=1)  # as -f's
    emulator.faults.path_prefix = "/events"
    emulator.faults.push(fault)
    try:
        with pytest.raises(pages.RetryLater) as exc:
            pages.fetch_page(client, "/events", [("count", "1")], retry_statuses=True)
    finally:
        emulator.faults.clear()
    assert str(exc.value) == exc.value.reason == f"HTTP {fault}"
    assert exc.value.retry_after == retry_after


@pytest.mark.parametrize("eid, refused", [
    ("a b", False), ("a\x1fb", True), ("a\x7fb", True), ("\ue000", False),
    ("\ud7ff", False), ("\ud800", True), ("\udfff", True), ("x" * 200, False),
    ("x" * 201, True),
])
def test_an_event_id_is_refused_only_for_what_a_word_cannot_hold(emu, eid, refused):
    """A space inside an id, a private-use character, 200 characters: asked for (the
    node says it has no such event); a control character, a lone surrogate, 201
    characters: refused before any request."""
    from nodecli.errors import NotFoundError, UsageError

    client = emu(Auth("basic", "admin", "admin-pass"))
    with pytest.raises(UsageError if refused else NotFoundError) as exc:
        pages.get_event(client, eid)
    if refused:
        assert exc.value.message == "an event id is a non-empty word (see 'nodecli events list')"


@pytest.mark.parametrize("label, named", [("emu", "emu"), (None, "URL")])
def test_get_event_on_an_old_node_names_the_node(emu, emulator, node_version, label, named):
    node_version("3.7.2")
    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                  label=label, cacert=emulator.ca_file))
    try:
        with pytest.raises(NodecliError) as exc:
            pages.get_event(client, "1")
    finally:
        client.close()
    name = emulator.url if named == "URL" else named
    assert exc.value.message == (f"node {name} runs version 3.7.2: GET /events/{{id}} exists "
                                 "from node 3.7.3")


@pytest.mark.parametrize("call", ["get", "list"])
def test_a_failed_info_is_told_to_the_log_and_the_request_goes_on(emu, emulator, log, call):
    log.generate(1)
    client = emu(Auth("basic", "admin", "admin-pass")).derive(max_attempts=1)
    emulator.faults.path_prefix = "/info"
    emulator.faults.push("500")
    said: list[str] = []
    try:
        if call == "get":
            assert pages.get_event(client, "1", log=said.append)["id"] == "1"
        else:
            assert len(pages.list_events(client, pages.EventFilter(), log=said.append).page) == 1
    finally:
        emulator.faults.clear()
    assert len(said) == 1
    assert said[0].startswith("GET /info failed (") and said[0].endswith(
        "); node version unknown")


@pytest.mark.parametrize("info_fails", [False, True])
def test_no_such_event_is_asked_by_its_quoted_id_and_says_how_to_list_ids(emu, emulator,
                                                                          info_fails):
    from nodecli.errors import NotFoundError

    client = emu(Auth("basic", "admin", "admin-pass")).derive(max_attempts=1)
    faults = emulator.faults
    if info_fails:  # the version unknown: the node may be older than 3.7.3
        faults.path_prefix = "/info"
        faults.push("500")
    try:
        with pytest.raises(NotFoundError) as exc:
            pages.get_event(client, "a/b")
        faults.clear()
        faults.path_prefix, faults.slow_seconds = "/events/a%2Fb", 0.0
        faults.push("slow")  # a no-op fault: taken only by a request for that path
        with pytest.raises(NotFoundError):
            pages.get_event(client, "a/b")
        assert faults.queue == []
    finally:
        faults.clear()
    assert exc.value.message == "no such event: a/b"
    assert exc.value.hint == "list event ids with: nodecli events list" + (
        " (or the node is older than 3.7.3, which has no GET /events/{id})" if info_fails
        else "")


@pytest.mark.parametrize("token, refused", [("a\ud7ffb", False), ("\ud800", True),
                                            ("\udfff", True), ("\ue000", False)])
def test_an_iteration_token_with_a_lone_surrogate_is_refused(token, refused):
    from nodecli.errors import UsageError

    if refused:
        with pytest.raises(UsageError):
            pages.validate_token(token)
    else:
        assert pages.validate_token(token) == token


@pytest.mark.parametrize("version, params, hint", [
    ("3.5.9", [], "the node has no events endpoint here (GET /events exists from node 3.6.0)"),
    ("4.4.5", [("type", "NOT A TYPE")],
     "the node refused the request: check the type, glob, time and iteration token"),
])
def test_a_refused_page_request_gets_the_hint_for_its_status(emu, node_version, version,
                                                             params, hint):
    node_version(version)
    with pytest.raises(NodecliError) as exc:
        pages.fetch_page(emu(Auth("basic", "admin", "admin-pass")), "/events", params)
    assert exc.value.hint == hint


@pytest.mark.parametrize("label", ["emu", None])
def test_list_on_a_node_before_3_6_names_the_node(emulator, node_version, label):
    node_version("3.5.9")
    client = open_client(Endpoint(emulator.url, Auth("basic", "admin", "admin-pass"),
                                  label=label, cacert=emulator.ca_file))
    try:
        with pytest.raises(NodecliError) as exc:
            pages.list_events(client, pages.EventFilter())
    finally:
        client.close()
    assert exc.value.message == (f"node {label or emulator.url} runs version 3.5.9: the "
                                 "events endpoints exist from node 3.6.0")


@pytest.mark.parametrize("n, ok", [(0, False), (1, True), (2**63 - 1, True), (2**63, False)])
def test_a_page_size_is_from_1_to_the_largest_signed_64_bit_integer(n, ok):
    from nodecli.errors import UsageError

    if ok:
        assert pages.validate_page_size(n) == n
    else:
        with pytest.raises(UsageError) as exc:
            pages.validate_page_size(n)
        assert exc.value.message == ("page size must be a whole number from 1 to "
                                     f"9223372036854775807, not {n}")


def test_a_refused_iteration_token_in_a_list_says_where_to_take_one(emu):
    client = emu(Auth("basic", "admin", "admin-pass"))
    with pytest.raises(NodecliError) as exc:
        pages.list_events(client, pages.EventFilter(), token="not-a-token")
    assert exc.value.hint == ("the node refused the iteration token (or a filter): take a "
                              "token from a recent 'events list' of this node")
    assert "invalid iteration_token" in exc.value.message


def test_a_page_of_another_collection_is_named_by_it_in_its_errors():
    with pytest.raises(pages.MalformedPage) as exc:
        pages.parse_page(b"{}", None, "https://n/ops/transfers?count=5", "https://n",
                         collection="/ops/transfers")
    assert exc.value.message == ("https://n/ops/transfers?count=5: the transfers page is not "
                                 "a JSON array (2 bytes)")


def test_a_list_result_carries_the_base_url_its_links_are_shown_against(emu, log):
    log.generate(1)
    client = emu(Auth("basic", "admin", "admin-pass"))
    assert pages.list_events(client, pages.EventFilter()).base_url == \
        client.endpoint.base_url


def test_without_follow_a_failed_page_is_an_error_and_a_bad_one_names_events(emu, emulator,
                                                                             log):
    from nodecli.emulator.server import Reply
    from nodecli.errors import RemoteError

    client = emu(Auth("basic", "admin", "admin-pass")).derive(max_attempts=1)
    emulator.faults.path_prefix = "/events"
    emulator.faults.push("500")
    try:
        with pytest.raises(RemoteError):
            pages.fetch_page(client, "/events", [("count", "1")])
    finally:
        emulator.faults.clear()
    log.push_reply(Reply(200, b"{}"))
    with pytest.raises(pages.MalformedPage) as exc:
        pages.fetch_page(client, "/events")
    assert exc.value.message.endswith(": the events page is not a JSON array (2 bytes)")
