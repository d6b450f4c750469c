"""The embedded default model: started on 127.0.0.1 from the wheel's GGUF, spoken to over the same client."""

import asyncio

import httpx
import pytest

from esac_kit.gi.judge import judge_request, parse_verdict
from esac_kit.local import embedded_server, model_path
from esac_kit.chat import ChatRequest
from esac_kit.providers import make_provider, parse_model
from esac_kit.schemas import Criterion, Rubric


@pytest.fixture(scope="module")
def local_url():
    with embedded_server() as url:
        yield url


def test_the_model_ships_inside_the_wheel():
    path = model_path()
    assert path.name.endswith(".gguf") and "site-packages" in str(path) and path.stat().st_size > 50_000_000


def chat(url, request):
    async def go():
        async with httpx.AsyncClient() as client:
            return await make_provider(parse_model("local"), client, url).chat(request, timeout_s=300)

    return asyncio.run(go())


def test_local_answers_a_chat_request(local_url):
    reply = chat(local_url, ChatRequest(messages=({"role": "user", "content": "Name a colour."},), max_tokens=16,
                                        temperature=0.0))
    assert reply.tokens_in > 0 and 0 < reply.tokens_out <= 16 and reply.outcome in ("answered", "output_budget")


def test_local_judge_verdicts_parse_under_the_schema(local_url):
    levels = ["no", "partly", "mostly", "fully"]
    rubric = Rubric(criteria=[Criterion(id="answered", description="answers the question", weight=2, levels=levels,
                                        gate=True),
                              Criterion(id="depth", description="depth fits the need", weight=1, levels=levels)])
    request = judge_request(rubric, "What is the capital of France?", "Paris.", "calibration-x", 0, 0.7, 160)
    for _ in range(2):
        verdict = parse_verdict(chat(local_url, request).text, rubric, local_url)
        assert set(verdict.levels) == {"answered", "depth"} and all(0 <= v <= 3 for v in verdict.levels.values())


def test_local_accepts_tool_definitions(local_url):
    tools = ({"type": "function", "function": {"name": "submit", "description": "Submit the final answer.",
                                               "parameters": {"type": "object",
                                                              "properties": {"answer": {"type": "string"}},
                                                              "required": ["answer"]}}},)
    reply = chat(local_url, ChatRequest(messages=({"role": "user", "content": "Submit the answer 5."},),
                                        max_tokens=48, temperature=0.0, tools=tools))
    assert reply.finish_reason in ("stop", "length", "tool_calls")
    assert all(call.name == "submit" for call in reply.tool_calls)


def test_the_server_dies_with_the_kit_even_on_sigkill():
    import signal
    import subprocess
    import sys
    import time

    code = ("import time\nfrom esac_kit.local import embedded_server\n"
            "with embedded_server() as url:\n    print(url, flush=True)\n    time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    url = parent.stdout.readline().strip()
    assert httpx.get(f"{url}/models", timeout=5).status_code == 200
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/models", timeout=1)
        except httpx.HTTPError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the embedded server at {url} outlived its parent")


def test_local_takes_a_whole_tool_calling_conversation(local_url):
    """An AG episode's second turn (an assistant tool call and its result in the history) is served, not a 500."""
    from esac_kit.ag.loop import SYSTEM_PROMPT
    from esac_kit.chat import ModelReply, ToolCall

    tools = ({"type": "function", "function": {"name": "get", "description": "Read a value.", "parameters": {
        "type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}}},)

    async def go():
        async with httpx.AsyncClient() as client:
            provider = make_provider(parse_model("local"), client, local_url)
            call = ToolCall("call_0", "get", '{"key": "source"}')
            earlier = ModelReply("", "answered", 1, 1, 0.1, "tool_calls", (call,))
            messages = ({"role": "user", "content": "Read 'source' and tell me its value."},
                        *provider.tool_turn(earlier, [(call, '{"value": "42"}', False)]))
            return await provider.chat(ChatRequest(messages=messages, max_tokens=32, temperature=0.0, tools=tools,
                                                   system=SYSTEM_PROMPT), timeout_s=300)

    reply = asyncio.run(go())
    assert reply.tokens_in > 0 and reply.outcome in ("answered", "output_budget", "empty")
