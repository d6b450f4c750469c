"""What a run does after its last reply stays light: no chart libraries and no pyarrow, fingerprints from the run's
own instances, code digests kept on disk by content, and the generators' caches emptied (issue 15, point 6)."""

import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from esac_kit import fingerprints
from esac_kit.fingerprints import closure, code_digest, compute, roots
from esac_kit.instances import generate
from esac_kit.loopback import LoopbackServer
from esac_kit.pools import public_pool
from esac_kit.runs import _fingerprints, plan_run
from esac_kit.suite import load_suite
from runkit import esac_run, reference_answers, run_folder_of

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("suite", ["gi", "ag"])
def test_a_public_run_fingerprints_its_own_instances_as_the_suite_does(suite):
    judge = "openai:j@http://127.0.0.1:9/v1" if suite == "gi" else None
    run = plan_run(suite, model="openai:m@http://127.0.0.1:9/v1", judge=judge)
    assert _fingerprints(run) == compute(load_suite(suite))


def test_a_partial_run_fingerprints_the_whole_suite():
    suite = load_suite("gi")
    run = plan_run("gi", model="openai:m@http://127.0.0.1:9/v1", judge="openai:j@http://127.0.0.1:9/v1",
                   only=[suite.items[0].id])
    assert len(run.instances) == 1 and _fingerprints(run) == compute(suite)


def test_code_digests_come_back_from_the_disk_cache_unchanged_and_a_bad_entry_is_parsed_again(tmp_path,
                                                                                             monkeypatch):
    suite = load_suite("gi")
    names = closure(roots(suite)[0], roots(suite)[2])
    fingerprints._parse.cache_clear()
    monkeypatch.setattr(fingerprints, "CODE_CACHE", tmp_path)
    parsed = {name: code_digest(name) for name in names}
    entries = sorted(tmp_path.rglob("*.json"))
    assert len(entries) == len(names)
    fingerprints._parse.cache_clear()
    entries[0].write_text("{not json")
    entries[1].write_text(json.dumps(["forged", []]))  # an entry is trusted as what a parse of those bytes gave
    again = {name: code_digest(name) for name in names}
    assert sum(again[n] != parsed[n] for n in names) == 1 and "forged" in again.values()
    assert json.loads(entries[0].read_text())[0] in parsed.values()  # the unreadable one was parsed and rewritten
    fingerprints._parse.cache_clear()


def test_a_run_imports_no_chart_library_nor_pyarrow_and_report_renders_the_same_report(tmp_path):
    quant = [i.id for i in load_suite("gi").items if i.category == "quant"][:3]  # 3 items: an exact interval
    with LoopbackServer(reference_answers()) as server:
        # as the console script runs it (main() reads sys.argv), so the process is the command line's own
        script = textwrap.dedent(f"""
            import sys
            from esac_kit.cli import main
            sys.argv = ["esac-kit", "run", "--model", "openai:m@{server.url}", "--judge", "openai:j@{server.url}",
                        "--no-cache", "--reports", {str(tmp_path)!r}, "--only", *{quant!r}]
            code = main()
            loaded = sorted(m for m in ("altair", "vl_convert", "marimo", "pyarrow") if sys.modules.get(m))
            print(code, "pandas" in sys.modules, loaded)
        """)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.stdout.splitlines()[-1] == "0 True []", done.stdout[-2000:] + done.stderr[-2000:]
    assert "esac-kit report" in done.stdout  # the run says which command draws the charts
    folder = run_folder_of(tmp_path)
    assert (folder / "report.json").is_file() and not list(folder.glob("*.svg"))
    assert not (folder / "observations.parquet").exists()
    by_run = json.loads((folder / "report.json").read_text())
    report = subprocess.run([sys.executable, "-m", "esac_kit", "report", str(folder)], capture_output=True,
                            text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert "<svg" in (folder / "items.svg").read_text()[:400]
    assert (folder / "categories.png").read_bytes()[:4] == b"\x89PNG"
    assert (folder / "observations.parquet").read_bytes()[:4] == b"PAR1"
    # pandas without pyarrow (the run) and with it (report) give the same report, intervals and spreads included
    by_report = json.loads((folder / "report.json").read_text())
    assert by_run.pop("rendered_at") and by_report.pop("rendered_at")
    assert by_report == by_run and by_run["categories"][0]["ci_exact"]


def test_a_run_leaves_its_generators_caches_empty(tmp_path):
    suite = load_suite("gi")
    logic = [i for i in suite.items if (i.generator or "").startswith("esac_kit.gi.generators.logic:")]
    for item in logic:  # as an earlier run in this process would: the generators fill their tables
        generate(suite, item, public_pool(suite.manifest.public_seed))
    module = importlib.import_module("esac_kit.gi.generators.logic")
    caches = [value for value in vars(module).values() if callable(getattr(value, "cache_clear", None))]
    assert sum(cache.cache_info().currsize for cache in caches) > 0
    with LoopbackServer(reference_answers()) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(tmp_path),
                        "--only", *[i.id for i in logic]) == 0
    assert [cache.cache_info().currsize for cache in caches] == [0] * len(caches)
