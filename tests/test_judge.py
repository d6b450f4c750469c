"""Judge-graded items: anchors and required orders, the gate, code-verified criteria, weights and the pack."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from esac_kit.cli import main
from esac_kit.loopback import LoopbackServer
from esac_kit.gi.judge import is_judge_request
from esac_kit.scoring import aggregate
from esac_kit.suite import load_suite, read_item
from esac_kit.gi.verifiable import (forbidden_phrases_level, required_facts_level, required_headings_level,
                                 word_range_level)
from runkit import PACK, esac_run, run_folder_of

ITEMS = Path(__file__).resolve().parent.parent / "items"


def anchors_by_response():
    """Every anchor response of the repo and the test pack, with its kind and its item's expected depth."""
    found = {}
    for folder in (ITEMS / "gi", PACK / "gi"):
        for path in sorted(folder.glob("*.toml")):
            if path.name in ("manifest.toml", "versions.toml"):
                continue
            item = read_item(path)
            for variant in item.variants:
                for anchor in variant.anchors:
                    found[anchor.response.strip()] = (anchor.kind, item.expected_depth)
    return found


def scripted_judge(body):
    """A judge that grades as the rubrics intend: top for ideal, the gate decides padded against terse."""
    text = body["messages"][-1]["content"]
    response = re.search(r"<<<RESPONSE-(\w+)>>>\n(.*)\n<<<END-RESPONSE-\1>>>", text, re.DOTALL).group(2).strip()
    kind, depth = ANCHORS.get(response, ("ideal", None))
    fmt = body["response_format"]
    criteria = (fmt.get("schema") or fmt["json_schema"]["schema"])["properties"]["levels"]["properties"]
    levels = {}
    for criterion in criteria:
        if kind in ("off_topic", "empty", "injection"):
            level = 0
        elif kind == "ideal":
            level = 3
        elif criterion == "answered":
            longer_is_right = depth in ("deep", None)
            level = 3 if (kind == "padded") == longer_is_right else 2
        elif criterion == "thoroughness":  # a criterion that rewards length: what a broken rubric looks like
            level = min(3, len(response.split()) // 60)
        else:
            level = 2
        levels[criterion] = level
    return json.dumps({"rationale": "scripted", "levels": levels})


ANCHORS = anchors_by_response()
ANCHOR_KEYS = [(v.prompt, a.response) for folder in (ITEMS / "gi", PACK / "gi") for path in sorted(folder.glob("*-*.toml"))
               for v in read_item(path).variants for a in v.anchors]


def rubric_check(*args):
    return main(["rubric", "check", "--max-attempts", "2", "--retry-base-s", "0.01", *args])


def anchor_levels_judge():
    """A judge that answers with the levels stored in tests/fixtures/anchor_levels.json, read from the descriptors."""
    stored = json.loads((Path(__file__).parent / "fixtures" / "anchor_levels.json").read_text())["levels"]
    by_text = {}
    for folder in (ITEMS / "gi", PACK / "gi"):
        for path in sorted(folder.glob("*.toml")):
            if path.name not in ("manifest.toml", "versions.toml"):
                item = read_item(path)
                for variant in item.variants:
                    for anchor in variant.anchors:
                        key = (variant.prompt.strip(), anchor.response.strip())
                        by_text[key] = stored[item.id][variant.id][anchor.kind]

    def judge(body):
        text = body["messages"][-1]["content"]
        task = re.search(r"<<<TASK-(\w+)>>>\n(.*)\n<<<END-TASK-\1>>>", text, re.DOTALL).group(2).strip()
        response = re.search(r"<<<RESPONSE-(\w+)>>>\n(.*)\n<<<END-RESPONSE-\1>>>", text, re.DOTALL).group(2).strip()
        return json.dumps({"rationale": "levels from the descriptors", "levels": by_text[(task, response)]})

    return judge


def test_rubric_check_holds_every_order_by_its_margin_under_a_descriptor_literal_judge(capsys):
    with LoopbackServer(anchor_levels_judge()) as server:
        code = rubric_check("--judge", f"openai:j@{server.url}", "--pack", str(PACK))
        judge_calls = server.requests
    output = capsys.readouterr().out
    assert code == 0, output
    assert "14/14 variants produce their required order" in output and "VIOLATED" not in output
    assert judge_calls == 2 * sum(1 for _ in ANCHOR_KEYS)  # the empty anchor is judged like the others
    margins = [float(m) for relation, m in re.findall(r"\] (\w+ >=? \w+) \(margin ([-+.\d]+)\)", output)]
    assert margins and min(margins) >= 0.15  # every order, the boundary item's included (it requires no tie)
    depths = {path.stem: read_item(path).expected_depth for path in (ITEMS / "gi").glob("calibration-*.toml")}
    # A correct answer of the wrong depth keeps at most half the item (amendment 001 §2); the boundary item is exempt.
    for item_id, block in re.findall(r"^(calibration-[\w-]+) \[[\w-]+\]: order \w+\n(.*)$", output, re.M):
        wrong = {"deep": "terse", "concise": "padded"}.get(depths[item_id])
        if wrong:
            assert float(re.search(rf"\b{wrong} ([.\d]+)", block).group(1)) <= 0.5, (item_id, block)


def test_a_margin_below_the_minimum_fails_even_when_the_order_holds():
    from esac_kit.gi.rubric_check import relation_margin

    assert relation_margin("ideal > terse", {"ideal": 1.0, "terse": 0.9}) == pytest.approx((0.1, False))
    assert relation_margin("ideal > terse", {"ideal": 1.0, "terse": 0.8})[1]
    assert relation_margin("ideal >= terse", {"ideal": 1.0, "terse": 1.0}) == (0.0, True)
    assert relation_margin("empty = 0", {"empty": 0.0}) == (0.0, True)


def test_the_judge_is_told_which_requirements_are_checked_in_code():
    from esac_kit.gi.judge import judge_request

    item = read_item(ITEMS / "gi" / "writing-bad-news-message.toml")
    text = judge_request(item.rubric, "task", "response", item.id, 0, 0.0, 100).messages[0]["content"]
    code_part = text.split("CHECKED IN CODE", 1)[1].split("TASK", 1)[0]
    assert "do not grade these again" in code_part
    assert all(f"- {c}:" in code_part for c in ("word_range", "required_facts", "forbidden_phrases"))
    assert "- word_range (weight" not in text  # not offered as a criterion to grade


def test_rubric_check_flags_a_broken_rubric(tmp_path, capsys):
    shutil.copytree(ITEMS, tmp_path / "items")
    path = tmp_path / "items" / "gi" / "calibration-expert-narrow-question.toml"
    text = path.read_text()
    # Replace depth_fit by a criterion that rewards length: a rubric that cannot tell padding from depth.
    text = text.replace('id = "depth_fit"', 'id = "thoroughness"')
    path.write_text(text)
    with LoopbackServer(scripted_judge) as server:
        code = rubric_check("calibration-expert-narrow-question", "--items", str(tmp_path / "items"),
                            "--judge", f"openai:judge@{server.url}")
    output = capsys.readouterr().out
    assert code == 1, output
    assert "[VIOLATED] terse > padded" in output and "0/1 variants" in output


def test_an_empty_answer_scores_zero_however_concise_and_costs_no_judge_call(tmp_path):
    def generous_judge_and_silent_model(body):
        if is_judge_request(body):
            return scripted_judge(body)  # would give the 'ideal' top marks to anything unknown
        return ""

    with LoopbackServer(generous_judge_and_silent_model) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path), "--no-cache", "--only", "calibration-expert-narrow-question") == 0
        assert server.requests == 2  # two answers, no judgement of nothing
    rows = [json.loads(line) for line in (run_folder_of(tmp_path) / "observations.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["score"] == 0 and r["outcome"] == "empty" for r in rows)
    assert all(set(r["judge_levels"].values()) == {0} for r in rows)


def test_calibration_and_writing_normalise_to_their_points():
    suite = load_suite("gi")
    weights = {i.id: i.weight for i in suite.items}
    categories = {i.id: i.category for i in suite.items}
    boundary = next(i.id for i in suite.items if i.category == "calibration" and i.weight == 0.5)
    scores = {i: 1.0 for i in weights}
    result = {c.id: c.points for c in aggregate(suite.manifest, scores, weights, categories).categories}
    assert result["calibration"] == pytest.approx(5) and result["writing"] == pytest.approx(10)
    scores[boundary] = 0.0
    writing = [i for i, c in categories.items() if c == "writing"]
    scores[writing[0]] = 0.5
    result = {c.id: c.points for c in aggregate(suite.manifest, scores, weights, categories).categories}
    assert result["calibration"] == pytest.approx(5 * 4 / 4.5)  # the boundary item weighs half a normal item
    assert result["writing"] == pytest.approx(7.5)


def test_code_verified_levels_follow_their_descriptors():
    words = lambda n: " ".join(["word"] * n)  # noqa: E731
    params = {"min": 120, "max": 180, "steps": [15, 30]}
    assert [word_range_level(words(n), params, [], 3) for n in (150, 110, 95, 60, 181)] == [3, 2, 1, 0, 2]
    facts = ["£350", "JOB-4471", "Marek", "07700 900412"]
    assert required_facts_level("£350 JOB-4471 Marek 07700 900412", {}, facts, 3) == 3
    assert required_facts_level("£350 JOB-4471 Marek", {}, facts, 3) == 2
    assert required_facts_level("£350 JOB-4471", {}, facts, 3) == 1
    assert required_facts_level("nothing", {}, facts, 3) == 0
    banned = {"phrases": ["unfortunately"]}
    assert forbidden_phrases_level("Unfortunately, unfortunately.", banned, [], 3) == 1
    headings = {"headings": ["What is happening", "What you need to do", "When it will end"]}
    good = "## What is happening\ntext\n**What you need to do**\ntext\nWhen it will end\ntext"
    assert required_headings_level(good, headings, [], 3) == 3
    assert required_headings_level(good.replace("## What is happening", "## Overview"), headings, [], 3) == 2
    assert required_headings_level("What is happening\nno more", headings, [], 3) == 1


def test_writing_anchors_meet_their_code_checks_only_when_ideal():
    from esac_kit.gi.verifiable import code_levels

    for path in sorted((ITEMS / "gi").glob("writing-*.toml")):
        item = read_item(path)
        for variant in item.variants:
            levels = {a.kind: code_levels(item.rubric, a.response, variant.facts) for a in variant.anchors}
            assert set(levels["ideal"].values()) == {3}, (item.id, levels["ideal"])
            assert min(levels["padded"].values()) < 3 and min(levels["empty"].values()) == 0


def test_a_heldout_run_refuses_to_start_without_the_pack(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ESAC_HELDOUT_SEED", "heldout-" + os.urandom(8).hex())
    assert esac_run("--heldout", "--model", "openai:m@http://127.0.0.1:9/v1", "--reports", str(tmp_path)) == 2
    assert "--pack" in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_rubric_check_runs_end_to_end_on_the_embedded_judge(capsys):
    code = rubric_check("calibration-usage-check", "--judge", "local")
    output = capsys.readouterr().out
    assert code in (0, 1)  # the tiny model may well violate the order; it must judge every anchor
    assert "variants produce their required order" in output
    assert re.search(r"ideal \d\.\d{3} \(\d\.\d\d, \d\.\d\d\)", output)


def test_rubric_check_passes_model_parameters_to_a_judge_under_test_but_never_to_the_pinned_judge(capsys):
    seen = []
    judge = anchor_levels_judge()
    with LoopbackServer(lambda body: seen.append(body) or judge(body)) as server:
        code = rubric_check("--judge", f"openai:o3@{server.url}", "-M", "reasoning_effort=high")
        assert server.rejected == []
    assert code == 0, capsys.readouterr().out
    assert seen and all(b["reasoning_effort"] == "high" and "temperature" not in b for b in seen)
    from test_bad_inputs import assert_one_line_exit_2, esac

    assert_one_line_exit_2(esac("rubric", "check", "-M", "top_p=0.9"), "pinned judge", "takes the suite's parameters")
