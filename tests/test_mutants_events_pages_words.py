"""The words of the events pages' refusals and Link problems (issue 33 mutants); in
process, no node."""
from __future__ import annotations

import pytest

from nodecli.errors import UsageError
from nodecli.node.events import pages

URL = "https://n.example/events?count=5"
BASE = "https://n.example"


def test_a_bad_iteration_token_is_refused_word_for_word():
    with pytest.raises(UsageError) as exc:
        pages.validate_token("a b")
    assert exc.value.message == (
        "an iteration token is a non-empty word without spaces or control characters "
        "(copy it from a previous 'events list' or Link header)")


def test_a_link_without_a_token_is_a_problem_and_no_next_page():
    page = pages.parse_page(b"[]", '<https://n.example/events?count=5>; rel="next"', URL, BASE)
    assert page.next_url is None and page.next_token is None
    assert page.link_problem == 'the Link rel="next" target has no iteration_token'


def test_a_link_that_is_no_url_is_a_problem_that_says_why():
    page = pages.parse_page(b"[]", '<https://[::1/events?iteration_token=5>; rel="next"',
                            URL, BASE)
    assert page.next_url is None and page.next_token is None
    assert page.link_problem is not None
    assert page.link_problem.startswith('the Link rel="next" header is not a usable URL (')


@pytest.mark.parametrize("size, shown", [(80, "t" * 80), (81, "t" * 79 + "…")])
def test_a_link_loop_names_the_token_cut_at_80_characters(size, shown):
    token = "t" * size
    guard = pages.LoopGuard()
    guard.check(pages.Page([({"id": "1"}, '{"id":"1"}')], URL, token, URL), token)
    loop = pages.Page([({"id": "2"}, '{"id":"2"}')], URL, token, "https://n.example/p2")
    with pytest.raises(pages.LinkLoop) as exc:
        guard.check(loop, "other")
    assert exc.value.message == (
        'https://n.example/p2: the node\'s Link rel="next" leads back to a page already '
        f"read (iteration token {shown}, after 2 pages); stopping rather than reading it "
        "again")
