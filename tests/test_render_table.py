"""Plain tables: the column-wise renderer writes what a cell-by-cell one writes."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from nodecli.render.table import Column, _cell, render_json, render_plain_table
from nodecli.render.text import sanitize

_text = st.lists(st.one_of(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                          st.sampled_from(["\x1b", "\x1b[31m", "\t", "\n", "\x9b", "é"])),
                max_size=6).map("".join)
_value = st.one_of(_text, st.none(), st.booleans(), st.integers(-99, 99),
                   st.lists(_text, max_size=3), st.dictionaries(_text, _text, max_size=1))


def _reference(rows, columns) -> str:
    cells = [[_cell(r.get(c.key)) for c in columns] for r in rows]
    widths = [len(c.heading) for c in columns]
    for line in cells:
        for i, v in enumerate(line):
            widths[i] = max(widths[i], len(v))
    out = []
    for line in [[c.heading for c in columns], *cells]:
        parts = []
        for i, (v, c) in enumerate(zip(line, columns, strict=True)):
            if c.justify == "right":
                parts.append(v.rjust(widths[i]))
            else:
                parts.append(v if i == len(columns) - 1 else v.ljust(widths[i]))
        out.append("  ".join(parts).rstrip() + "\n")
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.fixed_dictionaries({}, optional={"a": _value, "b": _value, "c": _value}),
                     max_size=6),
       justify=st.lists(st.sampled_from(["left", "right"]), min_size=3, max_size=3),
       uniform=st.sampled_from(["mixed", "strings", "lists"]))
def test_plain_table_matches_cell_by_cell_rendering(rows, justify, uniform):
    if uniform == "strings":  # the fast path: a column of plain strings
        rows = [{k: str(v) for k, v in r.items()} for r in rows]
    elif uniform == "lists":  # the fast path: a column of lists of strings
        rows = [{k: [str(x) for x in v] if isinstance(v, list) else [str(v)]
                 for k, v in r.items()} for r in rows]
    columns = [Column(k, h, j) for k, h, j in zip("abc", ["A", "bee", "C c"], justify,
                                                   strict=True)]
    out = io.StringIO()
    render_plain_table(rows, columns, out)
    assert out.getvalue() == _reference(rows, columns)


@given(_text)
def test_sanitize_leaves_nothing_unsafe_and_keeps_safe_text(text):
    clean = sanitize(text)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in clean)
    if not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text):
        assert clean == text


def _classic_reference(rows) -> str:
    cells = [(sanitize(r["name"]), sanitize(r["transfer_user"]),
              "[" + ",".join(sanitize(a) for a in r["acls"]) + "]") for r in rows]
    widths = [13, 21, 21]
    for line in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, line, strict=True)]
    out = ["List of Node API user(s):"]
    for line in (("user", "system/transfer", "user acls"), tuple("=" * w for w in widths),
                 *cells):
        out.append(" ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    return "\n".join(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"name": _text, "transfer_user": _text,
                                       "acls": st.lists(_text, max_size=3)}), max_size=5))
def test_classic_list_matches_cell_by_cell_rendering(rows):
    from nodecli.cli.classic import classic_table

    assert classic_table(rows) == _classic_reference(rows)


_acl_lists = st.lists(st.sampled_from(["admin", "impersonation", "internal"]), max_size=3)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,12}", fullmatch=True),
                       st.tuples(st.sampled_from(["aspera", "a-much-longer-transfer-user"]),
                                 _acl_lists), max_size=8))
def test_user_rows_made_on_demand_are_the_rows_and_render_the_same(users):
    """users.UserRows (what 'user list' and '-l' render) against the list of dicts."""
    import json

    from nodecli.cli.classic import classic_table
    from nodecli.config import Config, NodeUser, TransferUser
    from nodecli.config.columns import UserTable
    from nodecli.render.table import render_csv
    from nodecli.users import UserRows, user_rows

    cfg = Config(transfer_users={x: TransferUser(x) for x in
                                 ("aspera", "a-much-longer-transfer-user")},
                 users={n: NodeUser(n, x, None, list(a)) for n, (x, a) in users.items()})
    lazy, plain = UserRows(UserTable.of(cfg.users)), user_rows(cfg)
    assert list(lazy) == plain and lazy == plain and len(lazy) == len(plain)
    assert [lazy[i] for i in range(len(lazy))] == plain and lazy[1:3] == plain[1:3]
    assert json.dumps(list(lazy)) == json.dumps(plain)
    for key in ("name", "transfer_user", "acls", "other"):
        assert lazy.column(key) == [r.get(key) for r in plain]
    columns = [Column("name", "user"), Column("transfer_user", "transfer user"),
               Column("acls", "acls")]
    for render in (render_plain_table, render_csv):
        a, b = io.StringIO(), io.StringIO()
        render(lazy, columns, a)
        render(plain, columns, b)
        assert a.getvalue() == b.getvalue() == (_reference(plain, columns)
                                                if render is render_plain_table
                                                else b.getvalue())
    assert classic_table(lazy) == classic_table(plain) == _classic_reference(plain)
    a, b = io.StringIO(), io.StringIO()
    render_json(lazy, a)
    render_json(plain, b)
    assert a.getvalue() == b.getvalue() == json.dumps(plain, indent=2,
                                                      ensure_ascii=False) + "\n"


_json_key = st.one_of(_text, st.sampled_from(["%", "%s", "a%sb", '"', "\\", "é", "\x7f"]))
_json_value = st.one_of(_text, st.lists(_text, max_size=3), st.none(), st.booleans(),
                        st.integers(-9, 9), st.dictionaries(_text, _text, max_size=1))


@settings(max_examples=300, deadline=None)
@given(st.lists(_json_key, min_size=0, max_size=4, unique=True), st.data())
def test_json_of_rows_is_what_json_dumps_writes(keys, data):
    """render_json's column-wise form of uniform rows is byte for byte json.dumps's
    indented output; anything else (other types, keys in another order, a missing key)
    is json.dumps's own."""
    import json

    kinds = {k: data.draw(st.sampled_from(["str", "list", "any"])) for k in keys}
    value = {"str": _text, "list": st.lists(_text, max_size=3), "any": _json_value}
    rows = [{k: data.draw(value[kinds[k]]) for k in keys}
            for _ in range(data.draw(st.integers(0, 5)))]
    if rows and data.draw(st.booleans()):  # one row with its keys in another order
        rows[-1] = dict(reversed(list(rows[-1].items())))
    if rows and keys and data.draw(st.booleans()):  # or with a key less
        rows[0].pop(keys[0])
    out = io.StringIO()
    render_json(rows, out)
    assert out.getvalue() == json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_text, _text), max_size=5),
       st.sampled_from(["", " ", "\xa0", "\u3000", "\t", "x"]))
def test_plain_table_strips_what_the_last_cell_ends_with(pairs, tail):
    """The one-format-per-row path is taken only when no line would be stripped."""
    rows = [{"a": a, "b": b + tail} for a, b in pairs]
    columns = [Column("a", "A"), Column("b", "B")]
    out = io.StringIO()
    render_plain_table(rows, columns, out)
    assert out.getvalue() == _reference(rows, columns)
