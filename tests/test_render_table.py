"""Plain tables and the classic -l layout: every cell sanitised, columns aligned, nothing
trailing, whatever the values."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from nodecli.render.table import Column, _cell, render_plain_table
from nodecli.render.text import sanitize

_text = st.lists(st.one_of(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                          st.sampled_from(["\x1b", "\x1b[31m", "\t", "\n", "\x9b", "é"])),
                max_size=6).map("".join)
_value = st.one_of(_text, st.none(), st.booleans(), st.integers(-99, 99),
                   st.lists(_text, max_size=3), st.dictionaries(_text, _text, max_size=1))


def _reference(rows, columns) -> str:
    """Aligned in terminal columns (a wide character takes 2, a combining one 0)."""
    from nodecli.render.text import display_width as width

    cells = [[_cell(r.get(c.key)) for c in columns] for r in rows]
    widths = [width(c.heading) for c in columns]
    for line in cells:
        for i, v in enumerate(line):
            widths[i] = max(widths[i], width(v))
    out = []
    for line in [[c.heading for c in columns], *cells]:
        parts = []
        for i, (v, c) in enumerate(zip(line, columns, strict=True)):
            fill = " " * (widths[i] - width(v))
            if c.justify == "right":
                parts.append(fill + v)
            else:
                parts.append(v if i == len(columns) - 1 else v + fill)
        out.append("  ".join(parts).rstrip() + "\n")
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.fixed_dictionaries({}, optional={"a": _value, "b": _value, "c": _value}),
                     max_size=6),
       justify=st.lists(st.sampled_from(["left", "right"]), min_size=3, max_size=3))
def test_plain_table_matches_cell_by_cell_rendering(rows, justify):
    columns = [Column(k, h, j) for k, h, j in zip("abc", ["A", "bee", "C c"], justify,
                                                   strict=True)]
    out = io.StringIO()
    render_plain_table(rows, columns, out)
    assert out.getvalue() == _reference(rows, columns)


@given(_text)
def test_sanitize_leaves_nothing_unsafe_and_keeps_safe_text(text):
    import unicodedata

    def unsafe(ch: str) -> bool:  # controls, format characters, separators, surrogates
        return (ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F
                or unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Cs"))

    clean = sanitize(text)
    assert not any(unsafe(ch) for ch in clean)
    if not any(unsafe(ch) for ch in text):
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


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"a": _text, "b": _text, "c": _text, "d": _text}),
                max_size=6),
       st.integers(min_value=20, max_value=200))
def test_fit_columns_drops_in_rank_order_and_never_cuts_whole_columns(rows, width):
    from nodecli.render.table import GAP, fit_columns
    from nodecli.render.text import display_width

    columns = [Column("a", "a", whole=True), Column("b", "bee", drop=2),
               Column("c", "cee"), Column("d", "dee", whole=True, drop=1)]
    kept, caps = fit_columns(rows, columns, width)
    assert kept == [c for c in columns if c in kept]  # order kept
    assert columns[0] in kept and columns[2] in kept  # never dropped
    if columns[1] not in kept:  # rank 2 goes only after rank 1
        assert columns[3] not in kept
    assert set(caps) <= {"c", "b"}  # whole columns are never cut
    assert all(cap >= 6 for cap in caps.values())
    need = {c.key: max([display_width(c.heading),
                        *(display_width(_cell(r.get(c.key))) for r in rows)]) for c in kept}
    total = sum(caps.get(k, v) for k, v in need.items()) + GAP * (len(kept) - 1)
    if total > width:  # only when nothing more could be left out or cut
        assert all(c in kept for c in columns[:1] + columns[2:3])
        assert all(caps.get(c.key, need[c.key]) <= max(display_width(c.heading), 6)
                   for c in kept if not c.whole)
