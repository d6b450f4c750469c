"""Harness bypasses through the real CLI, with a loopback model that returns crafted answers: forged result lines,
a patched result channel and an early exit score 0 in GI and AG, because the verdict is decided in the kit's
process from raw values; an answer naming every candidate does not pass."""

from __future__ import annotations

import textwrap

from runkit import esac_run, load_report, run_folder_of

from esac_kit.ag.episode import Episode
from esac_kit.gi.judge import is_judge_request
from esac_kit.instances import build_task
from esac_kit.loopback import LoopbackServer, first_user_text
from esac_kit.pools import public_pool
from esac_kit.suite import load_suite

# Model code that reaches the harness from inside the sandbox: the runner's globals through the meta-path finder,
# the bootstrap's frames for the secret tag, then forges every kind of result line it can and exits early.
FORGER = textwrap.dedent('''
    import sys

    def _forge():
        for finder in sys.meta_path:
            found = getattr(type(finder), "exec_module", None)
            g = getattr(found, "__globals__", {})
            if "emit" in g and "PROGRAMS" in g:  # the probe child: claim every probe and every test finished
                for path, program in g["PROGRAMS"]:
                    for line in program.splitlines():
                        if line.startswith("def test"):
                            name = line[4:line.index("(")]
                            for index in range(40):
                                g["emit"]([path, name, index, "value", ["bool", True]])
                            g["emit"]([path, name, "done", "done", None])
                g["emit"] = lambda record: None  # and patch the channel so the real results never come
            if "emit" in g and "TAG" in g and "SOURCES" in g:  # a runner that reports PASS lines: every test id
                for path in g.get("TEST_PATHS", []):
                    for line in g["SOURCES"][path].splitlines():
                        if line.startswith("def test"):
                            g["emit"]("PASS", path + "::" + line[4:line.index("(")], "")
        frame = sys._getframe()
        while frame is not None:  # the function-test bootstrap: its tag, for forged result lines
            tag = frame.f_locals.get("tag")
            if isinstance(tag, str):
                for index in range(40):
                    print("%s r %d %s" % (tag, index, '"999"'), flush=True)
            frame = frame.f_back

    _forge()
''')


def test_forged_result_lines_and_an_early_exit_score_0_on_a_gi_code_item(tmp_path):
    response = ("Here is my solution.\n```python\n" + FORGER + "\nimport os\nos._exit(0)\n\n"
                "def charge(*args):\n    return 999\n```")
    with LoopbackServer(lambda body: response) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(tmp_path),
                        "--only", "code-parking-charges") == 0
    [item] = load_report(run_folder_of(tmp_path))["items"]
    assert item["item_id"] == "code-parking-charges" and item["score"] == 0.0


def billing_task():
    suite = load_suite("ag")
    return build_task(suite, suite.item("repair-billing-spec"), public_pool(suite.manifest.public_seed))


def test_the_one_call_patch_that_forges_every_verdict_scores_0_on_repair_billing_spec(tmp_path):
    task = billing_task()
    money = task.make_env().state["files"]["money.py"]
    every_candidate = ("money.percent_of, money.format_cents, pricing.line_total, charges.RATES_BP, "
                       "invoice.Invoice.tax, invoice.build_invoice, report.rank_customers")

    def answer(body):
        assert first_user_text(body) == task.prompt and not is_judge_request(body)
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if turn == 0:
            return {"text": "", "tool_calls": [{"id": "c0", "name": "write_file",
                                                "arguments": {"path": "money.py", "content": FORGER + money}}]}
        return {"text": "", "tool_calls": [{"id": "c1", "name": "submit", "arguments": {"answer": every_candidate}}]}

    with LoopbackServer(answer) as server:
        assert esac_run("--suite", "ag", "--model", f"openai:m@{server.url}", "--no-cache", "--reports",
                        str(tmp_path), "--only", "repair-billing-spec") == 0
    report = load_report(run_folder_of(tmp_path))
    [item] = report["items"]
    [efficiency] = report["efficiency"]
    assert item["score"] == 0.0 and not efficiency["success"]
    assert report["categories"][0]["points"] == 0.0


def test_an_answer_naming_every_candidate_fails_the_answer_check_even_after_a_correct_repair():
    task = billing_task()
    episode = Episode(task, "repair-billing-spec")
    for call in task.reference[:-1]:  # the reference repair, then an over-inclusive answer
        episode.act(call.name, call.args, 0)
    episode.act("submit", {"answer": "money.percent_of, money.format_cents, pricing.line_total, charges.RATES_BP, "
                                     "invoice.Invoice.tax, invoice.build_invoice, report.rank_customers"}, 0)
    checks = task.evaluate(episode.env, episode.answer)
    assert checks["tests_pass"] and all(checks[f"bug_{i}"] for i in (1, 2, 3)) and not checks["answer"]
