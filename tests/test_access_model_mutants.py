"""The access model (nodecli.node.access_model) at the boundaries mutation testing found
untested (docs/development.md, "Equivalent survivors: nodecli/node/access_model.py")."""

from __future__ import annotations

from nodecli.node.access_model import Model, Perm


def test_who_can_orders_numeric_ids_of_any_length_before_a_nodes_other_words():
    big = str((1 << 62) + 1)  # past any sentinel a number could be given
    ids = ["x", "²", big, "10", "9"]  # "²" is a digit to isdigit, no number to int
    rows = Model("ak", "/", [Perm(i, "/d", "user", "u", ("read",)) for i in ids]).who_can("/d")
    assert [h.perm.id for h in rows] == ["9", "10", big, "x", "²"]


def test_a_permission_with_no_level_is_level_not_held_and_levels_are_named_in_order():
    from nodecli.node.access_model import LEVEL_NOT_HELD, Subject

    u = Subject("u", (), "node.ak:user:all")
    d = Model("ak", "/", [Perm("8", "/d", "user", "u", ())]).decide(u, "read", "/d/x")
    assert (d.allowed, d.reason, d.held) == (False, LEVEL_NOT_HELD, ())
    assert d.summary == "read is not held: the permissions at or above the path grant no level"
    d = Model("ak", "/", [Perm("8", "/d", "user", "u", ("delete", "write"))]).decide(
        u, "read", "/d")
    assert d.summary == ("read is not held: the permissions at or above the path grant "
                         "write,delete")  # the order of LEVELS, not the alphabet's


def test_listable_needs_the_storage_and_a_scope_even_for_an_admin_or_a_list_holder():
    from nodecli.node.access_model import Subject

    perms = [Perm("1", "/", "user", "u", ("list",))]
    m = Model("ak", "/data", perms)
    admin, user = Subject("u", (), "node.ak:admin:all"), Subject("u", (), "node.ak:user:all")
    assert m.listable(admin, "/data") and m.listable(user, "/data/x")
    assert not m.listable(admin, "/other")  # outside the storage: nobody
    assert not m.listable(Subject("u", (), "node.other:user:all"), "/data/x")  # no scope


def test_without_traverse_no_permission_names_no_folder_on_the_way():
    from nodecli.node.access_model import NO_PERMISSION, Rules, Subject

    perms = [Perm("1", "/d/e", "user", "u", ("read",))]
    u = Subject("u", (), "node.ak:user:all")
    on = Model("ak", "/", perms).decide(u, "read", "/d")
    assert on.summary.endswith("its groups (the folder is visible on the way to /d/e)")
    off = Model("ak", "/", perms, Rules(traverse=False)).decide(u, "read", "/d")
    assert (off.reason, off.summary) == (
        NO_PERMISSION, "no permission at or above the path for user u or its groups")


def test_what_can_lists_a_folder_then_what_is_inside_it_before_its_neighbours():
    from nodecli.node.access_model import Subject

    admin = Subject("u", (), "node.ak:admin:all")
    sights = Model("ak", "/", []).what_can(admin, ["/d-x", "/d/b", "/d", "/"])
    assert [s.path for s in sights] == ["/", "/d", "/d/b", "/d-x"]  # not "-" before "/"


def test_what_can_for_an_admin_names_no_permission_even_one_it_holds():
    from nodecli.node.access_model import LEVELS, Subject

    admin = Subject("u", (), "node.ak:admin:all")
    m = Model("ak", "/", [Perm("1", "/d", "user", "u", ("read",))])
    assert [(s.path, s.levels, s.traverse_only, s.source) for s in m.what_can(admin, ["/d"])] \
        == [("/d", LEVELS, False, None)]  # the scope, not permission 1, shows it


def test_scope_role_reads_each_word_of_the_scope():
    from nodecli.node.access_model import Subject

    m = Model("ak", "/", [])

    def role(scope: str) -> str | None:
        return m.scope_role(Subject("u", (), scope))

    assert role("node.ak:admin:all") == role("admin:all") == "admin"
    assert role("node.ak:user:all node.ak:admin:all") == "admin"  # admin wins
    assert role("openid node.ak:user:all") == "user"
    for none in ("", "node.other:admin:all", "node.other:user:all", "node.ak:user:al",
                 "user:all", "node.ak:admin:all:x"):
        assert role(none) is None, none


def test_visible_needs_the_storage_a_scope_and_a_permission_at_above_or_below():
    from nodecli.node.access_model import Rules, Subject

    perms = [Perm("1", "/data/a", "user", "u", ("read",)),
             Perm("2", "/data/b/c", "user", "u", ("read",))]
    m = Model("ak", "/data/", perms)
    assert m.root == "/data"  # the key's storage, normalised
    u, admin = Subject("u", (), "node.ak:user:all"), Subject("v", (), "node.ak:admin:all")
    assert m.visible(u, "/data//a/") and m.visible(u, "/data/a/x")  # at and below
    assert m.visible(u, "/data/b") and m.visible(u, "/data") and not m.visible(u, "/data/d")
    assert not Model("ak", "/data", perms, Rules(traverse=False)).visible(u, "/data/b")
    assert m.visible(admin, "/data/d") and not m.visible(admin, "/other")
    assert not m.visible(Subject("u", (), "node.x:user:all"), "/data/a")  # no scope


def test_held_levels_keep_the_order_of_levels_and_unknown_ones_last():
    from nodecli.node.access_model import Subject

    perms = [Perm("1", "/d", "user", "u", ("zz", "read", "list", "aa"))]
    d = Model("ak", "/", perms).decide(Subject("u", (), "node.ak:user:all"), "write", "/d")
    assert d.held[:2] == ("list", "read") and set(d.held[2:]) == {"aa", "zz"}


def test_what_can_for_a_user_names_the_nearest_permission_or_the_way():
    from nodecli.node.access_model import Subject

    u = Subject("u", (), "node.ak:user:all")
    p1, p2 = Perm("1", "/d", "user", "u", ("list",)), Perm("2", "/d/e", "user", "u", ("read",))
    sights = Model("ak", "/", [p1, p2]).what_can(u, ["/", "/d", "/d/e", "/d/e/f", "/x"])
    assert [(s.path, s.levels, s.traverse_only, s.source) for s in sights] == [
        ("/", (), True, None), ("/d", ("list",), False, p1),
        ("/d/e", ("list", "read"), False, p2), ("/d/e/f", ("list", "read"), False, p2)]
