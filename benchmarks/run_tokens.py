"""Tokens of an official run of each suite, through the kit: the figures the spec states and the caps it sets.

GI: the public pool answered with reference responses by a loopback server (input tokens are the prompts,
counted as the loopback counts them, four characters a token; the output figure is the reference answers', a floor,
and the output *budget* bound is calls × the item's output budget). AG: the scripted reference agent over every
task, whose episodes resend their context every turn. Usage: python benchmarks/run_tokens.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from runkit import esac_run, reference_answers, run_folder_of  # noqa: E402

from esac_kit.kinds import kind_of  # noqa: E402
from esac_kit.loopback import LoopbackServer  # noqa: E402
from esac_kit.suite import load_suite  # noqa: E402

GI_INPUT_CAP = 1_000_000  # the headroom issue: an official GI run needs at most 1 M input tokens
AG_INPUT_CAP = 10_000_000  # ... and an AG run at most 10 M


def run_tokens(*args: str) -> dict:
    """Run the kit once into a temporary reports folder and return the report's token figures."""
    with tempfile.TemporaryDirectory() as reports:
        assert esac_run(*args, "--no-cache", "--reports", reports) == 0
        return json.loads((run_folder_of(Path(reports)) / "report.json").read_text())["tokens"]


def main() -> None:
    gi = load_suite("gi")
    with LoopbackServer(reference_answers()) as server:
        tokens = run_tokens("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}")
    calls = {i.id: len({s.model_replicate for s in kind_of(i).slots(i)}) for i in gi.items}
    budget = sum(n * (i.output_budget_tokens or gi.manifest.output_budget_tokens) for i, n in
                 zip(gi.items, calls.values()))
    total_in = tokens["model_in"] + tokens["judge_in"]
    print(f"ESAC-GI {gi.manifest.version}: {sum(calls.values())} answers; input {tokens['model_in']:,} (model) + "
          f"{tokens['judge_in']:,} (judge) = {total_in:,} tokens (cap {GI_INPUT_CAP:,}: "
          f"{'within' if total_in <= GI_INPUT_CAP else 'OVER'}); reference output {tokens['model_out']:,}; "
          f"output budget bound {budget:,}")
    ag = load_suite("ag")
    tokens = run_tokens("--suite", "ag", "--model", "scripted:reference")
    print(f"ESAC-AG {ag.manifest.version}: {len(ag.items)} reference episodes; input {tokens['model_in']:,} tokens "
          f"(cap {AG_INPUT_CAP:,}: {'within' if tokens['model_in'] <= AG_INPUT_CAP else 'OVER'}); output "
          f"{tokens['model_out']:,}")


if __name__ == "__main__":
    main()
