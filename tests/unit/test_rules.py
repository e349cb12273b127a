"""Rules files: first match wins, nothing gets a silent default."""

from __future__ import annotations

import pytest

from eceb_worker.corpus.rules import classify, parse_rules
from eceb_worker.errors import InputError

RULES = b"""
schema = "symgliph.eceb/rules-v0.1"
exclude = ["**/.git/**", "**/*.tmp"]

[[rule]]
glob = "runbook/secret/**"
classification = "restricted"

[[rule]]
glob = "runbook/**"
kind = "runbook"
classification = "internal"

[[rule]]
glob = "**/*.{yml,yaml}"
kind = "infrastructure"

[[rule]]
glob = "**"
classification = "public"
"""


def test_first_matching_rule_wins_per_field() -> None:
    rules = parse_rules(RULES, "rules.toml")
    result = {
        c.path: (c.kind, c.classification)
        for c in classify(
            rules,
            [
                "runbook/secret/keys.md",
                "runbook/disk.md",
                "deploy/app.yaml",
                ".hidden/x.yml",
                "runbook/.git/HEAD",
                "a.tmp",
            ],
            rules_name="rules.toml",
        )
    }
    assert result == {
        "runbook/secret/keys.md": ("runbook", "restricted"),
        "runbook/disk.md": ("runbook", "internal"),
        "deploy/app.yaml": ("infrastructure", "public"),
        ".hidden/x.yml": ("infrastructure", "public"),
    }


def test_unmatched_files_are_all_listed() -> None:
    rules = parse_rules(RULES, "rules.toml")
    with pytest.raises(InputError) as caught:
        classify(rules, ["notes/a.md", "notes/b.md", "runbook/ok.md"], rules_name="rules.toml")
    found = {(p.record, p.field) for p in caught.value.problems}
    assert found == {("notes/a.md", "kind"), ("notes/b.md", "kind")}


def test_rules_file_problems_are_reported_together() -> None:
    data = b"""
schema = "symgliph.eceb/rules-v0.1"
[[rule]]
glob = "a/**"
kind = "wiki"
[[rule]]
glob = "b/**"
classification = "secret"
colour = "red"
"""
    with pytest.raises(InputError) as caught:
        parse_rules(data, "rules.toml")
    found = {p.field for p in caught.value.problems}
    assert {"rule[0].kind", "rule[1].classification", "rule[1].colour"} <= found


def test_rule_setting_nothing_and_bad_glob() -> None:
    data = b"""
schema = "symgliph.eceb/rules-v0.1"
[[rule]]
glob = "a/**"
"""
    with pytest.raises(InputError) as caught:
        parse_rules(data, "rules.toml")
    assert caught.value.problems[0].field == "rule[0]"


def test_invalid_toml_names_the_file() -> None:
    with pytest.raises(InputError) as caught:
        parse_rules(b"schema = ", "rules.toml")
    assert caught.value.problems[0].file == "rules.toml"
    assert "invalid TOML" in caught.value.problems[0].message


def test_globs_expanding_to_too_many_patterns_are_problems_of_their_rule() -> None:
    many = "{a,b}" * 10  # 1,024 patterns once its braces are expanded
    half = "{a,b}" * 9  # 512: fine alone, too many as two excludes together
    data = f"""
schema = "symgliph.eceb/rules-v0.1"
exclude = ["x/{half}", "y/{half}"]
[[rule]]
glob = "ok/**"
kind = "runbook"
classification = "internal"
[[rule]]
glob = "{many}"
kind = "runbook"
""".encode()
    with pytest.raises(InputError) as caught:
        parse_rules(data, "rules.toml")
    found = {(p.file, p.record, p.field) for p in caught.value.problems}
    assert found == {("rules.toml", "", "rule[1].glob"), ("rules.toml", "", "exclude")}
    assert all("1000" in p.message for p in caught.value.problems)


@pytest.mark.parametrize("where", ["schema = {digits}", 'schema = 1\n[[rule]]\nglob = "*"\nkind = {digits}'])
def test_integers_too_long_to_convert_are_invalid_toml(where: str) -> None:
    data = where.format(digits="1" * 5000).encode()
    with pytest.raises(InputError) as caught:
        parse_rules(data, "rules.toml")
    (problem,) = caught.value.problems
    assert problem.file == "rules.toml"
    assert problem.message.startswith("invalid TOML: "), problem.message


def test_unclassified_files_grouped_by_directory_and_what_they_lack() -> None:
    from eceb_worker.corpus.rules import classify_all, group_unclassified
    from eceb_worker.errors import Problem

    rules = parse_rules(b'schema = "symgliph.eceb/rules-v0.1"\n[[rule]]\nglob = "a/**"\nkind = "code"\n', "r.toml")
    paths = [f"a/{n}.md" for n in range(5)] + ["b/x.md", "top.md"]
    _, problems = classify_all(rules, paths, rules_name="r.toml")
    other = Problem(file="corpus", record="c/bad", field="path", message="contains a backslash")
    grouped = group_unclassified([*problems, other], "r.toml")
    assert [str(p) for p in grouped] == [
        "corpus, c/bad: field 'path': contains a backslash",
        "r.toml, top.md: field 'kind': no rule gives this file a kind",
        "r.toml, top.md: field 'classification': no rule gives this file a classification",
        "r.toml, 5 files under a/: field 'classification': no rule gives them a classification:"
        " a/0.md, a/1.md, a/2.md and 2 more",
        "r.toml, b/x.md: field 'kind': no rule gives this file a kind",
        "r.toml, b/x.md: field 'classification': no rule gives this file a classification",
    ]
