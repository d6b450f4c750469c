"""`esac-kit verify` for GI: every parametrized item keeps its guarantees over many pool seeds (amendment 001 §3, §4)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median

from esac_kit.gi.normalise import normalise
from esac_kit.gi.scoring import score_response
from esac_kit.instances import generate
from esac_kit.pools import Pool
from esac_kit.schemas import ExactKey, HonestyKey, Instance
from esac_kit.suite import Suite
from esac_kit.verify import FreshProcessDigests, instance_digest, verification_pools

GARBLED = ("ANSWER: qzx vlorp 7gh\nA: qzx\nB: qzx\nC: qzx\nD: qzx\n```python\nqzx = (\n```\n"
           + " ".join(["zq xv blorf kest"] * 10))
MAX_ANSWER_SHARE = 0.10  # memorising one answer must not pay (amendment 001 §4): no answer expected this often
MEMORISATION_ALPHA = 0.05  # the error rate of the memorisation bound, shared out over the answers seen
MAX_ABSTAIN_SCORE = 0.5  # blanket abstention scores at most half on honesty items


@dataclass
class ItemVerification:
    """What verify observed for one item over its seeds."""

    item_id: str
    scoring: str
    seeds: int = 0
    reference_ok: int = 0
    empty_zero: int = 0
    garbled_zero: int = 0
    unique_prompts: int = 0
    top_answer_share: float = 0.0
    top_share_low: float = 0.0  # lower confidence bound of the most common answer's true share
    top_share_high: float = 1.0  # upper confidence bound: at most MAX_ANSWER_SHARE shows the guarantee
    deterministic: bool | None = None
    abstain_max: float | None = None
    difficulty: str = "-"  # the measured difficulty's median and range over the seeds, e.g. "nodes 340 (120-900)"
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every check held."""
        return not self.failures


def answer_signature(instance: Instance) -> object:
    """The normalised answer an item expects, for counting how often one answer recurs."""
    key = instance.key
    if isinstance(key, ExactKey):
        return normalise(key.answer, key.answer_type)
    if isinstance(key, HonestyKey):
        return tuple((p.label, normalise(p.answer, p.answer_type) if p.answerable else "UNKNOWN") for p in key.parts)
    return key.model_dump_json()


def abstain_response(instance: Instance) -> str:
    """The always-abstain policy's response to an honesty item."""
    return "\n".join(f"{part.label}: UNKNOWN" for part in instance.key.parts)


def verify_item(suite: Suite, item_id: str, pools: list[Pool]) -> tuple[ItemVerification, str]:
    """Run every check on one parametrized item; return the result and the instances' digest."""
    item = suite.item(item_id)
    result = ItemVerification(item.id, item.scoring, seeds=len(pools))
    instances = [generate(suite, item, pool) for pool in pools]
    for instance in instances:
        result.reference_ok += score_response(instance.key, instance.reference).score == 1.0
        result.empty_zero += score_response(instance.key, "").score == 0.0
        result.garbled_zero += score_response(instance.key, GARBLED).score == 0.0
        if isinstance(instance.key, HonestyKey):
            abstained = score_response(instance.key, abstain_response(instance)).score
            result.abstain_max = max(result.abstain_max or 0.0, abstained)
    result.unique_prompts = len({instance.prompt for instance in instances})
    if item.difficulty is not None:
        values = sorted(i.difficulty[item.difficulty.measure] for i in instances)
        result.difficulty = f"{item.difficulty.measure} {median(values):g} ({values[0]:g}-{values[-1]:g})"
    answers = Counter(answer_signature(i) for i in instances)
    top = answers.most_common(1)[0][1]
    result.top_answer_share = top / len(instances)
    result.top_share_low, result.top_share_high = top_share_bounds(top, len(instances), len(answers))
    n = len(instances)
    checks = [(result.reference_ok == n, f"reference scored 1 on {result.reference_ok}/{n}"),
              (result.empty_zero == n, f"empty scored 0 on {result.empty_zero}/{n}"),
              (result.garbled_zero == n, f"garbled scored 0 on {result.garbled_zero}/{n}"),
              (result.unique_prompts == n, f"{n - result.unique_prompts} duplicate instances"),
              (result.top_share_low <= MAX_ANSWER_SHARE,
               f"one answer covers {result.top_answer_share:.0%} of instances: its share is above "
               f"{MAX_ANSWER_SHARE:.0%} with confidence (lower bound {result.top_share_low:.0%})")]
    if result.abstain_max is not None:
        checks.append((result.abstain_max <= MAX_ABSTAIN_SCORE, f"always-abstain scored {result.abstain_max:.2f}"))
    result.failures = [message for ok, message in checks if not ok]
    return result, instance_digest(instances)


