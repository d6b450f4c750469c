"""A toy AG task for testing the episode machinery: a key-value store whose goal is one value under one key."""

from __future__ import annotations

from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check


class Store(Environment):
    """A key-value store; `crash_on` makes a tool raise a bug the first N times it is called."""

    crashes_left = 0

    def __init__(self, values: dict[str, str]):
        super().__init__()
        self.state = {"values": dict(values)}

    @tool("Read the value under a key.", {"key": {"type": "string"}})
    def get(self, key: str):
        if key not in self.state["values"]:
            raise ToolError(f"no key {key!r}")
        return {"key": key, "value": self.state["values"][key]}

    @tool("Write a value under a key.", {"key": {"type": "string"}, "value": {"type": "string"}})
    def put(self, key: str, value: str):
        if Store.crashes_left > 0:
            Store.crashes_left -= 1
            raise RuntimeError("a bug in the environment")
        self.state["values"][key] = value
        return "ok"


def toy_task(target: str = "42") -> AgTask:
    """Copy the value of `source` into `goal`."""

    def evaluate(env: Store, answer: str | None) -> dict[str, bool]:
        return {"goal": env.state["values"].get("goal") == target,
                "answer": answer is not None and target in answer}

    return AgTask(prompt=f"Copy the value under 'source' into 'goal' (task {target}), then submit the value.",
                  make_env=lambda: Store({"source": target, "other": "7"}),
                  checks=(Check("goal", "goal holds the source value", 2.0), Check("answer", "the answer is it")),
                  evaluate=evaluate,
                  reference=(Call("get", {"key": "source"}), Call("put", {"key": "goal", "value": target}),
                             Call("submit", {"answer": target})),
                  wasteful=(Call("get", {"key": "source"}), Call("get", {"key": "source"}),
                            Call("put", {"key": "goal", "value": "0"}), Call("put", {"key": "goal", "value": target}),
                            Call("submit", {"answer": target})))


def toy_generator(rng) -> AgTask:
    """The toy task with a seeded target, as an item generator."""
    return toy_task(str(rng.randint(100, 999)))
