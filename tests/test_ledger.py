"""The ledger loader and lint: every error names file:line, bad files never stop the pack."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import pytest

from sigclass.errors import SignatureError
from sigclass.ledger.families import CONTRACT_IDS
from sigclass.ledger.pack import load_ledger
from sigclass.ledger.parse import parse_signature
from sigclass.authoring.lint import lint
from sigclass.scan.scanner import Scanner

GOOD = """\
id: demo-family
title: Demo failure
role: root
priority: 50
match:
  any:
    - 'DemoError: something broke'
mitigation: Fix the demo.
probes: [Run it again.]
"""


def test_shipped_pack_defines_every_contract_id(ledger):
    missing = [fid for fid in CONTRACT_IDS if fid not in ledger]
    assert not missing, f"shipped pack lacks {missing}"


def test_shipped_pack_lints_without_high_issues(ledger):
    issues = lint(ledger, shipped=True, scanner=Scanner(ledger, signatures="regex"))
    high = [i.line() for i in issues if i.severity == "HIGH"]
    assert not high, "\n".join(high)


def test_good_signature_parses():
    sig = parse_signature(GOOD, "sigs/demo-family.yaml")
    assert sig.id == "demo-family" and sig.role == "root" and len(sig.any) == 1
    assert sig.any[0].compiled.search("x DemoError: something broke")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (GOOD.replace("role: root", "role: root\nrole: secondary"), "duplicate key 'role'"),
        (GOOD.replace("role: root", "role: sideways"), "role must be one of"),
        (GOOD.replace("'DemoError: something broke'", "'DemoError: (unclosed'"), "regex does not compile"),
        (GOOD.replace("'DemoError: something broke'", "'(?:x)?'"), "matches the empty string"),
        (GOOD.replace("id: demo-family", "id: other-name"), "differs from the file stem"),
        (GOOD.replace("title: Demo failure", "title: Demo failure\ncolour: red"), "unknown key 'colour'"),
        (GOOD.replace("mitigation: Fix the demo.\n", ""), "mitigation is missing"),
        ("id: demo-family\n  title: [unclosed\n", "YAML error"),
    ],
)
def test_bad_signature_reports_file_and_line(text, needle):
    with pytest.raises(SignatureError) as exc:
        parse_signature(text, "sigs/demo-family.yaml")
    msg = str(exc.value)
    assert needle in msg
    assert msg.startswith("sigs/demo-family.yaml:")
    line = int(msg.split(":")[1])
    assert 1 <= line <= text.count("\n") + 1


def test_bad_user_file_is_skipped_and_reported(tmp_path: Path):
    (tmp_path / "broken-one.yaml").write_text("id: broken-one\nmatch: [\n", encoding="utf-8")
    (tmp_path / "demo-family.yaml").write_text(GOOD, encoding="utf-8")
    lg = load_ledger([tmp_path])
    assert "demo-family" in lg and "broken-one" not in lg
    assert any(p.where.startswith(str(tmp_path / "broken-one.yaml") + ":") for p in lg.problems)
    with pytest.raises(SignatureError):
        load_ledger([tmp_path], strict=True)


def test_user_file_overrides_shipped_id(tmp_path: Path, ledger):
    text = GOOD.replace("demo-family", "cuda-oom").replace("Demo failure", "My own OOM")
    (tmp_path / "cuda-oom.yaml").write_text(text, encoding="utf-8")
    lg = load_ledger([tmp_path])
    assert lg["cuda-oom"].title == "My own OOM"
    assert len(lg) == len(ledger)


@pytest.mark.parametrize("engine", [None, "regex"])
def test_catastrophic_user_regex_costs_a_warning_not_a_hang(tmp_path: Path, engine):
    # alternation under repetition: exponential for a backtracking engine on a run of 'a' without the final 'c'
    text = GOOD.replace("'DemoError: something broke'", "'DemoError: (a|aa)+c'")
    (tmp_path / "demo-family.yaml").write_text(text, encoding="utf-8")
    lg = load_ledger([tmp_path], shipped=False)
    sc = Scanner(lg, signatures="regex", engine=engine)
    log = "Traceback (most recent call last):\n  File \"x.py\", line 1\nDemoError: " + "a" * 60 + "\n"
    t0 = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = sc.scan_text(log)
    assert time.monotonic() - t0 < 60  # bounded by the match timeout, not exponential
    if sc.engine.name == "regex":
        # the backtracking engine ran it: the pattern is switched off and named
        assert any("demo-family" in str(w.message) and "switched off" in str(w.message) for w in caught)
    # the failure is not lost: it is still reported (as unknown, since its only pattern never matched)
    assert [f.family for f in res.findings] == ["unknown"]


def test_lint_flags_pattern_rules_and_missing_examples(tmp_path: Path):
    text = GOOD.replace("'DemoError: something broke'", "'\\bab\\b'")
    (tmp_path / "demo-family.yaml").write_text(text, encoding="utf-8")
    lg = load_ledger([tmp_path], shipped=False)
    issues = lint(lg, shipped=False, scanner=Scanner(lg, signatures="regex"))
    names = {(i.name, i.severity) for i in issues}
    assert ("pattern-rule", "MEDIUM") in names
    assert ("examples", "HIGH") in names
    assert all(i.line().startswith("issue=") for i in issues)


def test_supersedes_target_must_exist(tmp_path: Path):
    text = GOOD + "supersedes:\n  - id: no-such-family\n    note: because\n"
    (tmp_path / "demo-family.yaml").write_text(text, encoding="utf-8")
    lg = load_ledger([tmp_path], shipped=False)
    issues = lint(lg, shipped=False)
    assert any(i.name == "supersedes-target" and "no-such-family" in i.message for i in issues)


def test_vllm_entries_carry_their_knowledge(ledger):
    ima = ledger["vllm-h100-prefix-cache-ima"]
    text = " ".join(ima.probes).lower()
    assert "a100" in text and "short" in text
    assert "enable_prefix_caching" in ima.mitigation and "enforce_eager" in ima.mitigation
    hang = ledger["vllm-engine-hang"]
    assert any("chunk" in c.lower() for c in hang.caveats)
    assert any(s.id == "tokenizer-reload-per-call" for s in hang.superseded_by)
    tok = ledger["tokenizer-reload-per-call"]
    assert any(s.id == "vllm-engine-hang" for s in tok.supersedes)
    assert "lru_cache" in tok.mitigation or any("lru_cache" in p for p in tok.probes)
    orphan = ledger["vllm-orphan-gpu-memory"]
    assert "pid" in orphan.mitigation.lower()


def test_known_patterns_skip_compilation_but_still_match(tmp_path: Path, monkeypatch):
    from sigclass.ledger import patterns as ledger_mod

    monkeypatch.setenv("SIGCLASS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ledger_mod, "_VALIDATED", None)
    (tmp_path / "demo-family.yaml").write_text(GOOD, encoding="utf-8")
    first = load_ledger([tmp_path], shipped=False)
    assert first["demo-family"].any[0]._rx is not None  # new pattern: compiled and checked at load
    monkeypatch.setattr(ledger_mod, "_VALIDATED", None)  # a later process reads the cache file
    again = load_ledger([tmp_path], shipped=False)
    pat = again["demo-family"].any[0]
    assert pat._rx is None  # known valid: compiled on first use
    assert pat.compiled.search("x DemoError: something broke")
    # an edited pattern is not known: it is checked at load again
    (tmp_path / "demo-family.yaml").write_text(GOOD.replace("'DemoError: something broke'", "'(?:x)?'"))
    monkeypatch.setattr(ledger_mod, "_VALIDATED", None)
    with pytest.raises(SignatureError, match="empty string"):
        load_ledger([tmp_path], shipped=False, strict=True)


def test_counted_pattern_form(tmp_path: Path):
    text = GOOD.replace("    - 'DemoError: something broke'\n",
                        "    - 'DemoError: something broke'\n    - pattern: 'slow step detected'\n      min_count: 3\n")
    sig = parse_signature(text, "sigs/demo-family.yaml")
    assert [p.min_count for p in sig.any] == [1, 3]
    bad = text.replace("min_count: 3", "min_count: 0")
    with pytest.raises(SignatureError, match="counted pattern"):
        parse_signature(bad, "sigs/demo-family.yaml")
    (tmp_path / "demo-family.yaml").write_text(text, encoding="utf-8")
    sc = Scanner(load_ledger([tmp_path], shipped=False), signatures="regex")
    two = "INFO slow step detected (1)\nINFO ok\nINFO slow step detected (2)\n"
    assert sc.scan_text(two).findings == []
    res = sc.scan_text(two + "INFO slow step detected (3)\nINFO slow step detected (4)\n")
    assert [(f.family, f.line, f.count) for f in res.findings] == [("demo-family", 1, 4)]


def test_a_fact_pattern_gives_its_named_group_by_number():
    """Pattern.fact_value reads the fact's group by its number (the regex module's lookup by name raises inside)."""
    from sigclass.ledger.patterns import Pattern

    p = Pattern(0, "fam", "fact", r"(?P<other>x)?gpu=(?P<gpu>\w+)", None, "test:1", fact="gpu")
    m = p.compiled.search("host=a gpu=H100")
    assert p.fact_value(m) == "H100" and p.fact_value(p.compiled.search("gpu=A100")) == "A100"
    q = Pattern(1, "fam", "fact", r"gpu=(?P<gpu>\w+)|model=(?P<model>\w+)", None, "test:2", fact="gpu")
    assert q.fact_value(q.compiled.search("model=H100")) is None


RECOVERY = GOOD.replace("    - 'DemoError: something broke'",
                        "    - pattern: 'demo: still waiting for peers'\n      min_count: 2") + """\
