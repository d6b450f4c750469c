"""ESAC-AG's item kind: an agentic task, one episode in a seeded mock environment driven through native tool calling,
decided by checks on the final state and scored for efficiency (amendment 001 §1); and its scripted agents, served
on loopback as models named `scripted:POLICY`."""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterator

from esac_kit.ag.distribution import DISTRIBUTIONS  # noqa: F401  the loader reads the pins here (amendment 001 §1)
from esac_kit.ag.episode import Efficiency, modifier
from esac_kit.ag.policies import POLICIES, script_for, scripted_answer
from esac_kit.ag.task import script_json, task_digest
from esac_kit.errors import ConfigError
from esac_kit.kinds import CORE_SCORING_MODULES, Kind, VerifyOutcome, register
from esac_kit.chat import ChatRequest, ModelReply
from esac_kit.providers import ServedModels, register_served
from esac_kit.records import Report, TaskEfficiency
from esac_kit.schemas import AgenticKey, Generated


class Agentic(Kind):
    """One episode per task; an environment crash restarts it from scratch (amendment 001 §8)."""

    name = "agentic"
    episodic = True
    verify_seeds = 50
    scoring_modules = CORE_SCORING_MODULES + ("esac_kit.ag.kind", "esac_kit.ag.episode", "esac_kit.ag.loop",
                                              "esac_kit.ag.env")
    generation_modules = ("esac_kit.instances", "esac_kit.ag.task")
    generators_score = True  # each task generator builds its checks with its instance (amendment 001 §9: scoring)
    # verify, the scripted agents and the loopback server that plays them: self-checks, not the protocol
    tool_modules = ("esac_kit.ag.verify", "esac_kit.ag.policies", "esac_kit.loopback")

    def check_item(self, item):
        if item.efficiency is None or item.step_budget is None:
            raise ValueError("an agentic task needs an efficiency scale and a step_budget")
        if item.generator is None:
            raise ValueError("an agentic task needs a generator 'module:function'")

    def generate(self, item, rng, held_out, task=None):
        from esac_kit.kinds import resolve

        task = task or resolve(item.generator)(rng)
        described = task.describe()
        key = AgenticKey(tools=[t["function"]["name"] for t in described["tools"]],
                         checks=[c.description for c in task.checks])
        return Generated(prompt=task.prompt, key=key, reference=script_json(task.reference))

    def key_protocol(self, instance):
        return {"tools": instance.key.tools, "checks": len(instance.key.checks)}

    def call_bounds(self, item, instance, budgets):
        from esac_kit.kinds import CallBound

        # An episode ends at its step budget or its token budget (input and output together), whichever is first
        episode = budgets.episode_tokens or 10**9
        return [CallBound("model", item.step_budget, episode, min(episode, item.step_budget * budgets.output_tokens))]

    def instance_bytes(self, instance, task):
        return task_digest([task]).encode()  # the whole task: prompt, tools, checks, environment and scripts

    async def observe(self, runner, item, instance, replicate, slots):
        from esac_kit.ag.loop import Budgets, run_episode

        slot, provider = slots[0], runner.settings.model
        calls = {"attempts": 0, "retries": Counter(), "tokens": Counter()}
        steps = min(item.step_budget, runner.settings.max_turns_cap or item.step_budget)
        budgets = Budgets(steps=steps, tokens=runner.episode_token_budget or 10**9,
                          time_s=runner.time_budget(item) or float("inf"), turn_tokens=runner.output_budget(item))

        async def chat(request: ChatRequest, turn: int, seconds_left: float) -> ModelReply:
            reply, attempts, retries = await runner.chat(provider, request, "agent", slot.model_replicate, item.id,
                                                         None if seconds_left == float("inf") else seconds_left,
                                                         salt=f"turn{turn}")
            calls["attempts"] += attempts - 1
            calls["retries"].update(retries)
            calls["tokens"].update(reasoning_tokens=reply.reasoning_tokens, cache_read_tokens=reply.cache_read_tokens,
                                   cache_write_tokens=reply.cache_write_tokens)
            runner.turn_started(item.id, turn + 1)
            return reply

        async with runner.episode_slots:  # whole episodes, not just requests: each keeps its conversation warm
            result, attempts, retries = await runner.retried(
                lambda: run_episode(runner.tasks[item.id], item.id, item.efficiency, provider, chat, budgets,
                                    runner.settings.temperature), item.id, "environment", bound_in_flight=False)
            reply = ModelReply(result.answer, result.outcome, result.tokens_in, result.tokens_out,  # type: ignore[arg-type]
                               result.latency_s, **calls["tokens"])
            runner.record(item, slot, reply, attempts + calls["attempts"], retries + calls["retries"],
                          result.detail["score"], result.detail)

    def show(self, instance, task, answer):
        lines = ["", "# tools"]
        for schema in task.describe()["tools"]:
            function = schema["function"]
            lines.append(f"- {function['name']}({', '.join(function['parameters']['properties'])}): "
                         f"{function['description']}")
        if answer:
            lines += ["", "# checks"]
            lines += [f"- {check.id}{' (guard)' if check.guard else ''}: {check.description}" for check in task.checks]
            for name, script in task.scripts().items():
                lines += ["", f"# {name} agent"]
                lines += [f"  {call.name}({json.dumps(call.args, sort_keys=True)})" for call in script]
        return "\n".join(lines)

    def verify(self, suite, items, pool, seeds, progress):
        from esac_kit.ag.verify import format_table, verify_ag

        results = verify_ag(suite, items, pool, seeds, progress)
        failed = [r.item_id for r in results if not r.passed]
        return VerifyOutcome(format_table(results), f"{len(results) - len(failed)}/{len(results)} tasks pass", failed,
                             "reference, null, wasteful and unsafe agents over a loopback server (OpenAI and "
                             "Anthropic protocols)")

    def report_extras(self, report, suite, planned, by_item):
        return _with_efficiency(report, suite.manifest.efficiency_points, planned, by_item)


