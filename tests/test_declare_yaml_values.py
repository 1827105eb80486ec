"""nodecli/declare/yaml_values.py in-process: the two readings of a composed YAML
document agree, the marked one notes each place's line, and a value PyYAML cannot build
is one line naming its place, whatever PyYAML raised (docs/development.md, "Equivalent
survivors: nodecli/declare/yaml_values.py")."""

from __future__ import annotations

import pytest

from nodecli.declare import document, yaml_values
from nodecli.errors import UsageError

HEAD = "version: 1\naccess_keys:\n  a:\n    storage: {path: /d}\n    configuration:\n"


def refused(text: str) -> str:
    with pytest.raises(UsageError) as info:
        document.parse(text.encode(), "d.yaml")
    return info.value.message


def configuration(text: str) -> dict:
    conf = (document.parse((HEAD + text).encode(), "d.yaml").access_keys or {})["a"]
    assert conf.configuration is not None
    return conf.configuration


@pytest.mark.parametrize("value,tag", [("!!bool maybe", "!!bool"), ("!!int ''", "!!int"),
                                       ("!!float ''", "!!float"),
                                       ("!!timestamp x", "!!timestamp")])
def test_a_tagged_value_pyyaml_fails_to_build_is_one_line_and_the_next_reads(value, tag):
    """PyYAML's constructors raise KeyError, IndexError or AttributeError on these (once
    an "internal error"); the value after is built by a constructor left as new."""
    text = HEAD + f"      ok: 1\n      k: {value}\n"
    assert refused(text) == (f"d.yaml:7: access_keys.a.configuration.k: unreadable value: "
                             f"not a {tag}")
    assert configuration("      k: !!bool true\n      n: 0x1F\n") == {"k": True, "n": 31}


def test_keys_that_are_not_text_are_named_as_the_marked_reading_writes_them():
    """``true: x`` is the key "True" (the quick reading leaves such keys to the marked
    one, so the two never disagree); ``0x1F`` and ``31`` are then the same key."""
    text = "      0x1F: a\n      true: b\n      1.50: c\n      ~: d\n      s: 07\n"
    assert configuration(text) == {"31": "a", "True": "b", "1.5": "c", "None": "d", "s": 7}
    assert refused(HEAD + text + "      31: e\n") == \
        "d.yaml:11: access_keys.a.configuration.31: given twice"


def compose(text: str):
    import yaml

    return yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def test_the_marked_reading_notes_the_line_of_every_place():
    root = compose("a:\n  - x\n  -\n    b: 1\nc: {d: [e]}\n")
    lines: dict = {}
    budget = yaml_values.Budget(10)
    data = yaml_values.marked(root, (), lines, budget)
    assert data == {"a": ["x", {"b": 1}], "c": {"d": ["e"]}}
    assert lines == {(): 1, ("a",): 2, ("a", 0): 2, ("a", 1): 4, ("a", 1, "b"): 4,
                     ("c",): 5, ("c", "d"): 5, ("c", "d", 0): 5}
    assert budget.left == budget.limit - 8  # one value a place
    assert yaml_values.quick(root, budget) == data and budget.left == budget.limit - 16


@pytest.mark.parametrize("text,where,line,why", [
    ("a: 1\nb:\n  - [x]\n  - {? [y] : z}\n", ("b", 1, "?"), 4, "a key must be a word"),
    ("a: 1\nb:\n  c: 1\n  c: 2\n", ("b", "c"), 4, "given twice"),
    ("a: 1\nb:\n  ? !!int x\n  : 2\n", ("b", "?"), 3,
     "unreadable value: invalid literal for int() with base 10: 'x'"),
    ("a: 1\nb:\n  - 1\n  - !!bool maybe\n", ("b", 1), 4, "unreadable value: not a !!bool")])
def test_the_marked_reading_names_the_place_and_line_of_what_is_wrong(text, where, line,
                                                                      why):
    root = compose(text)
    with pytest.raises(yaml_values.Again):
        yaml_values.quick(root, yaml_values.Budget(100))
    lines: dict = {}
    with pytest.raises(yaml_values.Bad) as info:
        yaml_values.marked(root, (), lines, yaml_values.Budget(100))
    assert (info.value.where, info.value.message) == (where, why)
    assert lines[where] == line


def test_a_built_value_leaves_nothing_behind_in_the_shared_constructor():
    """Memory stays bounded over many documents read in one process."""
    assert configuration("      n: [1, 2.5, 2026-01-02, !!binary 'YQ==']\n") == {
        "n": [1, 2.5, __import__("datetime").date(2026, 1, 2), b"a"]}
    (constructor,) = yaml_values._CONSTRUCTOR
    assert constructor.constructed_objects == {}
    assert constructor.recursive_objects == {}