over_time:
  - kind: recovery
    name: demo-started
    pattern: 'Demo started in [0-9]+ s'
"""
WAITS = "demo: still waiting for peers\ndemo: still waiting for peers\n"


def test_a_recovery_rule_needs_an_example_it_recovers(tmp_path: Path):
    (tmp_path / "demo-family.yaml").write_text(RECOVERY, encoding="utf-8")
    (tmp_path / "demo-family.log").write_text(f"# expect: demo-family\n{WAITS}# expect-not: demo-family\nok\n",
                                              encoding="utf-8")
    lg = load_ledger([tmp_path], shipped=False)
    sc = Scanner(lg, signatures="regex")
    assert any(i.name == "over-time-examples" and "demo-started" in i.message
               for i in lint(lg, shipped=False, scanner=sc))
    (tmp_path / "demo-family.log").write_text(
        f"# expect: demo-family\n{WAITS}# expect-not: demo-family\n{WAITS}Demo started in 40 s\n", encoding="utf-8")
    lg = load_ledger([tmp_path], shipped=False)
    sc = Scanner(lg, signatures="regex")
    assert not [i for i in lint(lg, shipped=False, scanner=sc) if i.severity == "HIGH"]
    assert [(f.family, f.status) for f in sc.scan_text(WAITS + "Demo started in 40 s\n").findings] == \
        [("demo-family", "recovered")]