def _with_efficiency(report: Report, points: float, planned_items, by_item) -> Report:
    """Add the efficiency breakdown and the modifier; a task not yet run counts as failed, so it never overstates."""
    breakdown, entries = [], []
    for item in planned_items:
        rows = by_item.get(item.id)
        detail = rows[0].score_detail if rows else None
        if not detail or "efficiency" not in detail:
            entries.append(Efficiency(0, 1, 1, 0.0, 0.0))
            continue
        measured, counts, steps = detail["efficiency"], detail["counts"], detail["steps"]
        entries.append(Efficiency(**measured))
        breakdown.append(TaskEfficiency(
            item_id=item.id, success=detail["success"], tool_calls=counts["tool_calls"], redundant=counts["redundant"],
            rework=counts["rework"], invalid=counts["invalid"], tokens=counts["tokens"], **measured,
            redundant_calls=[f"{_call(s)} repeats #{s['redundant_of']}" for s in steps if s["redundant_of"] is not None],
            rework_calls=[f"{_call(s)} overwrites #{', #'.join(map(str, s['rework_of']))}" for s in steps
                          if s["rework_of"]],
            invalid_calls=[f"{_call(s)}: {s['result'][:120]}" for s in steps if s["status"] == "invalid"]))
    value = round(modifier(entries, points), 9)
    return report.model_copy(update={"capability": report.total, "max_capability": report.max_total - points,
                                     "modifier": value, "max_modifier": points, "efficiency": breakdown,
                                     "total": round(report.total + value, 9)})


def _call(step: dict) -> str:
    """A recorded call in one short line: #index tool(arguments)."""
    import json

    arguments = json.dumps(step["arguments"], sort_keys=True) if not isinstance(step["arguments"], str) \
        else step["arguments"]
    arguments = arguments if len(arguments) <= 80 else arguments[:77] + "..."
    return f"#{step['index']} {step['tool']}({arguments})"


@contextlib.contextmanager
def serve_scripted(policy: str, tasks: dict) -> Iterator[str]:
    """A loopback server that plays one scripted agent on every task of the run."""
    from esac_kit.loopback import LoopbackServer

    if not tasks:
        raise ConfigError("scripted agents act only on ESAC-AG tasks: use --suite ag")
    scripts = {task.prompt: script_for(task, policy) for task in tasks.values()}
    with LoopbackServer(scripted_answer(scripts)) as server:
        yield server.url


register(Agentic())
register_served("scripted", ServedModels("scripted agent", POLICIES, serve_scripted))
