"""Shared test helpers: scripted answers from reference responses, and running the CLI in-process."""

from __future__ import annotations

import json
from pathlib import Path

from esac_kit.cli import main
from esac_kit.instances import generate_all
from esac_kit.loopback import request_text
from esac_kit.gi.judge import is_judge_request
from esac_kit.pools import Pool, public_pool
from esac_kit.suite import load_suite

PACK = Path(__file__).resolve().parent / "pack"


def reference_answers(pool: Pool | None = None, pack: Path | None = None, judge_level: str = "top"):
    """An answer function: each prompt gets its instance's reference response; judge requests get a verdict."""
    suite = load_suite("gi")
    pool = pool or public_pool(suite.manifest.public_seed)
    by_prompt = {i.prompt: i.reference for i in generate_all(suite, pool, pack)}

    def answer(body):
        if is_judge_request(body):
            return verdict(body, judge_level)
        return by_prompt.get(request_text(body), "ANSWER: I do not know this prompt")

    return answer


def verdict(body, judge_level: str = "top") -> str:
    """A verdict for a judge request: every criterion at its top level (or 'unparseable' text)."""
    if judge_level == "unparseable":
        return "I think this response is quite good, maybe a 3?"
    if "response_format" in body:  # OpenAI-compatible: a json_schema response format (llama.cpp: a bare schema)
        response_format = body["response_format"]
        schema = response_format.get("schema") or response_format["json_schema"]["schema"]
    else:  # Anthropic: the forced verdict tool's input schema
        schema = body["tools"][0]["input_schema"]
    schema = schema["properties"]["levels"]["properties"]
    return json.dumps({"rationale": "scripted", "levels": {k: max(v["enum"]) for k, v in schema.items()}})


def esac_run(*args: str) -> int:
    """Run `esac-kit run` in-process with fast retries; returns the exit code."""
    return main(["run", "--max-attempts", "4", "--retry-base-s", "0.01", "--request-timeout-s", "2", *args])


def run_folder_of(reports: Path) -> Path:
    """The single run folder under a reports folder."""
    folders = [p.parent for p in reports.rglob("run.json")]
    assert len(folders) == 1, folders
    return folders[0]


def load_report(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text())


def scores_of(report: dict) -> dict:
    """The part of a report that must not depend on interruptions or retries."""
    return {k: report[k] for k in ("total", "passed", "reasons", "categories")} | {
        "items": [(i["item_id"], i["score"], i["observations"]) for i in report["items"]]}


def pin_as_released(items: Path, version: str = "1.0") -> Path:
    """Make a copy of items/ the released `version` of the code under test, whatever the repository's own history
    holds (it may be a draft of the next version): tests of the bump rule start from a released version."""
    import re

    from esac_kit.fingerprints import compute

    for suite_id in ("gi", "ag"):
        manifest = items / suite_id / "manifest.toml"
        manifest.write_text(re.sub(r'^version = "[^"]+"', f'version = "{version}"', manifest.read_text(), count=1,
                                   flags=re.M))
        now = compute(load_suite(suite_id, items))
        versions = items / suite_id / "versions.toml"
        header = "".join(line for line in versions.read_text().splitlines(True) if line.startswith("#"))
        versions.write_text(f'{header}\n[[versions]]\nversion = "{version}"\nchange = "initial"\n'
                            f'content = "{now.content}"\nscoring = "{now.scoring}"\ninstances = "{now.instances}"\n')
    return items
