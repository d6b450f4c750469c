"""`esac-kit rubric check`: judge every anchor response twice and test the order each rubric must produce (amendment 001 §2, §7)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

import httpx

from esac_kit.errors import ConfigError
from esac_kit.kinds import VerifyOutcome
from esac_kit.gi.judge import JUDGE_REPLICATES, judge_response
from esac_kit.providers import Provider
from esac_kit.runner import RetryPolicy, with_retries
from esac_kit.schemas import ItemSpec, Variant
from esac_kit.gi.scoring import score_verdict

_RELATION = re.compile(r"^\s*(\w+)\s*(>=|>|=)\s*(\w+)\s*$")
# A strict order must hold by this much of the item, or judge noise could flip it (amendment 001 §2).
MIN_MARGIN = 0.15


@dataclass
class VariantCheck:
    """One variant's anchors: their mean scores over judge replicates and each required relation's outcome."""

    item_id: str
    variant_id: str
    scores: dict[str, float] = field(default_factory=dict)
    replicate_scores: dict[str, list[float]] = field(default_factory=dict)
    relations: list[tuple[str, float, bool]] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        """True when every required relation holds."""
        return all(ok for _, _, ok in self.relations)


def relation_margin(relation: str, scores: dict[str, float]) -> tuple[float, bool]:
    """The margin of `kind > kind`, `kind >= kind` or `kind = 0` (mean difference, or distance to the constant) and
    whether it holds: `>` by at least MIN_MARGIN, `>=` by at least 0 (a tie is its point), `=` exactly."""
    match = _RELATION.match(relation)
    if not match:
        raise ConfigError(f"required_order entry '{relation}' is not of the form 'kind > kind' or 'kind = 0'")
    left, operator, right = match.groups()
    a = scores[left]
    b = float(right) if right.replace(".", "").isdigit() else scores[right]
    eps = 1e-9
    if operator == "=":
        return abs(a - b), abs(a - b) <= eps
    return a - b, a - b >= (MIN_MARGIN if operator == ">" else 0.0) - eps


def relation_holds(relation: str, scores: dict[str, float]) -> bool:
    """True when the relation holds by its required margin."""
    return relation_margin(relation, scores)[1]


async def check_variant(item: ItemSpec, variant: Variant, judge: Provider, temperature: float, max_tokens: int,
                        policy: RetryPolicy) -> VariantCheck:
    """Judge each anchor as often as a run judges an answer, and test the item's required order."""
    result = VariantCheck(item.id, variant.id)
    for anchor in variant.anchors:
        replicates = await asyncio.gather(*(judged_score(judge, item, variant.prompt, variant.facts, anchor.response, r,
                                                         temperature, max_tokens, policy)
                                            for r in range(JUDGE_REPLICATES)))
        result.replicate_scores[anchor.kind] = list(replicates)
        result.scores[anchor.kind] = sum(replicates) / len(replicates)
    result.relations = [(relation, *relation_margin(relation, result.scores)) for relation in item.required_order]
    return result


async def judged_score(judge: Provider, item: ItemSpec, prompt: str, facts: list[str], response: str, replicate: int,
                       temperature: float, max_tokens: int, policy: RetryPolicy) -> float:
    """One judge replicate's score of a response outside a run: no cache, the policy's retries."""
    async def ask(request, check):
        async def once():
            reply = await judge.chat(request, timeout_s=policy.request_timeout_s or 300)
            check(reply)
            return reply

        return await with_retries(once, policy, item.id, "judge")

    judgement = await judge_response(ask, judge.endpoint, item.rubric, prompt, response, facts, item.id, replicate,
                                     temperature, max_tokens, judge_empty=True)
    return score_verdict(item.rubric, judgement.levels)


async def check_items(items: list[tuple[ItemSpec, Variant]], judge_factory, temperature: float, max_tokens: int,
                      policy: RetryPolicy, concurrency: int = 2) -> list[VariantCheck]:
    """Check several (item, variant) pairs with bounded concurrency over one HTTP client."""
    limit = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient() as client:
        judge = judge_factory(client)

        async def bounded(item, variant):
            async with limit:
                return await check_variant(item, variant, judge, temperature, max_tokens, policy)

        return list(await asyncio.gather(*(bounded(i, v) for i, v in items)))


def format_checks(checks: list[VariantCheck]) -> str:
    """One block per variant: anchor scores (replicates) and each relation with its margin, ok or VIOLATED."""
    lines = []
    for check in checks:
        verdict = "holds" if check.holds else "VIOLATED"
        lines.append(f"{check.item_id} [{check.variant_id}]: order {verdict}")
        lines.append("  " + "  ".join(f"{kind} {score:.3f} ({', '.join(f'{s:.2f}' for s in check.replicate_scores[kind])})"
                                      for kind, score in check.scores.items()))
        lines.append("  " + "  ".join(f"[{'ok' if ok else 'VIOLATED'}] {relation} (margin {margin:+.3f})"
                                      for relation, margin, ok in check.relations))
    return "\n".join(lines)


def check_rubrics(suite, items: list[ItemSpec], judge_name: str, pack, policy: RetryPolicy, say,
                  params=None) -> VerifyOutcome:
    """`esac-kit rubric check`: every public (and pack) variant of the items, judged under the suite's pinned sampling."""
    from esac_kit.instances import pack_item
    from esac_kit.providers import make_provider, parse_model
    from esac_kit.runs import endpoints_for

    pairs = [(item, variant) for item in items for variant in item.variants]
    if pack:
        pairs += [(item, variant) for item in items for variant in pack_item(suite, item, pack).variants]
    pin, ref = suite.manifest.judge, parse_model(judge_name)
    say(f"rubric check: {len(pairs)} variant(s), judge {judge_name}, {JUDGE_REPLICATES} judgements per anchor")
    with endpoints_for([judge_name]) as urls:
        checks = asyncio.run(check_items(pairs, lambda client: make_provider(ref, client, urls.get(ref.provider),
                                                                             params=params),
                                         pin.temperature if pin else 0.7, pin.max_tokens if pin else 1024, policy))
    violated = [f"{c.item_id} [{c.variant_id}]" for c in checks if not c.holds]
    return VerifyOutcome(format_checks(checks), f"{len(checks) - len(violated)}/{len(checks)} variants produce their "
                                                f"required order (strict orders by margin >= {MIN_MARGIN:g})", violated)
