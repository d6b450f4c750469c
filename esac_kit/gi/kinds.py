"""ESAC-GI's item kinds: exact answers, verifiable constraints, honesty parts and hidden code tests, scored in code
from one answer; and judge-graded authored items, answered twice and judged twice (amendment 001 §2, §5, §7)."""

from __future__ import annotations

import asyncio
from collections import Counter

from esac_kit.gi.distribution import DISTRIBUTIONS  # noqa: F401  the loader reads the pins here (amendment 001 §6)
from esac_kit.gi.judge import JUDGE_REPLICATES, MODEL_REPLICATES, TEMPLATE_VERSION, judge_response
from esac_kit.gi.scoring import score_response, score_verdict
from esac_kit.gi.verifiable import CHECKS, REQUIRED_PARAMS
from esac_kit.kinds import CORE_SCORING_MODULES, Kind, Slot, VerifyOutcome, no_episode_fields, register
from esac_kit.schemas import Generated, JudgeKey

# The code that decides a GI score from an answer; fingerprints take each root's import closure.
_SCORED_IN_CODE = CORE_SCORING_MODULES + ("esac_kit.gi.kinds", "esac_kit.gi.scoring")
# GI's verify and rubric check, imported inside this module's kinds: they exercise items and decide no score.
_TOOLS = ("esac_kit.gi.verify", "esac_kit.gi.rubric_check")


def scored_text(reply) -> str:
    """What a reply is scored on: its text, or nothing when it came after the time budget (a model failure scored
    as no answer, amendment 001 §8; the text stays in the journal for audit)."""
    return "" if reply.outcome == "time_budget" else reply.text


class ScoredInCode(Kind):
    """A parametrized item whose single answer is scored against a key computed from the seed (amendment 001 §4)."""

    scoring_modules = _SCORED_IN_CODE
    generation_modules = ("esac_kit.instances",)
    tool_modules = _TOOLS

    def check_item(self, item):
        super().check_item(item)
        if item.difficulty is None:  # the headroom issue: every parametrized GI item states what makes it hard
            raise ValueError("a parametrized GI item declares its difficulty: a [difficulty] table with the "
                             "generator's drivers, the measure its solver takes and the band it must fall in")

    async def score(self, instance, response: str):
        """The response's score against the instance's key."""
        return score_response(instance.key, response)

    async def observe(self, runner, item, instance, replicate, slots):
        reply, attempts, retries = await runner.model_answer(item, instance, replicate)
        answer = scored_text(reply)
        for slot in slots:
            scored, more_attempts, more = await runner.retried(lambda: self.score(instance, answer), item.id,
                                                               "scoring")
            runner.record(item, slot, reply, attempts + more_attempts - 1, retries + more, scored.score,
                          scored.detail)
            attempts, retries = 1, Counter()

    def verify(self, suite, items, pool, seeds, progress):
        from esac_kit.gi.verify import format_table, verify_items

        results = verify_items(suite, items, pool, seeds, progress)
        failed = [r.item_id for r in results if not r.passed]
        return VerifyOutcome(format_table(results), f"{len(results) - len(failed)}/{len(results)} parametrized "
                                                    f"items pass", failed)


class Exact(ScoredInCode):
    """One final answer on an `ANSWER:` line, compared after normalisation."""

    name = "exact"

    def key_protocol(self, instance):
        return {"answer_type": instance.key.answer_type}


class Constraints(ScoredInCode):
    """Instruction following: the share of verifiable constraints met, or 0 when a gate fails."""

    name = "constraints"

    def key_protocol(self, instance):
        return {"gate": [c.check for c in instance.key.gate], "constraints": [c.check for c in instance.key.constraints]}


class Honesty(ScoredInCode):
    """Labelled parts: the exact answer where answerable, a decline where not (amendment 001 §8)."""

    name = "honesty"

    def key_protocol(self, instance):
        return {"answer_types": sorted({p.answer_type for p in instance.key.parts})}


class CodeTests(ScoredInCode):
    """The response's last python block, called on hidden inputs in the sandbox; the parent compares the values."""

    name = "code_tests"
    scoring_modules = _SCORED_IN_CODE + ("esac_kit.sandbox",)

    async def score(self, instance, response: str):
        # sandboxed code runs in a worker thread so other calls go on meanwhile
        return await asyncio.to_thread(score_response, instance.key, response)

    def key_protocol(self, instance):
        return {"kind": "code_tests"}


