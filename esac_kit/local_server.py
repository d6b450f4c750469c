"""The embedded model's server: llama-cpp-python's OpenAI-compatible server with its tool-calling handler made to
honour the protocol the kit speaks. Run as `python -m esac_kit.local_server <llama_cpp.server arguments>`.

llama.cpp's `chatml-function-calling` handler (0.3.36) has three gaps that would make an AG episode on the
embedded model meaningless or endless: it ignores `tools` unless `tool_choice` is given (OpenAI's default is
"auto"), its template drops `tool` messages so the model never sees a result, and its tool paths generate with
no token limit. This wrapper fills each gap before calling the original handler.
"""

from __future__ import annotations

from typing import Any

HANDLER = "chatml-function-calling"


def _results_as_user_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results as user messages that name the function, since the template cannot render `tool` turns."""
    names = {call.get("id"): call.get("function", {}).get("name", "tool")
             for message in messages if message.get("role") == "assistant"
             for call in message.get("tool_calls") or []}
    converted = []
    for message in messages:
        if message.get("role") == "tool":
            name = names.get(message.get("tool_call_id"), "tool")
            message = {"role": "user", "content": f"functions.{name} returned:\n{message.get('content') or ''}"}
        converted.append(message)
    return converted


def bounded_handler(original):
    """Wrap the handler: default tool_choice to "auto", render tool results, and cap every completion it makes."""

    def handler(llama, messages, tools=None, tool_choice=None, max_tokens=None, **kwargs):
        if tools and tool_choice is None:
            tool_choice = "auto"
        limit = max_tokens or 256
        create = llama.create_completion

        def capped(*args, **options):
            if options.get("max_tokens") is None:  # the handler's tool paths pass None: generation without end
                options["max_tokens"] = limit
            return create(*args, **options)

        llama.create_completion = capped
        try:
            return original(llama=llama, messages=_results_as_user_turns(list(messages)), tools=tools,
                            tool_choice=tool_choice, max_tokens=max_tokens, **kwargs)
        finally:
            del llama.create_completion

    return handler


def main() -> None:
    """Register the bounded handler under the stock name, then run llama-cpp-python's server."""
    from llama_cpp import llama_chat_format
    from llama_cpp.server.__main__ import main as serve

    registry = llama_chat_format.LlamaChatCompletionHandlerRegistry()
    original = registry.get_chat_completion_handler_by_name(HANDLER)
    registry.register_chat_completion_handler(HANDLER, bounded_handler(original), overwrite=True)
    serve()


if __name__ == "__main__":
    main()
