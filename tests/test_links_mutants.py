"""nodecli.http.links at its boundaries (issue 33, item 2: the survivors of mutation
testing): what an origin is, where a next page is asked for when a Link names another
origin, and the page trail's table (its size, when it grows, every key kept). In process
and fast: these are pure functions."""

from __future__ import annotations

import dataclasses

import pytest

from nodecli.http.links import LinkError, NextPage, PageTrail, next_link, next_page, origin


@pytest.mark.parametrize(("url", "expected"), [
    ("https://Node.Example:9092/x", ("https", "node.example", 9092)),
    ("HTTPS://NODE/x", ("https", "node", 443)),       # scheme and host without case
    ("http://node/x", ("http", "node", 80)),
    ("HTTP://node/x", ("http", "node", 80)),          # the default port of an upper-case scheme
    ("https://node:443/x", ("https", "node", 443)),
    ("ftp://node/x", ("ftp", "node", None)),          # no default port known
    ("https://node:99999/", ("", "", -1)),            # an unusable port: no origin
    ("https://node:x/", ("", "", -1)),
    ("https://[::1/", ("", "", -1)),
    ("/relative", ("", "", None)),
])
def test_origin(url, expected):
    assert origin(url) == expected


def test_the_same_host_on_another_port_is_another_origin():
    assert origin("https://node:9092/") != origin("https://node:9093/")
    assert origin("https://node/") == origin("https://node:443/")
    assert origin("http://node/") != origin("https://node/")


BASE = "https://node:9092"


def test_next_page_on_the_same_origin_is_followed_as_given():
    page = next_page('<https://NODE:9092/other/path?iteration_token=5>; rel="next"',
                     BASE + "/events?count=10", BASE, "/events")
    assert page == NextPage("https://NODE:9092/other/path?iteration_token=5", None)
    assert page.foreign_host is None


def test_next_page_relative_target_is_joined_to_the_url_asked():
    page = next_page("<?iteration_token=7>; rel=next", BASE + "/files/1/files?page=1",
                     BASE, "/files")
    assert page == NextPage(BASE + "/files/1/files?iteration_token=7")


def test_next_page_none_when_the_answer_names_none():
    assert next_page(None, BASE + "/events", BASE, "/events") == NextPage(None, None)
    assert next_page('<a>; rel="prev"', BASE + "/events", BASE, "/events") == NextPage(None)


@pytest.mark.parametrize("foreign", [
    "https://internal:8443",    # another host and port
    "https://node:9093",        # the same host on another port
    "http://node:9092",         # another scheme
])
def test_next_page_on_another_origin_asks_the_query_of_the_base(foreign):
    link = f'<{foreign}/deep/events?iteration_token=5&count=10>; rel="next"'
    page = next_page(link, BASE + "/events?count=10", BASE + "/", "/events")
    # the trailing "/" of the base is not doubled; the path is the collection's
    assert page.url == BASE + "/events?iteration_token=5&count=10"
    assert page.foreign_host == foreign.split("//", 1)[1]


def test_next_page_on_another_origin_without_a_query_asks_the_bare_collection():
    page = next_page("<https://internal:8443/events>; rel=next", BASE + "/events", BASE,
                     "/events")
    assert page == NextPage(BASE + "/events", "internal:8443")


def test_next_page_with_an_unusable_target_raises_link_error():
    with pytest.raises(LinkError):
        next_page("<https://internal:0/events>; rel=next", BASE + "/events", BASE, "/events")


def test_link_error_hides_the_parser_exception():
    with pytest.raises(LinkError) as exc:
        next_link("<https://h:99999/e>; rel=next", BASE)
    assert exc.value.__cause__ is None and exc.value.__suppress_context__
    assert isinstance(exc.value, ValueError)


def test_next_page_is_a_frozen_value():
    page = NextPage("u")
    assert page.foreign_host is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.url = "v"  # type: ignore[misc]
    assert not hasattr(page, "__dict__")


# -- the page trail ----------------------------------------------------------------------


@pytest.mark.parametrize(("asked", "slots"), [
    (1, 8), (7, 8), (8, 8), (9, 16), (16, 16), (17, 32), (1000, 1024), (1024, 1024),
    (1025, 2048),
])
def test_page_trail_table_size(asked, slots):
    trail = PageTrail(asked)
    assert trail.nbytes == slots * 16
    assert len(trail) == 0


def test_page_trail_default_size():
    assert PageTrail().nbytes == 1024 * 16


def test_page_trail_grows_past_three_quarters_exactly():
    trail = PageTrail(8)
    for i in range(6):                     # 6 of 8 slots: exactly 3/4, not past it
        assert trail.add(f"k{i}") is True
    assert trail.nbytes == 8 * 16
    assert trail.add("k6") is True         # the 7th: past 3/4, the table doubles
    assert trail.nbytes == 16 * 16
    assert len(trail) == 7
    for i in range(7):
        assert f"k{i}" in trail
        assert trail.add(f"k{i}") is False
    assert len(trail) == 7
    assert "k7" not in trail


def test_page_trail_keeps_every_key_over_many_growths():
    trail = PageTrail(8)
    keys = [f"/events?iteration_token={i}" for i in range(3000)]
    for k in keys:
        assert trail.add(k)
    assert len(trail) == 3000
    assert trail.nbytes == 4096 * 16       # 3000 > 3/4 of 2048 and <= 3/4 of 4096
    assert all(k in trail for k in keys)
    assert not any(trail.add(k) for k in keys)
    assert sum(f"/events?iteration_token={i}" in trail for i in range(3000, 4000)) == 0


def test_page_trail_takes_any_str_key():
    trail = PageTrail()
    assert trail.add("\ud800 lone surrogate") is True   # a hostile token is still a key
    assert "\ud800 lone surrogate" in trail
    assert "" not in trail
    assert trail.add("") is True
    assert trail.add("") is False


def test_next_page_keeps_the_base_as_typed_but_one_trailing_slash():
    # only "/" is taken off the end of the base: a base ending in a letter keeps it
    page = next_page("<https://internal/events?i=1>; rel=next", "https://nodeX/events",
                     "https://nodeX//", "/events")
    assert page == NextPage("https://nodeX/events?i=1", "internal")
