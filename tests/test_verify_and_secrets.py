"""`esac-kit verify` on the public and a random held-out seed, and the held-out seed never leaving memory."""

import os
import random
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from esac_kit.instances import generate
from esac_kit.pools import public_pool
from esac_kit.suite import load_suite
from esac_kit.gi.verify import verify_item
from esac_kit.verify import verification_pools

PACK = Path(__file__).resolve().parent / "pack"


def esac(*args, env_extra=None, cwd=None):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "esac_kit.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd)


@pytest.fixture(scope="module")
def heldout_seed():
    return "heldout-" + secrets.token_hex(16)


def test_verify_passes_on_the_public_seed():
    result = esac("verify", "--seeds", "30")  # `make verify` runs 200
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "29/29 parametrized items pass" in result.stdout


def test_verify_passes_on_a_random_heldout_seed_and_never_prints_it(heldout_seed, tmp_path):
    result = esac("verify", "--heldout", "--seeds", "20", env_extra={"ESAC_HELDOUT_SEED": heldout_seed},
                  cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "commitment sha256:" in result.stdout
    assert heldout_seed not in result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []


def test_verify_fails_an_item_whose_reference_is_wrong(monkeypatch):
    suite = load_suite("gi")
    item = next(i for i in suite.items if i.scoring == "exact")
    import esac_kit.gi.verify as verify

    real = verify.generate

    def wrong_reference(*args, **kwargs):
        instance = real(*args, **kwargs)
        return instance.model_copy(update={"reference": "ANSWER: 123456789987"})

    monkeypatch.setattr(verify, "generate", wrong_reference)
    result, _ = verify_item(suite, item.id, verification_pools(public_pool(suite.manifest.public_seed), 5))
    assert not result.passed and result.failures[0].startswith("reference scored 1 on 0/5")


def test_show_heldout_authored_item_needs_the_pack_and_hides_the_seed(heldout_seed):
    env = {"ESAC_HELDOUT_SEED": heldout_seed}
    missing = esac("show", "--heldout", _authored_item(), env_extra=env)
    assert missing.returncode == 2 and "--pack" in missing.stderr and heldout_seed not in missing.stderr
    shown = esac("show", "--heldout", "--pack", str(PACK), _authored_item(), env_extra=env)
    assert shown.returncode == 0, shown.stderr
    public = esac("show", _authored_item())
    assert shown.stdout.splitlines()[1:] != public.stdout.splitlines()[1:]
    assert heldout_seed not in shown.stdout + shown.stderr


def test_heldout_and_public_instances_differ(heldout_seed, monkeypatch):
    monkeypatch.setenv("ESAC_HELDOUT_SEED", heldout_seed)
    from esac_kit.pools import heldout_pool

    suite = load_suite("gi")
    item = next(i for i in suite.items if i.parametrized)
    assert generate(suite, item, heldout_pool()).prompt != generate(suite, item, public_pool("x")).prompt


def _authored_item():
    return sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "items" / "gi").glob("calibration-*.toml"))[0]


def test_the_memorisation_bound_does_not_fail_an_item_by_chance_at_ten_seeds():
    from esac_kit.gi.verify import MAX_ANSWER_SHARE, MEMORISATION_ALPHA, top_share_bounds
    from esac_kit.pools import custom_pool

    suite = load_suite("gi")
    failed = []
    for base in range(10):  # 10 independent sets of 10 seeds of the zebra item
        result, _ = verify_item(suite, "logic-zebra", verification_pools(custom_pool(f"zebra-set-{base}"), 10))
        failed += [f for f in result.failures if "one answer covers" in f]
    assert failed == []
    # an item at the limit (ten equally likely answers, each exactly MAX_ANSWER_SHARE), ten seeds at a time, is
    # failed by chance at most the bound's alpha of the time (without the Bonferroni share it would be about 12 %)
    draw, sets, failures = random.Random(7), 4000, 0
    for _ in range(sets):
        answers = [draw.randrange(10) for _ in range(10)]
        top = max(answers.count(a) for a in set(answers))
        failures += top_share_bounds(top, 10, len(set(answers)))[0] > MAX_ANSWER_SHARE
    assert failures / sets <= MEMORISATION_ALPHA


def test_the_memorisation_bound_fails_an_item_whose_answer_never_changes():
    from esac_kit.gi.verify import MAX_ANSWER_SHARE, top_share_bounds

    low, high = top_share_bounds(10, 10, 1)  # one answer in all ten seeds
    assert low > MAX_ANSWER_SHARE and high == 1.0
    low, high = top_share_bounds(2, 10, 9)  # a repeat among ten seeds: no evidence, and too few seeds to show it
    assert low < MAX_ANSWER_SHARE < high
    assert top_share_bounds(3, 200, 150)[1] <= MAX_ANSWER_SHARE  # 200 seeds show the guarantee


def test_verify_only_checks_the_items_named():
    from test_bad_inputs import esac

    done = esac("verify", "--only", "quant-tank-mixing", "--seeds", "3")
    assert done.returncode == 0, done.stderr
    assert "quant-tank-mixing" in done.stdout and "logic-zebra" not in done.stdout
    assert "1/1 parametrized items pass" in done.stdout
