"""The embedded server's handler wrapper, without the model: what it changes before llama.cpp's handler runs."""

from esac_kit.local_server import bounded_handler


class FakeLlama:
    """Records the completions a handler asks for."""

    def __init__(self):
        self.asked = []

    def create_completion(self, *args, **options):
        self.asked.append(options)
        return {"choices": [{"text": ""}]}


def test_the_wrapper_defaults_tool_choice_renders_tool_results_and_caps_every_completion():
    seen = {}

    def original(llama, messages, tools, tool_choice, max_tokens, **kwargs):
        seen.update(messages=messages, tool_choice=tool_choice)
        llama.create_completion(prompt="p", max_tokens=None)  # as llama.cpp's tool paths do
        llama.create_completion(prompt="p", max_tokens=7)
        return "reply"

    llama = FakeLlama()
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "get"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": '{"value": 42}'}]
    tools = [{"type": "function", "function": {"name": "get"}}]
    assert bounded_handler(original)(llama, messages, tools=tools, max_tokens=32) == "reply"
    assert seen["tool_choice"] == "auto"
    assert seen["messages"][2] == {"role": "user", "content": 'functions.get returned:\n{"value": 42}'}
    assert [a["max_tokens"] for a in llama.asked] == [32, 7]
    assert "create_completion" not in vars(llama)  # the instance is left as it was

    bounded_handler(original)(llama, messages[:1], tools=None, tool_choice=None, max_tokens=None)
    assert seen["tool_choice"] is None and llama.asked[-2]["max_tokens"] == 256