def top_share_bounds(top: int, n: int, distinct: int) -> tuple[float, float]:
    """Clopper–Pearson bounds on the true share of the most common answer, Bonferroni-shared over the `distinct`
    answers seen, since the top one is picked after looking: valid at any number of seeds. A share provably above
    MAX_ANSWER_SHARE fails; one whose upper bound is above it is not shown to be small (too few seeds to tell)."""
    from scipy.stats import beta

    alpha = MEMORISATION_ALPHA / max(1, distinct)
    low = 0.0 if top == 0 else float(beta.ppf(alpha, top, n - top + 1))
    high = 1.0 if top == n else float(beta.ppf(1 - MEMORISATION_ALPHA, top + 1, n - top))
    return low, high


def memorisation_shown(result: ItemVerification) -> bool:
    """True when the seeds show, with confidence, that no answer is expected more than MAX_ANSWER_SHARE of the time."""
    return result.top_share_high <= MAX_ANSWER_SHARE


def verify_items(suite: Suite, items: list, pool: Pool, n_seeds: int,
                 progress: Callable[[str], None] | None = None) -> list[ItemVerification]:
    """Verify parametrized items over n seeds derived from the pool, and their reproducibility in a fresh process."""
    pools = verification_pools(pool, n_seeds)
    results, digests = [], {}
    with FreshProcessDigests(suite, pools, [item.id for item in items]) as fresh_process:  # the second core's share
        for item in items:
            if progress:
                progress(item.id)
            result, digests[item.id] = verify_item(suite, item.id, pools)
            results.append(result)
        fresh = fresh_process.result()
    for result in results:
        result.deterministic = fresh.get(result.item_id) == digests[result.item_id]
        if not result.deterministic:
            result.failures.append("a fresh process generated different instances")
    return results


def format_table(results: list[ItemVerification]) -> str:
    """A fixed-width table of verify figures, one row per item, and what the memorisation column means."""
    header = f"{'item':34} {'scoring':11} {'seeds':>5} {'ref=1':>6} {'empty=0':>7} {'garbl=0':>7} " \
             f"{'unique':>6} {'top ans':>7} {'≤ bound':>7} {'fresh':>5} {'abstain':>7} {'difficulty (median, range)':34} " \
             f"result"
    rows = [header, "-" * len(header)]
    for r in results:
        abstain = "-" if r.abstain_max is None else f"{r.abstain_max:.2f}"
        fresh = {True: "same", False: "DIFF", None: "-"}[r.deterministic]
        verdict = "PASS" if r.passed else "FAIL: " + "; ".join(r.failures)
        if r.passed and not memorisation_shown(r):
            verdict += " (too few seeds to show the memorisation bound)"
        rows.append(f"{r.item_id:34} {r.scoring:11} {r.seeds:5d} {r.reference_ok:6d} {r.empty_zero:7d} "
                    f"{r.garbled_zero:7d} {r.unique_prompts:6d} {r.top_answer_share:7.1%} {r.top_share_high:7.1%} "
                    f"{fresh:>5} {abstain:>7} {r.difficulty:34} {verdict}")
    rows.append(f"top ans: the most common answer's share over the seeds; ≤ bound: a {1 - MEMORISATION_ALPHA:.0%} "
                f"upper bound on its true share (Clopper–Pearson). An item fails when the share is above "
                f"{MAX_ANSWER_SHARE:.0%} with confidence; a bound above {MAX_ANSWER_SHARE:.0%} means too few seeds "
                f"to show it (amendment 001 §4)")
    return "\n".join(rows)
