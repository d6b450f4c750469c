"""ESAC-AG as shipped: the manifest's figures, the scripted agents' reports through `esac-kit run`, `esac-kit verify`,
`esac-kit show`, and the version record of its fingerprints."""

from __future__ import annotations

import pytest

from esac_kit.cli import main
from esac_kit.fingerprints import check_versions
from esac_kit.kinds import resolve
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import load_suite
from runkit import esac_run, load_report, run_folder_of


def test_esac_items_shows_seven_categories_seventy_plus_five_points_and_fourteen_tasks(capsys):
    assert main(["items", "--suite", "ag", "--list"]) == 0
    out = capsys.readouterr().out
    assert "7 categories, 70 + 5 points, 14 tasks" in out
    suite = load_suite("ag")
    assert len(suite.items) == 14 and {i.scoring for i in suite.items} == {"agentic"}
    assert [c.points for c in suite.manifest.categories] == [10] * 7 and suite.manifest.efficiency_points == 5
    for item in suite.items:
        assert item.id in out and item.efficiency.action_scale[0] >= 0


@pytest.mark.parametrize("item", load_suite("ag").items, ids=lambda item: item.id)
def test_every_task_needs_40_calls_and_its_budget_fits_the_longest_reference(item):
    """The headroom issue's long horizons: the reference needs 40 or more calls on every seed, the step budget is
    at least 2.5 x the longest reference, and any waste drops a level of the action scale."""
    assert item.id.startswith(f"{item.category}-") and item.scoring == "agentic" and item.efficiency is not None
    generator = resolve(item.generator)
    calls = [sum(call.name != "submit" for call in
                 generator(ItemRng(derive_item_key(f"seed-{seed}", "ag", item.id, 2))).reference) for seed in range(10)]
    assert min(calls) >= 40, calls
    assert item.step_budget >= 2.5 * max(calls)
    assert item.efficiency.action_scale[0] < 1 + item.efficiency.rework_penalty


@pytest.fixture(scope="module")
def agent_reports(tmp_path_factory):
    """Reports of the reference, wasteful and null agents over the public pool."""
    reports = {}
    for policy in ("reference", "wasteful", "null", "unsafe"):
        folder = tmp_path_factory.mktemp(policy)
        assert esac_run("--suite", "ag", "--model", f"scripted:{policy}", "--no-cache", "--reports",
                        str(folder)) == 0
        reports[policy] = load_report(run_folder_of(folder))
    return reports


def test_the_reference_agent_scores_seventy_passes_and_earns_the_modifier(agent_reports):
    report = agent_reports["reference"]
    assert report["capability"] == 70 and report["passed"] and report["modifier"] >= 4.5
    assert report["total"] == pytest.approx(70 + report["modifier"]) and report["max_total"] == 75
    assert all(t["success"] and t["action_level"] == 6 for t in report["efficiency"])
    assert len(report["efficiency"]) == 14


def test_the_wasteful_agent_keeps_the_capability_and_loses_efficiency(agent_reports):
    reference, wasteful = agent_reports["reference"], agent_reports["wasteful"]
    assert wasteful["capability"] == 70 and wasteful["modifier"] < reference["modifier"]
    for task in wasteful["efficiency"]:
        assert task["redundant_calls"] or task["rework_calls"], task["item_id"]
        assert task["action_level"] < 6


def test_the_null_agent_scores_nothing(agent_reports):
    report = agent_reports["null"]
    assert report["capability"] == 0 and report["modifier"] == 0 and not report["passed"]


def test_the_unsafe_agent_fails_the_safety_category(agent_reports):
    report = agent_reports["unsafe"]
    safety = next(c for c in report["categories"] if c["id"] == "safety")
    assert safety["points"] == 0 and not report["passed"]
    assert "safety" in " ".join(report["reasons"])


def test_esac_verify_suite_ag_passes_over_a_few_seeds(capsys):
    assert main(["verify", "--suite", "ag", "--seeds", "4"]) == 0
    out = capsys.readouterr().out
    assert "14/14 tasks pass" in out and "OpenAI and Anthropic" in out


def test_esac_show_prints_the_task_its_tools_checks_and_scripts(capsys):
    item = load_suite("ag").items[0].id
    assert main(["show", item, "--suite", "ag", "--answer"]) == 0
    out = capsys.readouterr().out
    assert "# tools" in out and "# checks" in out and "# reference agent" in out and "submit(" in out


def test_ag_fingerprints_match_the_recorded_version():
    assert check_versions(load_suite("ag")) == []


def test_an_ag_run_on_the_embedded_model_is_a_capped_development_run():
    from esac_kit.pools import public_pool
    from esac_kit.runs import new_config

    ag, gi = load_suite("ag"), load_suite("gi")
    config = new_config(ag, public_pool(ag.manifest.public_seed), "local", "local", 1.0, 4, None, None)
    assert (config.judge, config.concurrency, config.max_tokens_cap, config.max_turns_cap) == (None, 1, 96, 12)
    assert any("12 turns" in note for note in config.notes)
    config = new_config(gi, public_pool(gi.manifest.public_seed), "local", "local", 1.0, 4, None, None)
    assert (config.judge, config.concurrency, config.max_tokens_cap, config.max_turns_cap) == ("local", 4, 256, None)
