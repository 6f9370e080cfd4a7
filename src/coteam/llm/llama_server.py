"""The process :class:`coteam.llm.local.LocalLLMServer` runs: llama-cpp-python's OpenAI-compatible server, with
one chat format added.

The packaged Gemma 3 270M GGUF carries no chat template, and llama-cpp-python's built-in ``gemma`` format drops
system messages. ``coteam-gemma3`` writes Gemma 3's turn format (``<start_of_turn>user`` / ``model``, turns closed
by ``<end_of_turn>``) with the system text leading the first user turn, as Gemma's own template does. Run as
``python -m coteam.llm.llama_server <llama_cpp.server arguments>``; needs the ``local-llm`` extra.
"""

from __future__ import annotations

from typing import Any

from llama_cpp.llama_chat_format import ChatFormatterResponse, register_chat_format
from llama_cpp.server.__main__ import main

GEMMA3_FORMAT = "coteam-gemma3"
_TURN_END = "<end_of_turn>\n"


@register_chat_format(GEMMA3_FORMAT)
def format_gemma3(messages: list[dict[str, Any]], **kwargs: Any) -> ChatFormatterResponse:
    system = "\n\n".join(str(m.get("content") or "") for m in messages if m["role"] == "system")
    prompt = ""
    for m in messages:
        if m["role"] == "system":
            continue
        text = str(m.get("content") or "")
        if m["role"] == "user" and system:
            text, system = f"{system}\n\n{text}", ""
        speaker = "model" if m["role"] == "assistant" else "user"
        prompt += f"<start_of_turn>{speaker}\n{text}{_TURN_END}"
    return ChatFormatterResponse(prompt=prompt + "<start_of_turn>model\n", stop=[_TURN_END, "<end_of_turn>"])


if __name__ == "__main__":
    main()
