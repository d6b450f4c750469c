"""Outside answerers through the real CLI: `files:DIR` driven by a script that writes the answer files (GI answers
and AG tool calls), `replay:FILE.jsonl`, and `human` typing into the terminal."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from runkit import esac_run, load_report, run_folder_of

from esac_kit.instances import build_task, generate, generate_all
from esac_kit.pools import custom_pool, public_pool
from esac_kit.suite import load_suite

GI_ITEMS = ("quant-tank-mixing", "logic-zebra", "instructions-json-record")


def answer_files(folder: Path, answer, stop: threading.Event) -> threading.Thread:
    """A stand-in that answers every request file in a folder until stopped: answer(request) -> response dict."""
    def loop():
        while not stop.is_set():
            for request in sorted(folder.glob("*.request.json")):
                response = request.with_name(request.name.replace(".request.", ".response."))
                if not response.exists():
                    partial = response.with_name(response.name + ".part")
                    partial.write_text(json.dumps(answer(json.loads(request.read_text()))))
                    partial.replace(response)
            time.sleep(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def first_user(request: dict) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "user")


def test_files_answerer_runs_gi_items_from_answer_files(tmp_path):
    suite = load_suite("gi")
    references = {i.prompt: i.reference for i in generate_all(suite, public_pool(suite.manifest.public_seed))}
    seen = []

    def answer(request):
        seen.append(request)
        return {"content": references[first_user(request)]}

    stop = threading.Event()
    answer_files(tmp_path / "answers", answer, stop)
    try:
        code = esac_run("--model", f"files:{tmp_path / 'answers'}", "--no-cache", "--reports", str(tmp_path / "r"),
                        "--only", *GI_ITEMS)
    finally:
        stop.set()
    assert code == 0
    report = load_report(run_folder_of(tmp_path / "r"))
    assert {i["item_id"]: i["score"] for i in report["items"]} == dict.fromkeys(GI_ITEMS, 1.0)
    assert len(seen) == 3 and all(r["max_tokens"] > 0 and r["time_budget_s"] for r in seen)
    assert sorted(p.name for p in (tmp_path / "answers").glob("*.request.json")) == [
        "0001.request.json", "0002.request.json", "0003.request.json"]
    assert any("estimated" in note for note in report["notes"])  # no usage in the answers: tokens are estimated
    assert report["tokens"]["model_in"] > 0


def test_files_answerer_acts_through_tool_calls_on_an_ag_task(tmp_path):
    suite = load_suite("ag")
    item = suite.item("tools-order-fulfilment")
    task = build_task(suite, item, public_pool(suite.manifest.public_seed))

    def answer(request):
        assert first_user(request) == task.prompt and request["tools"]
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
        call = task.reference[turn]
        return {"content": "", "tool_calls": [{"name": call.name, "arguments": call.args}],
                "usage": {"input_tokens": 1000, "output_tokens": 50}}

    stop = threading.Event()
    answer_files(tmp_path / "answers", answer, stop)
    try:
        code = esac_run("--suite", "ag", "--model", f"files:{tmp_path / 'answers'}", "--no-cache",
                        "--reports", str(tmp_path / "r"), "--only", item.id)
    finally:
        stop.set()
    assert code == 0
    report = load_report(run_folder_of(tmp_path / "r"))
    [efficiency] = report["efficiency"]
    assert efficiency["success"] and efficiency["tool_calls"] == len(task.reference) - 1  # submit is not a tool call
    assert report["tokens"]["model_in"] == 1000 * len(task.reference)  # the answers' own usage, not an estimate


def test_an_ag_episode_whose_answers_report_no_usage_is_journalled_with_an_unknown_token_level(tmp_path):
    suite = load_suite("ag")
    item = suite.item("recovery-stock-reconcile")
    task = build_task(suite, item, public_pool(suite.manifest.public_seed))

    def answer(request):  # no usage: tokens are estimated, so the token level is unknown
        call = task.reference[sum(1 for m in request["messages"] if m["role"] == "assistant")]
        return {"content": "", "tool_calls": [{"name": call.name, "arguments": call.args}]}

    stop = threading.Event()
    answer_files(tmp_path / "answers", answer, stop)
    try:
        code = esac_run("--suite", "ag", "--model", f"files:{tmp_path / 'answers'}", "--no-cache",
                        "--reports", str(tmp_path / "r"), "--only", item.id)
    finally:
        stop.set()
    assert code == 0
    [efficiency] = load_report(run_folder_of(tmp_path / "r"))["efficiency"]
    assert efficiency["success"] and efficiency["token_level"] is None


def test_replay_answerer_scores_precomputed_outputs_keyed_by_prompt_digest(tmp_path):
    suite = load_suite("gi")
    pool = public_pool(suite.manifest.public_seed)
    lines = []
    for item_id in GI_ITEMS:
        instance = generate(suite, suite.item(item_id), pool)
        wrong = item_id == "logic-zebra"  # one wrong answer, so the replay is shown to be scored, not trusted
        lines.append(json.dumps({"prompt_sha256": hashlib.sha256(instance.prompt.encode()).hexdigest(),
                                 "content": "ANSWER: nobody" if wrong else instance.reference}))
    replay = tmp_path / "outputs.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    assert esac_run("--model", f"replay:{replay}", "--no-cache", "--reports", str(tmp_path / "r"),
                    "--only", *GI_ITEMS) == 0
    scores = {i["item_id"]: i["score"] for i in load_report(run_folder_of(tmp_path / "r"))["items"]}
    assert scores == {"quant-tank-mixing": 1.0, "logic-zebra": 0.0, "instructions-json-record": 1.0}


def test_a_replay_file_without_the_prompt_stops_with_one_line(tmp_path, capsys):
    replay = tmp_path / "outputs.jsonl"
    replay.write_text(json.dumps({"prompt_sha256": "0" * 64, "content": "x"}) + "\n")
    assert esac_run("--model", f"replay:{replay}", "--no-cache", "--reports", str(tmp_path / "r"),
                    "--only", "quant-tank-mixing") == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress line
    assert error.startswith("esac-kit: error:") and "no replay answer" in error


def test_human_answerer_reads_the_answer_typed_in_the_terminal(tmp_path):
    suite = load_suite("gi")
    instance = generate(suite, suite.item("quant-tank-mixing"), public_pool(suite.manifest.public_seed))
    typed = instance.reference + "\n.\n"
    done = subprocess.run([sys.executable, "-m", "esac_kit", "run", "--model", "human", "--no-cache", "--reports",
                           str(tmp_path / "r"), "--only", "quant-tank-mixing"], input=typed, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-500:]
    assert instance.prompt.splitlines()[0] in done.stderr  # the request was shown
    assert load_report(run_folder_of(tmp_path / "r"))["items"][0]["score"] == 1.0


def test_calibration_reads_a_stand_ins_runs_per_item_and_seed_against_the_targets(tmp_path):
    suite = load_suite("gi")
    seeds = ("calib-test-1", "calib-test-2")
    references = {}
    for seed in seeds:
        references |= {i.prompt: i.reference for i in generate_all(suite, custom_pool(seed))}

    def answer(request):  # right on quant, wrong on logic: half the objective points
        prompt = first_user(request)
        return {"content": references[prompt] if "brine" in prompt else "ANSWER: nobody",
                "usage": {"input_tokens": 1000, "output_tokens": 250}}

    stop = threading.Event()
    answer_files(tmp_path / "answers", answer, stop)
    try:
        for n, seed in enumerate(seeds):
            assert esac_run("--model", f"files:{tmp_path / 'answers'}", "--no-cache", "--seed", seed, "--reports",
                            str(tmp_path / f"r{n}"), "--only", "quant-tank-mixing", "logic-zebra") == 0
    finally:
        stop.set()
    runs = [run_folder_of(tmp_path / f"r{n}") for n in range(2)]
    done = subprocess.run([sys.executable, "-m", "esac_kit", "calibration", *map(str, runs)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr  # 50 % overall misses the 45 % target
    table = done.stdout
    assert table.count("| quant-tank-mixing |") == 2 and table.count("| logic-zebra |") == 2
    assert "| quant | 2 | 100% |" in table and "| logic | 2 | 0% |" in table
    assert "overall: 50.0% of objective points" in table and "MISSES" in table
    assert "| 1000 / 250 |" in table

    # The bank moves on (zebra's band changes, so its prompts do): the runs are refused, or with --skip-superseded
    # zebra is left out and named, and the table holds what the bank still generates.
    items = tmp_path / "items"
    shutil.copytree(Path(load_suite("gi").folder).parent, items)
    zebra = items / "gi" / "logic-zebra.toml"
    zebra.write_text(re.sub(r"^band = \[.*\]$", "band = [0, 40]", zebra.read_text(), count=1, flags=re.M))
    calibrate = [sys.executable, "-m", "esac_kit", "calibration", "--items", str(items), *map(str, runs)]
    refused = subprocess.run(calibrate, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "logic-zebra generates another prompt now" in refused.stderr
    skipped = subprocess.run(calibrate + ["--skip-superseded"], capture_output=True, text=True, timeout=120)
    assert skipped.returncode == 1, skipped.stderr  # quant alone, at 100 %, misses the targets
    assert skipped.stdout.count("| quant-tank-mixing |") == 2 and "| logic-zebra |" not in skipped.stdout
    assert skipped.stdout.count("left out (the bank now generates another prompt)") == 2
    assert all(f"{run}: logic-zebra" in skipped.stdout for run in runs)
    twice = subprocess.run(calibrate + [str(runs[0]), "--skip-superseded"], capture_output=True, text=True,
                           timeout=120)
    assert twice.returncode == 2 and "in two of the runs given" in twice.stderr