class Judged(Kind):
    """An authored prompt family graded by the pinned judge: 2 answers × 2 judge calls (amendment 001 §5)."""

    name = "judge"
    model_replicates = MODEL_REPLICATES
    judge_replicates = JUDGE_REPLICATES
    scoring_modules = CORE_SCORING_MODULES + ("esac_kit.gi.kinds", "esac_kit.gi.judge", "esac_kit.gi.scoring")
    generation_modules = ("esac_kit.instances",)
    tool_modules = _TOOLS

    def check_item(self, item):
        no_episode_fields(item)
        if item.rubric is None or not item.variants:
            raise ValueError("a judge-graded item needs a rubric and at least one public variant")
        if item.generator is not None:
            raise ValueError("a judge-graded item is authored: it takes variants, not a generator")
        for criterion in item.rubric.criteria:
            check = criterion.verified_in_code
            if check is None:
                continue
            if check not in CHECKS:
                raise ValueError(f"rubric criterion '{criterion.id}': verified_in_code '{check}' is not one of "
                                 f"{sorted(CHECKS)}")
            missing = REQUIRED_PARAMS[check] - set(criterion.params)
            if missing:
                raise ValueError(f"rubric criterion '{criterion.id}': '{check}' needs params {sorted(missing)}")

    def check_manifest(self, manifest):
        if manifest.judge is None:
            return "judge: judge-graded items need a pinned judge"
        if manifest.judge.template_version != TEMPLATE_VERSION:
            return f"judge.template_version: the kit's judge template is version {TEMPLATE_VERSION}"
        return None

    def generate(self, item, rng, held_out, task=None):
        source = held_out() if held_out is not None else item
        variant = rng.choice(source.variants)
        ideal = next((a.response for a in variant.anchors if a.kind == "ideal"), "")
        return Generated(prompt=variant.prompt, key=JudgeKey(variant=variant.id, facts=variant.facts), reference=ideal)

    def key_protocol(self, instance):
        return {"kind": "judge"}

    def call_bounds(self, item, instance, budgets):
        from esac_kit.chat import estimate_tokens
        from esac_kit.gi.judge import judge_request
        from esac_kit.kinds import CallBound

        answers = super().call_bounds(item, instance, budgets)
        n = self.model_replicates * self.judge_replicates
        template = judge_request(item.rubric, instance.prompt, "", item.id, 0, 0.0, budgets.judge_max_tokens)
        quoted = estimate_tokens((template.system or "") + template.messages[0]["content"]) + budgets.output_tokens
        return answers + [CallBound("judge", n, n * quoted, n * budgets.judge_max_tokens)]

    def check_rubrics(self, suite, items, judge, pack, policy, say, params=None):
        from esac_kit.gi.rubric_check import check_rubrics

        return check_rubrics(suite, items, judge, pack, policy, say, params)

    async def observe(self, runner, item, instance, replicate, slots):
        from esac_kit.errors import ConfigError

        reply, attempts, retries = await runner.model_answer(item, instance, replicate)
        judge, settings = runner.settings.judge, runner.settings
        for slot in slots:
            if judge is None and scored_text(reply).strip():
                raise ConfigError(f"item {item.id} is judge-graded but the run has no judge")

            async def ask(request, check, slot: Slot = slot):
                return await runner.chat(judge, request, "judge", slot.judge_replicate, item.id, None,
                                         salt=f"{slot.model_replicate}", check=check)

            judgement = await judge_response(ask, judge.endpoint if judge else "", item.rubric, instance.prompt,
                                             scored_text(reply), instance.key.facts, item.id, slot.judge_replicate,
                                             settings.judge_temperature, settings.judge_max_tokens)
            verdict = judgement.reply
            runner.record(item, slot, reply, attempts + judgement.attempts - 1, retries + judgement.retries,
                          score_verdict(item.rubric, judgement.levels), {"levels": judgement.levels},
                          judge_levels=judgement.levels, judge_rationale=judgement.rationale,
                          judge_tokens_in=verdict.tokens_in if verdict else 0,
                          judge_tokens_out=verdict.tokens_out if verdict else 0)
            attempts, retries = 1, Counter()  # the answer's own attempts and retries count once, on its first slot


JUDGED = Judged()
register(Exact(), Constraints(), Honesty(), CodeTests(), JUDGED)
