"""The access model on its own (nodecli.node.access_model): its invariants under
hypothesis, and its boundaries one by one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodecli.node.access_model import (
    BYPASS,
    GRANTED,
    LEVEL_NOT_HELD,
    LEVELS,
    NO_PERMISSION,
    OUTSIDE,
    SCOPE,
    Model,
    Perm,
    Rules,
    Subject,
    ancestors,
    join,
    node_user_decision,
    norm,
    relative,
    user_scope,
    within,
)

NAMES = ["a", "b", "fin", "finance", "x y"]
USERS = ["u1", "u2", "u3"]
GROUPS = ["g1", "g2"]

paths = st.lists(st.sampled_from(NAMES), max_size=4).map(lambda p: norm("/".join(p)))
levels = st.lists(st.sampled_from(LEVELS), max_size=4, unique=True).map(tuple)


@st.composite
def perms(draw):
    out = []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "group"]))
        who = draw(st.sampled_from(USERS if kind == "user" else GROUPS))
        path = draw(st.one_of(paths, st.none()))
        out.append(Perm(str(i + 1), path, kind, who, draw(levels), str(100 + i)))
    return out


@st.composite
def worlds(draw):
    rules = Rules(draw(st.booleans()), draw(st.booleans()), draw(st.booleans()))
    model = Model("ak", draw(paths), draw(perms()), rules)
    subject = Subject(draw(st.sampled_from(USERS)),
                      tuple(draw(st.lists(st.sampled_from(GROUPS), unique=True))),
                      user_scope("ak", draw(st.sampled_from(["user", "user", "admin"]))))
    return model, subject


def _user(name="u1", groups=(), role="user") -> Subject:
    return Subject(name, tuple(groups), user_scope("ak", role))


# -- invariants -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(worlds(), paths, st.sampled_from(NAMES), st.sampled_from(LEVELS))
def test_inheritance_is_monotone_down_the_tree(world, path, child, level):
    model, subject = world
    below = join(path, child)
    up, down = model.decide(subject, level, path), model.decide(subject, level, below)
    if up.allowed and up.reason != OUTSIDE:
        assert down.allowed, (up, down)
    if within(path, model.root):
        assert model.levels_at(subject, below) >= model.levels_at(subject, path)
        if model.listable(subject, path):
            assert model.visible(subject, below)


@settings(max_examples=60, deadline=None)
@given(worlds(), paths, st.sampled_from(LEVELS))
def test_who_can_and_can_i_agree(world, path, level):
    model, subject = world
    decision = model.decide(subject, level, path)
    holders = model.who_can(path, level)
    mine = [h for h in holders if subject.holds(h.perm)]
    if decision.reason in (OUTSIDE, SCOPE, BYPASS):
        return
    assert decision.allowed == bool(mine), (decision, holders)
    assert set(decision.because) == {h.perm for h in mine}
    # and every holder who-can names is a yes for that holder
    for h in holders:
        who = Subject(h.holder_id, (), subject.scope) if h.holder_type == "user" else \
            Subject("nobody-else", (h.holder_id,), subject.scope)
        assert model.decide(who, level, path).allowed


@settings(max_examples=60, deadline=None)
@given(worlds(), paths)
def test_what_can_agrees_with_can_i_and_visibility(world, path):
    model, subject = world
    known = [p for a in ancestors(path) for p in (a, join(a, "a"))]
    sights = {s.path: s for s in model.what_can(subject, known)}
    for p in {norm(k) for k in known}:
        assert (p in sights) == model.visible(subject, p)
        if p in sights:
            for level in LEVELS:
                assert (level in sights[p].levels) == model.decide(subject, level, p).allowed
            assert sights[p].traverse_only == (not model.bypass(subject)
                                               and not model.applicable(subject, p))


@settings(max_examples=60, deadline=None)
@given(worlds(), paths, st.sampled_from(LEVELS))
def test_explain_considers_every_permission_once_after_storage_and_scope(world, path, level):
    model, subject = world
    d = model.decide(subject, level, path)
    assert d.steps[0].rule == "storage"
    if d.reason == OUTSIDE:
        assert len(d.steps) == 1 and not d.allowed
        return
    assert d.steps[1].rule == "scope"
    considered = [s.perm for s in d.steps if s.rule == "permission"]
    if d.reason in (SCOPE, BYPASS):
        assert considered == []
    else:
        assert sorted(p.id for p in considered) == sorted(p.id for p in model.perms)


@settings(max_examples=60, deadline=None)
@given(worlds(), paths, st.sampled_from(LEVELS))
def test_nothing_outside_the_storage_and_admin_reaches_everything_inside(world, path, level):
    model, subject = world
    d = model.decide(subject, level, path)
    if not within(path, model.root):
        assert (d.allowed, d.reason) == (False, OUTSIDE)
        assert not model.visible(subject, path) and not model.who_can(path)
    elif model.scope_role(subject) == "admin" and model.rules.admin_bypass:
        assert (d.allowed, d.reason) == (True, BYPASS)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["file:////data/*", "!file:////data/fin*", "file:////a?c",
                                 "file:////*", "!file:////data/finance/*", "s3://*",
                                 "file:////data/f\\*"]), max_size=4),
       st.sampled_from(["/data", "/data/fin", "/data/finance/x", "/abc", "/a/c", "/data/f*",
                        "/other"]))
def test_node_user_verdicts_are_the_restriction_matchers(restrictions, path):
    from nodecli.users.restrictions import glob_regex, restriction_matcher

    d = node_user_decision("read", path, docroot=None, restrictions=restrictions,
                           matches=lambda p, u: glob_regex(p).fullmatch(u) is not None)
    assert d.allowed == restriction_matcher(restrictions)("file:///" + path)


# -- boundaries, one by one -----------------------------------------------------------------


FIN = [Perm("1", "/data/fin", "user", "u1", ("list", "read")),
       Perm("2", "/data/finance", "group", "g1", ("list",)),
       Perm("3", "/data", "user", "u2", ("read",))]


@pytest.mark.parametrize(("root", "path", "subject", "level", "reason"), [
    ("/data/finance", "/data/finance", _user("u3", ["g1"]), "list", GRANTED),  # the root
    ("/data/finance", "/data/fin", _user("u1"), "read", OUTSIDE),  # one character out
    ("/data/finance", "/data/financex", _user("u1"), "read", OUTSIDE),
    ("/data/finance", "/data/finance/", _user("u3", ["g1"]), "list", GRANTED),  # slash
    ("/data", "/data/finance/q", _user("u1"), "read", NO_PERMISSION),  # fin is not finance
    ("/data", "/data/fin/q", _user("u1"), "read", GRANTED),
    ("/data", "/data/finance/q", _user("u3", ["g1"]), "read", LEVEL_NOT_HELD),  # parent: list
    ("/data/finance", "/data/finance/q", _user("u2"), "read", GRANTED),  # above the root
    ("/data", "/data/x", Subject("u2", (), "node.other:user:all"), "read", SCOPE),
    ("/data", "/data/x", Subject("u2", (), "node.ak:admin:all"), "delete", BYPASS),
])
def test_boundaries(root, path, subject, level, reason):
    d = Model("ak", root, FIN).decide(subject, level, path)
    assert d.reason == reason, d
    assert d.allowed == (reason in (GRANTED, BYPASS))


def test_rules_change_the_open_choices():
    perms = [Perm("1", "/data", "user", "u", ("read",)),
             Perm("2", "/data/k/deep", "user", "v", ("read",))]
    at_root = Model("ak", "/data/k", perms)
    assert at_root.decide(_user("u"), "read", "/data/k").allowed
    off = Model("ak", "/data/k", perms, Rules(inherit_above_root=False))
    assert off.decide(_user("u"), "read", "/data/k").reason == NO_PERMISSION
    assert at_root.visible(_user("v"), "/data/k")  # on the way to deep
    assert not Model("ak", "/data/k", perms, Rules(traverse=False)).visible(_user("v"),
                                                                            "/data/k")
    admin = _user("w", role="admin")
    assert not Model("ak", "/data", perms, Rules(admin_bypass=False)).decide(
        admin, "read", "/data/q").allowed
    above = Perm("9", None, "user", "u", ("list",), "77")
    assert Model("ak", "/data/k", [above]).decide(_user("u"), "list", "/data/k/z").allowed
    assert not Model("ak", "/data/k", [above], Rules(inherit_above_root=False)).decide(
        _user("u"), "list", "/data/k/z").allowed
    assert above.where("/data/k") == "(above the storage root, file 77)"


def test_level_not_held_names_what_is_held_and_grant_names_the_nearest():
    perms = [Perm("1", "/d", "group", "g", ("list",)),
             Perm("2", "/d/e", "user", "u", ("preview", "list"))]
    m = Model("ak", "/", perms)
    d = m.decide(_user("u", ["g"]), "read", "/d/e/f")
    assert d.reason == LEVEL_NOT_HELD and d.held == ("list", "preview")
    assert "grant list,preview" in d.summary
    d = m.decide(_user("u", ["g"]), "list", "/d/e/f")
    assert [p.id for p in d.because] == ["2", "1"]  # nearest first
    assert "user u holds list on /d/e (inherited)" == d.summary


def test_paths_helpers():
    assert norm("") == norm("/") == "/" and norm("/a//b/./") == "/a/b"
    assert join("/data", "/") == "/data" and join("/", "/x/") == "/x"
    assert relative("/data", "/data") == "/" and relative("/data", "/data/x") == "/x"
    assert relative("/", "/x") == "/x"
    assert within("/a", "/") and within("/a/b", "/a") and not within("/ab", "/a")
    assert ancestors("/a/b") == ["/a/b", "/a", "/"] and ancestors("/") == ["/"]


def test_node_user_docroot_and_rejection_are_explained():
    d = node_user_decision("write", "/srv/in/x", docroot="/srv/in/", restrictions=[],
                           matches=lambda p, u: False)
    assert d.allowed and "inside the docroot /srv/in" in d.summary
    d = node_user_decision("write", "/srv/inx", docroot="/srv/in", restrictions=[],
                           matches=lambda p, u: False)
    assert not d.allowed and d.reason == OUTSIDE
    from nodecli.users.restrictions import glob_regex

    def match(p, u):
        return glob_regex(p).fullmatch(u) is not None

    d = node_user_decision("read", "/data/fin/x", docroot=None,
                           restrictions=["file:////data/*", "!file:////data/fin/*"],
                           matches=match)
    assert not d.allowed and d.summary == "restriction !file:////data/fin/* rejects " \
                                          "file:////data/fin/x"
    d = node_user_decision("read", "/other", docroot=None, restrictions=[], matches=match)
    assert not d.allowed and "no restriction nor docroot" in d.summary


def test_who_can_orders_one_folder_by_holder_then_numeric_id():
    perms = [Perm("10", "/d", "user", "u", ("read",)), Perm("9", "/d", "user", "u", ("read",)),
             Perm("x", "/d", "user", "u", ("read",)), Perm("2", "/d", "group", "g", ("read",)),
             Perm("1", "/d/e", "user", "z", ("read",))]
    rows = Model("ak", "/", perms).who_can("/d/e", "read")
    assert [h.perm.id for h in rows] == ["1", "2", "9", "10", "x"]
    assert [h.inherited for h in rows] == [False, True, True, True, True]


def test_node_user_decisions_say_each_verdict_and_reason():
    from nodecli.users.restrictions import glob_regex

    def match(p, u):
        return glob_regex(p).fullmatch(u) is not None

    d = node_user_decision("read", "/srv/in/a", docroot="/srv/in", restrictions=[],
                           matches=match)
    assert (d.allowed, d.reason, d.level) == (True, "node-user", "read")
    d = node_user_decision("read", "/srv/x", docroot="/srv/in", restrictions=[], matches=match)
    assert [(s.rule, s.verdict) for s in d.steps] == [("docroot", "deny")]
    assert (d.reason, d.held) == (OUTSIDE, ())
    d = node_user_decision("read", "/other", docroot=None, restrictions=["file:////data/*"],
                           matches=match)
    assert d.summary == "no restriction accepts file:////other"
    assert [s.detail for s in d.steps] == ["file:////data/* does not match file:////other"]
    d = node_user_decision("read", "/data/a", docroot=None,
                           restrictions=["file:////data/*", "!file:////data/a"], matches=match)
    assert [(s.verdict, s.detail) for s in d.steps] == [
        ("applies", "file:////data/* accepts file:////data/a"),
        ("deny", "!file:////data/a rejects file:////data/a")]


def test_decisions_keep_level_order_their_level_and_why_outside():
    perms = [Perm("1", "/d", "user", "u", ("delete", "list")),
             Perm("2", "/q", "user", "v", ("read",)), Perm("3", None, "user", "w", ("read",)),
             Perm("4", "/d/e/f", "user", "u", ("read",)), Perm("5", "/", "user", "x", ())]
    m = Model("ak", "/", perms)
    d = m.decide(_user("u"), "read", "/d")
    assert (d.level, d.held, d.reason) == ("read", ("list", "delete"), LEVEL_NOT_HELD)
    # the path's folders from the path up, then above the storage, then the others
    assert [s.perm.id for s in d.steps if s.perm] == ["1", "5", "3", "2", "4"]
    d = m.decide(_user("v"), "read", "/d/e")
    assert d.summary == ("no permission at or above the path for user v or its groups")
    d = m.decide(_user("u"), "write", "/d/e/f")
    assert d.reason == LEVEL_NOT_HELD
    d = Model("ak", "/", perms[1:]).decide(_user("u"), "read", "/d")
    assert d.summary.endswith("(the folder is visible on the way to /d/e/f)")
    d = Model("ak", "/k", perms).decide(_user("u"), "read", "/d")
    assert [(s.rule, s.verdict, s.detail) for s in d.steps] == [
        ("storage", "deny", "/d is outside access key ak's storage /k")]


def test_every_step_of_an_explanation_is_exact():
    perms = [Perm("1", "/d", "group", "g", ("list",)), Perm("2", "/e", "user", "u", ("read",)),
             Perm("3", "/", "user", "z", ("read",))]
    m = Model("ak", "/", perms)

    def steps(d):
        return [(s.rule, s.verdict, s.detail, s.perm.id if s.perm else None) for s in d.steps]

    d = m.decide(_user("u", ["g"]), "list", "/d/x")
    assert steps(d) == [
        ("storage", "pass", "/d/x is inside the key's storage /", None),
        ("scope", "pass", "scope node.ak:user:all: permissions decide", None),
        ("permission", "allow", "group g on /d grants list", "1"),
        ("permission", "skip", "user z on /: not user u nor one of its groups", "3"),
        ("permission", "skip", "user u on /e: not the path nor a folder above it", "2")]
    assert (d.summary, d.reason) == ("group g holds list on /d (inherited)", GRANTED)
    d = m.decide(Subject("u", (), "node.other:user:all"), "list", "/d")
    assert steps(d)[1:] == [("scope", "deny", "scope 'node.other:user:all' does not grant "
                                              "node.ak:user:all", None)]
    assert d.summary == "the token's scope does not grant access key ak"
    d = m.decide(_user("u", role="admin"), "list", "/d")
    assert steps(d)[1:] == [("scope", "allow", "scope node.ak:admin:all administers the "
                                               "key: permissions do not restrict it", None)]
    assert d.summary == "the token administers the access key: permissions do not " \
                        "restrict it"
    assert d.held == LEVELS
    d = m.decide(_user("u"), "write", "/e")
    assert steps(d)[2] == ("permission", "applies", "user u on /e grants read, not write", "2")
    both = Model("ak", "/", [Perm("7", "/", "user", "u", ("list", "read")),
                             Perm("8", "/", "user", "u", ())])
    assert [s.detail for s in both.decide(_user("u"), "read", "/a").steps[2:]] == [
        "user u on / grants list,read", "user u on / grants (none), not read"]
    assert Model("ak", "/k", perms).decide(_user("u"), "read", "/d").summary == \
        "/d is outside the key's storage /k"
    d = Model("ak", "/d", perms, Rules(inherit_above_root=False)).decide(
        _user("z"), "read", "/d/q")
    assert ("permission", "skip", "user z on /: above the key's storage, and such "
            "permissions do not count (--no-inherit-above-root)", "3") in steps(d)
